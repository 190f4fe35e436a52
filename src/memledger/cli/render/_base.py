"""What every renderer is made of: the console (:func:`make_console`), JSON output
(:func:`print_json`), the progress bar (:func:`progress_bar`), cells (:func:`cell`,
:func:`json_cell`, :func:`until_cell`, :func:`span`, :func:`shorten`), tables
(:func:`new_table`) and the lines many listings share (:func:`heading`,
:func:`undo_hint`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sized
from datetime import datetime

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from memledger.domain.records import JsonValue
from memledger.wire import isoformat

PIPE_WIDTH = 200
"""Width of tables written to a pipe or file, where no terminal wraps them."""
ERROR_WIDTH = 200
"""Longer error messages are cut in tables (``--json`` has them whole)."""


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


def cell(value: JsonValue | datetime) -> Text:
    if isinstance(value, datetime):
        return Text(isoformat(value))
    if isinstance(value, str):
        return Text(value)
    return Text(json.dumps(value, ensure_ascii=False))


def json_cell(value: JsonValue) -> Text:
    """A claim value as JSON, so ``"1"`` and ``1`` stay apart."""
    return Text(json.dumps(value, ensure_ascii=False))


def until_cell(value: datetime | None) -> Text:
    return Text("open") if value is None else cell(value)


def span(start: datetime, end: datetime | None) -> Text:
    """A half-open interval, ``[start, end)``; an open end is ``open``."""
    return Text(f"[{isoformat(start)}, {until_cell(end)})")


def new_table(*columns: str) -> Table:
    table = Table()
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def shorten(text: str, limit: int = ERROR_WIDTH) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def heading(console: Console, found: Sized, *, empty: str, title: str | None = None) -> bool:
    """Start a listing: ``empty`` when nothing was found (then ``False``: nothing more to
    print), else its ``title`` when it has one."""
    if not found:
        console.print(Text(empty))
        return False
    if title is not None:
        console.print(Text(title))
    return True


def undo_hint(console: Console, change_id: str | None) -> None:
    """How to undo a recorded change, when there is one."""
    if change_id is not None:
        console.print(Text(f"undo it with: memledger undo {change_id}"))


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
