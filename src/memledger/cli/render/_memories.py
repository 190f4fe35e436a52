"""What the short path's commands print (:mod:`memledger.cli.memories`): what an add
remembered, the nearest memories with their scores, a user's memories, and how one
memory came to be."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from memledger.cli.render._base import cell, heading, new_table
from memledger.domain.items import MemoryChange, MemoryItem
from memledger.write.messages import Added


def added(console: Console, done: Added, *, whose: str) -> None:
    """The turns an add remembered and the memories they hold now."""
    turns = len(done.event_ids)
    if done.duplicate:
        line = f"already remembered: {turns} turn(s) of {whose}, nothing new written"
    else:
        line = f"remembered {turns} turn(s) of {whose}"
    if done.skipped:
        line += f" ({done.skipped} system or developer message(s) left out)"
    console.print(Text(line))
    if done.pending:
        console.print(
            Text(f"{len(done.pending)} turn(s) wait for extraction: a worker reads them later")
        )
    if not done.memories:
        return
    table = new_table("memory id", "kind", "family", "memory")
    for item in done.memories:
        table.add_row(cell(item.id), cell(item.kind), cell(item.family), cell(item.memory))
    console.print(table)


def found(console: Console, items: Sequence[MemoryItem], *, query: str) -> None:
    """The memories nearest to ``query``, best first, with their scores; ``yes`` under
    relevant where recall would hand the memory out."""
    if not heading(console, items, empty=f"no memories to search for {query!r}"):
        return
    table = new_table("#", "score", "relevant", "memory", "kind", "whose", "memory id")
    for rank, item in enumerate(items, 1):
        table.add_row(
            cell(str(rank)),
            cell("-" if item.score is None else f"{item.score:.3f}"),
            cell("yes" if item.relevant else "-"),
            cell(item.memory),
            cell(item.kind),
            cell(_whose(item)),
            cell(item.id),
        )
    console.print(table)
    if not any(item.relevant for item in items):
        console.print(Text("none is relevant: these are only the nearest there are"))


def listed(console: Console, items: Sequence[MemoryItem], *, whose: str) -> None:
    """What a user's (or an agent's) memory holds now, newest first."""
    if not heading(console, items, empty=f"no memories of {whose}", title=f"memories of {whose}"):
        return
    table = new_table("memory id", "kind", "family", "memory", "recorded", "session")
    for item in items:
        shown = (item.id, item.kind, item.family, item.memory, item.created_at, item.session)
        table.add_row(*(cell("-" if value is None else value) for value in shown))
    console.print(table)


def memory_history(console: Console, changes: Sequence[MemoryChange], *, memory_id: str) -> None:
    """How one memory came to be and what became of it, oldest first."""
    title = f"history of {memory_id}"
    if not heading(console, changes, empty=f"no history of {memory_id}", title=title):
        return
    table = new_table("at", "action", "status", "memory id", "memory", "cause")
    for change in changes:
        note = f" ({change.note})" if change.note else ""
        table.add_row(
            cell(change.at),
            cell(change.action),
            cell(change.status),
            cell(change.memory_id),
            cell("(erased)" if change.memory is None else change.memory),
            cell(change.cause + note),
        )
    console.print(table)


def _whose(item: MemoryItem) -> str:
    if item.user_id is not None:
        return item.user_id
    return f"agent:{item.agent_id}"
