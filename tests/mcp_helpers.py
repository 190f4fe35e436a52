"""The MCP tests' parts: a real store with keys, a real uvicorn server in a thread, and
the SDK's own clients (stdio subprocess, streamable HTTP, in-process)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from starlette.types import ASGIApp

from memledger import Memory
from memledger.index.derived import DerivedIndex, default_index_path
from memledger.index.embedders import HashingEmbedder

TENANT = "acme"
OTHER_TENANT = "globex"
SUBJECT = "user-42"
STATEMENT = "I live in Berlin."
QUESTION = "where do I live?"
TOOLS = {
    "remember",
    "recall",
    "context",
    "forget",
    "history",
    "add_messages",
    "search_memories",
    "list_memories",
    "memory_history",
}


@dataclass(frozen=True, slots=True)
class Keys:
    write: str
    read: str
    ungranted: str
    other_tenant: str


def open_memory(path: Path) -> Memory:
    """A real SQLite store, with the index the CLI's ``--embedder hashing`` opens
    (same file, a cheap deterministic embedder)."""
    memory = Memory.open(f"sqlite:///{path}")
    index = DerivedIndex(default_index_path(memory.store), embedder=HashingEmbedder())
    return Memory(memory.store, index=index)


def make_keys(memory: Memory) -> Keys:
    def token(tenant: str, actor: str, **options: Any) -> str:
        return memory.create_key(tenant, actor, **options)[1]

    return Keys(
        write=token(TENANT, SUBJECT, grants=["home_city"]),
        read=token(TENANT, "dashboard", role="read", principal="service"),
        ungranted=token(TENANT, "agent-7", principal="agent"),
        other_tenant=token(OTHER_TENANT, SUBJECT, grants=["home_city"]),
    )


# -- clients ----------------------------------------------------------------------------


def stdio_params(url: str, token: str) -> StdioServerParameters:
    """``memledger mcp`` as an MCP client starts it (``python -m memledger.cli``)."""
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "memledger.cli",
            "mcp",
            "--store",
            url,
            "--key",
            token,
            "--embedder",
            "hashing",
        ],
        env=dict(os.environ),  # PYTHONPATH included: the mutation runs point it elsewhere
    )


@asynccontextmanager
async def http_client(url: str, token: str | None, *, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client


def payload(result: CallToolResult) -> dict[str, Any]:
    """A successful tool result's structured content (it also came as JSON text)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_of(result: CallToolResult) -> dict[str, Any]:
    """A tool error's ``{"code", "message"}``, checked to be one line without a traceback."""
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert "Traceback" not in text and "\n" not in text
    assert isinstance(result.structured_content, dict)
    error = result.structured_content["error"]
    assert text == f"{error['code']}: {error['message']}"
    return dict(error)


def recalled_ids(result: CallToolResult) -> list[str]:
    return [item["memory_id"] for item in payload(result)["items"]]


# -- a real HTTP server -------------------------------------------------------------------


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port, in a thread; yields its base URL."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-mcp-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        assert not thread.is_alive(), "uvicorn did not stop"
