"""``memledger`` commands that write: ingest, revocation, forgetting, undo, compaction,
consolidation, rollback, erasure, expiry, retention and quotas."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated

import typer

from memledger.cli import render
from memledger.cli._app import app, open_memory
from memledger.cli._command import Call, TenantsCall, each, every_tenant_command, store_command
from memledger.cli.extractors import (
    ExtractorName,
    open_extractor,
)
from memledger.cli.options import (
    AsJson,
    Db,
    FamilyName,
    MemoryId,
    OneSubject,
    Reason,
    Subject,
    given_tenant,
    moment_option,
    read_input,
    settings_of,
)
from memledger.domain.limits import check_claims, check_event
from memledger.domain.quotas import Quotas
from memledger.domain.records import JsonValue, Receipt
from memledger.errors import InvalidInputError, MemledgerError
from memledger.freshness import Freshness
from memledger.memory import Memory
from memledger.settings import DEFAULT_TENANT
from memledger.wire import (
    ParsedEvent,
    change_to_dict,
    compaction_to_dict,
    consolidation_to_dict,
    forget_to_dict,
    parse_events_json,
    receipt_to_dict,
    revocation_to_dict,
    rollback_to_dict,
    undo_to_dict,
)
from memledger.write.erase import ErasureReceipt

# -- writes -----------------------------------------------------------------------------


@app.command()
def ingest(
    ctx: typer.Context,
    *,
    source: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="A JSON event object, or a list of them, from a file or - for stdin.",
        ),
    ],
    db: Db = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Tenant to act for: an event naming another is refused. Default:"
            f" $MEMLEDGER_TENANT; with neither, an event without one is of {DEFAULT_TENANT!r}.",
            show_default=False,
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Append events to the ledger and commit their claims (or queue extraction).

    All events are parsed, and their families and kinds checked, before the
    first is written; each then commits in its own transaction, in order. An
    event without "tenant" takes --tenant.
    """
    text = read_input(source)
    parsed = parse_events_json(
        text, tenant=given_tenant(ctx, tenant), default_tenant=DEFAULT_TENANT
    )
    as_list = text.lstrip().startswith("[")
    with open_memory(ctx, db, create=True) as memory:
        _check_schema(memory, parsed, as_list=as_list)
        done: list[Receipt] = []
        try:
            with render.progress_bar("ingest") as bar:
                task = bar.add_task("ingest", total=len(parsed), visible=len(parsed) > 1)
                for item in parsed:
                    done.append(memory.ingest(item.event, item.claims, complete=item.complete))
                    bar.update(task, completed=len(done))
        except MemledgerError as exc:
            if not as_list:
                raise
            _show_receipts(done, as_list=True, as_json=as_json)
            kept = (
                f"the {len(done)} event(s) before it were committed"
                if done
                else "nothing was committed"
            )
            raise type(exc)(
                f"event #{len(done) + 1} of {len(parsed)} "
                f"({parsed[len(done)].event.event_id!r}): {exc}; {kept}"
            ) from None
    _show_receipts(done, as_list=as_list, as_json=as_json)


def _label(index: int, item: ParsedEvent, *, as_list: bool) -> str:
    prefix = f"event #{index}" if as_list else "event"
    return f"{prefix} {item.event.event_id!r}"


def _check_schema(memory: Memory, parsed: Sequence[ParsedEvent], *, as_list: bool) -> None:
    """Reject unknown families and kinds, and events over the size limits, in any
    event before writing the first."""
    for index, item in enumerate(parsed, 1):
        families = [claim.family for claim in item.claims or ()]
        tenant_schema = memory.schema_for(item.event.tenant, families)
        for n, claim in enumerate(item.claims or ()):
            try:
                tenant_schema.check(claim.family, claim.kind)
            except InvalidInputError as exc:
                label = _label(index, item, as_list=as_list)
                raise type(exc)(f"{label}: claims[{n}]: {exc}") from None
        try:
            check_event(item.event, memory.limits)
            check_claims(item.claims or (), memory.limits)
        except InvalidInputError as exc:
            raise type(exc)(f"{_label(index, item, as_list=as_list)}: {exc}") from None


def _show_receipts(done: Sequence[Receipt], *, as_list: bool, as_json: bool) -> None:
    if as_json:
        if as_list:
            render.print_json([receipt_to_dict(r) for r in done])
        elif done:
            render.print_json(receipt_to_dict(done[0]))
    else:
        render.receipts(render.make_console(), done)


@app.command()
@store_command
def revoke(
    call: Call,
    *,
    memory_id: MemoryId,
    reason: Reason = "revoked",
) -> None:
    """Revoke one memory (and the remnants of its claim), and its words in the other
    records of its source event. Nothing brings it back."""
    call.answer(
        lambda memory: memory.revoke(memory_id, tenant=call.tenant, reason=reason),
        revocation_to_dict,
        render.revocation,
    )


@app.command()
@store_command
def forget(
    call: Call,
    *,
    event_id: Annotated[str, typer.Argument(metavar="EVENT_ID")],
    reason: Reason = "forgotten",
) -> None:
    """Stop using everything a source event gave, in every family; nothing is written
    from it again. The ledger keeps the event (deleting it is erasure)."""
    call.answer(
        lambda memory: memory.forget(event_id, tenant=call.tenant, reason=reason),
        forget_to_dict,
        render.forgotten,
    )


@app.command()
@store_command
def undo(
    call: Call,
    *,
    change_id: Annotated[
        str,
        typer.Argument(
            metavar="CHANGE_ID",
            help="A revocation's or forget's change id (on its receipt), a rollback's, or "
            "the id of an event whose correction to undo.",
        ),
    ],
    reason: Reason = "undone",
) -> None:
    """Undo a revocation, a forgotten event, a correction or a rollback: what it closed
    comes back as new records at the next revision (over the valid time nothing open
    holds), what it wrote is closed. History keeps both."""
    call.answer(
        lambda memory: memory.undo(change_id, tenant=call.tenant, reason=reason),
        undo_to_dict,
        render.undone,
    )


@app.command()
@store_command
def restore(
    call: Call,
    *,
    memory_id: MemoryId,
    reason: Reason = "restored",
) -> None:
    """Undo the change that closed MEMORY_ID (see undo): it, and whatever else that
    change closed, comes back."""
    call.answer(
        lambda memory: memory.restore(memory_id, tenant=call.tenant, reason=reason),
        undo_to_dict,
        render.undone,
    )


@app.command("change-log")
@store_command
def change_log(
    call: Call,
    *,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="How many.")] = 50,
) -> None:
    """The tenant's recorded changes, newest first: revocations, forgotten events,
    undone corrections, rollbacks and undos, each with what it closed and opened."""
    call.answer(
        lambda memory: memory.change_log(tenant=call.tenant, limit=limit),
        each(change_to_dict),
        render.change_log,
    )


@app.command()
@store_command
def compact(
    call: Call,
    *,
    subject: OneSubject = None,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=0,
            help="Sessions whose every turn is older than this many days (default 30).",
            show_default=False,
        ),
    ] = None,
    before: Annotated[
        datetime | None,
        moment_option(
            "--before", "Sessions whose every turn is before this time (instead of --older-than)."
        ),
    ] = None,
    min_turns: Annotated[
        int, typer.Option("--min-turns", metavar="N", help="Least turns a session must have.")
    ] = 2,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", metavar="N", help="Longest summary, in tokens.")
    ] = 300,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the sessions, write nothing.")
    ] = False,
    reason: Reason = "compacted",
) -> None:
    """Compress old sessions into session summary records: each names the episodes it
    covers, which leave the index and stay in the store; one recorded change that undo
    reverses."""
    call.answer(
        lambda memory: memory.compact(
            tenant=call.tenant,
            subject=subject,
            older_than=None if older_than is None else timedelta(days=older_than),
            before=before,
            min_turns=min_turns,
            max_tokens=max_tokens,
            dry_run=dry_run,
            reason=reason,
        ),
        compaction_to_dict,
        render.compacted,
    )


@app.command()
@store_command
def consolidate(
    call: Call,
    *,
    subject: OneSubject = None,
    family: Annotated[
        str | None,
        typer.Option("--family", metavar="FAMILY", help="One family of that subject."),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="X",
            help="Similarity to merge at, in (0, 1]; default: the NOOP threshold.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the groups, write nothing.")
    ] = False,
    reason: Reason = "consolidated",
) -> None:
    """Merge near-duplicate open records of one family and subject into one (mentions
    summed, every source kept), as one recorded change that undo reverses."""
    call.answer(
        lambda memory: memory.consolidate(
            tenant=call.tenant,
            subject=subject,
            family=family,
            threshold=threshold,
            dry_run=dry_run,
            reason=reason,
        ),
        consolidation_to_dict,
        render.consolidated,
    )


@app.command()
@store_command
def rollback(
    call: Call,
    *,
    extractor: Annotated[
        str,
        typer.Option(
            "--extractor",
            metavar="NAME@VERSION",
            help="The extractor version to take back, as on its records (rules@1).",
            show_default=False,
        ),
    ],
    since: Annotated[
        datetime | None,
        moment_option("--since", "Only what it wrote at or after this record time."),
    ] = None,
    rederive: Annotated[
        ExtractorName | None,
        typer.Option(
            "--rederive",
            metavar="rules|llm",
            help="Extract the same events again with this extractor.",
            show_default=False,
        ),
    ] = None,
    reason: Reason = "rollback",
) -> None:
    """Take back what one extractor version wrote, as one recorded change (undo takes
    it back in turn): its records are closed and what they had closed is restored;
    turns and what callers stated stay. --rederive extracts the same events again."""
    who = call.tenant
    with call.memory() as memory:
        if rederive is None:
            receipt = memory.rollback(extractor, tenant=who, since=since, reason=reason)
        else:
            with open_extractor(
                rederive, settings_of(call.ctx), schema=memory.families_of(who)
            ) as chosen:
                receipt = memory.rollback(
                    extractor, tenant=who, since=since, reason=reason, rederive_with=chosen
                )
    call.show(rollback_to_dict(receipt), render.rolled_back, receipt)


@app.command()
@store_command
def erase(
    call: Call,
    *,
    event: Annotated[
        str | None, typer.Option("--event", metavar="EVENT_ID", help="Erase one event.")
    ] = None,
    memory_id: Annotated[
        str | None,
        typer.Option(
            "--memory", metavar="MEMORY_ID", help="Erase a memory and the event it came from."
        ),
    ] = None,
    subject: Annotated[
        str | None,
        typer.Option(
            "--subject", metavar="SUBJECT", help="Erase a subject's events and what was said of it."
        ),
    ] = None,
    reason: Reason = "erased",
) -> None:
    """Delete what memory holds of one event, memory or subject, in every store, and
    print the receipt (each store's status). Use stops first, as with forget; a replay
    of an erased event is refused. Erasing the same target again finishes a store that
    failed."""
    receipt = call.answer(
        lambda memory: memory.erase(
            tenant=call.tenant, event=event, memory_id=memory_id, subject=subject, reason=reason
        ),
        ErasureReceipt.to_dict,
        render.erasure,
    )
    if not receipt.complete:
        raise typer.Exit(1)


@app.command()
@store_command
def erasures(call: Call) -> None:
    """The tenant's erasure receipts, oldest first."""
    call.answer(
        lambda memory: memory.erasures(tenant=call.tenant),
        each(ErasureReceipt.to_dict),
        render.erasures,
    )


@app.command()
@every_tenant_command
def expire(call: TenantsCall) -> None:
    """Erase every record whose expiry has come (its TTL, or its tenant's retention of
    its kind), with the events left without records; print the erasure receipts. Of
    one tenant with --tenant, else of every tenant. `worker --expire-every` does this
    on a schedule."""
    done = call.answer(
        lambda memory: memory.expire(tenant=call.tenant),
        each(ErasureReceipt.to_dict),
        render.erasures,
        empty="nothing has expired",
    )
    if not all(r.complete for r in done):
        raise typer.Exit(1)


@app.command()
@store_command
def retention(
    call: Call,
    *,
    kind: Annotated[
        str | None, typer.Argument(metavar="[KIND]", help="A memory kind (episode, fact, ...).")
    ] = None,
    days: Annotated[
        str | None,
        typer.Argument(metavar="[DAYS|off]", help="Keep KIND this many days; off: no retention."),
    ] = None,
) -> None:
    """Show the tenant's retention per kind, or set one: `retention episode 90`. Records
    already held get the earlier of their own expiry and that day, at once."""
    if kind is not None and days is None:
        raise InvalidInputError("give both KIND and DAYS (a whole number, or off)")
    with call.memory() as memory:
        if kind is not None and days is not None:
            if days == "off":
                chosen = None
            elif days.isdigit():
                chosen = int(days)
            else:
                raise InvalidInputError(f"DAYS must be a whole number or off, got {days!r}")
            memory.set_retention(kind, chosen, tenant=call.tenant)
        held = memory.retention(tenant=call.tenant)
    call.show(dict[str, JsonValue](held), render.retention, held, tenant=call.tenant)


@app.command()
@every_tenant_command
def status(call: TenantsCall) -> None:
    """How fresh memory is: the extraction backlog and lag (jobs of the last hour), the
    index lag, and with --tenant the erasures' times (docs/freshness.md)."""

    def freshness(memory: Memory) -> Freshness:
        memory.index  # noqa: B018 - open it: its lag is part of the status
        return memory.freshness(tenant=call.tenant)

    call.answer(freshness, Freshness.to_dict, render.freshness)


@app.command()
@store_command
def quotas(
    call: Call,
    *,
    max_records: Annotated[
        int | None, typer.Option("--max-records", min=1, help="Open records it may hold.")
    ] = None,
    jobs_per_minute: Annotated[
        int | None,
        typer.Option("--jobs-per-minute", min=1, help="Extraction jobs it may queue a minute."),
    ] = None,
    recalls_per_second: Annotated[
        float | None,
        typer.Option("--recalls-per-second", min=0.001, help="Recalls and packets a second."),
    ] = None,
    packet_tokens: Annotated[
        int | None, typer.Option("--packet-tokens", min=1, help="Largest packet budget.")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove every quota.")] = False,
) -> None:
    """Show the tenant's quotas, or set them (the ones given replace them all; --clear
    removes them). Past a quota a request is refused and changes nothing."""
    given = (max_records, jobs_per_minute, recalls_per_second, packet_tokens)
    if clear and any(v is not None for v in given):
        raise InvalidInputError("--clear removes every quota: give no quota with it")
    with call.memory() as memory:
        if clear or any(v is not None for v in given):
            chosen = Quotas(
                max_records=max_records,
                jobs_per_minute=jobs_per_minute,
                recalls_per_second=recalls_per_second,
                packet_tokens=packet_tokens,
            )
            held = memory.set_quotas(None if clear else chosen, tenant=call.tenant)
        else:
            held = memory.quotas(tenant=call.tenant)
    shown: dict[str, JsonValue] = dict(held.to_dict())
    call.show(shown, render.quotas, shown)


@app.command("revoke-family")
@store_command
def revoke_family(
    call: Call,
    *,
    subject: Subject,
    family: FamilyName,
    reason: Reason = "revoked",
) -> None:
    """Revoke every open record of a family for a subject."""
    call.answer(
        lambda memory: memory.revoke_family(subject, family, tenant=call.tenant, reason=reason),
        revocation_to_dict,
        render.revocation,
    )
