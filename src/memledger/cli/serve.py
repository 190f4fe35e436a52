"""``memledger serve``: the main job (:mod:`memledger.serve`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from memledger.cli import render
from memledger.cli._first_steps import first_steps
from memledger.cli._run import CliError
from memledger.cli.extractors import ExtractorChoice, ExtractorName, describe, open_extractor
from memledger.cli.options import (
    BATCH,
    Batch,
    Db,
    Poll,
    chosen_tenant,
    settings_of,
    store_url,
)
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.settings import Settings


def serve_command(
    ctx: typer.Context,
    *,
    db: Db = None,
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="ADDRESS", help="Address to listen on (loopback unless you say so)."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", metavar="PORT", min=0, max=65535, help="Port; 0 picks a free one."),
    ] = 8765,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Tenant of the first admin key. Default: $MEMLEDGER_TENANT, else 'default'.",
            show_default=False,
        ),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            metavar="PATH",
            help="Where the first admin key is written (mode 0600). Default: <store>.admin-key.",
            show_default=False,
        ),
    ] = None,
    extractor: ExtractorChoice = "rules",
    no_worker: Annotated[
        bool,
        typer.Option(
            "--no-worker",
            help="Do not run the extraction queue and the index's catch-up here.",
        ),
    ] = False,
    poll: Poll = 0.5,
    batch: Batch = BATCH,
    expire_every: Annotated[
        float,
        typer.Option(
            "--expire-every",
            metavar="SECONDS",
            min=0,
            help="Seconds between the worker's expiry runs (TTL and retention); 0: never.",
        ),
    ] = 600.0,
    max_concurrency: Annotated[
        int,
        typer.Option(
            "--max-concurrency",
            metavar="N",
            min=1,
            help="Requests one process serves at once (open connections do not count); "
            "past it, 503 overloaded at once (load shed). Health and metrics are never refused.",
        ),
    ] = 64,
    max_in_flight: Annotated[
        int,
        typer.Option(
            "--max-in-flight",
            metavar="N",
            min=1,
            help="API requests served at once, every tenant together; past it, 503 at once.",
        ),
    ] = 16,
    tenant_in_flight: Annotated[
        int,
        typer.Option(
            "--tenant-in-flight",
            metavar="N",
            min=1,
            help="API and MCP requests of one tenant served at once; past it, that tenant gets"
            " 429.",
        ),
    ] = 4,
    tenant_heavy_in_flight: Annotated[
        int,
        typer.Option(
            "--tenant-heavy-in-flight",
            metavar="N",
            min=1,
            help="Requests with bodies over 64 KiB of one tenant served at once while "
            "other tenants are served; past it, that tenant gets 429.",
        ),
    ] = 1,
    tenant_heavy_share: Annotated[
        float,
        typer.Option(
            "--tenant-heavy-share",
            metavar="SHARE",
            min=0.01,
            max=1.0,
            help="Share of each second one tenant's requests with bodies over 64 KiB may "
            "take while other tenants are served; past it, that tenant gets 429.",
        ),
    ] = 0.1,
    max_material_chars: Annotated[
        int,
        typer.Option(
            "--max-material-chars",
            metavar="N",
            min=1,
            help="Characters of material in one context request; past it, 413.",
        ),
    ] = 250_000,
    max_document_chars: Annotated[
        int,
        typer.Option(
            "--max-document-chars",
            metavar="N",
            min=1,
            help="Characters of one shared corpus document; past it, 413.",
        ),
    ] = 1_000_000,
    request_seconds: Annotated[
        float,
        typer.Option(
            "--request-seconds",
            metavar="SECONDS",
            help="Work budget of one API request or MCP tool call; past it, budget_exceeded"
            " (503, or a tool error) and nothing written.",
        ),
    ] = 10.0,
    replica: Annotated[
        list[str] | None,
        typer.Option(
            "--replica",
            metavar="URL",
            help="A streaming replica of a PostgreSQL store to read from (repeat for more): "
            "used only when it holds this process's writes and the request's revision token.",
            show_default=False,
        ),
    ] = None,
    processes: Annotated[
        int,
        typer.Option(
            "--processes",
            metavar="N",
            min=1,
            max=64,
            help="Request processes serving the address over the one store; past 1 the "
            "worker runs in a supervising process, and the limits above count in each.",
        ),
    ] = 1,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            metavar="N",
            min=1,
            max=256,
            help="Store work (reads, writes) each process runs at once; the rest waits its "
            "turn (2 suits short SQLite requests). Default: no cap.",
            show_default=False,
        ),
    ] = None,
    replica_wait: Annotated[
        float,
        typer.Option(
            "--replica-wait",
            metavar="SECONDS",
            min=0,
            help="How long a read waits for a replica to catch up before reading the primary.",
        ),
    ] = 1.0,
) -> None:
    """Run the HTTP API, the web page, the MCP endpoint and a background worker.

    Prints the URL once the server listens. On first start the tenant gets an admin
    key, shown once and written to a file only you can read, with two curl commands
    that add a chat message and search it with that key. SIGTERM or Ctrl-C stops the
    server, then the worker finishes the batch it holds.
    """
    try:
        from memledger.api import ServiceLimits
        from memledger.serve import ServeConfig, ensure_admin_key, run
    except ImportError as exc:
        raise CliError(str(exc)) from exc
    settings = settings_of(ctx)
    url = store_url(ctx, db)
    # a value refused here, or a replica the store cannot use below, raises
    # InvalidInputError: a caller mistake (exit code 2)
    config = ServeConfig(
        host=host,
        port=port,
        tenant=chosen_tenant(ctx, tenant),
        worker=not no_worker,
        poll=poll,
        batch=batch,
        expire_every=expire_every or None,
        key_file=key_file,
        max_concurrency=max_concurrency,
        max_in_flight=max_in_flight,
        processes=processes,
        threads=threads,
        limits=ServiceLimits(
            tenant_in_flight=tenant_in_flight,
            tenant_heavy_in_flight=tenant_heavy_in_flight,
            tenant_heavy_share=tenant_heavy_share,
            max_material_chars=max_material_chars,
            max_document_chars=max_document_chars,
            request_seconds=request_seconds,
        ),
    )
    with Memory.open(url, replicas=replica or (), replica_wait=replica_wait) as memory:
        admin = ensure_admin_key(memory, config)
        with open_extractor(extractor, settings, schema=memory.schema) as chosen:
            expiring = f", erasing what expired every {expire_every:g} s" if expire_every else ""
            worker_line = (
                "off (--no-worker)"
                if no_worker
                else f"on, every tenant, with {describe(chosen)}{expiring}"
            )

            def announce(base: str) -> None:
                replicas = f" (reads also from {len(replica)} replica(s))" if replica else ""
                lines = [
                    f"memledger serve: {memory.url}{replicas}",
                    f"  API       {base}/v1   (OpenAPI {base}/openapi.json, docs {base}/docs)",
                    f"  web page  {base}/ui/",
                    f"  MCP       {base}/mcp   (streamable HTTP)",
                    f"  metrics   {base}/metrics",
                    f"  worker    {worker_line}",
                ]
                if processes > 1:
                    lines.append(
                        f"  processes {processes} request processes"
                        " (the worker runs in the supervising one)"
                    )
                if admin.token is not None:
                    lines += [
                        f"  admin key of tenant {config.tenant!r} (shown once; also written to "
                        f"{admin.path}, readable by you only):",
                        f"    {admin.token}",
                        *first_steps(base, admin.token),
                    ]
                else:
                    lines.append(
                        f"  admin key of tenant {config.tenant!r}: {admin.key_id} "
                        f"(its token was written to {admin.path} on first start)"
                    )
                lines.append("stop with Ctrl-C or SIGTERM")
                typer.echo("\n".join(lines))

            opener = partial(
                open_requests,
                url,
                tuple(replica or ()),
                replica_wait,
                None if no_worker else extractor,
                settings,
            )
            report = run(
                memory,
                None if no_worker else chosen,
                config,
                announce=announce,
                open_requests=opener,
            )
    if report is not None:
        render.work_report(
            render.make_console(), report, title=f"stopped; the worker ran {report.jobs} job(s)"
        )
    else:
        typer.echo("stopped")


@contextmanager
def open_requests(
    url: str | None,
    replicas: tuple[str, ...],
    replica_wait: float,
    extractor: ExtractorName | None,
    settings: Settings,
) -> Iterator[tuple[Memory, Extractor | None]]:
    """The store and the extractor one request process of ``serve --processes N``
    serves with, opened as the supervising process opened its own."""
    with Memory.open(url, replicas=replicas, replica_wait=replica_wait) as memory:
        if extractor is None:
            yield memory, None
            return
        with open_extractor(extractor, settings, schema=memory.schema) as chosen:
            yield memory, chosen
