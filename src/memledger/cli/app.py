"""The ``memledger`` command line: parse, call :class:`~memledger.Memory`, render.

Each command opens the store named by ``--db`` (default ``$MEMLEDGER_URL``,
else ``./memledger.db``), acts for ``--tenant`` (default ``$MEMLEDGER_TENANT``)
and prints rich tables, or JSON with ``--json``. Failures are one ``error:``
line on stderr; see :mod:`memledger.cli._run` for the exit codes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from memledger.cli import render
from memledger.cli._run import CliError, Group
from memledger.cli._service import stop_on_signals
from memledger.cli.admin import keys, reviews, schema
from memledger.cli.bench import bench
from memledger.cli.corpus import corpus
from memledger.cli.extractors import (
    ExtractorChoice,
    ExtractorName,
    RequiredExtractor,
    describe,
    open_extractor,
)
from memledger.cli.mcp import mcp_command
from memledger.cli.options import (
    BATCH,
    AsJson,
    AsOf,
    Batch,
    Db,
    FamilyName,
    MinRevision,
    OnlyTenant,
    Poll,
    Reason,
    Scope,
    Subject,
    Tenant,
    ValidAt,
    check_store_path,
    parse_moment,
    read_input,
    require_tenant,
    settings_of,
    store_url,
)
from memledger.cli.serve import serve_command
from memledger.corpus import Corpus, default_corpus_path
from memledger.domain.budget import Budget
from memledger.domain.limits import check_claims, check_event
from memledger.domain.quotas import Quotas
from memledger.domain.records import JsonValue, Receipt, parse_time, require_id
from memledger.errors import InvalidInputError, InvalidQueryError, MemledgerError
from memledger.gate import decisions as gate_decisions
from memledger.index.backends import Index, open_index
from memledger.index.embedders import (
    CachedEmbedder,
    Embedder,
    default_embedder,
    embedder_from_name,
)
from memledger.memory import Memory
from memledger.read.context import Constraint, LiveState, Material, check_request
from memledger.read.recall import check_query
from memledger.read.trace import recent as recent_traces
from memledger.settings import Settings
from memledger.wire import (
    ParsedEvent,
    change_to_dict,
    compaction_to_dict,
    consolidation_to_dict,
    forget_to_dict,
    history_entry_to_dict,
    job_to_dict,
    parse_events_json,
    recall_to_dict,
    receipt_to_dict,
    record_to_dict,
    rederivation_to_dict,
    review_to_dict,
    revocation_to_dict,
    rollback_to_dict,
    undo_to_dict,
    work_report_to_dict,
)
from memledger.write.worker import Worker, WorkerSettings

app = typer.Typer(
    name="memledger",
    cls=Group,
    help="memledger: a long-term memory ledger for AI agents.",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context) -> None:
    """memledger: a long-term memory ledger for AI agents.

    Configuration: MEMLEDGER_URL (store), MEMLEDGER_TENANT (default tenant);
    MEMLEDGER_LLM_BASE_URL, MEMLEDGER_LLM_MODEL, MEMLEDGER_LLM_API_KEY (--extractor llm).
    """
    ctx.obj = Settings.from_env(os.environ)
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


@contextmanager
def _memory(ctx: typer.Context, db: str | None, *, create: bool = False) -> Iterator[Memory]:
    """The store for one command. Only writers that add events create a missing store:
    a read of a mistyped path fails instead of answering from an empty file."""
    url = store_url(ctx, db)
    check_store_path(url)
    memory = Memory.open(url, create=create)
    try:
        yield memory
    finally:
        memory.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI (the ``memledger`` console script); returns the exit code."""
    result = app(args=argv, prog_name="memledger", standalone_mode=False)
    return result if isinstance(result, int) else 0


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
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Append events to the ledger and commit their claims (or queue extraction).

    All events are parsed, and their families and kinds checked, before the
    first is written; each then commits in its own transaction, in order. An
    event without "tenant" takes --tenant.
    """
    text = read_input(source)
    parsed = parse_events_json(text, tenant=tenant or settings_of(ctx).tenant)
    as_list = text.lstrip().startswith("[")
    with _memory(ctx, db, create=True) as memory:
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
def revoke(
    ctx: typer.Context,
    *,
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID")],
    reason: Reason = "revoked",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Revoke one memory (and the remnants of its claim), and its words in the other
    records of its source event. Nothing brings it back."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.revoke(memory_id, tenant=who, reason=reason)
    if as_json:
        render.print_json(revocation_to_dict(receipt))
    else:
        render.revocation(render.make_console(), receipt)


@app.command()
def forget(
    ctx: typer.Context,
    *,
    event_id: Annotated[str, typer.Argument(metavar="EVENT_ID")],
    reason: Reason = "forgotten",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Stop using everything a source event gave, in every family; nothing is written
    from it again. The ledger keeps the event (deleting it is erasure)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.forget(event_id, tenant=who, reason=reason)
    if as_json:
        render.print_json(forget_to_dict(receipt))
    else:
        render.forgotten(render.make_console(), receipt)


@app.command()
def undo(
    ctx: typer.Context,
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Undo a revocation, a forgotten event, a correction or a rollback: what it closed
    comes back as new records at the next revision (over the valid time nothing open
    holds), what it wrote is closed. History keeps both."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.undo(change_id, tenant=who, reason=reason)
    if as_json:
        render.print_json(undo_to_dict(receipt))
    else:
        render.undone(render.make_console(), receipt)


@app.command()
def restore(
    ctx: typer.Context,
    *,
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID")],
    reason: Reason = "restored",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Undo the change that closed MEMORY_ID (see undo): it, and whatever else that
    change closed, comes back."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.restore(memory_id, tenant=who, reason=reason)
    if as_json:
        render.print_json(undo_to_dict(receipt))
    else:
        render.undone(render.make_console(), receipt)


@app.command("change-log")
def change_log(
    ctx: typer.Context,
    *,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="How many.")] = 50,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The tenant's recorded changes, newest first: revocations, forgotten events,
    undone corrections, rollbacks and undos, each with what it closed and opened."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        found = memory.change_log(tenant=who, limit=limit)
    if as_json:
        render.print_json([change_to_dict(c) for c in found])
    else:
        render.change_log(render.make_console(), found)


@app.command()
def compact(
    ctx: typer.Context,
    *,
    subject: Annotated[
        str | None,
        typer.Option("--subject", metavar="SUBJECT", help="One subject; default: every one."),
    ] = None,
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
        typer.Option(
            "--before",
            metavar="ISO",
            parser=parse_moment,
            help="Sessions whose every turn is before this time (instead of --older-than).",
            show_default=False,
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Compress old sessions into session summary records: each names the episodes it
    covers, which leave the index and stay in the store; one recorded change that undo
    reverses."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.compact(
            tenant=who,
            subject=subject,
            older_than=None if older_than is None else timedelta(days=older_than),
            before=before,
            min_turns=min_turns,
            max_tokens=max_tokens,
            dry_run=dry_run,
            reason=reason,
        )
    if as_json:
        render.print_json(compaction_to_dict(receipt))
    else:
        render.compacted(render.make_console(), receipt)


@app.command()
def consolidate(
    ctx: typer.Context,
    *,
    subject: Annotated[
        str | None,
        typer.Option("--subject", metavar="SUBJECT", help="One subject; default: every one."),
    ] = None,
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Merge near-duplicate open records of one family and subject into one (mentions
    summed, every source kept), as one recorded change that undo reverses."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.consolidate(
            tenant=who,
            subject=subject,
            family=family,
            threshold=threshold,
            dry_run=dry_run,
            reason=reason,
        )
    if as_json:
        render.print_json(consolidation_to_dict(receipt))
    else:
        render.consolidated(render.make_console(), receipt)


@app.command()
def rollback(
    ctx: typer.Context,
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
        typer.Option(
            "--since",
            metavar="ISO",
            parser=parse_moment,
            help="Only what it wrote at or after this record time.",
            show_default=False,
        ),
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Take back what one extractor version wrote, as one recorded change (undo takes
    it back in turn): its records are closed and what they had closed is restored;
    turns and what callers stated stay. --rederive extracts the same events again."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        if rederive is None:
            receipt = memory.rollback(extractor, tenant=who, since=since, reason=reason)
        else:
            with open_extractor(
                rederive, settings_of(ctx), schema=memory.families_of(who)
            ) as chosen:
                receipt = memory.rollback(
                    extractor, tenant=who, since=since, reason=reason, rederive_with=chosen
                )
    if as_json:
        render.print_json(rollback_to_dict(receipt))
    else:
        render.rolled_back(render.make_console(), receipt)


@app.command()
def erase(
    ctx: typer.Context,
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Delete what memory holds of one event, memory or subject, in every store, and
    print the receipt (each store's status). Use stops first, as with forget; a replay
    of an erased event is refused. Erasing the same target again finishes a store that
    failed."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.erase(
            tenant=who, event=event, memory_id=memory_id, subject=subject, reason=reason
        )
    if as_json:
        render.print_json(receipt.to_dict())
    else:
        render.erasure(render.make_console(), receipt)
    if not receipt.complete:
        raise typer.Exit(1)


@app.command()
def erasures(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The tenant's erasure receipts, oldest first."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        done = memory.erasures(tenant=who)
    if as_json:
        render.print_json([r.to_dict() for r in done])
    else:
        console = render.make_console()
        for receipt in done:
            render.erasure(console, receipt)


@app.command()
def expire(
    ctx: typer.Context,
    *,
    tenant: OnlyTenant = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Erase every record whose expiry has come (its TTL, or its tenant's retention of
    its kind), with the events left without records; print the erasure receipts. Of
    one tenant with --tenant, else of every tenant. `worker --expire-every` does this
    on a schedule."""
    if tenant is not None:
        require_id(tenant, "tenant", InvalidQueryError)
    with _memory(ctx, db) as memory:
        done = memory.expire(tenant=tenant)
    if as_json:
        render.print_json([r.to_dict() for r in done])
    else:
        console = render.make_console()
        if not done:
            console.print(Text("nothing has expired"))
        for receipt in done:
            render.erasure(console, receipt)
    if not all(r.complete for r in done):
        raise typer.Exit(1)


@app.command()
def retention(
    ctx: typer.Context,
    *,
    kind: Annotated[
        str | None, typer.Argument(metavar="[KIND]", help="A memory kind (episode, fact, ...).")
    ] = None,
    days: Annotated[
        str | None,
        typer.Argument(metavar="[DAYS|off]", help="Keep KIND this many days; off: no retention."),
    ] = None,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Show the tenant's retention per kind, or set one: `retention episode 90`. Records
    already held get the earlier of their own expiry and that day, at once."""
    who = require_tenant(ctx, tenant)
    if kind is not None and days is None:
        raise InvalidInputError("give both KIND and DAYS (a whole number, or off)")
    with _memory(ctx, db) as memory:
        if kind is not None and days is not None:
            if days == "off":
                chosen = None
            elif days.isdigit():
                chosen = int(days)
            else:
                raise InvalidInputError(f"DAYS must be a whole number or off, got {days!r}")
            memory.set_retention(kind, chosen, tenant=who)
        held = memory.retention(tenant=who)
    if as_json:
        render.print_json(dict[str, JsonValue](held))
    else:
        console = render.make_console()
        if not held:
            console.print(Text(f"tenant {who!r} keeps every kind until it is erased"))
        for name, kept in held.items():
            console.print(Text(f"{name}: {kept} day(s)"))


@app.command()
def status(
    ctx: typer.Context,
    *,
    tenant: OnlyTenant = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """How fresh memory is: the extraction backlog and lag (jobs of the last hour), the
    index lag, and with --tenant the erasures' times (docs/freshness.md)."""
    if tenant is not None:
        require_id(tenant, "tenant", InvalidQueryError)
    with _memory(ctx, db) as memory:
        memory.index  # noqa: B018 - open it: its lag is part of the status
        found = memory.freshness(tenant=tenant)
    if as_json:
        render.print_json(found.to_dict())
    else:
        render.freshness(render.make_console(), found)


@app.command()
def quotas(
    ctx: typer.Context,
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
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Show the tenant's quotas, or set them (the ones given replace them all; --clear
    removes them). Past a quota a request is refused and changes nothing."""
    who = require_tenant(ctx, tenant)
    given = (max_records, jobs_per_minute, recalls_per_second, packet_tokens)
    if clear and any(v is not None for v in given):
        raise InvalidInputError("--clear removes every quota: give no quota with it")
    with _memory(ctx, db) as memory:
        if clear or any(v is not None for v in given):
            chosen = Quotas(
                max_records=max_records,
                jobs_per_minute=jobs_per_minute,
                recalls_per_second=recalls_per_second,
                packet_tokens=packet_tokens,
            )
            held = memory.set_quotas(None if clear else chosen, tenant=who)
        else:
            held = memory.quotas(tenant=who)
    shown: dict[str, JsonValue] = dict(held.to_dict())
    if as_json:
        render.print_json(shown)
    else:
        console = render.make_console()
        for name, value in shown.items():
            console.print(Text(f"{name}: {'no limit' if value is None else value}"))


@app.command("revoke-family")
def revoke_family(
    ctx: typer.Context,
    *,
    subject: Subject,
    family: FamilyName,
    reason: Reason = "revoked",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Revoke every open record of a family for a subject."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        receipt = memory.revoke_family(subject, family, tenant=who, reason=reason)
    if as_json:
        render.print_json(revocation_to_dict(receipt))
    else:
        render.revocation(render.make_console(), receipt)


# -- reads ------------------------------------------------------------------------------


@app.command()
def current(
    ctx: typer.Context,
    *,
    subject: Subject,
    family: FamilyName,
    scope: Scope = None,
    valid_at: ValidAt = None,
    as_of: AsOf = None,
    min_revision: MinRevision = None,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The authorised current value(s) of a family, one per scope."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        records = memory.current(
            subject,
            family,
            tenant=who,
            scope=scope,
            valid_at=valid_at,
            as_of=as_of,
            min_revision=min_revision,
        )
    if as_json:
        render.print_json([record_to_dict(r) for r in records])
    else:
        render.values(
            render.make_console(),
            records,
            title=f"current {family!r} of {subject!r}",
            empty=f"no current value of {family!r} for {subject!r}",
        )


EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Vectors of the index: default (MiniLM on onnxruntime, in every install),"
        " minilm-onnx, minilm (on torch: the 'minilm' extra), hashing, or none (lexical"
        " only). Changing it rebuilds the index.",
    ),
]


def _index_for(memory: Memory, embedder: str) -> Index:
    choices = ("default", "hashing", "minilm", "minilm-onnx", "none")
    if embedder not in choices:
        raise CliError(f"--embedder must be one of {', '.join(choices)}, got {embedder!r}")
    vectors: Embedder | None
    if embedder == "none":
        vectors = None
    elif embedder == "default":
        vectors = default_embedder()
    else:
        try:
            vectors = CachedEmbedder(embedder_from_name(embedder))
        except ImportError as exc:  # an optional extra is missing; its message names it
            raise CliError(f"--embedder {embedder}: {exc}") from None
    return open_index(memory.store, embedder=vectors)


@app.command("recall")
def recall_command(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember, in words.")],
    *,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Only memories about this subject.")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="How many memories, 1-100.")] = 10,
    valid_at: ValidAt = None,
    min_revision: MinRevision = None,
    embedder: EmbedderOption = "default",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The memories most useful for QUERY, rechecked against the store (index synced first)."""
    who = require_tenant(ctx, tenant)
    check_query(query, who, subject, k)  # a refused query builds no index
    with _memory(ctx, db) as opened:
        memory = Memory(opened.store, index=_index_for(opened, embedder))
        try:
            result = memory.recall(
                query,
                tenant=who,
                subject=subject,
                k=k,
                valid_at=valid_at,
                min_revision=min_revision,
            )
        finally:
            memory.index.close()
    if as_json:
        render.print_json(recall_to_dict(result))
    else:
        render.recall(render.make_console(), result)


def _json_file(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"cannot read {what} from {str(path)!r}: {exc}") from None


def _live_states(path: Path | None) -> list[LiveState]:
    """``{"name": {"observed_at": ISO, "source": "...", "value": {...}}, ...}``."""
    if path is None:
        return []
    given = _json_file(path, "live state")
    if not isinstance(given, dict):
        raise CliError("--live must hold a JSON object of named live states")
    out = []
    for name, state in given.items():
        if not isinstance(state, dict) or not isinstance(state.get("value"), dict):
            raise CliError(f"live state {name!r} needs a 'value' object and 'observed_at'")
        out.append(
            LiveState(
                name=name,
                value=state["value"],
                observed_at=parse_time(str(state.get("observed_at", ""))),
                source=str(state.get("source", "caller")),
            )
        )
    return out


def _constraints(path: Path | None) -> list[Constraint]:
    """``[{"id": "...", "rule": "...", "effective_from": ISO?}, ...]``."""
    if path is None:
        return []
    given = _json_file(path, "constraints")
    if not isinstance(given, list) or not all(isinstance(c, dict) for c in given):
        raise CliError("--constraints must hold a JSON list of {id, rule} objects")
    return [
        Constraint(
            id=str(c.get("id", "")),
            rule=str(c.get("rule", "")),
            effective_from=None
            if c.get("effective_from") is None
            else parse_time(str(c["effective_from"])),
        )
        for c in given
    ]


def _budget(total: int, sections: Sequence[str]) -> Budget:
    caps: dict[str, int] = {}
    for given in sections:
        name, _, count = given.partition("=")
        if not count.strip().isdigit():
            raise CliError(f"--section-budget takes NAME=TOKENS, got {given!r}")
        caps[name.strip()] = int(count)
    return Budget(total=total, sections=caps)  # type: ignore[arg-type]


@app.command("context")
def context_command(
    ctx: typer.Context,
    request: Annotated[str, typer.Argument(help="The request the next model call answers.")],
    *,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Whose memories (else the tenant's).")
    ] = None,
    budget: Annotated[int, typer.Option("--budget", help="Tokens for the whole packet.")] = 2000,
    section_budget: Annotated[
        list[str] | None,
        typer.Option(
            "--section-budget",
            metavar="NAME=TOKENS",
            help="A cap for one section (constraints, live_state, long_material, documents, "
            "memories, request); repeat for several.",
        ),
    ] = None,
    live: Annotated[
        Path | None,
        typer.Option("--live", help='JSON: {"name": {"observed_at", "source", "value": {...}}}.'),
    ] = None,
    constraints: Annotated[
        Path | None, typer.Option("--constraints", help='JSON: [{"id", "rule", ...}].')
    ] = None,
    material: Annotated[
        list[Path] | None,
        typer.Option("--material", help="A text file the user supplied now (long context)."),
    ] = None,
    use_corpus: Annotated[
        bool,
        typer.Option(
            "--corpus/--no-corpus",
            help="Consult the shared corpus beside the store (<store>.corpus) when it exists.",
        ),
    ] = True,
    valid_at: ValidAt = None,
    embedder: EmbedderOption = "default",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The context packet for REQUEST within a token budget, stored as a trace."""
    who = require_tenant(ctx, tenant)
    check_request(request, who, subject)
    total = _budget(budget, section_budget or [])
    states, rules = _live_states(live), _constraints(constraints)
    supplied = []
    for path in material or []:
        try:
            supplied.append(Material(name=path.name, text=path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read --material {str(path)!r}: {exc}") from None
    with _memory(ctx, db) as opened, ExitStack() as stack:
        memory = Memory(opened.store, index=_index_for(opened, embedder))
        stack.callback(memory.index.close)
        shared = default_corpus_path(opened.store.url)
        documents = None
        if use_corpus and shared.exists():
            documents = stack.enter_context(Corpus(shared, embedder=memory.index.embedder))
        packet = memory.context(
            request,
            tenant=who,
            subject=subject,
            budget=total,
            live=states,
            constraints=rules,
            material=supplied,
            valid_at=valid_at,
            corpus=documents,
        )
    if as_json:
        render.print_json(packet.to_dict())
    else:
        render.packet(render.make_console(), packet)


trace = typer.Typer(help="Context traces: what a model call was given.", no_args_is_help=True)


@trace.command("show")
def trace_show(
    ctx: typer.Context,
    trace_id: Annotated[str, typer.Argument(help="The packet's trace id (ctx-...).")],
    *,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Rebuild a stored packet from the store, as the model saw it, and check its hash."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        replayed = memory.replay(trace_id, tenant=who)
        gated = gate_decisions(memory.store, tenant=who, trace_id=trace_id)
    if as_json:
        render.print_json(
            {
                **replayed.packet.to_dict(),
                "matches": replayed.matches,
                "revoked_since": list(replayed.revoked),
                "missing": list(replayed.missing),
                "gate_decisions": gated,  # type: ignore[dict-item]
            }
        )
    else:
        render.replay(render.make_console(), replayed, gated)


@trace.command("list")
def trace_list(
    ctx: typer.Context,
    *,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Only this subject's packets.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many, newest first.")] = 20,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The most recent context traces, newest first."""
    who = require_tenant(ctx, tenant)
    if not 1 <= limit <= 1000:
        raise CliError(f"--limit must be from 1 to 1000, got {limit}")
    with _memory(ctx, db) as memory:
        found = recent_traces(memory.store, tenant=who, subject=subject, limit=limit)
    if as_json:
        render.print_json(found)  # type: ignore[arg-type]
    else:
        render.traces(render.make_console(), found)


app.add_typer(trace, name="trace")
app.add_typer(corpus, name="corpus")
app.add_typer(keys, name="keys")
app.add_typer(schema, name="schema")
app.add_typer(reviews, name="reviews")


@app.command("copy-store")
def copy_store_command(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="POSTGRES_URL",
            help="An empty PostgreSQL store to copy into (postgresql://user@host/db; it is"
            " created if the database has no store yet).",
            show_default=False,
        ),
    ],
    *,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Copy this SQLite store (--db) into an empty PostgreSQL store, row for row in one
    transaction: events, records, history, jobs, keys and traces, sequence numbers
    included. The target's derived index is fed from the copied outbox on first use."""
    from memledger.store import open_store
    from memledger.store.copy import copy_store

    if not target.startswith(("postgresql://", "postgres://")):
        raise CliError(
            f"copy-store copies into a PostgreSQL store (postgresql://...), got {target!r}"
        )
    with _memory(ctx, db) as source:
        destination = open_store(target)
        try:
            with render.progress_bar("copy") as progress:
                task = progress.add_task("copy", total=None)

                def report(table: str, done: int) -> None:
                    progress.update(task, completed=done, description=f"copy {table}")

                copied = copy_store(source.store, destination, progress=report)
        finally:
            destination.close()
    if as_json:
        rows: dict[str, JsonValue] = {table: count for table, count in copied.items()}
        render.print_json({"from": source.url, "to": destination.url, "rows": rows})
        return
    typer.echo(
        f"copied {sum(copied.values())} rows of {len(copied)} tables from {source.url}"
        f" to {destination.url}"
    )


@app.command()
def reindex(
    ctx: typer.Context,
    *,
    embedder: EmbedderOption = "default",
    db: Db = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Rebuild only this tenant's entries; the others stay as they are. "
            "Default: every tenant ($MEMLEDGER_TENANT is not used).",
            show_default=False,
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Drop the derived index (<store>.index) and rebuild it from the store's outbox:
    every tenant's entries, or with --tenant one tenant's."""
    if tenant is not None:
        require_id(tenant, "tenant", InvalidQueryError)
    with _memory(ctx, db) as opened:
        memory = Memory(opened.store, index=_index_for(opened, embedder))
        try:
            with render.progress_bar("reindex") as progress:
                task = progress.add_task("reindex", total=None)

                def report(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                applied = memory.reindex(tenant=tenant, progress=report)
            status = memory.index.status()
        finally:
            memory.index.close()
    if as_json:
        render.print_json(
            {
                "tenant": tenant,
                "applied": applied,
                "entries": status.entries,
                "vectors": status.vectors,
                "embedder": status.embedder,
            }
        )
        return
    which = "every tenant" if tenant is None else f"tenant {tenant!r}"
    typer.echo(
        f"reindexed {applied} outbox rows of {which}: the index holds {status.entries} entries,"
        f" {status.vectors} vectors ({status.embedder or 'lexical only'})"
    )


@app.command()
def timeline(
    ctx: typer.Context,
    *,
    subject: Subject,
    family: FamilyName,
    scope: Scope = None,
    as_of: AsOf = None,
    min_revision: MinRevision = None,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Every valid-time window of a family, as held now (or --as-of)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        records = memory.timeline(
            subject, family, tenant=who, scope=scope, as_of=as_of, min_revision=min_revision
        )
    if as_json:
        render.print_json([record_to_dict(r) for r in records])
    else:
        render.values(
            render.make_console(),
            records,
            title=f"timeline of {family!r} for {subject!r}",
            empty=f"no timeline of {family!r} for {subject!r}",
        )


@app.command()
def history(
    ctx: typer.Context,
    *,
    subject: Subject,
    family: FamilyName,
    include_revoked: Annotated[
        bool, typer.Option("--include-revoked", help="Show revoked records too (audits).")
    ] = False,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Every record the family held, closed ones included, with both time axes; revoked
    records only with --include-revoked."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        records = memory.history(subject, family, tenant=who, include_revoked=include_revoked)
    if as_json:
        render.print_json([record_to_dict(r) for r in records])
    else:
        render.history(
            render.make_console(),
            records,
            title=f"history of {family!r} for {subject!r}",
            empty=f"no records of {family!r} for {subject!r}",
        )


@app.command()
def changes(
    ctx: typer.Context,
    *,
    subject: Subject,
    family: FamilyName,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The family's append-only change log."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        entries = memory.changes(subject, family, tenant=who)
    if as_json:
        render.print_json([history_entry_to_dict(e) for e in entries])
    else:
        render.changes(
            render.make_console(),
            entries,
            title=f"changes of {family!r} for {subject!r}",
            empty=f"no changes of {family!r} for {subject!r}",
        )


@app.command()
def get(
    ctx: typer.Context,
    *,
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID")],
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """One memory record by id, whatever its status."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        record = memory.get(memory_id, tenant=who)
    if as_json:
        render.print_json(record_to_dict(record))
    else:
        render.record(render.make_console(), record)


@app.command()
def review(
    ctx: typer.Context,
    *,
    include_resolved: Annotated[
        bool, typer.Option("--all", help="Include resolved items.")
    ] = False,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Events whose claims wait for review (they changed nothing)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        items = memory.reviews(tenant=who, open_only=not include_resolved)
    if as_json:
        render.print_json([review_to_dict(i) for i in items])
    else:
        render.reviews(render.make_console(), items, empty="no review items")


@app.command()
def jobs(
    ctx: typer.Context,
    *,
    include_done: Annotated[bool, typer.Option("--all", help="Include finished jobs.")] = False,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Extraction jobs not done yet (queued or failed), oldest first, with their
    attempts, last error and next attempt."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        items = memory.jobs(tenant=who, open_only=not include_done)
    if as_json:
        render.print_json([job_to_dict(j) for j in items])
    else:
        render.jobs(render.make_console(), items, empty="no queued extraction jobs")


@app.command()
def stats(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Write-path counters: rejections by reason, extraction errors, gate and prefilter drops."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        counters = memory.stats(tenant=who)
    if as_json:
        render.print_json({"tenant": who, "counters": dict(counters)})
    else:
        render.counters(render.make_console(), counters, tenant=who)


# -- the write path's work --------------------------------------------------------------


@app.command()
def worker(
    ctx: typer.Context,
    *,
    extractor: ExtractorChoice = "rules",
    tenant: OnlyTenant = None,
    drain: Annotated[
        bool, typer.Option("--drain", help="Run until no due job is left, then exit.")
    ] = False,
    poll: Poll = 0.5,
    batch: Batch = BATCH,
    expire_every: Annotated[
        float | None,
        typer.Option(
            "--expire-every",
            metavar="SECONDS",
            min=1.0,
            help="Also erase what expired (TTL and retention) at this pace, first at the start."
            " Default: never (run `memledger expire` instead).",
        ),
    ] = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Run queued extraction jobs until SIGINT or SIGTERM (or, with --drain, until none is due).

    On the first signal the batch in progress finishes and a summary of the
    jobs by outcome is printed; a second signal stops at once. A job whose
    extraction fails stays queued for a retry, its reason shown by `jobs`.
    Between batches it applies up to 500 rows of the derived index's backlog, so
    that reads find the index caught up.
    """
    if tenant is not None:
        require_id(tenant, "tenant", InvalidQueryError)
    settings = WorkerSettings(batch=batch)
    with (
        _memory(ctx, db) as memory,
        open_extractor(
            extractor,
            settings_of(ctx),
            schema=memory.schema if tenant is None else memory.families_of(tenant),
        ) as chosen,
    ):
        where = f"{memory.url} ({'every tenant' if tenant is None else f'tenant {tenant!r}'})"
        if drain:
            with render.progress_bar("drain") as bar:
                task = bar.add_task("drain", total=None)
                report = Worker(memory.writing, chosen, settings=settings).drain(
                    tenant=tenant, progress=lambda done: bar.update(task, completed=done)
                )
            stopped_by = None
            title = f"drained {where} with {describe(chosen)}: {report.jobs} job(s) run"
        else:
            typer.echo(
                f"memledger worker: running jobs of {where} with {describe(chosen)}; "
                "stop with Ctrl-C or SIGTERM",
                err=True,
            )
            with stop_on_signals() as stop:
                report = Worker(memory.writing, chosen, settings=settings).run(
                    stop=stop.event,
                    tenant=tenant,
                    poll=poll,
                    expire_every=expire_every,
                )
            stopped_by = stop.signal
            title = f"worker stopped by {stopped_by} after {report.jobs} job(s) on {where}"
    if as_json:
        mode = "drain" if drain else "run"
        render.print_json(work_report_to_dict(report, mode=mode, stopped_by=stopped_by))
    else:
        render.work_report(render.make_console(), report, title=title)


@app.command()
def rederive(
    ctx: typer.Context,
    *,
    subject: Subject,
    extractor: RequiredExtractor,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """What another extractor would make of SUBJECT's ledger, as a dry-run diff.

    The subject's events are replayed through the extractor into a scratch
    store and compared with the current timelines: windows added, closed or
    changed. Nothing is written to the store.
    """
    who = require_tenant(ctx, tenant)
    with (
        _memory(ctx, db) as memory,
        open_extractor(extractor, settings_of(ctx), schema=memory.families_of(who)) as chosen,
    ):
        diff = memory.rederive(subject, tenant=who, extractor=chosen)
    if as_json:
        render.print_json(rederivation_to_dict(diff, tenant=who))
    else:
        render.rederivation(render.make_console(), diff, tenant=who)


@app.command("retry-failed")
def retry_failed(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Queue every failed extraction job again (attempts start over)."""
    who = require_tenant(ctx, tenant)
    with _memory(ctx, db) as memory:
        count = memory.retry_failed(tenant=who)
    if as_json:
        render.print_json({"tenant": who, "requeued": count})
    elif count:
        typer.echo(f"requeued {count} failed job(s) of tenant {who!r}")
    else:
        typer.echo(f"no failed jobs for tenant {who!r}: nothing requeued")


# -- demo -------------------------------------------------------------------------------


@app.command()
def demo(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Annotated[
        str,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Tenant to tell it for ($MEMLEDGER_TENANT is not used).",
        ),
    ] = "demo",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the steps as one JSON document.")
    ] = False,
) -> None:
    """Tell seed 000's delivery-preference story against the store (tenant "demo").

    Safe to run again: every event is then a duplicate and nothing changes.
    """

    from memledger.demo import run_demo

    require_id(tenant, "tenant", InvalidQueryError)
    url = store_url(ctx, db)
    check_store_path(url)
    report = run_demo(url, Console(highlight=False), tenant=tenant, as_json=as_json)
    if as_json:
        render.print_json(report)


# -- the service ------------------------------------------------------------------------

app.command("serve")(serve_command)

# -- benchmarks -------------------------------------------------------------------------

app.add_typer(bench, name="bench")

evaluate = typer.Typer(help="Correctness checks (not benchmarks).", no_args_is_help=True)


@evaluate.command("scenarios")
def eval_scenarios(
    *,
    trials: Annotated[int, typer.Option(min=1, help="Trials, each a fresh store.")] = 100,
    seed: Annotated[int, typer.Option(help="The first trial's seed (then +1 each).")] = 0,
    steps: Annotated[int, typer.Option(min=1, help="Random steps per trial.")] = 25,
    as_json: AsJson = False,
) -> None:
    """Randomized interleavings of ingest, the worker, corrections, revocation, forgetting,
    erasure, replays, failing writes, expiry, reindexing and reads, with DESIGN.md's
    invariants checked after every step; prints the trials run and the violations per
    invariant, and exits 1 if there is any."""
    from memledger.eval import scenarios

    with render.progress_bar("scenarios") as bar:
        task = bar.add_task("scenarios", total=trials)
        report = scenarios.run(
            trials=trials,
            seed=seed,
            steps=steps,
            progress=lambda done: bar.update(task, completed=done),
        )
    if as_json:
        render.print_json(report.to_dict())
    else:
        console = render.make_console()
        console.print(
            Text(
                f"{report.trials:,} trials, {report.steps:,} steps in {report.seconds:.1f} s"
                f" (seeds {seed}..{seed + trials - 1})"
            )
        )
        for name, count in report.to_dict()["violations"].items():
            console.print(Text(f"  {name}: {count} violation(s)"))
        for example in report.examples[:10]:
            console.print(Text(f"  {example}"), style="red")
    if sum(report.violations.values()):
        raise typer.Exit(1)


app.add_typer(evaluate, name="eval")
app.command("mcp")(mcp_command)
