"""memledger's MCP server (the official ``mcp`` Python SDK), for any MCP client.

Tools: ``remember`` (record a statement as evidence and extract what it supports),
``recall``, ``context`` (a token-budgeted packet with a trace id), ``forget`` (revoke)
and ``history``; a resource template, ``memledger://subjects/{subject}/current``, for a
subject's current memories. Every call acts as one API key: its tenant and actor come
from the key, never from arguments.

* stdio: ``memledger mcp --key mlk_...`` (or ``MEMLEDGER_API_KEY``); in code,
  ``build_server(memory, key=token).run("stdio")``.
* streamable HTTP: :func:`streamable_http_app` is an ASGI app that authenticates the
  ``Authorization: Bearer mlk_...`` header of every request; ``memledger serve``
  mounts it at ``/mcp`` (how: :mod:`memledger.mcp._http`).

Needs the ``server`` extra (``pip install 'memledger[server]'``); without it, importing
this package raises an :class:`ImportError` that says so.
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        f"memledger.mcp needs the MCP SDK: pip install 'memledger[server]' ({exc})"
    ) from exc

from memledger.mcp._http import StreamableHttpApp, streamable_http_app
from memledger.mcp._results import error_code
from memledger.mcp._server import CURRENT_URI, build_server

__all__ = [
    "CURRENT_URI",
    "StreamableHttpApp",
    "build_server",
    "error_code",
    "streamable_http_app",
]
