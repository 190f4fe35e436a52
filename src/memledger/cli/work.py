"""``memledger`` commands that run the write path's work: the worker, re-derivation,
failed jobs retried."""

from __future__ import annotations

from typing import Annotated

import typer

from memledger.cli import render
from memledger.cli._app import app, open_memory
from memledger.cli._command import Call, store_command
from memledger.cli._service import stop_on_signals
from memledger.cli.extractors import (
    ExtractorChoice,
    RequiredExtractor,
    describe,
    open_extractor,
)
from memledger.cli.options import (
    BATCH,
    AsJson,
    Batch,
    Db,
    OnlyTenant,
    Poll,
    Subject,
    check_tenant_id,
    settings_of,
)
from memledger.wire import (
    rederivation_to_dict,
    work_report_to_dict,
)
from memledger.write.worker import Worker, WorkerSettings

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
    check_tenant_id(tenant)
    settings = WorkerSettings(batch=batch)
    with (
        open_memory(ctx, db) as memory,
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
@store_command
def rederive(call: Call, *, subject: Subject, extractor: RequiredExtractor) -> None:
    """What another extractor would make of SUBJECT's ledger, as a dry-run diff.

    The subject's events are replayed through the extractor into a scratch
    store and compared with the current timelines: windows added, closed or
    changed. Nothing is written to the store.
    """
    who = call.tenant
    with (
        call.memory() as memory,
        open_extractor(extractor, settings_of(call.ctx), schema=memory.families_of(who)) as chosen,
    ):
        diff = memory.rederive(subject, tenant=who, extractor=chosen)
    call.show(rederivation_to_dict(diff, tenant=who), render.rederivation, diff, tenant=who)


@app.command("retry-failed")
@store_command
def retry_failed(call: Call) -> None:
    """Queue every failed extraction job again (attempts start over)."""
    who = call.tenant
    with call.memory() as memory:
        count = memory.retry_failed(tenant=who)
    call.say(
        {"tenant": who, "requeued": count},
        f"requeued {count} failed job(s) of tenant {who!r}"
        if count
        else f"no failed jobs for tenant {who!r}: nothing requeued",
    )
