"""Load shedding: past ``max_in_flight`` requests under ``/v1`` at once, the next one is
answered at once with a 503 ``overloaded`` problem (``Retry-After: 1``) instead of
waiting in a queue until its client gives up.

Without it an overloaded service keeps working on requests whose clients have long
timed out, and the rate it answers in time collapses (``memledger bench serve`` at
five times its capacity answered under half of what it answers at capacity). Health,
readiness, metrics and the OpenAPI document are never shed.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from memledger.api._problems import REQUEST_PROBLEMS, problem_response

__all__ = ["Shed"]


class Shed:
    """ASGI middleware that refuses ``/v1`` requests past ``max_in_flight`` at once."""

    def __init__(self, app: ASGIApp, *, max_in_flight: int) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.in_flight = 0  # touched on the event loop only: no lock needed
        self.shed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            self.shed += 1
            await problem_response(REQUEST_PROBLEMS["overloaded"])(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
