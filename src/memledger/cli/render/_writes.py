"""What the write commands print (:mod:`memledger.cli.writes`): receipts of ingest,
revocation, forgetting, undo, rollback, compaction and consolidation; the change log;
freshness; erasure receipts; retention and quotas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from memledger.cli.render._base import cell, heading, new_table, undo_hint
from memledger.domain.changes import Change, NotRestored, RollbackReceipt, UndoReceipt
from memledger.domain.records import ForgetReceipt, JsonValue, Receipt, RevocationReceipt
from memledger.freshness import Freshness
from memledger.wire import isoformat
from memledger.write.compact import CompactionReceipt
from memledger.write.consolidate import ConsolidationReceipt
from memledger.write.erase import ErasureReceipt


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
    table = new_table("family", "scope", "disposition", "memory id", "revision", "reason")
    for result in receipt.results:
        token = revisions.get(result.family)
        table.add_row(
            cell(result.family),
            cell(result.scope),
            cell(result.disposition),
            cell(result.memory_id or "-"),
            cell("-" if token is None else str(token.revision)),
            cell(result.reason or "-"),
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
    undo_hint(console, receipt.change_id)
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
    undo_hint(console, receipt.change_id)


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
    _not_restored(console, receipt.not_restored)
    for event_id in receipt.unforgotten:
        console.print(Text(f"  event {event_id} may be used again"))


def _not_restored(console: Console, missing: Sequence[NotRestored]) -> None:
    for item in missing:
        console.print(Text(f"  not restored {item.memory_id}: {item.why}"))


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
    _not_restored(console, receipt.not_restored)
    for event_id in receipt.held:
        console.print(Text(f"  {event_id}: re-derived claims need review, none written"))
    undo_hint(console, receipt.change_id)


def compacted(console: Console, receipt: CompactionReceipt) -> None:
    if not receipt.sessions:
        console.print(Text(f"no session to compact before {receipt.before.isoformat()}"))
        return
    verb = "would compact" if receipt.dry_run else "compacted"
    table = new_table("subject", "session", "turns", "from", "to", "summary")
    for c in receipt.sessions:
        table.add_row(
            cell(c.subject),
            cell(c.session),
            cell(str(len(c.covers))),
            cell(c.start.isoformat()),
            cell(c.end.isoformat()),
            cell(c.summary or "-"),
        )
    _listed_change(console, f"{verb} {len(receipt.sessions)} session(s)", table, receipt.change_id)


def consolidated(console: Console, receipt: ConsolidationReceipt) -> None:
    if not receipt.merges:
        console.print(Text(f"no near-duplicates in {receipt.families} families"))
        return
    verb = "would merge" if receipt.dry_run else "merged"
    table = new_table("subject", "family", "kept", "duplicates", "into", "similarity")
    for m in receipt.merges:
        table.add_row(
            cell(m.subject),
            cell(m.family),
            cell(m.survivor),
            cell(", ".join(m.duplicates)),
            cell(m.into or "-"),
            cell(f"{m.similarity:.2f}"),
        )
    summary = f"{verb} {len(receipt.merges)} group(s) in {receipt.families} families"
    _listed_change(console, summary, table, receipt.change_id)


def _listed_change(console: Console, summary: str, table: Table, change_id: str | None) -> None:
    """A recorded change shown as a table: what it did, its rows, how to undo it."""
    console.print(Text(summary))
    console.print(table)
    undo_hint(console, change_id)


def change_log(console: Console, changes: Sequence[Change]) -> None:
    if not heading(console, changes, empty="no recorded changes"):
        return
    table = new_table(
        "change id", "kind", "at", "families", "closed", "opened", "undone by", "reason"
    )
    for change in changes:
        table.add_row(
            cell(change.change_id),
            cell(change.kind if change.undoes is None else f"undo of {change.undoes}"),
            cell(isoformat(change.at)),
            cell(", ".join(sorted({f"{p.subject}/{p.family}" for p in change.parts}))),
            cell(sum(len(p.closed) for p in change.parts)),
            cell(sum(len(p.opened) for p in change.parts)),
            cell(change.undone_by or "-"),
            cell(change.reason),
        )
    console.print(table)


def freshness(console: Console, found: Freshness) -> None:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} s"

    who = "every tenant" if found.tenant is None else f"tenant {found.tenant!r}"
    console.print(Text(f"freshness of {who} at {isoformat(found.at)}"))
    table = new_table("figure", "value")
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


def erasures(console: Console, receipts: Sequence[ErasureReceipt], *, empty: str = "") -> None:
    """Erasure receipts one after the other; ``empty`` (when given) if there is none."""
    if empty and not receipts:
        console.print(Text(empty))
    for receipt in receipts:
        erasure(console, receipt)


def retention(console: Console, held: Mapping[str, int], *, tenant: str) -> None:
    if not held:
        console.print(Text(f"tenant {tenant!r} keeps every kind until it is erased"))
    for name, kept in held.items():
        console.print(Text(f"{name}: {kept} day(s)"))


def quotas(console: Console, held: Mapping[str, JsonValue]) -> None:
    for name, value in held.items():
        console.print(Text(f"{name}: {'no limit' if value is None else value}"))
