"""What the commands of the write path's work print (:mod:`memledger.cli.work`): a
worker run's report and a re-derivation's dry-run diff."""

from __future__ import annotations

from typing import get_args

from rich.console import Console
from rich.text import Text

from memledger.cli.render._base import cell, json_cell, new_table, shorten, span
from memledger.domain.records import MemoryRecord
from memledger.write.rederive import Rederivation
from memledger.write.worker import JobOutcome, WorkReport

JOB_OUTCOMES: tuple[JobOutcome, ...] = get_args(JobOutcome)


def work_report(console: Console, report: WorkReport, *, title: str) -> None:
    """A worker run: jobs by outcome, then the latest errors."""
    console.print(Text(title))
    table = new_table("outcome", "jobs")
    for outcome in JOB_OUTCOMES:
        table.add_row(Text(outcome), cell(report.outcomes.get(outcome, 0)))
    console.print(table)
    if report.expired:
        console.print(Text(f"{report.expired} expired record(s) erased"))
    if report.indexed:
        console.print(Text(f"{report.indexed} outbox row(s) applied to the index"))
    if report.errors:
        console.print(Text(f"errors ({len(report.errors)}):"))
        for error in report.errors:
            console.print(Text(f"  {shorten(error)}"))


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
        table = new_table(
            "change", "family", "scope", "value", "valid [from, until)", "source event"
        )
        for label, found in (("added", diff.added), ("closed", diff.closed)):
            for r in found:
                table.add_row(
                    Text(label),
                    cell(r.family),
                    cell(r.scope),
                    json_cell(r.value),
                    _window(r),
                    cell(r.source_event_id),
                )
        for change in diff.changed:
            before, after = change.before, change.after
            table.add_row(
                Text("changed"),
                cell(before.family),
                cell(before.scope),
                _change(json_cell(before.value), json_cell(after.value)),
                _change(_window(before), _window(after)),
                _change(cell(before.source_event_id), cell(after.source_event_id)),
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
    return span(r.valid_from, r.valid_until)


def _change(before: Text, after: Text) -> Text:
    """``before -> after``, or one of them when they are the same."""
    return after if before.plain == after.plain else Text(f"{before.plain} -> {after.plain}")
