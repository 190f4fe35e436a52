"""What the read commands print (:mod:`memledger.cli.reads`): values and timelines,
history, change entries, one record, reviews, jobs, counters, recall results, context
packets, their replays and traces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.text import Text

from memledger.cli.render._base import (
    cell,
    heading,
    json_cell,
    new_table,
    shorten,
    span,
    until_cell,
)
from memledger.domain.records import HistoryEntry, Job, JsonValue, MemoryRecord, ReviewItem
from memledger.index.lexical import entry_text
from memledger.read.packet import Packet
from memledger.read.recall import RecallResult
from memledger.read.trace import Replay
from memledger.wire import record_to_dict


def current(
    console: Console, records: Sequence[MemoryRecord], *, subject: str, family: str
) -> None:
    """The current value(s) of a family, one per scope."""
    title = f"current {family!r} of {subject!r}"
    if heading(
        console, records, title=title, empty=f"no current value of {_about(subject, family)}"
    ):
        _windows(console, records)


def timeline(
    console: Console, records: Sequence[MemoryRecord], *, subject: str, family: str
) -> None:
    """Every valid-time window of a family."""
    about = _about(subject, family)
    if heading(console, records, title=f"timeline of {about}", empty=f"no timeline of {about}"):
        _windows(console, records)


def _about(subject: str, family: str) -> str:
    """What a listing of one family of one subject is about, in its title."""
    return f"{family!r} for {subject!r}"


def _windows(console: Console, records: Sequence[MemoryRecord]) -> None:
    """Current values or a timeline: one row per valid-time window."""
    table = new_table(
        "memory id",
        "scope",
        "value",
        "statement",
        "valid from",
        "valid until",
        "revision",
        "confidence",
        "source event",
    )
    for r in records:
        table.add_row(
            cell(r.memory_id),
            cell(r.scope),
            json_cell(r.value),
            cell(r.claim),
            cell(r.valid_from),
            until_cell(r.valid_until),
            cell(r.revision),
            cell(r.confidence),
            cell(f"{r.source_event_id} ({r.source_channel}, {r.source_actor_id})"),
        )
    console.print(table)


def history(
    console: Console, records: Sequence[MemoryRecord], *, subject: str, family: str
) -> None:
    """Every record of a family, closed ones included, with both time axes."""
    about = _about(subject, family)
    if not heading(console, records, title=f"history of {about}", empty=f"no records of {about}"):
        return
    table = new_table(
        "memory id",
        "status",
        "kind",
        "scope",
        "value",
        "valid [from, until)",
        "recorded [at, until)",
        "revision",
        "note",
    )
    for r in records:
        note = r.exclusion or (f"cut from {r.supersedes}" if r.supersedes else "")
        table.add_row(
            cell(r.memory_id),
            cell(r.status),
            cell(r.kind),
            cell(r.scope),
            json_cell(r.value),
            span(r.valid_from, r.valid_until),
            span(r.recorded_at, r.superseded_at),
            cell(r.revision),
            cell(note or "-"),
        )
    console.print(table)


def changes(
    console: Console, entries: Sequence[HistoryEntry], *, subject: str, family: str
) -> None:
    """A family's change log, one row per entry."""
    about = _about(subject, family)
    if not heading(console, entries, title=f"changes of {about}", empty=f"no changes of {about}"):
        return
    table = new_table(
        "seq", "revision", "generation", "action", "memory id", "status", "at", "cause"
    )
    for e in entries:
        table.add_row(
            cell(e.seq),
            cell(e.revision),
            cell(e.generation),
            cell(e.action),
            cell(e.memory_id),
            cell(e.status),
            cell(e.at),
            cell(e.cause),
        )
    console.print(table)


def record(console: Console, item: MemoryRecord) -> None:
    """One record, field by field."""
    console.print(Text(f"memory {item.memory_id!r}"))
    table = new_table("field", "value")
    for key, value in record_to_dict(item).items():
        table.add_row(Text(key), cell("-" if value is None else value))
    console.print(table)


def reviews(console: Console, items: Sequence[ReviewItem], *, empty: str) -> None:
    if not heading(console, items, empty=empty):
        return
    table = new_table("review id", "event id", "subject", "claims", "created at", "state", "reason")
    for item in items:
        state = "open" if item.resolved_at is None else f"resolved: {item.resolution or '-'}"
        table.add_row(
            cell(item.review_id),
            cell(item.event_id),
            cell(item.subject),
            cell(len(item.claims)),
            cell(item.created_at),
            cell(state),
            cell(item.reason),
        )
    console.print(table)


def jobs(console: Console, items: Sequence[Job], *, empty: str) -> None:
    if not heading(console, items, empty=empty):
        return
    table = new_table(
        "job id",
        "event id",
        "status",
        "attempts",
        "last error",
        "next attempt",
        "created at",
        "generations",
    )
    for job in items:
        table.add_row(
            cell(job.job_id),
            cell(job.event_id),
            cell(job.status),
            cell(job.attempts),
            cell(shorten(job.last_error) if job.last_error else "-"),
            _next_attempt(job),
            cell(job.created_at),
            cell(dict(job.generations)),
        )
    console.print(table)


def _next_attempt(job: Job) -> Text:
    if job.status == "done":
        return Text("-")
    if job.status == "failed":
        return Text("after retry-failed")
    return Text("now") if job.next_attempt_at is None else cell(job.next_attempt_at)


_COUNTER_GROUPS = {
    "rejected": "rejected at commit",
    "extraction": "extraction errors",
    "gate": "dropped by gates",
    "extractor_dropped": "dropped by the extractor",
    "prefilter": "prefiltered",
    "commit": "commit failures",
}


def counters(console: Console, values: Mapping[str, int], *, tenant: str) -> None:
    """Write-path counters, grouped by what they count."""
    title = f"write-path counters of tenant {tenant!r}"
    if not heading(
        console, values, title=title, empty=f"no write-path counters for tenant {tenant!r} yet"
    ):
        return
    table = new_table("counter", "reason", "count")
    for name, count in sorted(values.items()):
        group, _, reason = name.partition(":")
        table.add_row(Text(_COUNTER_GROUPS.get(group, group)), Text(reason or "-"), cell(count))
    console.print(table)


def recall(console: Console, result: RecallResult) -> None:
    """The recalled memories, best first (in the order they happened when the question
    asks for an order), then what was left out and why."""
    if result.degraded:
        console.print(result.degraded, style="yellow")
    if result.abstained:
        console.print("no relevant memory")
    else:
        timed = result.order == "time"
        if timed:
            console.print("in the order they happened (the question asks for an order)")
        table = new_table("score", "valid from", "memory id", "rev", "source event", "kind", "text")
        for item in result.chronological() if timed else result.items:
            table.add_row(
                f"{item.score:.3f}",
                item.record.valid_from.date().isoformat(),
                item.record.memory_id,
                str(item.record.revision),
                item.record.source_event_id,
                item.record.kind
                if item.outdated_by is None and item.possibly_outdated_by is None
                else f"{item.record.kind} (outdated)"
                if item.outdated_by is not None
                else f"{item.record.kind} (possibly outdated)",
                shorten(
                    entry_text(item.record)
                    if item.passage is None or item.passage.whole
                    else f"... {item.passage.text} ...",
                    80,
                ),
            )
        console.print(table)
    for item in result.items:
        if item.outdated_by is not None:
            console.print(f"{item.record.memory_id} is outdated: replaced by {item.outdated_by}")
        elif item.possibly_outdated_by is not None:
            console.print(
                f"{item.record.memory_id} is possibly outdated: "
                f"{item.possibly_outdated_by}, said later, seems to change it"
            )
    if result.excluded:
        reasons = Counter(e.reason for e in result.excluded)
        listed = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        console.print(f"excluded after the canonical recheck: {listed}")
    if result.index_lag:
        console.print(f"index lag: {result.index_lag} outbox rows")


def packet(console: Console, built: Packet) -> None:
    """A context packet's text as the model gets it, then its trace line on stderr."""
    console.print(built.text, end="", soft_wrap=True)
    note = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
    routing = built.routing
    sources = [
        n
        for n, on in (
            ("memory", routing.memory),
            ("corpus", routing.corpus),
            ("long context", routing.long_context),
        )
        if on
    ]
    note.print(
        f"trace {built.trace_id} · {built.tokens} of {built.budget.total} tokens "
        f"({built.tokenizer}) · {len(built.memories)} memories · left out "
        f"{len(built.excluded)} · routed to {', '.join(sources)} "
        f"(specificity {routing.specificity:.2f})"
    )
    for line in built.notes:
        note.print(line)


def replay(
    console: Console, replayed: Replay, gated: Sequence[Mapping[str, JsonValue]] = ()
) -> None:
    """A packet rebuilt from its trace, and whether it is the one the model saw."""
    console.print(replayed.packet.text, end="", soft_wrap=True)
    note = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
    if replayed.matches:
        note.print(f"trace {replayed.packet.trace_id}: rebuilt exactly (sha256 matches)")
    else:
        note.print(f"trace {replayed.packet.trace_id}: NOT the same text as stored", style="red")
    if replayed.revoked:
        note.print(f"revoked since: {', '.join(replayed.revoked)}")
    if replayed.missing:
        note.print(f"no longer in the store: {', '.join(replayed.missing)}")
    for decision in gated:
        verdict = "ALLOWED" if decision["allowed"] else "DENIED"
        reasons = decision.get("reasons") or []
        why = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else ""
        note.print(f"gate {decision['decision_id']}: {decision['action']} {verdict} {why}".rstrip())


def traces(console: Console, found: Sequence[Mapping[str, JsonValue]]) -> None:
    if not heading(console, found, empty="no context traces"):
        return
    table = new_table("trace id", "created", "subject", "tokens", "memories", "request")
    for row in found:
        memories = row["memories"]
        table.add_row(
            str(row["trace_id"]),
            str(row["created_at"]),
            str(row["subject"] or "-"),
            str(row["tokens"]),
            str(len(memories) if isinstance(memories, list) else 0),
            shorten(str(row["request"]), 60),
        )
    console.print(table)
