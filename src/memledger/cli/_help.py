"""How ``--help`` reads: paragraphs the terminal wraps, and arguments named in capitals.

Typer joins the lines of a docstring's first paragraph but keeps the line breaks of the
others, so a paragraph wrapped at the source's width is broken again mid-sentence in a
narrower or wider terminal. :func:`reflow` joins the lines of every paragraph; blank
lines between paragraphs stay, as do list items (``*``, ``-``, ``1.``: one a line) and
blocks marked ``\\b`` (kept as written). Typer's usage line writes a required argument as
``{name}``; :class:`Command` writes it as click does, ``NAME`` (``[NAME]`` when
optional), with the argument's metavar, else its name in capitals, in the arguments
panel too.

:func:`use_help_classes` gives every command and group of an app these classes; the
root group (:class:`memledger.cli._run.Group`) is a :class:`HelpGroup` itself.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder

__all__ = ["Command", "HelpGroup", "reflow", "use_help_classes"]

_ITEM = re.compile(r"(?:[*\-\u2022]|\d+[.)])\s")
"""The start of a list item: it begins a line of its own."""
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


def reflow(text: str | None) -> str | None:
    """``text`` (a docstring) with the lines of each paragraph joined, so that the
    terminal wraps them; paragraph breaks, list items and ``\\b`` blocks stay."""
    if text is None:
        return None
    return "\n\n".join(_paragraph(p) for p in _PARAGRAPHS.split(inspect.cleandoc(text)))


def _paragraph(text: str) -> str:
    if text.startswith("\b"):
        return text
    lines: list[str] = []
    for line in (raw.strip() for raw in text.splitlines()):
        if lines and not _ITEM.match(line):
            lines[-1] += f" {line}"
        else:
            lines.append(line)
    return "\n".join(lines)


def _usage_name(param: Any) -> str:
    """An argument in the usage line: ``NAME``, ``[NAME]`` when optional, ``...`` after
    it when it takes several values."""
    name = str(param.metavar or (param.name or "").upper())
    if param.nargs != 1:
        name += "..."
    return name if param.required else f"[{name}]"


class Command(TyperCommand):
    """A command whose help is reflowed and whose arguments are named in capitals."""

    def __init__(self, name: str | None, **options: Any) -> None:
        options["help"] = reflow(options.get("help"))
        for param in options.get("params") or ():
            if param.param_type_name == "argument" and param.metavar is None:
                param.metavar = (param.name or "").upper()
        super().__init__(name, **options)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_usage_name(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class HelpGroup(TyperGroup):
    """A group of commands whose help is reflowed."""

    def __init__(self, **options: Any) -> None:
        options["help"] = reflow(options.get("help"))
        super().__init__(**options)


def use_help_classes(app: typer.Typer) -> None:
    """Make every command of ``app`` a :class:`Command` and every group under it a
    :class:`HelpGroup` (those that chose no class of their own), its groups' too."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = Command
    for group in app.registered_groups:
        if isinstance(group.cls, DefaultPlaceholder) or group.cls in (None, TyperGroup):
            group.cls = HelpGroup
        if group.typer_instance is not None:
            use_help_classes(group.typer_instance)
