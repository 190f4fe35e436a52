"""``--help`` of every command: paragraphs the terminal wraps (no line broken where the
docstring's source was, mid-sentence), and arguments named in capitals in the usage
line."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest
import typer

from cli_helpers import run
from memledger.cli import app
from memledger.cli._help import reflow

_ITEM = re.compile(r"(?:[*\-\u2022]|\d+[.)])\s")


def commands() -> Iterator[tuple[str, ...]]:
    """The path of every command and group, the root's ``()`` first."""

    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


COMMANDS = list(commands())


def help_at(path: tuple[str, ...], width: int) -> list[str]:
    result = run([*path, "--help"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def description(lines: list[str]) -> list[str]:
    """The help text between the usage line and the first panel, each line stripped."""
    usage = next(n for n, line in enumerate(lines) if "Usage:" in line)
    start = next(n for n in range(usage, len(lines)) if not lines[n].strip())  # usage wraps
    text = []
    for line in lines[start:]:
        if line.lstrip().startswith("\u256d"):  # the first panel's top left corner
            break
        text.append(line.strip())
    while text and not text[-1]:
        text.pop()
    return text


def paragraphs(lines: list[str]) -> list[str]:
    """The text's paragraphs, each as one line (list items apart)."""
    found: list[str] = []
    for line, before in zip(lines, ["", *lines], strict=False):
        if line and before and not _ITEM.match(line):
            found[-1] += f" {line}"
        elif line:
            found.append(line)
    return found


def hard_breaks(lines: list[str], width: int) -> list[tuple[str, str]]:
    """Pairs of lines where the next one's first word would have fit on the line before:
    a break the terminal's wrapping did not make."""
    room = width - 2  # the help text is padded by one column on each side
    return [
        (line, after)
        for line, after in itertools.pairwise(lines)
        if line
        and after
        and not _ITEM.match(after)
        and len(line) + 1 + len(after.split()[0]) <= room
    ]


def test_every_command_is_found() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"", "add", "search", "memories", "delete", "history", "serve", "keys create"} <= names
    assert len(COMMANDS) > 50


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "memledger")
def test_help_paragraphs_are_wrapped_by_the_terminal(path: tuple[str, ...]) -> None:
    narrow, normal, wide = (description(help_at(path, width)) for width in (60, 80, 120))
    for text, width in ((narrow, 60), (normal, 80), (wide, 120)):
        assert text, path
        assert hard_breaks(text, width) == [], (width, path)
    # the same paragraphs, reflowed: one too long for a narrow line takes fewer lines
    # when there is room
    assert paragraphs(wide) == paragraphs(narrow)
    if any(len(paragraph) > 60 - 2 for paragraph in paragraphs(narrow)):
        assert len(wide) < len(narrow)
    else:
        assert len(wide) == len(narrow)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "memledger")
def test_usage_names_arguments_in_capitals(path: tuple[str, ...]) -> None:
    (usage,) = [line for line in help_at(path, 200) if "Usage:" in line]
    assert "{" not in usage and "}" not in usage, usage
    assert not re.search(r"\s\[?[a-z_]+\]?(\.\.\.)?(\s|$)", usage.split("[OPTIONS]")[-1]), usage


def test_recall_s_usage_says_query() -> None:
    (usage,) = [line for line in help_at(("recall",), 80) if "Usage:" in line]
    assert usage.split() == ["Usage:", "memledger", "recall", "[OPTIONS]", "QUERY"]
    (usage,) = [line for line in help_at(("history",), 80) if "Usage:" in line]
    assert usage.split()[-2:] == ["SUBJECT|MEMORY_ID", "[FAMILY]"]


def test_options_help_is_one_paragraph() -> None:
    """An option's help wraps in its table cell: a line break in it would show."""
    root = typer.main.get_command(app)
    for path in COMMANDS:
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            assert "\n" not in (getattr(param, "help", None) or ""), (path, param.name)


def test_reflow_joins_lines_and_keeps_paragraphs_lists_and_marked_blocks() -> None:
    text = """First line
    goes on.

    A paragraph wrapped
    in the source.

    * one item
      continued
    * another
    1. numbered

    \b
    kept   as
    written
    """
    assert reflow(text) == (
        "First line goes on.\n\n"
        "A paragraph wrapped in the source.\n\n"
        "* one item continued\n* another\n1. numbered\n\n"
        "\b\nkept   as\nwritten"
    )
    assert reflow(None) is None
