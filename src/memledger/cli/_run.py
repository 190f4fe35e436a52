"""How the CLI fails: one ``error: ...`` line on stderr and an exit code, never a traceback.
What it warns of (a store whose files other users may read) is one ``warning: ...``
line on stderr each, and the command goes on.

Exit codes: ``0`` success; ``2`` a caller mistake (bad input or options, a
missing file or tenant, not found, a conflict, an unmet revision floor, a refused
key or permission); ``1``
the store failed, or something unexpected happened; ``130`` interrupted.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import typer

from memledger._files import StoreFileModeWarning
from memledger.cli._help import HelpGroup
from memledger.errors import (
    AuthenticationError,
    ConflictError,
    InvalidInputError,
    MemledgerError,
    NotFoundError,
    PermissionDeniedError,
    RevisionNotMetError,
)
from memledger.settings import Settings

CALLER_MISTAKE = 2
FAILURE = 1


class CliError(Exception):
    """A caller mistake the CLI itself detects (a missing tenant, an unreadable file)."""

    exit_code = CALLER_MISTAKE


def exit_code(exc: MemledgerError) -> int:
    """``2`` for caller mistakes, ``1`` for store failures."""
    if isinstance(
        exc,
        InvalidInputError
        | NotFoundError
        | ConflictError
        | RevisionNotMetError
        | AuthenticationError
        | PermissionDeniedError,
    ):
        return CALLER_MISTAKE
    return FAILURE


def one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text).strip()


def _say(message: str) -> None:
    typer.echo(f"error: {one_line(message)}", err=True)


@contextmanager
def shown_warnings() -> Iterator[None]:
    """Show each :class:`StoreFileModeWarning` raised inside as a ``warning: ...``
    line on stderr (other warnings as Python shows them)."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, StoreFileModeWarning):
                typer.echo(f"warning: {one_line(str(message))}", err=True)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.simplefilter("always", StoreFileModeWarning)
        yield


def _debug() -> bool:
    try:
        return Settings.from_env(os.environ).debug
    except InvalidInputError:
        return False


def report(exc: BaseException) -> int:
    """Print the one line ``exc`` deserves and return the exit code; re-raise what is not ours."""
    if isinstance(exc, MemledgerError):
        _say(str(exc))
        return exit_code(exc)
    if isinstance(exc, CliError):
        _say(str(exc))
        return exc.exit_code
    if isinstance(exc, typer.TyperException):  # click's ClickException and UsageError
        _say(exc.format_message())
        return int(getattr(exc, "exit_code", FAILURE))
    if isinstance(exc, typer.Abort | EOFError):
        _say("aborted")
        return FAILURE
    if isinstance(exc, KeyboardInterrupt):
        _say("interrupted")
        return 130
    if isinstance(exc, Exception) and not _debug():
        _say(
            f"unexpected {type(exc).__name__}: {exc} "
            "(a bug in memledger; set MEMLEDGER_DEBUG=1 for a traceback)"
        )
        return FAILURE
    raise exc


class Group(HelpGroup):
    """The root command group: runs the CLI and maps every failure to :func:`report`."""

    def main(  # the signature click gives it
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            with shown_warnings():
                result = super().main(
                    args,
                    prog_name,
                    complete_var,
                    standalone_mode=False,
                    windows_expand_args=windows_expand_args,
                    **extra,
                )
            code = result if isinstance(result, int) else 0
        except SystemExit:
            raise
        except BaseException as exc:
            code = report(exc)
        if standalone_mode:
            sys.stdout.flush()
            sys.exit(code)
        return code
