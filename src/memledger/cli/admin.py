"""The service's administration commands: ``keys``, ``schema`` and ``reviews``.

``memledger keys create`` prints a new API key's token once (only its hash is
stored); ``keys list`` and ``keys revoke`` never show one. ``memledger schema``
lists and registers the claim families of a tenant (``memledger review``, the
older command, lists the review queue; ``memledger reviews`` also resolves it).
Every command takes ``--db``, ``--tenant`` and ``--json`` like the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Literal, cast, get_args

import typer
from rich.table import Table
from rich.text import Text

from memledger.cli import render
from memledger.cli._run import CliError
from memledger.cli.options import (
    AsJson,
    Db,
    Subject,
    Tenant,
    ValidAt,
    check_store_path,
    require_tenant,
    store_url,
)
from memledger.domain.families import Family
from memledger.domain.keys import ApiKey, KeyRole, PrincipalKind
from memledger.domain.records import KINDS, Kind, ReviewDecision, ReviewResolution
from memledger.memory import Memory
from memledger.wire import (
    family_to_dict,
    isoformat,
    key_to_dict,
    possible_update_to_dict,
    review_resolution_to_dict,
    review_to_dict,
)

__all__ = ["keys", "reviews", "schema"]

keys = typer.Typer(
    help="API keys: each bound to one tenant, one actor and its grants.", no_args_is_help=True
)
schema = typer.Typer(
    help="The claim families of a tenant: list them, register new ones.", no_args_is_help=True
)
reviews = typer.Typer(
    help="The review queue: list held batches, accept or reject them; list the updates"
    " extraction may have missed.",
    no_args_is_help=True,
)


@contextmanager
def _memory(ctx: typer.Context, db: str | None, *, create: bool = False) -> Iterator[Memory]:
    url = store_url(ctx, db)
    check_store_path(url)
    memory = Memory.open(url, create=create)
    try:
        yield memory
    finally:
        memory.close()


def _table(*columns: str) -> Table:
    table = Table()
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _choice(value: str, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise CliError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    return value


# -- keys -------------------------------------------------------------------------------


@keys.command("create")
def keys_create(
    ctx: typer.Context,
    *,
    actor: Annotated[
        str, typer.Option("--actor", metavar="ACTOR", help="Who the key acts as, e.g. user-42.")
    ],
    principal: Annotated[
        str, typer.Option("--principal", help="What the actor is: user, agent or service.")
    ] = "user",
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="read (reads only), write (also writes as the actor) or admin (also keys, "
            "families and reviews).",
        ),
    ] = "write",
    grant: Annotated[
        list[str] | None,
        typer.Option(
            "--grant",
            metavar="FAMILY[:SCOPE]",
            help="A family (and scope) the actor may set; repeat for several; '*' for all.",
        ),
    ] = None,
    label: Annotated[str, typer.Option("--label", help="A note on what the key is for.")] = "",
    reads: Annotated[
        list[str] | None,
        typer.Option(
            "--reads",
            metavar="agent:ID",
            help="Another agent's private namespace the key may read; repeat for several.",
        ),
    ] = None,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Create an API key and print its token. The token is shown once: only its hash is
    stored, so it cannot be retrieved later (revoke the key and create another)."""
    who = require_tenant(ctx, tenant)
    kind = cast(PrincipalKind, _choice(principal, "--principal", get_args(PrincipalKind)))
    level = cast(KeyRole, _choice(role, "--role", get_args(KeyRole)))
    with _memory(ctx, db, create=True) as memory:
        key, token = memory.create_key(
            who,
            actor,
            principal=kind,
            role=level,
            grants=grant or (),
            label=label,
            reads=reads or (),
        )
    if as_json:
        render.print_json({"key": key_to_dict(key), "token": token, "shown_once": True})
        return
    grants = ", ".join(sorted(str(g) for g in key.grants)) or "none"
    typer.echo(
        f"created API key {key.key_id} for {key.principal} {key.actor_id!r} of tenant "
        f"{key.tenant!r} (role {key.role}; grants: {grants})"
    )
    typer.echo(f"token: {token}")
    typer.echo("this token is shown once and cannot be retrieved: store it now")


def _keys_table(found: tuple[ApiKey, ...]) -> Table:
    table = _table("key id", "actor", "principal", "role", "grants", "created", "state", "label")
    for key in found:
        state = "active" if key.revoked_at is None else f"revoked {isoformat(key.revoked_at)}"
        table.add_row(
            Text(key.key_id),
            Text(key.actor_id),
            Text(key.principal),
            Text(key.role),
            Text(", ".join(sorted(str(g) for g in key.grants)) or "-"),
            Text(isoformat(key.created_at)),
            Text(state),
            Text(key.label or "-"),
        )
    return table


@keys.command("list")
def keys_list(
    ctx: typer.Context, *, db: Db = None, tenant: Tenant = None, as_json: AsJson = False
) -> None:
    """The tenant's API keys, revoked ones included (never their tokens)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        found = memory.keys(who)
    if as_json:
        render.print_json([key_to_dict(k) for k in found])
    elif not found:
        typer.echo(f"no API keys for tenant {who!r}")
    else:
        render.make_console().print(_keys_table(found))


@keys.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    *,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id, mlk_...")],
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Revoke an API key: from now on it authenticates nothing. Revoking again is a no-op;
    the tenant's last live admin key is not revoked (create another admin key first)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        key = memory.revoke_key(who, key_id)
    if as_json:
        render.print_json(key_to_dict(key))
    else:
        assert key.revoked_at is not None
        typer.echo(f"revoked API key {key.key_id} of tenant {who!r} at {isoformat(key.revoked_at)}")


# -- schema -----------------------------------------------------------------------------


def _source(builtin: bool) -> Literal["code", "registered"]:
    return "code" if builtin else "registered"


@schema.command("list")
def schema_list(
    ctx: typer.Context, *, db: Db = None, tenant: Tenant = None, as_json: AsJson = False
) -> None:
    """Every claim family the tenant's claims may name: the built-in ones and those
    registered for the tenant."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        families = memory.families_of(who)
        builtin = set(memory.schema.families)
    rows = [
        (f, _source(f.name in builtin))
        for f in sorted(families.families.values(), key=lambda f: f.name)
    ]
    if as_json:
        render.print_json([family_to_dict(f, source=source) for f, source in rows])
        return
    table = _table("family", "kinds", "own say", "source", "description")
    for family, source in rows:
        table.add_row(
            Text(family.name),
            Text(", ".join(sorted(family.kinds))),
            Text("yes" if family.own_say else "no"),
            Text(source),
            Text(family.description or "-"),
        )
    render.make_console().print(table)


@schema.command("register")
def schema_register(
    ctx: typer.Context,
    *,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The family's name, e.g. diet.")],
    kinds: Annotated[
        str,
        typer.Option(
            "--kinds", metavar="KIND,...", help="What it holds: preference, fact, procedure, ..."
        ),
    ],
    description: Annotated[
        str, typer.Option("--description", help="What the family holds, for people and models.")
    ] = "",
    own_say: Annotated[
        bool,
        typer.Option(
            "--own-say",
            help="The subject's own say: its authenticated user turns set it without a grant.",
        ),
    ] = False,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Register a claim family for the tenant (stored: every process sees it). The same
    definition again is a no-op; another definition of an existing name is refused."""
    who = require_tenant(ctx, tenant)
    wanted = [k.strip() for k in kinds.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in KINDS]
    if not wanted or unknown:
        raise CliError(
            f"--kinds takes a comma-separated list of {', '.join(sorted(KINDS))}; got {kinds!r}"
        )
    chosen = frozenset(cast(Kind, k) for k in wanted)
    family = Family(name=name, kinds=chosen, description=description, own_say=own_say)
    with _memory(ctx, db, create=True) as memory:
        found = memory.register_family(who, family)
        source = _source(found.name in memory.schema.families)
    if as_json:
        render.print_json(family_to_dict(found, source=source))
    else:
        typer.echo(
            f"family {found.name!r} of tenant {who!r}: kinds {', '.join(sorted(found.kinds))}"
            f"{', own say' if found.own_say else ''} ({source})"
        )


# -- reviews ----------------------------------------------------------------------------


@reviews.command("list")
def reviews_list(
    ctx: typer.Context,
    *,
    include_resolved: Annotated[
        bool, typer.Option("--all", help="Include resolved items.")
    ] = False,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Events whose batch waits for review (they changed nothing yet); --all adds the
    resolved ones, with who decided and why."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        items = memory.reviews(tenant=who, open_only=not include_resolved)
    if as_json:
        render.print_json([review_to_dict(i) for i in items])
        return
    if not items:
        typer.echo("no review items")
        return
    table = _table("review id", "event id", "subject", "claims", "state", "reason")
    for item in items:
        state = (
            "open"
            if item.resolution is None
            else f"{item.resolution} by {item.resolved_by}: {item.resolution_reason}"
        )
        table.add_row(
            Text(item.review_id),
            Text(item.event_id),
            Text(item.subject),
            Text(str(len(item.claims))),
            Text(state),
            Text(item.reason),
        )
    render.make_console().print(table)


@reviews.command("updates")
def reviews_updates(
    ctx: typer.Context,
    subject: Subject,
    *,
    valid_at: ValidAt = None,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Later turns that may change a subject's current values where no claim did
    (possible updates not understood): fix the extraction, then ingest the correction
    or re-derive. Read-only."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        items = memory.possible_updates(subject, tenant=who, valid_at=valid_at)
    if as_json:
        render.print_json([possible_update_to_dict(i) for i in items])
        return
    if not items:
        typer.echo("no possible updates")
        return
    table = _table("family", "current value", "since", "later turn", "said", "reason")
    for item in items:
        text = item.turn.value.get("text") if isinstance(item.turn.value, dict) else None
        table.add_row(
            Text(item.current.family),
            Text(item.current.claim),
            Text(isoformat(item.current.valid_from)),
            Text(text if isinstance(text, str) else item.turn.claim),
            Text(isoformat(item.turn.valid_from)),
            Text(item.reason),
        )
    render.make_console().print(table)


By = Annotated[str, typer.Option("--by", metavar="WHO", help="Who decides (recorded).")]
Why = Annotated[str, typer.Option("--reason", metavar="WHY", help="Why (recorded).")]
ReviewId = Annotated[str, typer.Argument(metavar="REVIEW_ID", help="The item's id, rev-...")]


def _resolve(
    ctx: typer.Context,
    review_id: str,
    *,
    decision: ReviewDecision,
    by: str,
    reason: str,
    db: str | None,
    tenant: str | None,
    as_json: bool,
) -> None:
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        done = memory.resolve_review(who, review_id, decision=decision, by=by, reason=reason)
    if as_json:
        render.print_json(review_resolution_to_dict(done))
    else:
        typer.echo(_said(done))


def _said(done: ReviewResolution) -> str:
    item = done.item
    again = " (already resolved so; nothing changed)" if done.duplicate else ""
    line = f"review {item.review_id} {item.resolution} by {item.resolved_by}{again}"
    if done.receipt is not None and not done.duplicate:
        placed = ", ".join(
            f"{r.family}/{r.scope}: {r.disposition}" + (f" ({r.reason})" if r.reason else "")
            for r in done.receipt.results
        )
        line += f"; event {item.event_id} committed: {placed or 'no claims'}"
    return line


@reviews.command("accept")
def reviews_accept(
    ctx: typer.Context,
    *,
    review_id: ReviewId,
    by: By,
    reason: Why,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Commit a held batch as if the order rule had applied it (authority, revocations
    and limits are checked as usual); a self-contradictory batch cannot be accepted."""
    _resolve(
        ctx,
        review_id,
        decision="accept",
        by=by,
        reason=reason,
        db=db,
        tenant=tenant,
        as_json=as_json,
    )


@reviews.command("reject")
def reviews_reject(
    ctx: typer.Context,
    *,
    review_id: ReviewId,
    by: By,
    reason: Why,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Close a review item without committing anything."""
    _resolve(
        ctx,
        review_id,
        decision="reject",
        by=by,
        reason=reason,
        db=db,
        tenant=tenant,
        as_json=as_json,
    )
