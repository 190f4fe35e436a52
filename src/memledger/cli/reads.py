"""``memledger`` commands that read: current values, recall, context packets and their
traces, the index (copy, rebuild), timelines, history, changes, reviews, jobs, stats."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from memledger.cli import render
from memledger.cli._app import app, open_memory
from memledger.cli._run import CliError
from memledger.cli.options import (
    AsJson,
    AsOf,
    Db,
    FamilyName,
    MinRevision,
    Scope,
    Subject,
    Tenant,
    ValidAt,
    require_tenant,
)
from memledger.corpus import Corpus, default_corpus_path
from memledger.domain.budget import Budget
from memledger.domain.records import JsonValue, parse_time, require_id
from memledger.errors import InvalidQueryError
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
from memledger.wire import (
    history_entry_to_dict,
    job_to_dict,
    recall_to_dict,
    record_to_dict,
    review_to_dict,
)

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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as opened:
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
    with open_memory(ctx, db) as opened, ExitStack() as stack:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
        found = recent_traces(memory.store, tenant=who, subject=subject, limit=limit)
    if as_json:
        render.print_json(found)  # type: ignore[arg-type]
    else:
        render.traces(render.make_console(), found)


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
    with open_memory(ctx, db) as source:
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
    with open_memory(ctx, db) as opened:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
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
    with open_memory(ctx, db) as memory:
        counters = memory.stats(tenant=who)
    if as_json:
        render.print_json({"tenant": who, "counters": dict(counters)})
    else:
        render.counters(render.make_console(), counters, tenant=who)
