"""The service's administration commands: ``keys``, ``schema`` and ``reviews``.

``memledger keys create`` prints a new API key's token once (only its hash is
stored); ``keys list`` and ``keys revoke`` never show one. ``memledger schema``
lists and registers the claim families of a tenant (``memledger review``, the
older command, lists the review queue; ``memledger reviews`` also resolves it).
Every command takes ``--db``, ``--tenant`` and ``--json`` like the others.
"""

from __future__ import annotations

from typing import Annotated, Literal, cast, get_args

import typer

from memledger.cli import render
from memledger.cli._command import Call, store_command
from memledger.cli._run import CliError
from memledger.cli.options import (
    IncludeResolved,
    ReviewBy,
    ReviewId,
    ReviewWhy,
    Subject,
    ValidAt,
)
from memledger.domain.families import Family
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import KINDS, Kind, ReviewDecision, ReviewResolution
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


def _choice(value: str, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise CliError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    return value


# -- keys -------------------------------------------------------------------------------


@keys.command("create")
@store_command
def keys_create(
    call: Call,
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
) -> None:
    """Create an API key and print its token. The token is shown once: only its hash is
    stored, so it cannot be retrieved later (revoke the key and create another)."""
    kind = cast(PrincipalKind, _choice(principal, "--principal", get_args(PrincipalKind)))
    level = cast(KeyRole, _choice(role, "--role", get_args(KeyRole)))
    with call.memory(create=True) as memory:
        key, token = memory.create_key(
            call.tenant,
            actor,
            principal=kind,
            role=level,
            grants=grant or (),
            label=label,
            reads=reads or (),
        )
    grants = ", ".join(sorted(str(g) for g in key.grants)) or "none"
    call.say(
        {"key": key_to_dict(key), "token": token, "shown_once": True},
        f"created API key {key.key_id} for {key.principal} {key.actor_id!r} of tenant "
        f"{key.tenant!r} (role {key.role}; grants: {grants})\n"
        f"token: {token}\n"
        "this token is shown once and cannot be retrieved: store it now",
    )


@keys.command("list")
@store_command
def keys_list(call: Call) -> None:
    """The tenant's API keys, revoked ones included (never their tokens)."""
    with call.memory() as memory:
        found = memory.keys(call.tenant)
    call.listing(
        [key_to_dict(k) for k in found],
        found,
        render.keys,
        empty=f"no API keys for tenant {call.tenant!r}",
    )


@keys.command("revoke")
@store_command
def keys_revoke(
    call: Call,
    *,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id, mlk_...")],
) -> None:
    """Revoke an API key: from now on it authenticates nothing. Revoking again is a no-op;
    the tenant's last live admin key is not revoked (create another admin key first)."""
    with call.memory() as memory:
        key = memory.revoke_key(call.tenant, key_id)
    assert key.revoked_at is not None
    call.say(
        key_to_dict(key),
        f"revoked API key {key.key_id} of tenant {call.tenant!r} at {isoformat(key.revoked_at)}",
    )


# -- schema -----------------------------------------------------------------------------


def _source(builtin: bool) -> Literal["code", "registered"]:
    return "code" if builtin else "registered"


@schema.command("list")
@store_command
def schema_list(call: Call) -> None:
    """Every claim family the tenant's claims may name: the built-in ones and those
    registered for the tenant."""
    with call.memory() as memory:
        families = memory.families_of(call.tenant)
        builtin = set(memory.schema.families)
    rows = [
        (f, _source(f.name in builtin))
        for f in sorted(families.families.values(), key=lambda f: f.name)
    ]
    call.show([family_to_dict(f, source=source) for f, source in rows], render.families, rows)


@schema.command("register")
@store_command
def schema_register(
    call: Call,
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
) -> None:
    """Register a claim family for the tenant (stored: every process sees it). The same
    definition again is a no-op; another definition of an existing name is refused."""
    wanted = [k.strip() for k in kinds.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in KINDS]
    if not wanted or unknown:
        raise CliError(
            f"--kinds takes a comma-separated list of {', '.join(sorted(KINDS))}; got {kinds!r}"
        )
    chosen = frozenset(cast(Kind, k) for k in wanted)
    family = Family(name=name, kinds=chosen, description=description, own_say=own_say)
    with call.memory(create=True) as memory:
        found = memory.register_family(call.tenant, family)
        source = _source(found.name in memory.schema.families)
    call.say(
        family_to_dict(found, source=source),
        f"family {found.name!r} of tenant {call.tenant!r}: kinds {', '.join(sorted(found.kinds))}"
        f"{', own say' if found.own_say else ''} ({source})",
    )


# -- reviews ----------------------------------------------------------------------------


@reviews.command("list")
@store_command
def reviews_list(call: Call, *, include_resolved: IncludeResolved = False) -> None:
    """Events whose batch waits for review (they changed nothing yet); --all adds the
    resolved ones, with who decided and why."""
    with call.memory() as memory:
        items = memory.reviews(tenant=call.tenant, open_only=not include_resolved)
    call.listing(
        [review_to_dict(i) for i in items], items, render.review_queue, empty="no review items"
    )


@reviews.command("updates")
@store_command
def reviews_updates(call: Call, subject: Subject, *, valid_at: ValidAt = None) -> None:
    """Later turns that may change a subject's current values where no claim did
    (possible updates not understood): fix the extraction, then ingest the correction
    or re-derive. Read-only."""
    with call.memory() as memory:
        items = memory.possible_updates(subject, tenant=call.tenant, valid_at=valid_at)
    call.listing(
        [possible_update_to_dict(i) for i in items],
        items,
        render.possible_updates,
        empty="no possible updates",
    )


def _resolve(call: Call, review_id: str, *, decision: ReviewDecision, by: str, reason: str) -> None:
    with call.memory() as memory:
        done = memory.resolve_review(
            call.tenant, review_id, decision=decision, by=by, reason=reason
        )
    call.say(review_resolution_to_dict(done), _said(done))


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
@store_command
def reviews_accept(call: Call, *, review_id: ReviewId, by: ReviewBy, reason: ReviewWhy) -> None:
    """Commit a held batch as if the order rule had applied it (authority, revocations
    and limits are checked as usual); a self-contradictory batch cannot be accepted."""
    _resolve(call, review_id, decision="accept", by=by, reason=reason)


@reviews.command("reject")
@store_command
def reviews_reject(call: Call, *, review_id: ReviewId, by: ReviewBy, reason: ReviewWhy) -> None:
    """Close a review item without committing anything."""
    _resolve(call, review_id, decision="reject", by=by, reason=reason)
