"""``memledger demo``: seed 000's story, told against a real store.

Record time comes from a clock frozen at the story's moments, so the demo reads
the same on every run; running it again on the same file shows every event as
a duplicate and changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memledger.domain.records import Actor, Claim, Grant, MemoryRecord, SourceEvent
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock

TENANT = "demo"
FAMILY = "delivery_preference"


def _at(month: int, dom: int, hour: int = 9) -> datetime:
    return datetime(2026, month, dom, hour, tzinfo=UTC)


def _event(
    event_id: str, text: str, *, at: datetime, sequence: int, who: Actor, subject: str = "user-42"
) -> SourceEvent:
    return SourceEvent(
        tenant=TENANT,
        event_id=event_id,
        subject=subject,
        actor=who,
        channel="chat",
        occurred_at=at,
        text=text,
        sequence=sequence,
    )


def _claim(
    value: str, quote: str, *, start: datetime | None = None, until: datetime | None = None
) -> Claim:
    return Claim(
        family=FAMILY,
        kind="preference",
        statement=f"Wants the digest {value}",
        value=value,
        grounding=quote,
        valid_from=start,
        valid_until=until,
    )


def _show(console: Console, title: str, records: tuple[MemoryRecord, ...]) -> None:
    table = Table(title=title, title_justify="left")
    for column in ("value", "valid from", "valid until", "kind", "source event", "memory id"):
        table.add_column(column)
    for r in records:
        table.add_row(
            str(r.value),
            r.valid_from.date().isoformat(),
            "-" if r.valid_until is None else r.valid_until.date().isoformat(),
            r.kind,
            r.source_event_id,
            r.memory_id,
        )
    if not records:
        table.add_row("(nothing)", "", "", "", "", "")
    console.print(table)


def run_demo(url: str | Path | None, console: Console) -> None:
    """Tell seed 000's story against the store at ``url`` (default ``./memledger.db``)."""
    clock = FrozenClock(_at(10, 2))
    with Memory(open_store(url), clock=clock) as memory:
        console.print(f"[bold]memledger demo[/] on {memory.url} (tenant {TENANT!r})\n")
        user = Actor(id="user-42", authenticated=True, grants=frozenset({Grant(family=FAMILY)}))

        text = "Please send my digest on Fridays."
        receipt = memory.ingest(
            _event("oct02", text, at=_at(10, 2), sequence=1, who=user),
            [_claim("friday", "on Fridays")],
        )
        console.print(
            f"Oct 2  {text!r} -> revision {receipt.revision(FAMILY)}"
            f"{' (duplicate)' if receipt.duplicate else ''}"
        )

        clock.set(_at(10, 19))
        text = "Daily for the rest of October please, then Friday again from November 1."
        receipt = memory.ingest(
            _event("oct19", text, at=_at(10, 19), sequence=2, who=user),
            [
                _claim("daily", "Daily for the rest of October", until=_at(11, 1, 0)),
                _claim("friday", "Friday again from November 1", start=_at(11, 1, 0)),
            ],
        )
        dup = " (duplicate)" if receipt.duplicate else ""
        console.print(
            f"Oct 19 {text!r}\n       one event, two windows -> revision "
            f"{receipt.revision(FAMILY)}{dup}"
        )

        clock.set(_at(10, 28))
        receipt = memory.ingest(
            _event(
                "oct02-redelivered",
                "Please send my digest on Fridays.",
                at=_at(10, 2),
                sequence=1,
                who=user,
            ),
            [_claim("friday", "on Fridays")],
        )
        result = receipt.results[0]
        console.print(
            f"Oct 28 a late redelivery of the Oct 2 message -> {result.disposition} "
            f"({result.reason}); the current view does not change\n"
        )

        _show(console, "Timeline now", memory.timeline("user-42", FAMILY, tenant=TENANT))
        for label, moment in (
            ("Oct 5", _at(10, 5)),
            ("Oct 28", _at(10, 28)),
            ("Nov 1", _at(11, 1, 0)),
        ):
            values = [
                r.value for r in memory.current("user-42", FAMILY, tenant=TENANT, valid_at=moment)
            ]
            console.print(f"valid at {label}: {values}")
        before = _at(10, 19) - timedelta(seconds=1)
        believed = memory.current(
            "user-42", FAMILY, tenant=TENANT, valid_at=_at(10, 28), as_of=before
        )
        console.print(
            f"what we believed on Oct 19 just before the correction, for Oct 28: "
            f"{[r.value for r in believed]}\n"
        )

        stranger = Actor(id="user-9", authenticated=True)
        receipt = memory.ingest(
            _event(
                "chat-9",
                "Send everything daily",
                at=_at(10, 20),
                sequence=1,
                who=stranger,
                subject="user-9",
            ),
            [
                Claim(
                    family=FAMILY,
                    kind="preference",
                    statement="Wants the digest daily",
                    value="daily",
                    subject="user-9",
                )
            ],
        )
        result = receipt.results[0]
        console.print(
            f"an actor without the grant -> {result.disposition} ({result.reason}): "
            "kept, labelled, never a setting\n"
        )

        clock.set(_at(11, 2))
        other = Actor(id="user-7", authenticated=True, grants=frozenset({Grant(family=FAMILY)}))
        memory.ingest(
            _event(
                "u7-1", "Mondays suit me.", at=_at(11, 2), sequence=1, who=other, subject="user-7"
            ),
            [_claim("monday", "Mondays")],
        )
        queued = memory.ingest(
            _event(
                "u7-2",
                "Mondays, as I said.",
                at=_at(11, 3),
                sequence=2,
                who=other,
                subject="user-7",
            )
        )
        ack = memory.revoke_family("user-7", FAMILY, tenant=TENANT, reason="user: forget it")
        console.print(
            f"Nov 2  user-7: a value, an extraction job queued, then the family is "
            f"revoked (generation {ack.generation})"
        )
        if queued.job_id is not None:
            late = memory.commit_job(queued.job_id, [_claim("monday", "Mondays")], tenant=TENANT)
            outcome = (
                "a duplicate: already decided"
                if late.duplicate
                else str([r.reason for r in late.results])
            )
            console.print(f"       the late job finishes -> {outcome}; nothing comes back")
        _show(console, "user-7 after revocation", memory.timeline("user-7", FAMILY, tenant=TENANT))

        clock.set(_at(11, 3))
        console.print()
        for subject, question in (
            ("user-42", "When should my digest be delivered?"),
            ("user-7", "When should my digest be delivered?"),
        ):
            found = memory.recall(question, tenant=TENANT, subject=subject, k=3)
            answer = (
                "no relevant memory"
                if found.abstained
                else ", ".join(f"{i.record.value!r} via {'+'.join(i.sources)}" for i in found.items)
            )
            reasons = sorted({e.reason for e in found.excluded})
            console.print(
                f"recall for {subject} on Nov 3, {question!r} -> {answer}"
                + (f"; left out: {', '.join(reasons)}" if reasons else "")
            )
