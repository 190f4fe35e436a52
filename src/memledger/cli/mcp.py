"""``memledger mcp``: the MCP server over stdio, for one MCP client, as one API key.

The key (``--key`` or ``MEMLEDGER_API_KEY``; the variable keeps it out of the process
list) is authenticated before anything is served: an unknown, malformed or revoked
key, or a store that does not exist, ends the command with one ``error:`` line and
exit code 2. Every tool call then acts as the key's actor of the key's tenant, under
the work budget ``--request-seconds``. The one caller is not admitted by tenant (that
is ``memledger serve``'s ``/mcp``).
Stdout carries the protocol alone; the one line saying what is served goes to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memledger.cli._run import CliError
from memledger.cli.extractors import ExtractorChoice, open_extractor
from memledger.cli.options import (
    check_embedder,
    embedder_named,
    settings_of,
    store_url,
)
from memledger.errors import MemledgerError
from memledger.index.backends import open_index
from memledger.memory import Memory

__all__ = ["mcp_command"]

Key = Annotated[
    str | None,
    typer.Option(
        "--key",
        metavar="TOKEN",
        envvar="MEMLEDGER_API_KEY",
        show_envvar=True,
        help="The API key (mlk_...) every tool call acts as. Prefer the environment"
        " variable: a command-line argument is visible to other users of the machine.",
        show_default=False,
    ),
]
Store = Annotated[
    str | None,
    typer.Option(
        "--db",
        "--store",
        metavar="URL",
        help="Store URL (sqlite:///path.db) or file path. "
        "Default: $MEMLEDGER_URL, else ./memledger.db. It must exist.",
        show_default=False,
    ),
]
EmbedderName = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Vectors of the index: default (MiniLM on onnxruntime), minilm-onnx, minilm"
        " (the 'minilm' extra), hashing, or none (lexical only). Changing it rebuilds"
        " the index.",
    ),
]
RequestSeconds = Annotated[
    float,
    typer.Option(
        "--request-seconds",
        metavar="SECONDS",
        help="Work budget of one tool call; past it, the tool error budget_exceeded and"
        " nothing written.",
    ),
]


def mcp_command(
    ctx: typer.Context,
    *,
    key: Key = None,
    db: Store = None,
    embedder: EmbedderName = "default",
    extractor: ExtractorChoice = "rules",
    request_seconds: RequestSeconds = 10.0,
) -> None:
    """Serve memledger's MCP tools (remember, recall, context, forget, history) over
    stdio, acting as one API key; an MCP client starts this command itself."""
    if not key:
        raise CliError("no API key given: pass --key TOKEN or set MEMLEDGER_API_KEY")
    check_embedder(embedder)
    try:
        from memledger.api import ServiceLimits
        from memledger.mcp import build_server
    except ImportError as exc:
        raise CliError(str(exc)) from None
    try:
        limits = ServiceLimits(request_seconds=request_seconds)
    except MemledgerError as exc:
        raise CliError(f"--request-seconds: {exc}") from None
    url = store_url(ctx, db)
    memory = Memory.open(url, create=False)  # a mistyped path is an error, not a new store
    try:
        principal = memory.authenticate(key)  # before anything is served
        index = open_index(memory.store, embedder=embedder_named(embedder))
        memory = Memory(memory.store, index=index)
        with open_extractor(
            extractor, settings_of(ctx), schema=memory.families_of(principal.tenant)
        ) as chosen:
            typer.echo(
                f"memledger mcp: serving tenant {principal.tenant!r} as {principal.actor.id!r}"
                f" ({principal.role} key {principal.key_id}) over stdio",
                err=True,
            )
            build_server(memory, key=key, extractor=chosen, limits=limits).run("stdio")
    finally:
        memory.close()  # the store, and the index once it was opened
