"""The MCP server over streamable HTTP, as an ASGI app that authenticates every request.

Each HTTP request must carry an API key, ``Authorization: Bearer mlk_...``. Without
one, or with a key that is unknown, malformed or revoked, the answer is ``401`` with a
JSON problem body (``{"type", "title", "status", "detail", "code"}``, code
``unauthenticated``, as the HTTP API answers) and a ``WWW-Authenticate: Bearer``
header; nothing reaches the MCP server. A store failure while authenticating is told
as the API tells it (``503 store_locked``, ``500 store_error``). An accepted key's principal
is put in the request's ASGI scope for the tools (:mod:`memledger.mcp._auth`), and the
SDK binds each MCP session to the key that opened it: another key presenting the
session's id is answered ``404``, as for an unknown session.

Given an :class:`~memledger.api._admission.Admission` (``memledger serve`` passes the
HTTP API's), every ``POST`` is admitted by it before it is authenticated, and a refused
one is answered at once (:mod:`memledger.mcp._admission`); every tool call runs under
the work budget of its ``limits``.

The app answers on whatever path it is mounted at. In a Starlette or FastAPI host,
mount it and run its :meth:`StreamableHttpApp.lifespan` in the host's lifespan
(Starlette does not pass ``lifespan`` events to mounted apps)::

    mcp_app = streamable_http_app(memory)

    @asynccontextmanager
    async def lifespan(app):
        async with mcp_app.lifespan():  # the SDK's session manager
            yield

    host = Starlette(
        routes=[Route("/mcp", endpoint=mcp_app), Mount("/mcp", app=mcp_app), ...],
        lifespan=lifespan,
    )

``Route`` serves ``/mcp`` itself, ``Mount`` ``/mcp/`` and below. Served on its own
(``uvicorn.run(mcp_app)``) the app runs the lifespan itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.authentication import AuthCredentials
from starlette.types import Receive, Scope, Send

from memledger.api._admission import Admission, ServiceLimits, heavy_request
from memledger.domain.keys import Principal
from memledger.errors import AuthenticationError, MemledgerError
from memledger.mcp._admission import admit, refuse
from memledger.mcp._auth import NO_KEY, PRINCIPAL_SCOPE_KEY, bearer_token
from memledger.mcp._results import error_message, problem_of
from memledger.mcp._server import build_server
from memledger.memory import Memory
from memledger.ports import Extractor

__all__ = ["StreamableHttpApp", "streamable_http_app"]


def streamable_http_app(
    memory: Memory,
    *,
    extractor: Extractor | None = None,
    extract: bool = True,
    json_response: bool = False,
    stateless: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    limits: ServiceLimits | None = None,
    admission: Admission | None = None,
) -> StreamableHttpApp:
    """The MCP server over ``memory`` as an ASGI app for streamable HTTP (see the module
    docstring for mounting it).

    ``extractor``/``extract``: as :func:`~memledger.mcp.build_server`. ``json_response``:
    answer with JSON bodies instead of SSE streams. ``stateless``: no MCP sessions (every
    request stands alone). ``allowed_hosts`` (``"127.0.0.1:*"``, ``"mem.example.com"``)
    turns on the SDK's DNS-rebinding protection for those ``Host`` values (and their
    ``http``/``https`` origins); by default any ``Host`` is served, since every request
    must carry a key a page in a browser does not have. ``limits``: the work budget of
    a tool call (:class:`~memledger.api.ServiceLimits`, its defaults when ``None``).
    ``admission``: admit every ``POST`` by it (:mod:`memledger.mcp._admission`;
    ``memledger serve`` passes the HTTP API's); ``None``: no admission.
    """
    return StreamableHttpApp(
        memory,
        extractor=extractor,
        extract=extract,
        json_response=json_response,
        stateless=stateless,
        allowed_hosts=allowed_hosts,
        limits=limits,
        admission=admission,
    )


class StreamableHttpApp:
    """An ASGI app: key authentication in front of the SDK's streamable-HTTP session
    manager. Build it with :func:`streamable_http_app`."""

    def __init__(
        self,
        memory: Memory,
        *,
        extractor: Extractor | None,
        extract: bool,
        json_response: bool,
        stateless: bool,
        allowed_hosts: Sequence[str] | None,
        limits: ServiceLimits | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.memory = memory
        self.admission = admission
        self.server = build_server(
            memory,
            extractor=extractor,
            extract=extract,
            limits=limits,
            over_budget=None if admission is None else admission.over_budget,
        )
        # Builds (and keeps) the server's session manager; the Starlette app it returns
        # is not used: this app routes every request to the manager itself.
        self.server.streamable_http_app(
            json_response=json_response,
            stateless_http=stateless,
            transport_security=_security(allowed_hosts),
        )
        self.session_manager: StreamableHTTPSessionManager = self.server.session_manager

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Run the session manager: enter it in the host app's lifespan, once."""
        return self.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # websockets: not a transport of MCP
            await send({"type": "websocket.close", "code": 1008})
            return
        if self.admission is None or scope.get("method") != "POST":
            await self._serve(scope, receive, send)
            return
        bucket, refused = await admit(self.admission, scope)
        if refused is not None:
            await refuse(refused, scope, receive, send)
            return
        try:
            await self._serve(scope, receive, send)
        finally:
            self.admission.release(bucket, heavy=heavy_request(scope))

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = bearer_token(scope.get("headers"))
        if token is None:
            await _problem(send, AuthenticationError(NO_KEY))
            return
        try:
            principal = await anyio.to_thread.run_sync(partial(self.memory.authenticate, token))
        except MemledgerError as exc:  # a refused key (401), or the store failed (5xx)
            await _problem(send, exc)
            return
        await self.session_manager.handle_request(_with_principal(scope, principal), receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol, when the app is served on its own."""
        await receive()  # lifespan.startup
        started = False
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except Exception as exc:  # the manager could not start (or stop) cleanly
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


def _with_principal(scope: Scope, principal: Principal) -> Scope:
    """The request's scope with its principal, and the key as the SDK's authenticated
    user (which binds each MCP session to the key that opened it)."""
    token = AccessToken(
        token=principal.key_id,  # an identifier, not the secret
        client_id=principal.key_id,
        scopes=[principal.role],
        subject=principal.actor.id,
        claims={"iss": f"memledger:{principal.tenant}"},
    )
    return {
        **scope,
        PRINCIPAL_SCOPE_KEY: principal,
        "user": AuthenticatedUser(token),
        "auth": AuthCredentials([principal.role]),
    }


def _security(allowed_hosts: Sequence[str] | None) -> TransportSecuritySettings:
    if allowed_hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = list(allowed_hosts)
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


async def _problem(send: Send, error: MemledgerError) -> None:
    """The error as the HTTP API tells it: a JSON problem (RFC 9457) with its stable code."""
    kind = problem_of(error)
    body = json.dumps(
        {
            "type": kind.type,
            "title": kind.title,
            "status": kind.status,
            "detail": error_message(error),
            "code": kind.code,
        }
    ).encode()
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if kind.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memledger"'))
    if kind.retry_after is not None:
        headers.append((b"retry-after", str(kind.retry_after).encode()))
    await send({"type": "http.response.start", "status": kind.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
