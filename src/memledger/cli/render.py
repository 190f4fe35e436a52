"""Human output of the CLI: rich tables. Machine output (``--json``) is :mod:`memledger.wire`.

Every cell is plain :class:`rich.text.Text`, so memory text that looks like rich
markup (``[bold]``) or emoji codes is printed as it is.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import get_args

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from memledger.domain.changes import Change, RollbackReceipt, UndoReceipt
from memledger.domain.records import (
    ForgetReceipt,
    HistoryEntry,
    Job,
    JsonValue,
    MemoryRecord,
    Receipt,
    ReviewItem,
    RevocationReceipt,
)
from memledger.freshness import Freshness
from memledger.index.lexical import entry_text
from memledger.read.packet import Packet
from memledger.read.recall import RecallResult
from memledger.read.trace import Replay
from memledger.wire import isoformat, record_to_dict
from memledger.write.compact import CompactionReceipt
from memledger.write.consolidate import ConsolidationReceipt
from memledger.write.erase import ErasureReceipt
from memledger.write.rederive import Rederivation
from memledger.write.worker import JobOutcome, WorkReport

PIPE_WIDTH = 200
"""Width of tables written to a pipe or file, where no terminal wraps them."""
ERROR_WIDTH = 200
"""Longer error messages are cut in tables (``--json`` has them whole)."""
JOB_OUTCOMES: tuple[JobOutcome, ...] = get_args(JobOutcome)


def make_console() -> Console:
    """A console on stdout that never interprets markup, emoji or highlighting in data."""
    terminal = sys.stdout.isatty()
    return Console(
        markup=False,
        emoji=False,
        highlight=False,
        width=None if terminal else PIPE_WIDTH,
    )


def print_json(value: JsonValue) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _text(value: JsonValue | datetime) -> Text:
    if isinstance(value, datetime):
        return Text(isoformat(value))
    if isinstance(value, str):
        return Text(value)
    return Text(json.dumps(value, ensure_ascii=False))


def _value(value: JsonValue) -> Text:
    """A claim value as JSON, so ``"1"`` and ``1`` stay apart."""
    return Text(json.dumps(value, ensure_ascii=False))


def _until(value: datetime | None) -> Text:
    return Text("open") if value is None else _text(value)


def _table(*columns: str) -> Table:
    table = Table()
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


# -- writes -----------------------------------------------------------------------------


def receipts(console: Console, items: Sequence[Receipt]) -> None:
    for receipt in items:
        _receipt(console, receipt)


def _receipt(console: Console, receipt: Receipt) -> None:
    head = f"event {receipt.event_id!r} (tenant {receipt.tenant!r}): {receipt.outcome}"
    if receipt.duplicate:
        head += " (duplicate: already processed, stored receipt)"
    console.print(Text(head))
    if receipt.outcome == "queued":
        console.print(Text(f"  extraction job {receipt.job_id!r} queued"))
        return
    if receipt.outcome == "review":
        console.print(Text(f"  review {receipt.review_id!r}: {receipt.reason}"))
        return
    if not receipt.results:
        console.print(Text("  no claims"))
        return
    revisions = {token.family: token for token in receipt.revisions}
    table = _table("family", "scope", "disposition", "memory id", "revision", "reason")
    for result in receipt.results:
        token = revisions.get(result.family)
        table.add_row(
            _text(result.family),
            _text(result.scope),
            _text(result.disposition),
            _text(result.memory_id or "-"),
            _text("-" if token is None else str(token.revision)),
            _text(result.reason or "-"),
        )
    console.print(table)


def revocation(console: Console, receipt: RevocationReceipt) -> None:
    console.print(
        Text(
            f"revoked {len(receipt.revoked)} record(s) of {receipt.family!r} for "
            f"{receipt.subject!r} (tenant {receipt.tenant!r}): reason {receipt.reason!r}"
        )
    )
    for memory_id in receipt.revoked:
        console.print(Text(f"  {memory_id}"))
    console.print(
        Text(
            f"family revision {receipt.revision}, generation {receipt.generation}, "
            f"acknowledged at {isoformat(receipt.acknowledged_at)}"
        )
    )
    if receipt.change_id is not None:
        console.print(Text(f"undo it with: memledger undo {receipt.change_id}"))
    for other in receipt.also:
        console.print(
            Text(
                f"also revoked {len(other.revoked)} record(s) of {other.family!r} for "
                f"{other.subject!r} that state the same words (generation {other.generation})"
            )
        )
    for memory_id in receipt.redacted:
        console.print(Text(f"re-issued without the words: {memory_id} (now revoked)"))


def forgotten(console: Console, receipt: ForgetReceipt) -> None:
    if not receipt.revocations:
        console.print(Text(f"event {receipt.event_id!r} is forgotten; nothing more to revoke"))
        return
    console.print(
        Text(
            f"forgot event {receipt.event_id!r} (tenant {receipt.tenant!r}): "
            f"reason {receipt.reason!r}, acknowledged at {isoformat(receipt.acknowledged_at)}"
        )
    )
    for item in receipt.revocations:
        console.print(
            Text(
                f"  revoked {len(item.revoked)} record(s) of {item.family!r} for "
                f"{item.subject!r} (generation {item.generation})"
            )
        )
    if receipt.change_id is not None:
        console.print(Text(f"undo it with: memledger undo {receipt.change_id}"))


def undone(console: Console, receipt: UndoReceipt) -> None:
    if receipt.duplicate:
        console.print(
            Text(f"{receipt.kind} {receipt.undid} was undone before ({receipt.change_id})")
        )
    else:
        console.print(
            Text(
                f"undid {receipt.kind} {receipt.undid} (tenant {receipt.tenant!r}) as "
                f"{receipt.change_id}: reason {receipt.reason!r}, acknowledged at "
                f"{isoformat(receipt.acknowledged_at)}"
            )
        )
    for memory_id in receipt.restored:
        console.print(Text(f"  restored {memory_id}"))
    for memory_id in receipt.closed:
        console.print(Text(f"  closed {memory_id}"))
    for missing in receipt.not_restored:
        console.print(Text(f"  not restored {missing.memory_id}: {missing.why}"))
    for event_id in receipt.unforgotten:
        console.print(Text(f"  event {event_id} may be used again"))


def rolled_back(console: Console, receipt: RollbackReceipt) -> None:
    if receipt.change_id is None:
        console.print(Text(f"{receipt.extractor} wrote nothing to take back"))
        return
    console.print(
        Text(
            f"rolled back {receipt.extractor} over {len(receipt.events)} event(s) as "
            f"{receipt.change_id}: {len(receipt.closed)} record(s) closed, "
            f"{len(receipt.restored)} restored, {len(receipt.rederived)} re-derived"
        )
    )
    for missing in receipt.not_restored:
        console.print(Text(f"  not restored {missing.memory_id}: {missing.why}"))
    for event_id in receipt.held:
        console.print(Text(f"  {event_id}: re-derived claims need review, none written"))
    console.print(Text(f"undo it with: memledger undo {receipt.change_id}"))


def compacted(console: Console, receipt: CompactionReceipt) -> None:
    if not receipt.sessions:
        console.print(Text(f"no session to compact before {receipt.before.isoformat()}"))
        return
    verb = "would compact" if receipt.dry_run else "compacted"
    table = _table("subject", "session", "turns", "from", "to", "summary")
    for c in receipt.sessions:
        table.add_row(
            _text(c.subject),
            _text(c.session),
            _text(str(len(c.covers))),
            _text(c.start.isoformat()),
            _text(c.end.isoformat()),
            _text(c.summary or "-"),
        )
    console.print(Text(f"{verb} {len(receipt.sessions)} session(s)"))
    console.print(table)
    if receipt.change_id is not None:
        console.print(Text(f"undo it with: memledger undo {receipt.change_id}"))


def consolidated(console: Console, receipt: ConsolidationReceipt) -> None:
    if not receipt.merges:
        console.print(Text(f"no near-duplicates in {receipt.families} families"))
        return
    verb = "would merge" if receipt.dry_run else "merged"
    table = _table("subject", "family", "kept", "duplicates", "into", "similarity")
    for m in receipt.merges:
        table.add_row(
            _text(m.subject),
            _text(m.family),
            _text(m.survivor),
            _text(", ".join(m.duplicates)),
            _text(m.into or "-"),
            _text(f"{m.similarity:.2f}"),
        )
    console.print(Text(f"{verb} {len(receipt.merges)} group(s) in {receipt.families} families"))
    console.print(table)
    if receipt.change_id is not None:
        console.print(Text(f"undo it with: memledger undo {receipt.change_id}"))


def change_log(console: Console, changes: Sequence[Change]) -> None:
    if not changes:
        console.print(Text("no recorded changes"))
        return
    table = _table("change id", "kind", "at", "families", "closed", "opened", "undone by", "reason")
    for change in changes:
        table.add_row(
            _text(change.change_id),
            _text(change.kind if change.undoes is None else f"undo of {change.undoes}"),
            _text(isoformat(change.at)),
            _text(", ".join(sorted({f"{p.subject}/{p.family}" for p in change.parts}))),
            _text(sum(len(p.closed) for p in change.parts)),
            _text(sum(len(p.opened) for p in change.parts)),
            _text(change.undone_by or "-"),
            _text(change.reason),
        )
    console.print(table)


def freshness(console: Console, found: Freshness) -> None:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} s"

    who = "every tenant" if found.tenant is None else f"tenant {found.tenant!r}"
    console.print(Text(f"freshness of {who} at {isoformat(found.at)}"))
    table = _table("figure", "value")
    rows = [
        ("extraction jobs queued", str(found.queued_jobs)),
        ("oldest queued", seconds(found.oldest_queued_seconds)),
        ("jobs done in the last hour", str(found.jobs_done)),
        ("extraction lag p50 / p95", f"{seconds(found.extraction_lag_p50)} / "
         f"{seconds(found.extraction_lag_p95)}"),
        ("index lag (outbox rows)", "-" if found.index_lag is None else str(found.index_lag)),
    ]  # fmt: skip
    if found.tenant is not None:
        rows.append(("erasures in the last hour (p95)", f"{found.erasures} "
                     f"({seconds(found.erasure_p95)})"))  # fmt: skip
    for name, value in rows:
        table.add_row(Text(name), Text(value))
    console.print(table)


def erasure(console: Console, receipt: ErasureReceipt) -> None:
    console.print(
        Text(
            f"erasure {receipt.erasure_id} of {receipt.scope} {receipt.target!r} (tenant "
            f"{receipt.tenant!r}): {len(receipt.events)} event(s), "
            f"{len(receipt.memory_ids)} record(s), reason {receipt.reason!r}, "
            f"requested at {isoformat(receipt.requested_at)}"
        )
    )
    table = Table(box=None, show_header=True)
    for column in ("store", "status", "at", "detail"):
        table.add_column(column)
    for entry in receipt.stores:
        style = "red" if entry.status == "failed" else None
        table.add_row(entry.store, entry.status, isoformat(entry.at), entry.detail, style=style)
    console.print(table)


# -- reads ------------------------------------------------------------------------------


def values(console: Console, records: Sequence[MemoryRecord], *, title: str, empty: str) -> None:
    """Current values or a timeline: one row per valid-time window."""
    if not records:
        console.print(Text(empty))
        return
    console.print(Text(title))
    table = _table(
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
            _text(r.memory_id),
            _text(r.scope),
            _value(r.value),
            _text(r.claim),
            _text(r.valid_from),
            _until(r.valid_until),
            _text(r.revision),
            _text(r.confidence),
            _text(f"{r.source_event_id} ({r.source_channel}, {r.source_actor_id})"),
        )
    console.print(table)


def history(console: Console, records: Sequence[MemoryRecord], *, title: str, empty: str) -> None:
    """Every record, closed ones included, with both time axes."""
    if not records:
        console.print(Text(empty))
        return
    console.print(Text(title))
    table = _table(
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
            _text(r.memory_id),
            _text(r.status),
            _text(r.kind),
            _text(r.scope),
            _value(r.value),
            Text(f"[{isoformat(r.valid_from)}, {_until(r.valid_until)})"),
            Text(f"[{isoformat(r.recorded_at)}, {_until(r.superseded_at)})"),
            _text(r.revision),
            _text(note or "-"),
        )
    console.print(table)


def changes(console: Console, entries: Sequence[HistoryEntry], *, title: str, empty: str) -> None:
    if not entries:
        console.print(Text(empty))
        return
    console.print(Text(title))
    table = _table("seq", "revision", "generation", "action", "memory id", "status", "at", "cause")
    for e in entries:
        table.add_row(
            _text(e.seq),
            _text(e.revision),
            _text(e.generation),
            _text(e.action),
            _text(e.memory_id),
            _text(e.status),
            _text(e.at),
            _text(e.cause),
        )
    console.print(table)


def record(console: Console, item: MemoryRecord) -> None:
    """One record, field by field."""
    console.print(Text(f"memory {item.memory_id!r}"))
    table = _table("field", "value")
    for key, value in record_to_dict(item).items():
        table.add_row(Text(key), _text("-" if value is None else value))
    console.print(table)


def reviews(console: Console, items: Sequence[ReviewItem], *, empty: str) -> None:
    if not items:
        console.print(Text(empty))
        return
    table = _table("review id", "event id", "subject", "claims", "created at", "state", "reason")
    for item in items:
        state = "open" if item.resolved_at is None else f"resolved: {item.resolution or '-'}"
        table.add_row(
            _text(item.review_id),
            _text(item.event_id),
            _text(item.subject),
            _text(len(item.claims)),
            _text(item.created_at),
            _text(state),
            _text(item.reason),
        )
    console.print(table)


def jobs(console: Console, items: Sequence[Job], *, empty: str) -> None:
    if not items:
        console.print(Text(empty))
        return
    table = _table(
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
            _text(job.job_id),
            _text(job.event_id),
            _text(job.status),
            _text(job.attempts),
            _text(_shorten(job.last_error) if job.last_error else "-"),
            _next_attempt(job),
            _text(job.created_at),
            _text(dict(job.generations)),
        )
    console.print(table)


def _shorten(text: str, limit: int = ERROR_WIDTH) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _next_attempt(job: Job) -> Text:
    if job.status == "done":
        return Text("-")
    if job.status == "failed":
        return Text("after retry-failed")
    return Text("now") if job.next_attempt_at is None else _text(job.next_attempt_at)


# -- the write path's work ------------------------------------------------------------


def work_report(console: Console, report: WorkReport, *, title: str) -> None:
    """A worker run: jobs by outcome, then the latest errors."""
    console.print(Text(title))
    table = _table("outcome", "jobs")
    for outcome in JOB_OUTCOMES:
        table.add_row(Text(outcome), _text(report.outcomes.get(outcome, 0)))
    console.print(table)
    if report.expired:
        console.print(Text(f"{report.expired} expired record(s) erased"))
    if report.indexed:
        console.print(Text(f"{report.indexed} outbox row(s) applied to the index"))
    if report.errors:
        console.print(Text(f"errors ({len(report.errors)}):"))
        for error in report.errors:
            console.print(Text(f"  {_shorten(error)}"))


def rederivation(console: Console, diff: Rederivation, *, tenant: str) -> None:
    """The dry-run diff of a re-derivation, one row per window, and that nothing was written."""
    console.print(
        Text(
            f"re-derivation of {diff.subject!r} (tenant {tenant!r}) with {diff.extractor} "
            f"over {diff.events} event(s)"
        )
    )
    if diff.empty:
        console.print(Text("no differences from the current timelines"))
    else:
        table = _table("change", "family", "scope", "value", "valid [from, until)", "source event")
        for label, found in (("added", diff.added), ("closed", diff.closed)):
            for r in found:
                table.add_row(
                    Text(label),
                    _text(r.family),
                    _text(r.scope),
                    _value(r.value),
                    _window(r),
                    _text(r.source_event_id),
                )
        for change in diff.changed:
            before, after = change.before, change.after
            table.add_row(
                Text("changed"),
                _text(before.family),
                _text(before.scope),
                _change(_value(before.value), _value(after.value)),
                _change(_window(before), _window(after)),
                _change(_text(before.source_event_id), _text(after.source_event_id)),
            )
        console.print(table)
    console.print(
        Text(
            f"{len(diff.added)} added, {len(diff.closed)} closed, {len(diff.changed)} changed, "
            f"{diff.unchanged} unchanged"
        )
    )
    console.print(Text("dry run: nothing was written to the store"))


def _window(r: MemoryRecord) -> Text:
    return Text(f"[{isoformat(r.valid_from)}, {_until(r.valid_until)})")


def _change(before: Text, after: Text) -> Text:
    """``before -> after``, or one of them when they are the same."""
    return after if before.plain == after.plain else Text(f"{before.plain} -> {after.plain}")


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
    if not values:
        console.print(Text(f"no write-path counters for tenant {tenant!r} yet"))
        return
    console.print(Text(f"write-path counters of tenant {tenant!r}"))
    table = _table("counter", "reason", "count")
    for name, count in sorted(values.items()):
        group, _, reason = name.partition(":")
        table.add_row(Text(_COUNTER_GROUPS.get(group, group)), Text(reason or "-"), _text(count))
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
        table = _table("score", "valid from", "memory id", "rev", "source event", "kind", "text")
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
                _shorten(
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
    if not found:
        console.print("no context traces")
        return
    table = _table("trace id", "created", "subject", "tokens", "memories", "request")
    for row in found:
        memories = row["memories"]
        table.add_row(
            str(row["trace_id"]),
            str(row["created_at"]),
            str(row["subject"] or "-"),
            str(row["tokens"]),
            str(len(memories) if isinstance(memories, list) else 0),
            _shorten(str(row["request"]), 60),
        )
    console.print(table)


def progress_bar(label: str = "{task.description}") -> Progress:
    """A transient progress bar on stderr: label, bar, done/total, time elapsed. Shown
    only when stderr is a terminal: piped or captured output stays clean."""
    console = Console(stderr=True)
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
