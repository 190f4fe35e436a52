"""``memledger demo``: seed 000's story, told against a real store.

Record time comes from a clock frozen at the story's moments, so the demo reads
the same on every run; running it again on the same file shows every event as
a duplicate and changes nothing. ``--json`` reports the same steps as one JSON
document (``{"store", "tenant", "steps": [...]}``), each step with the event or
question it is about and what came of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from rich.console import Console
from rich.table import Table

from memledger.domain.records import (
    Actor,
    Claim,
    Grant,
    JsonValue,
    MemoryRecord,
    Receipt,
    SourceEvent,
)
from memledger.memory import Memory
from memledger.settings import DEFAULT_TENANT
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.wire import isoformat, record_to_dict

TENANT = DEFAULT_TENANT
"""The tenant the story is told for unless another is given: the one ``memledger serve``
makes its first admin key for, so that its web page shows the story."""
FAMILY = "delivery_preference"


def _at(month: int, dom: int, hour: int = 9) -> datetime:
    return datetime(2026, month, dom, hour, tzinfo=UTC)


_USER = Actor(id="user-42", authenticated=True, grants=frozenset({Grant(family=FAMILY)}))
_STRANGER = Actor(id="user-9", authenticated=True)
_OTHER = Actor(id="user-7", authenticated=True, grants=frozenset({Grant(family=FAMILY)}))
_FRIDAYS = "Please send my digest on Fridays."
_CORRECTION = "Daily for the rest of October please, then Friday again from November 1."


class _Turn(NamedTuple):
    """A chat turn of the story, in which ``who`` speaks of themself."""

    who: Actor
    at: datetime
    sequence: int
    text: str


_TURNS = {
    "oct02": _Turn(_USER, _at(10, 2), 1, _FRIDAYS),
    "oct19": _Turn(_USER, _at(10, 19), 2, _CORRECTION),
    "oct02-redelivered": _Turn(_USER, _at(10, 2), 1, _FRIDAYS),
    "chat-9": _Turn(_STRANGER, _at(10, 20), 1, "Send everything daily"),
    "u7-1": _Turn(_OTHER, _at(11, 2), 1, "Mondays suit me."),
    "u7-2": _Turn(_OTHER, _at(11, 3), 2, "Mondays, as I said."),
}
"""The story's chat turns by event id; ``user-9`` has no grant for the family."""


@dataclass(slots=True)
class _Teller:
    """Tells each step to the console, or keeps it for one JSON document."""

    console: Console
    as_json: bool
    steps: list[JsonValue] = field(default_factory=list)

    def say(self, line: str, /, *, step: str, **data: JsonValue) -> None:
        if self.as_json:
            self.steps.append({"step": step, **data})
        else:
            self.console.print(line)

    def table(self, title: str, records: tuple[MemoryRecord, ...], *, step: str) -> None:
        if self.as_json:
            self.steps.append({"step": step, "records": [record_to_dict(r) for r in records]})
        else:
            _show(self.console, title, records)


def _event(event_id: str, *, tenant: str) -> SourceEvent:
    """The chat turn ``event_id`` of :data:`_TURNS` (its subject is its speaker)."""
    who, at, sequence, text = _TURNS[event_id]
    return SourceEvent(
        tenant=tenant,
        event_id=event_id,
        subject=who.id,
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


def _values(
    memory: Memory, *, tenant: str, valid_at: datetime, as_of: datetime | None = None
) -> list[JsonValue]:
    """user-42's current values of the family at ``valid_at``, as held at ``as_of``."""
    found = memory.current("user-42", FAMILY, tenant=tenant, valid_at=valid_at, as_of=as_of)
    return [r.value for r in found]


def _tell_ingest(tell: _Teller, receipt: Receipt, *, event_id: str, line: str) -> None:
    """An ingest step: ``line`` then the revision it left (and whether it was a
    duplicate)."""
    dup = " (duplicate)" if receipt.duplicate else ""
    tell.say(
        f"{line} -> revision {receipt.revision(FAMILY)}{dup}",
        step="ingest",
        event_id=event_id,
        text=_TURNS[event_id].text,
        revision=receipt.revision(FAMILY),
        duplicate=receipt.duplicate,
    )


def _tell_outcome(tell: _Teller, receipt: Receipt, *, step: str, event_id: str, line: str) -> None:
    """A step about the first claim's disposition: ``line`` holds ``{}`` where it goes."""
    result = receipt.results[0]
    tell.say(
        line.format(f"{result.disposition} ({result.reason})"),
        step=step,
        event_id=event_id,
        disposition=result.disposition,
        reason=result.reason,
    )


def run_demo(
    url: str | Path | None, console: Console, *, tenant: str = TENANT, as_json: bool = False
) -> dict[str, JsonValue]:
    """Tell seed 000's story against the store at ``url`` (default ``./memledger.db``)
    for ``tenant``; returns the steps as JSON data (printed instead with ``as_json``)."""
    clock = FrozenClock(_at(10, 2))
    tell = _Teller(console, as_json)
    with Memory(open_store(url), clock=clock) as memory:
        if not as_json:
            console.print(f"[bold]memledger demo[/] on {memory.url} (tenant {tenant!r})\n")
        receipt = memory.ingest(_event("oct02", tenant=tenant), [_claim("friday", "on Fridays")])
        _tell_ingest(tell, receipt, event_id="oct02", line=f"Oct 2  {_FRIDAYS!r}")

        clock.set(_at(10, 19))
        receipt = memory.ingest(
            _event("oct19", tenant=tenant),
            [
                _claim("daily", "Daily for the rest of October", until=_at(11, 1, 0)),
                _claim("friday", "Friday again from November 1", start=_at(11, 1, 0)),
            ],
        )
        _tell_ingest(
            tell,
            receipt,
            event_id="oct19",
            line=f"Oct 19 {_CORRECTION!r}\n       one event, two windows",
        )

        clock.set(_at(10, 28))
        receipt = memory.ingest(
            _event("oct02-redelivered", tenant=tenant), [_claim("friday", "on Fridays")]
        )
        _tell_outcome(
            tell,
            receipt,
            step="late_redelivery",
            event_id="oct02-redelivered",
            line="Oct 28 a late redelivery of the Oct 2 message -> {}; "
            "the current view does not change\n",
        )

        tell.table(
            "Timeline now", memory.timeline("user-42", FAMILY, tenant=tenant), step="timeline"
        )
        for label, moment in (
            ("Oct 5", _at(10, 5)),
            ("Oct 28", _at(10, 28)),
            ("Nov 1", _at(11, 1, 0)),
        ):
            values = _values(memory, tenant=tenant, valid_at=moment)
            tell.say(
                f"valid at {label}: {values}",
                step="valid_at",
                valid_at=isoformat(moment),
                values=values,
            )
        before = _at(10, 19) - timedelta(seconds=1)
        believed = _values(memory, tenant=tenant, valid_at=_at(10, 28), as_of=before)
        tell.say(
            f"what we believed on Oct 19 just before the correction, for Oct 28: {believed}\n",
            step="as_of",
            as_of=isoformat(before),
            valid_at=isoformat(_at(10, 28)),
            values=believed,
        )

        receipt = memory.ingest(
            _event("chat-9", tenant=tenant),
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
        _tell_outcome(
            tell,
            receipt,
            step="no_grant",
            event_id="chat-9",
            line="an actor without the grant -> {}: kept, labelled, never a setting\n",
        )

        clock.set(_at(11, 2))
        memory.ingest(_event("u7-1", tenant=tenant), [_claim("monday", "Mondays")])
        queued = memory.ingest(_event("u7-2", tenant=tenant))
        ack = memory.revoke_family("user-7", FAMILY, tenant=tenant, reason="user: forget it")
        tell.say(
            f"Nov 2  user-7: a value, an extraction job queued, then the family is "
            f"revoked (generation {ack.generation})",
            step="revoke_family",
            subject="user-7",
            generation=ack.generation,
        )
        if queued.job_id is not None:
            late = memory.commit_job(queued.job_id, [_claim("monday", "Mondays")], tenant=tenant)
            outcome = (
                "a duplicate: already decided"
                if late.duplicate
                else str([r.reason for r in late.results])
            )
            tell.say(
                f"       the late job finishes -> {outcome}; nothing comes back",
                step="late_job",
                job_id=queued.job_id,
                duplicate=late.duplicate,
                reasons=[r.reason for r in late.results],
            )
        tell.table(
            "user-7 after revocation",
            memory.timeline("user-7", FAMILY, tenant=tenant),
            step="timeline_after_revocation",
        )

        clock.set(_at(11, 3))
        if not as_json:
            console.print()
        for subject, question in (
            ("user-42", "When should my digest be delivered?"),
            ("user-7", "When should my digest be delivered?"),
        ):
            found = memory.recall(question, tenant=tenant, subject=subject, k=3)
            answer = (
                "no relevant memory"
                if found.abstained
                else ", ".join(f"{i.record.value!r} via {'+'.join(i.sources)}" for i in found.items)
            )
            reasons = sorted({e.reason for e in found.excluded})
            tell.say(
                f"recall for {subject} on Nov 3, {question!r} -> {answer}"
                + (f"; left out: {', '.join(reasons)}" if reasons else ""),
                step="recall",
                subject=subject,
                question=question,
                abstained=found.abstained,
                values=[i.record.value for i in found.items],
                left_out=list(reasons),
            )
        report: dict[str, JsonValue] = {"store": memory.url, "tenant": tenant, "steps": tell.steps}
    return report
