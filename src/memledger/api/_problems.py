"""Problem details (RFC 9457): the one place the API turns errors into responses.

Every error is ``application/problem+json``: ``type``
(``https://memledger.dev/problems/<code>``), ``title``, ``status``, ``detail`` and a
stable ``code``, one per cause (the list, with causes: ``docs/problems.md``). A
:class:`~memledger.errors.MemledgerError` is told as
:data:`memledger.wire_models.PROBLEMS` says; the framework's own refusals (a request
that does not match its schema, a body that is not JSON, an unknown route, a path
with a control character included, or method, a body over the size limit) have codes
of their own (:data:`REQUEST_PROBLEMS`); anything else is a 500 ``internal`` problem
whose body holds no exception text or trace (it is logged here, server-side).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memledger.api._request_faults import request_fault
from memledger.domain.faults import SHOWN, listing
from memledger.errors import InvalidInputError, MemledgerError, QuotaExceededError
from memledger.wire_models import (
    PROBLEMS,
    Problem,
    ProblemError,
    ProblemKind,
    problem_kind,
)

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "REQUEST_PROBLEMS",
    "CatchAll",
    "OddPath",
    "body_faults",
    "http_problem",
    "install_handlers",
    "problem_response",
    "problem_responses",
]

log = logging.getLogger("memledger.api")

PROBLEM_MEDIA_TYPE = "application/problem+json"

REQUEST_PROBLEMS: Mapping[str, ProblemKind] = {
    "invalid_request": ProblemKind(
        status=422, code="invalid_request", title="Request does not match its schema"
    ),
    "malformed_json": ProblemKind(
        status=400,
        code="malformed_json",
        title="Malformed JSON",
        detail="The body is not JSON this server reads: not UTF-8, not valid JSON, or "
        "nested too deeply to parse.",
    ),
    "no_route": ProblemKind(
        status=404,
        code="no_route",
        title="No such route",
        detail="No route has this path; the routes are listed in /openapi.json.",
    ),
    "method_not_allowed": ProblemKind(
        status=405,
        code="method_not_allowed",
        title="Method not allowed",
        detail="This route does not answer this method; see /openapi.json.",
    ),
    "body_too_large": ProblemKind(
        status=413, code="limit_exceeded", title="Request body too large"
    ),
    "overloaded": ProblemKind(
        status=503,
        code="overloaded",
        title="Overloaded",
        detail="The service has as many requests in flight as it takes; retry shortly.",
        retry_after=1,
    ),
    "tenant_overloaded": ProblemKind(
        status=429,
        code="tenant_overloaded",
        title="Too many requests in flight for this tenant",
        detail="This API key's tenant has as many requests in flight as the service takes "
        "from one tenant; retry shortly.",
        retry_after=1,
    ),
    "refused": ProblemKind(status=400, code="request_refused", title="Request refused"),
    "not_supported": ProblemKind(status=501, code="not_supported", title="Not supported"),
    "not_ready": ProblemKind(
        status=503,
        code="not_ready",
        title="Not ready",
        detail="The store does not answer reads yet.",
        retry_after=5,
    ),
}
"""Refusals of the HTTP layer itself, by name. ``refused`` is any other refusal of the
framework, answered with the framework's status."""

_INTERNAL = PROBLEMS[MemledgerError]


def problem_response(
    kind: ProblemKind,
    detail: str | None = None,
    *,
    errors: Sequence[ProblemError] = (),
    request: Request | None = None,
    status: int | None = None,
) -> JSONResponse:
    """The response telling ``kind``: its fixed detail if it has one, else ``detail``;
    with ``status`` instead of the kind's (``refused`` only); listing the first
    :data:`~memledger.domain.faults.SHOWN` of ``errors`` and their count."""
    if status is not None:
        kind = replace(kind, status=status)
    body = Problem(
        type=kind.type,
        title=kind.title,
        status=kind.status,
        detail=kind.detail or detail or kind.title,
        code=kind.code,
        errors=list(errors[:SHOWN]) if errors else None,
        error_count=len(errors) if errors else None,
    )
    headers: dict[str, str] = {}
    if kind.retry_after is not None:
        headers["Retry-After"] = str(kind.retry_after)
    if kind.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="memledger"'
    if request is not None:
        _count(request, kind.code)
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True),
        status_code=kind.status,
        headers=headers,
        media_type=PROBLEM_MEDIA_TYPE,
    )


def _count(request: Request, code: str) -> None:
    metrics = getattr(request.app.state, "memledger_metrics", None)
    if metrics is not None:
        metrics.problem(code)


def _route(request: Request) -> str:
    route = request.scope.get("route")
    return str(getattr(route, "path", "<unmatched>"))


async def memledger_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemledgerError)
    kind = problem_kind(exc) or _INTERNAL
    if kind.status >= 500:
        log.error("%s on %s %s: %s", type(exc).__name__, request.method, _route(request), exc)
    faults = exc.faults if isinstance(exc, InvalidInputError) else ()
    errors = [ProblemError(loc=list(loc), msg=msg) for loc, msg in faults]
    response = problem_response(kind, str(exc), errors=errors, request=request)
    wait = getattr(exc, "retry_after", None)
    if isinstance(exc, QuotaExceededError) and wait is not None:
        response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    found = list(exc.errors())
    if found and all(e.get("type") == "json_invalid" for e in found):
        return problem_response(
            REQUEST_PROBLEMS["malformed_json"],
            "The body is not valid JSON.",
            request=request,
        )
    told = [request_fault(request, e) for e in found]
    return problem_response(
        REQUEST_PROBLEMS["invalid_request"],
        f"The request does not match the route's schema: {listing([t for _, t in told])}.",
        errors=[error for error, _ in told],
        request=request,
    )


@contextmanager
def body_faults() -> Iterator[None]:
    """Places the faults of an input error raised inside (a source event's, chat
    messages') in the request's body, ``["body", ...]``, where a schema's own are."""
    try:
        yield
    except InvalidInputError as exc:
        exc.faults = tuple((("body", *loc), msg) for loc, msg in exc.faults)
        raise


_HTTP_ERRORS = {
    400: "malformed_json",  # the body could not be parsed: not UTF-8, nested too deep
    404: "no_route",
    405: "method_not_allowed",
    413: "body_too_large",
}


async def http_problem(request: Request, exc: Exception) -> JSONResponse:
    """A refusal of the framework (Starlette's ``HTTPException``) as its problem, with
    the headers it names (a 405's ``Allow``)."""
    assert isinstance(exc, HTTPException)
    name = _HTTP_ERRORS.get(exc.status_code)
    if name is not None:
        response = problem_response(REQUEST_PROBLEMS[name], str(exc.detail), request=request)
    else:
        response = problem_response(
            REQUEST_PROBLEMS["refused"], str(exc.detail), request=request, status=exc.status_code
        )
    for header, value in (exc.headers or {}).items():
        response.headers[header] = value
    if exc.status_code == 405:
        response.headers["Allow"] = _allowed(request) or response.headers.get("Allow", "")
    return response


def _allowed(request: Request) -> str:
    """Every method some route of this path answers (a path may have a route per
    method: ``GET`` and ``PUT /v1/quotas``), for a 405's ``Allow``."""
    methods: set[str] = set()
    for route in _routes(getattr(request.app, "routes", ())):
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def _routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes of an app, those of its included routers too (which a FastAPI app
    may keep as routers of their own)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)
        else:
            yield route


_CONTROL = re.compile("[\x00-\x1f\x7f]")


class OddPath:
    """Answers a path holding a control character (``%0A``, ``%00`` ...) with a
    ``no_route`` problem: no route has one, and a route's pattern, whose ``$`` also
    matches before a final newline, must not take ``/v1/me%0A`` for ``/v1/me``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _CONTROL.search(scope.get("path", "")):
            state = getattr(scope.get("app"), "state", None)
            metrics = getattr(state, "memledger_metrics", None)
            if metrics is not None:
                metrics.problem(REQUEST_PROBLEMS["no_route"].code)
            await problem_response(REQUEST_PROBLEMS["no_route"])(scope, receive, send)
            return
        await self.app(scope, receive, send)


class CatchAll:
    """Answers an exception no handler took with a 500 ``internal`` problem (its type and
    message are logged here, never sent), inside the app, so that the server keeps the
    connection and the exception does not reach it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            route = getattr(scope.get("route"), "path", "<unmatched>")
            log.exception("unhandled %s on %s %s", type(exc).__name__, scope.get("method"), route)
            if started:
                raise
            metrics = getattr(getattr(scope.get("app"), "state", None), "memledger_metrics", None)
            if metrics is not None:
                metrics.problem(_INTERNAL.code)
            await problem_response(_INTERNAL)(scope, receive, send)


def install_handlers(app: FastAPI) -> None:
    """Translate every error at the boundary, nothing else."""
    app.add_exception_handler(MemledgerError, memledger_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, http_problem)
    app.add_middleware(CatchAll)  # the innermost middleware: added first
    app.add_middleware(OddPath)


# -- the OpenAPI side ---------------------------------------------------------------------------

_ALWAYS = (400, 401, 403, 404, 413, 422, 429, 500, 503)
"""Statuses any authenticated route may answer: a malformed token or parameter, a
missing or refused key, another tenant named, a path parameter holding a control
character (no route), a body too large, a request that does not match its schema, a
tenant with as many requests in flight as it may have, a server failure, a busy store."""


def _codes(status: int) -> list[str]:
    kinds = [*PROBLEMS.values(), *REQUEST_PROBLEMS.values()]
    return sorted({k.code for k in kinds if k.status == status})


def problem_responses(*extra: int, auth: bool = True) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: a problem for each status it may answer, with the
    codes each status carries."""
    statuses = sorted({*(_ALWAYS if auth else (500, 503)), *extra})
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        codes = ", ".join(_codes(status)) or "internal"
        out[status] = {
            "description": f"A problem; code one of: {codes}.",
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        if status in (409, 503):
            out[status]["headers"] = {
                "Retry-After": {
                    "description": "Seconds to wait before retrying (revision_not_met, "
                    "store_locked).",
                    "schema": {"type": "string"},
                }
            }
    return out
