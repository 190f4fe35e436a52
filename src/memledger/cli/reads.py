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
from memledger.cli._app import app, indexed_memory, open_memory
from memledger.cli._command import Call, store_command
from memledger.cli._run import CliError
from memledger.cli.options import (
    AsJson,
    AsOf,
    Db,
    FamilyName,
    IncludeResolved,
    IndexEmbedder,
    MemoryId,
    MinRevision,
    Scope,
    Subject,
    ValidAt,
    check_tenant_id,
)
from memledger.corpus import Corpus, default_corpus_path
from memledger.domain.budget import Budget
from memledger.domain.records import JsonValue, MemoryRecord, parse_time
from memledger.errors import MemoryNotFoundError
from memledger.gate import decisions as gate_decisions
from memledger.read.context import Constraint, LiveState, Material, check_request
from memledger.read.recall import check_query
from memledger.read.trace import recent as recent_traces
from memledger.wire import (
    history_entry_to_dict,
    job_to_dict,
    memory_change_to_dict,
    recall_to_dict,
    record_to_dict,
    review_to_dict,
)

# -- reads ------------------------------------------------------------------------------


@app.command()
@store_command
def current(
    call: Call,
    *,
    subject: Subject,
    family: FamilyName,
    scope: Scope = None,
    valid_at: ValidAt = None,
    as_of: AsOf = None,
    min_revision: MinRevision = None,
) -> None:
    """The authorised current value(s) of a family, one per scope."""
    with call.memory() as memory:
        records = memory.current(
            subject,
            family,
            tenant=call.tenant,
            scope=scope,
            valid_at=valid_at,
            as_of=as_of,
            min_revision=min_revision,
        )
    call.show(_records_json(records), render.current, records, subject=subject, family=family)


def _records_json(records: Sequence[MemoryRecord]) -> list[JsonValue]:
    return [record_to_dict(r) for r in records]


@app.command("recall")
@store_command
def recall_command(
    call: Call,
    query: Annotated[str, typer.Argument(help="What to remember, in words.")],
    *,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Only memories about this subject.")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="How many memories, 1-100.")] = 10,
    valid_at: ValidAt = None,
    min_revision: MinRevision = None,
    embedder: IndexEmbedder = "default",
) -> None:
    """The memories most useful for QUERY, rechecked against the store (index synced first)."""
    check_query(query, call.tenant, subject, k)  # a refused query builds no index
    with indexed_memory(call.ctx, call.db, embedder) as memory:
        result = memory.recall(
            query,
            tenant=call.tenant,
            subject=subject,
            k=k,
            valid_at=valid_at,
            min_revision=min_revision,
        )
    call.show(recall_to_dict(result), render.recall, result)


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
@store_command
def context_command(
    call: Call,
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
    embedder: IndexEmbedder = "default",
) -> None:
    """The context packet for REQUEST within a token budget, stored as a trace."""
    check_request(request, call.tenant, subject)
    total = _budget(budget, section_budget or [])
    states, rules = _live_states(live), _constraints(constraints)
    supplied = []
    for path in material or []:
        try:
            supplied.append(Material(name=path.name, text=path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read --material {str(path)!r}: {exc}") from None
    with indexed_memory(call.ctx, call.db, embedder) as memory, ExitStack() as stack:
        shared = default_corpus_path(memory.store.url)
        documents = None
        if use_corpus and shared.exists():
            documents = stack.enter_context(Corpus(shared, embedder=memory.index.embedder))
        packet = memory.context(
            request,
            tenant=call.tenant,
            subject=subject,
            budget=total,
            live=states,
            constraints=rules,
            material=supplied,
            valid_at=valid_at,
            corpus=documents,
        )
    call.show(packet.to_dict(), render.packet, packet)


trace = typer.Typer(help="Context traces: what a model call was given.", no_args_is_help=True)


@trace.command("show")
@store_command
def trace_show(
    call: Call,
    trace_id: Annotated[str, typer.Argument(help="The packet's trace id (ctx-...).")],
) -> None:
    """Rebuild a stored packet from the store, as the model saw it, and check its hash."""
    with call.memory() as memory:
        replayed = memory.replay(trace_id, tenant=call.tenant)
        gated = gate_decisions(memory.store, tenant=call.tenant, trace_id=trace_id)
    found: dict[str, JsonValue] = {
        **replayed.packet.to_dict(),
        "matches": replayed.matches,
        "revoked_since": list(replayed.revoked),
        "missing": list(replayed.missing),
        "gate_decisions": gated,  # type: ignore[dict-item]
    }
    call.show(found, render.replay, replayed, gated)


@trace.command("list")
@store_command
def trace_list(
    call: Call,
    *,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Only this subject's packets.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many, newest first.")] = 20,
) -> None:
    """The most recent context traces, newest first."""
    if not 1 <= limit <= 1000:
        raise CliError(f"--limit must be from 1 to 1000, got {limit}")
    with call.memory() as memory:
        found = recent_traces(memory.store, tenant=call.tenant, subject=subject, limit=limit)
    call.show(found, render.traces, found)  # type: ignore[arg-type]


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
    embedder: IndexEmbedder = "default",
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
    check_tenant_id(tenant)
    with indexed_memory(ctx, db, embedder) as memory:
        with render.progress_bar("reindex") as progress:
            task = progress.add_task("reindex", total=None)

            def report(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            applied = memory.reindex(tenant=tenant, progress=report)
        status = memory.index.status()
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
@store_command
def timeline(
    call: Call,
    *,
    subject: Subject,
    family: FamilyName,
    scope: Scope = None,
    as_of: AsOf = None,
    min_revision: MinRevision = None,
) -> None:
    """Every valid-time window of a family, as held now (or --as-of)."""
    with call.memory() as memory:
        records = memory.timeline(
            subject, family, tenant=call.tenant, scope=scope, as_of=as_of, min_revision=min_revision
        )
    call.show(_records_json(records), render.timeline, records, subject=subject, family=family)


@app.command()
@store_command
def history(
    call: Call,
    subject: Annotated[
        str,
        typer.Argument(
            metavar="SUBJECT|MEMORY_ID",
            help="What the memory is about, e.g. user-42; alone, a memory's id (mem-...).",
        ),
    ],
    family: Annotated[
        str | None,
        typer.Argument(
            metavar="FAMILY", help="Claim family, e.g. delivery_preference.", show_default=False
        ),
    ] = None,
    *,
    include_revoked: Annotated[
        bool, typer.Option("--include-revoked", help="Show revoked records too (audits).")
    ] = False,
) -> None:
    """Every record the family held, closed ones included, with both time axes; revoked
    records only with --include-revoked.

    With MEMORY_ID alone: how that memory came to be and what became of it, oldest
    first (the values before it in its slot, the one that replaced it).
    """
    if family is None:
        _memory_history(call, subject, include_revoked=include_revoked)
        return
    with call.memory() as memory:
        records = memory.history(
            subject, family, tenant=call.tenant, include_revoked=include_revoked
        )
    call.show(_records_json(records), render.history, records, subject=subject, family=family)


def _memory_history(call: Call, memory_id: str, *, include_revoked: bool) -> None:
    if include_revoked:
        raise CliError("--include-revoked needs SUBJECT and FAMILY (a family's records)")
    try:
        with call.memory() as memory:
            changes = memory.history(memory_id, tenant=call.tenant)
    except MemoryNotFoundError as exc:
        raise MemoryNotFoundError(f"{exc} (a family's records: history SUBJECT FAMILY)") from None
    call.show(
        [memory_change_to_dict(c) for c in changes],
        render.memory_history,
        changes,
        memory_id=memory_id,
    )


@app.command()
@store_command
def changes(call: Call, *, subject: Subject, family: FamilyName) -> None:
    """The family's append-only change log."""
    with call.memory() as memory:
        entries = memory.changes(subject, family, tenant=call.tenant)
    call.show(
        [history_entry_to_dict(e) for e in entries],
        render.changes,
        entries,
        subject=subject,
        family=family,
    )


@app.command()
@store_command
def get(call: Call, *, memory_id: MemoryId) -> None:
    """One memory record by id, whatever its status."""
    with call.memory() as memory:
        record = memory.get(memory_id, tenant=call.tenant)
    call.show(record_to_dict(record), render.record, record)


@app.command()
@store_command
def review(call: Call, *, include_resolved: IncludeResolved = False) -> None:
    """Events whose claims wait for review (they changed nothing)."""
    with call.memory() as memory:
        items = memory.reviews(tenant=call.tenant, open_only=not include_resolved)
    call.show([review_to_dict(i) for i in items], render.reviews, items, empty="no review items")


@app.command()
@store_command
def jobs(
    call: Call,
    *,
    include_done: Annotated[bool, typer.Option("--all", help="Include finished jobs.")] = False,
) -> None:
    """Extraction jobs not done yet (queued or failed), oldest first, with their
    attempts, last error and next attempt."""
    with call.memory() as memory:
        items = memory.jobs(tenant=call.tenant, open_only=not include_done)
    call.show(
        [job_to_dict(j) for j in items], render.jobs, items, empty="no queued extraction jobs"
    )


@app.command()
@store_command
def stats(call: Call) -> None:
    """Write-path counters: rejections by reason, extraction errors, gate and prefilter drops."""
    with call.memory() as memory:
        counters = memory.stats(tenant=call.tenant)
    call.show(
        {"tenant": call.tenant, "counters": dict(counters)},
        render.counters,
        counters,
        tenant=call.tenant,
    )
