"""The app: routes, error translation, the body size limit, metrics and the OpenAPI
document, put together over one :class:`~memledger.memory.Memory`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memledger.api import (
    _admin,
    _corpus,
    _events,
    _health,
    _mem0,
    _memories,
    _reads,
    _subjects,
    _traces,
)
from memledger.api._admission import Admission, AdmissionMiddleware, ServiceLimits
from memledger.api._bodies import ID_PATTERN
from memledger.api._docs import serve_docs
from memledger.api._extra import Shelf
from memledger.api._hot import HotReads
from memledger.api._metrics import CONTENT_TYPE, Metrics, MetricsMiddleware
from memledger.api._problems import (
    REQUEST_PROBLEMS,
    install_handlers,
    problem_response,
)
from memledger.api._services import Services
from memledger.corpus import Corpus
from memledger.errors import InvalidInputError, MemledgerError
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.wire import EventIn
from memledger.wire_models import CONSISTENCY_HEADER, Problem

__all__ = ["create_app"]

DESCRIPTION = f"""A long-term memory layer for AI agents, over HTTP.

Every route but `/healthz`, `/readyz`, `/metrics` and this document needs an API key:
`Authorization: Bearer mlk_<id>.<secret>` (or `Token mlk_...`, as mem0's clients send
it). The key decides the tenant and the actor of the request; a body or query naming
another tenant is refused (403), and ids of another tenant are answered exactly as
missing ones. `read` keys read, `write` keys also write, `admin` keys also manage keys,
families, the review queue and the shared corpus.

The routes tagged `mem0` are a subset of mem0's Platform API, for mem0's own clients
(`docs/mem0.md`); the rest of mem0's API answers 501 `not_supported`.

Writes answer their revision tokens in the `{CONSISTENCY_HEADER}` header
(`user-42/delivery_preference@3,...`); reads given it do not answer below it.

Errors are `application/problem+json` (RFC 9457) with a stable `code`; the type URI is
`https://memledger.dev/problems/<code>`.
"""

_ROUTERS = (
    _health.router,
    _memories.router,
    _events.router,
    _reads.router,
    _subjects.router,
    _admin.router,
    _traces.router,
    _corpus.router,
    _mem0.router,
)


class BodyLimit:
    """Refuses a request body over ``max_bytes`` with a ``limit_exceeded`` problem (413):
    by its Content-Length before reading it, else while it streams in."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"The request body is larger than this server's limit of {self.max_bytes} bytes."
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                response = problem_response(REQUEST_PROBLEMS["body_too_large"], detail)
                await response(scope, receive, send)
                return
        seen = 0

        async def receiving() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(status_code=413, detail=detail)
            return message

        await self.app(scope, receiving, send)


def create_app(
    memory: Memory,
    *,
    metrics: bool = True,
    extractor: Extractor | None = None,
    corpus: Corpus | None = None,
    max_body_bytes: int = 32 * 1024 * 1024,
    max_batch: int = 500,
    max_process: int = 1000,
    max_in_flight: int = 16,
    limits: ServiceLimits | None = None,
    docs: bool = True,
) -> FastAPI:
    """The HTTP API over ``memory`` (which the caller keeps and closes).

    ``metrics``: serve Prometheus metrics at ``/metrics`` (a registry of this app's
    own). ``extractor``: what ``POST /v1/process`` extracts with (default: the offline
    rule-based one). ``corpus``: the shared corpus (default: ``<store file>.corpus``,
    as the CLI's, opened on first use). ``max_body_bytes``: larger request bodies are
    refused (413); the default, 32 MiB, carries a turn of ``Limits.max_text_chars``
    (8 MiB of characters) even when JSON escaping or UTF-8 grows it several-fold;
    ``max_batch``: events in one batch; ``max_process``: jobs one
    ``POST /v1/process`` may run. ``max_in_flight``: ``/v1`` requests served at once;
    past it the next is refused at once with a 503 ``overloaded`` problem. ``limits``:
    what one tenant may ask at once: requests in flight, material and document sizes,
    the work budget of a request (:class:`~memledger.api.ServiceLimits`, its defaults
    when ``None``). ``docs``: serve the Swagger page at ``/docs``, its script and
    stylesheet from the app itself (no network needed), and redirect ``/redoc`` to it.
    """
    for name, value in (
        ("max_body_bytes", max_body_bytes),
        ("max_batch", max_batch),
        ("max_process", max_process),
        ("max_in_flight", max_in_flight),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"{name} must be a whole number >= 1, got {value!r}")
    limits = ServiceLimits() if limits is None else limits
    if not isinstance(limits, ServiceLimits):
        raise InvalidInputError(f"limits must be a ServiceLimits, got {type(limits).__name__}")
    admission = Admission(
        max_in_flight=max_in_flight,
        tenant_in_flight=limits.tenant_in_flight,
        tenant_heavy_in_flight=limits.tenant_heavy_in_flight,
        tenant_heavy_share=limits.tenant_heavy_share,
        tenant_of=lambda token: _tenant_of(memory, token),
    )
    shelf = Shelf(memory, corpus=corpus)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # open the derived index (and its embedder) once, before requests race to do it
        await run_in_threadpool(lambda: memory.index)
        try:
            yield
        finally:
            shelf.close()

    from memledger import __version__

    app = FastAPI(
        title="memledger",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,  # served from the app's own files by serve_docs
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.memledger = Services(
        memory=memory,
        extractor=extractor,
        shelf=shelf,
        max_batch=max_batch,
        max_process=max_process,
        limits=limits,
        admission=admission,
    )
    for router in _ROUTERS:
        app.include_router(router)
    # innermost, inside the catch-all: a well-formed recall skips the routing
    app.add_middleware(HotReads, memory=memory, route=_route("/v1/recall", "POST"))
    install_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(
        AdmissionMiddleware, admission=admission, request_seconds=limits.request_seconds
    )
    if metrics:
        _serve_metrics(app, memory, admission)
    if docs:
        serve_docs(app)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _route(path: str, method: str) -> BaseRoute:
    """The API's route of ``method`` on ``path``."""
    return next(
        route
        for router in _ROUTERS
        for route in router.routes
        if getattr(route, "path", None) == path and method in getattr(route, "methods", ())
    )


def _tenant_of(memory: Memory, token: str) -> str | None:
    try:
        return memory.authenticate(token, touch=False).tenant
    except MemledgerError:
        return None  # the route refuses it


def _serve_metrics(app: FastAPI, memory: Memory, admission: Admission) -> None:
    reads = getattr(memory.store, "reads", None)  # a store with read replicas counts them
    found = Metrics(
        store_reads=None if reads is None else lambda: dict(reads),
        freshness=memory.freshness,
        admission=admission,
    )
    app.state.memledger_metrics = found
    app.add_middleware(MetricsMiddleware, metrics=found)

    def metrics() -> Response:
        return Response(found.text(), media_type=CONTENT_TYPE)

    app.add_api_route(
        "/metrics",
        metrics,
        methods=["GET"],
        tags=["health"],
        summary="Prometheus metrics",
        description="Request counts and latencies by method, route template and status; "
        "problems by code; admission refusals by reason and requests in flight. No key "
        "needed: no tenant, id or content is in any label.",
        response_class=Response,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )


def _add_model(components: dict[str, Any], model: type[BaseModel], name: str, mode: str) -> None:
    schema = model.model_json_schema(
        ref_template="#/components/schemas/{model}",
        mode="serialization" if mode == "serialization" else "validation",
    )
    for key, value in schema.pop("$defs", {}).items():
        components.setdefault(key, value)
    components[name] = schema


def _openapi_document(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with the models the routes name by reference: the problem
    and the source event (parsed by :mod:`memledger.wire`, not by FastAPI)."""
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    components: dict[str, Any] = document.setdefault("components", {}).setdefault("schemas", {})
    _add_model(components, Problem, "Problem", "serialization")
    _add_model(components, EventIn, "EventIn", "validation")
    event = components["EventIn"]
    event["required"] = [f for f in event.get("required", []) if f != "actor"]
    event["description"] = (
        "One source event, optionally with its complete candidate batch (`claims`). "
        "`tenant` and `actor` come from the API key: leave them out."
    )
    for model, names in _IDS.items():
        for name in names:
            _identifier(components[model]["properties"][name])
    return document


_IDS = {
    "EventIn": ("tenant", "event_id", "subject", "stream"),
    "ClaimIn": ("family", "scope", "subject"),
    "ActorIn": ("id",),
}
"""The identifier fields of an event, which the wire parser checks as identifiers."""


def _identifier(schema: dict[str, Any]) -> None:
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "string":
            option.update(pattern=ID_PATTERN, maxLength=255)
