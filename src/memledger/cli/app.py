"""The ``memledger`` command line: parse, call :class:`~memledger.Memory`, render.

The commands live by what they do: :mod:`~memledger.cli.writes`,
:mod:`~memledger.cli.reads`, :mod:`~memledger.cli.work`, the groups of
:mod:`~memledger.cli.admin` (keys, schema, reviews), :mod:`~memledger.cli.corpus`
and :mod:`~memledger.cli.bench` (with :mod:`~memledger.cli.bench_locomo`); this
module gathers them on the app of :mod:`~memledger.cli._app` in the order ``--help``
lists them, and adds the demo, ``serve``, ``mcp`` and ``eval``.

Each command opens the store named by ``--db`` (default ``$MEMLEDGER_URL``,
else ``./memledger.db``), acts for ``--tenant`` (default ``$MEMLEDGER_TENANT``, else
``default``; the commands over every tenant, such as ``status``, ``expire`` and
``worker``, act for every tenant unless ``--tenant`` names one) and prints rich
tables (:mod:`~memledger.cli.render`), or JSON with ``--json``;
:mod:`~memledger.cli._command` declares those three options once, and
:mod:`~memledger.cli.options` every option several commands share. Failures are one
``error:`` line on stderr; see :mod:`memledger.cli._run` for the exit codes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from memledger.cli import render
from memledger.cli._app import app
from memledger.cli._help import use_help_classes
from memledger.cli.admin import keys, reviews, schema
from memledger.cli.bench import bench
from memledger.cli.corpus import corpus
from memledger.cli.mcp import mcp_command
from memledger.cli.options import AsJson, Db, chosen_tenant, store_url
from memledger.cli.serve import serve_command
from memledger.settings import DEFAULT_TENANT

# The command modules register their commands on the app when imported, in the order
# --help lists them: the short path, what writes, what reads, the write path's work.
# isort: split
from memledger.cli import memories  # noqa: F401

# isort: split
from memledger.cli import writes  # noqa: F401

# isort: split
from memledger.cli import reads

# isort: split
from memledger.cli import work  # noqa: F401

# isort: split
from memledger.cli import bench_locomo  # noqa: F401  (bench locomo and bench locomo-merge)

__all__ = ["app", "main"]

trace = reads.trace

app.add_typer(trace, name="trace")
app.add_typer(corpus, name="corpus")
app.add_typer(keys, name="keys")
app.add_typer(schema, name="schema")
app.add_typer(reviews, name="reviews")


# -- demo -------------------------------------------------------------------------------


@app.command()
def demo(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help=f"Tenant to tell it for. Default: $MEMLEDGER_TENANT, else {DEFAULT_TENANT!r}"
            " (the tenant of serve's first admin key).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the steps as one JSON document.")
    ] = False,
) -> None:
    """Tell seed 000's delivery-preference story against the store.

    It goes to the tenant of the first admin key of `memledger serve` (unless --tenant
    names another), so that its web page shows it: subjects user-42, user-7 and user-9.
    Safe to run again: every event is then a duplicate and nothing changes.
    """

    from memledger.demo import run_demo

    who = chosen_tenant(ctx, tenant)
    url = store_url(ctx, db)
    report = run_demo(url, Console(highlight=False), tenant=who, as_json=as_json)
    if as_json:
        render.print_json(report)
    else:
        typer.echo(_where_to_see(who, served=chosen_tenant(ctx, None)))


def _where_to_see(tenant: str, *, served: str) -> str:
    """How to see the story on the web page of ``memledger serve``, whose first admin key
    is of tenant ``served``."""
    key = (
        "the admin key it prints on first start"
        if tenant == served
        else f"an admin key of tenant {tenant!r} (memledger keys create --tenant {tenant}"
        " --actor admin --principal service --role admin)"
    )
    return (
        f"\nsee it on the web page of memledger serve (/ui/, subject user-42), signed in with {key}"
    )


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


use_help_classes(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI (the ``memledger`` console script); returns the exit code."""
    result = app(args=argv, prog_name="memledger", standalone_mode=False)
    return result if isinstance(result, int) else 0
