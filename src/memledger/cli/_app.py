"""The root of the ``memledger`` command line: the Typer app every command module
registers on, its callback (settings from the environment) and :func:`open_memory`,
the store one command works on (:func:`indexed_memory` with its derived index)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from memledger.cli._run import Group
from memledger.cli.options import embedder_named, store_url
from memledger.index.backends import open_index
from memledger.memory import Memory
from memledger.settings import Settings

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
def open_memory(ctx: typer.Context, db: str | None, *, create: bool = False) -> Iterator[Memory]:
    """The store for one command. Only writers that add events create a missing store:
    a read of a mistyped path fails instead of answering from an empty file."""
    url = store_url(ctx, db)
    memory = Memory.open(url, create=create)
    try:
        yield memory
    finally:
        memory.close()


@contextmanager
def indexed_memory(ctx: typer.Context, db: str | None, embedder: str) -> Iterator[Memory]:
    """The store with its derived index built for ``--embedder`` (closed after)."""
    with open_memory(ctx, db) as opened:
        memory = Memory(
            opened.store, index=open_index(opened.store, embedder=embedder_named(embedder))
        )
        try:
            yield memory
        finally:
            memory.index.close()
