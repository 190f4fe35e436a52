"""Who a tool call acts as: one API key's :class:`~memledger.domain.keys.Principal`.

Over stdio the server is started for one key (``memledger mcp --key``), authenticated
before it serves and again for every call (a microsecond's read): a key revoked while
the server runs stops working at once, and every call acts as that key. Over streamable HTTP
every request carries its own key (``Authorization: Bearer mlk_...``): the ASGI app
(:mod:`memledger.mcp._http`) authenticates it and puts the principal in the request's
ASGI scope under :data:`PRINCIPAL_SCOPE_KEY`. The SDK hands each tool the HTTP
request that carried its message (``ctx.request_context.request``), so the tool reads
the principal from there. (A context variable set by the middleware would not do:
on a stateful session the tools run in the session's task, not the request's.)

The tenant and actor of every call come from the principal, never from arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver import Context

from memledger.domain.keys import Principal
from memledger.errors import AuthenticationError, PermissionDeniedError
from memledger.memory import Memory

__all__ = ["NO_KEY", "PRINCIPAL_SCOPE_KEY", "bearer_token", "principal_of", "require_write"]

PRINCIPAL_SCOPE_KEY = "memledger.principal"
"""The ASGI scope key under which the HTTP app leaves the request's principal."""

NO_KEY = "an API key is required: send the header 'Authorization: Bearer mlk_...'"


def bearer_token(headers: object) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header among ASGI ``headers``
    (a list of byte pairs), else ``None``."""
    if not isinstance(headers, list | tuple):
        return None
    for pair in headers:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            continue
        name, value = pair
        if isinstance(name, bytes) and name.lower() == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


def principal_of(ctx: Context, memory: Memory, key: str | None) -> Principal:
    """The principal a call acts as: the server's own key (stdio), authenticated again
    for every call so that a revoked key stops working at once; else the one the HTTP
    app authenticated for the request that carried the call."""
    if key is not None:
        return memory.authenticate(key)
    try:
        request = ctx.request_context.request
    except ValueError:  # no request context: not called through a transport
        request = None
    scope = getattr(request, "scope", None)
    found = scope.get(PRINCIPAL_SCOPE_KEY) if isinstance(scope, Mapping) else None
    if isinstance(found, Principal):
        return found
    raise AuthenticationError(NO_KEY)


def require_write(principal: Principal, what: str) -> None:
    """Refuse a read-only key, as :meth:`Memory.ingest_as` does, before anything is written."""
    if not principal.may_write:
        raise PermissionDeniedError(
            f"API key {principal.key_id!r} is read-only: it cannot {what}; use a write key"
        )
