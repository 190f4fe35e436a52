"""Commands over the store acting for one tenant: ``--db``, ``--tenant`` and ``--json``
declared once.

:func:`store_command` turns a function whose first parameter is a :class:`Call` into
the command Typer registers: its own options, then ``--db``, ``--tenant`` and
``--json``, in that order (``--help`` lists them last). The tenant is resolved before
the function runs (the option, else ``MEMLEDGER_TENANT``, else a usage error); the
function opens the store with :meth:`Call.memory` and prints its result with
:meth:`Call.show` (a renderer of :mod:`~memledger.cli.render`, or JSON with
``--json``), :meth:`Call.listing` (the same, or one line when there is nothing to
list) or :meth:`Call.say` (one line, or JSON).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

import typer
from rich.console import Console

from memledger.cli import render
from memledger.cli._app import open_memory
from memledger.cli.options import AsJson, Db, Tenant, require_tenant
from memledger.domain.records import JsonValue
from memledger.memory import Memory

P = ParamSpec("P")
T = TypeVar("T")

_SHARED = (
    inspect.Parameter("db", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Db),
    inspect.Parameter("tenant", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Tenant),
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=AsJson),
)
"""The options every command over the store ends with."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One run of a command over the store: the tenant it acts for and how it answers."""

    ctx: typer.Context
    db: str | None
    tenant: str
    as_json: bool

    def memory(self, *, create: bool = False) -> AbstractContextManager[Memory]:
        """The store ``--db`` names (see :func:`~memledger.cli._app.open_memory`)."""
        return open_memory(self.ctx, self.db, create=create)

    def show(
        self,
        data: JsonValue,
        draw: Callable[Concatenate[Console, P], object],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> None:
        """``data`` as JSON with ``--json``, else ``draw(console, *args, **kwargs)``."""
        if self.as_json:
            render.print_json(data)
        else:
            draw(render.make_console(), *args, **kwargs)

    def listing(
        self,
        data: JsonValue,
        items: Sequence[T],
        draw: Callable[[Console, Sequence[T]], object],
        *,
        empty: str,
    ) -> None:
        """``data`` as JSON with ``--json``; else ``draw(console, items)``, or ``empty``
        as one line when there are no ``items``."""
        if self.as_json:
            render.print_json(data)
        elif not items:
            typer.echo(empty)
        else:
            draw(render.make_console(), items)

    def say(self, data: JsonValue, line: str) -> None:
        """``data`` as JSON with ``--json``, else ``line`` as it is."""
        if self.as_json:
            render.print_json(data)
        else:
            typer.echo(line)


def store_command(command: Callable[Concatenate[Call, P], None]) -> Callable[..., None]:
    """The command for ``command(call, ...)``: its parameters after the :class:`Call`,
    then ``--db``, ``--tenant`` and ``--json``; its name and help are ``command``'s."""
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
    clash = {p.name for p in own} & {"ctx", *(p.name for p in _SHARED)}
    if clash:
        raise TypeError(f"{command.__name__} declares {sorted(clash)} itself")
    context = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
    )
    parameters = [context, *own, *_SHARED]
    invoke: Callable[..., None] = command  # with the options Typer parsed, by name

    def run(
        ctx: typer.Context,
        *,
        db: str | None = None,
        tenant: str | None = None,
        as_json: bool = False,
        **given: object,
    ) -> None:
        call = Call(ctx=ctx, db=db, tenant=require_tenant(ctx, tenant), as_json=as_json)
        invoke(call, **given)

    run.__name__ = command.__name__
    run.__qualname__ = command.__qualname__
    run.__module__ = command.__module__
    run.__doc__ = command.__doc__
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return run
