"""Commands over the store: ``--db``, ``--tenant`` and ``--json`` declared once.

:func:`store_command` turns a function whose first parameter is a :class:`Call` into
the command Typer registers: its own options, then ``--db``, ``--tenant`` and
``--json``, in that order (``--help`` lists them last). The tenant is resolved before
the function runs (the option, else ``MEMLEDGER_TENANT``, else ``default``).
:func:`every_tenant_command` does the same for a command over every tenant, or over
the one ``--tenant`` names (a :class:`TenantsCall`; ``--tenant``, ``--db`` and
``--json``, in that order; ``MEMLEDGER_TENANT`` is not used).

The function opens the store with :meth:`Call.memory` and prints its result with
:meth:`Call.show` (a renderer of :mod:`~memledger.cli.render`, or JSON with
``--json``), :meth:`Call.listing` (the same, or one line when there is nothing to
list) or :meth:`Call.say` (one line, or JSON); :meth:`Call.answer` does both at once
(opens the store, acts on it, shows what came back). :func:`each` turns the JSON form
of one item into that of a list of them.
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
from memledger.cli.options import (
    AsJson,
    Db,
    OnlyTenant,
    Tenant,
    check_tenant_id,
    chosen_tenant,
)
from memledger.domain.records import JsonValue
from memledger.memory import Memory

P = ParamSpec("P")
T = TypeVar("T")

_DB = inspect.Parameter("db", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Db)
_JSON = inspect.Parameter(
    "as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=AsJson
)
_SHARED = (
    _DB,
    inspect.Parameter("tenant", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Tenant),
    _JSON,
)
"""The options every command over one tenant's store ends with."""
_EVERY_TENANT = (
    inspect.Parameter(
        "tenant", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OnlyTenant
    ),
    _DB,
    _JSON,
)
"""The options every command over every tenant (or one) ends with."""


def each(to_json: Callable[[T], JsonValue]) -> Callable[[Sequence[T]], JsonValue]:
    """The JSON form of a list of items, from that of one."""

    def listed(items: Sequence[T]) -> JsonValue:
        return [to_json(item) for item in items]

    return listed


@dataclass(frozen=True, slots=True, kw_only=True)
class _Answers:
    """One run of a command over the store: where it reads and how it answers."""

    ctx: typer.Context
    db: str | None
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

    def answer(
        self,
        act: Callable[[Memory], T],
        to_json: Callable[[T], JsonValue],
        draw: Callable[Concatenate[Console, T, P], object],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Open the store, ``act`` on it and show what came back: ``to_json`` of it with
        ``--json``, else ``draw(console, found, *args, **kwargs)``. Returns it."""
        with self.memory() as memory:
            found = act(memory)
        if self.as_json:
            render.print_json(to_json(found))
        else:
            draw(render.make_console(), found, *args, **kwargs)
        return found

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(_Answers):
    """One run of a command over the store, for the tenant it acts for."""

    tenant: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantsCall(_Answers):
    """One run of a command over every tenant (``tenant`` is ``None``) or one."""

    tenant: str | None


def store_command(command: Callable[Concatenate[Call, P], None]) -> Callable[..., None]:
    """The command for ``command(call, ...)``: its parameters after the :class:`Call`,
    then ``--db``, ``--tenant`` and ``--json``; its name and help are ``command``'s."""

    def start(ctx: typer.Context, db: str | None, tenant: str | None, as_json: bool) -> Call:
        return Call(ctx=ctx, db=db, tenant=chosen_tenant(ctx, tenant), as_json=as_json)

    return _command(command, _SHARED, start)


def every_tenant_command(
    command: Callable[Concatenate[TenantsCall, P], None],
) -> Callable[..., None]:
    """The command for ``command(call, ...)``: its parameters after the
    :class:`TenantsCall`, then ``--tenant`` (checked when given), ``--db`` and ``--json``;
    its name and help are ``command``'s."""

    def start(ctx: typer.Context, db: str | None, tenant: str | None, as_json: bool) -> TenantsCall:
        check_tenant_id(tenant)
        return TenantsCall(ctx=ctx, db=db, tenant=tenant, as_json=as_json)

    return _command(command, _EVERY_TENANT, start)


def _command(
    command: Callable[..., None],
    shared: tuple[inspect.Parameter, ...],
    start: Callable[[typer.Context, str | None, str | None, bool], _Answers],
) -> Callable[..., None]:
    """``command``'s own parameters after its first, then ``shared``; the first is
    what ``start`` makes of the context and the shared options."""
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
    clash = {p.name for p in own} & {"ctx", *(p.name for p in shared)}
    if clash:
        raise TypeError(f"{command.__name__} declares {sorted(clash)} itself")
    context = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
    )
    parameters = [context, *own, *shared]

    def run(
        ctx: typer.Context,
        *,
        db: str | None = None,
        tenant: str | None = None,
        as_json: bool = False,
        **given: object,
    ) -> None:
        command(start(ctx, db, tenant, as_json), **given)

    run.__name__ = command.__name__
    run.__qualname__ = command.__qualname__
    run.__module__ = command.__module__
    run.__doc__ = command.__doc__
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return run
