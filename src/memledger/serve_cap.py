"""The cap of one serving process: at most ``max_concurrency`` requests at once.

:class:`RequestCap` wraps everything ``memledger serve`` serves (the API, the MCP
endpoint, the web page, the docs) and counts the HTTP requests in progress in its
process. Past the cap the next request is answered at once with the 503 ``overloaded``
problem (``Retry-After: 1``) the API's admission gives past its own cap, and counted
with the admission's refusals (``/metrics``), so a client meets one kind of overload
answer whichever cap it reached. Health, readiness, metrics and the OpenAPI document
are never refused: a probe must tell a busy process from a dead one.

Open connections do not count. An idle keep-alive connection costs a socket, not work,
and agents keep pools of them: a cap on connections (uvicorn's ``limit_concurrency``,
which this replaces) refuses every request, ``/healthz`` included, as soon as that
many connections are open, however idle. uvicorn closes an idle connection after its
keep-alive timeout (5 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from memledger.api import REQUEST_PROBLEMS
from memledger.api._problems import problem_response
from memledger.errors import InvalidInputError

if TYPE_CHECKING:
    from memledger.api._admission import Admission

__all__ = ["NEVER_REFUSED", "RequestCap"]

NEVER_REFUSED = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json"})
"""Paths served whatever the load."""


class RequestCap:
    """ASGI middleware: at most ``limit`` HTTP requests of this process in progress."""

    def __init__(self, app: ASGIApp, *, limit: int, admission: Admission | None = None) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a whole number >= 1, got {limit!r}")
        self.app = app
        self.limit = limit
        self.admission = admission
        self.in_flight = 0
        """Requests in progress (one event loop per process: no lock needed)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in NEVER_REFUSED:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            if self.admission is not None:
                self.admission.refused["overloaded"] += 1
            await problem_response(REQUEST_PROBLEMS["overloaded"])(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
