"""Recall answered without FastAPI's routing and dependencies: one trip to a worker thread.

:class:`HotReads` sits inside the app's middleware (admission, the body limit, the
metrics and the catch-all around it) and takes a ``POST /v1/recall`` whose request is
well formed: a JSON body that :class:`~memledger.api._bodies.RecallIn` takes, a key in
``Authorization``, no query string. In one worker thread it authenticates the key,
makes the route's checks (the body's tenant, the subject's namespace, the consistency
token's floors), recalls and writes the answer, the bytes the route writes
(:func:`memledger.api._answers.answer`). A request it does not take whole, or that
fails a check before the recall, goes on to the route as it came, body and all, so
that every refusal is the route's own; an error of the recall itself is answered by
the app's handler of that error.

FastAPI would resolve the route among every route of the API, solve its dependencies
(the services, the key, the header) and send the key's lookup and the recall to worker
threads one after the other: about a quarter of a served recall's CPU.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fastapi.security.utils import get_authorization_scheme_param
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memledger.api._auth import readable, same_tenant
from memledger.api._bodies import RecallIn
from memledger.api._consistency import TOKEN_CHARS, check_floors, read_token
from memledger.api._problems import http_problem, memledger_error
from memledger.api._reads import recall_answer
from memledger.errors import MemledgerError
from memledger.wire_models import CONSISTENCY_HEADER

if TYPE_CHECKING:
    from memledger.memory import Memory

__all__ = ["HotReads"]

RECALL = "/v1/recall"
_CONSISTENCY = CONSISTENCY_HEADER.lower().encode()


class HotReads:
    """ASGI middleware: a well-formed ``POST /v1/recall`` answered in one thread trip."""

    def __init__(self, app: ASGIApp, *, memory: Memory, route: BaseRoute) -> None:
        self.app = app
        self.memory = memory
        self.route = route
        """The route it stands in for: the request's ``scope["route"]``, as the router
        would set it (the metrics count the answer under its path)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != RECALL
            or scope["method"] != "POST"
            or scope.get("query_string")
        ):
            await self.app(scope, receive, send)
            return
        token, consistency, json_body = None, None, False
        seen: set[bytes] = set()
        for name, value in scope["headers"]:
            if name in seen:  # the first of a header counts, as a route reads it
                continue
            seen.add(name)
            if name == b"authorization":
                token = _key(value.decode("latin-1"))
            elif name == _CONSISTENCY:
                consistency = value.decode("latin-1")
            elif name == b"content-type":
                json_body = value.split(b";")[0].strip().lower() == b"application/json"
        if token is None or not json_body or len(consistency or "") > TOKEN_CHARS:
            await self.app(scope, receive, send)
            return
        try:
            body = await _body(receive)
        except HTTPException as refused:  # a body past the limit, refused as it streamed
            scope["route"] = self.route
            await (await http_problem(Request(scope), refused))(scope, receive, send)
            return
        again = _replay(body, receive)
        try:
            asked = RecallIn.model_validate(json.loads(body))
        except (ValueError, ValidationError):  # the route tells what is wrong with it
            await self.app(scope, again, send)
            return
        answered = await run_in_threadpool(self._answer, token, asked, consistency)
        if answered is None:
            await self.app(scope, again, send)
            return
        scope["route"] = self.route
        if isinstance(answered, MemledgerError):
            answered = await memledger_error(Request(scope), answered)
        await answered(scope, again, send)

    def _answer(
        self, token: str, asked: RecallIn, consistency: str | None
    ) -> Response | MemledgerError | None:
        """The answer, the recall's own error, or ``None`` for a request the route
        refuses (it says why)."""
        memory = self.memory
        try:
            who = memory.authenticate(token)
            same_tenant(who, asked.tenant)
            floors = read_token(consistency, asked.consistency)
            readable(who, asked.subject)
            floor = check_floors(memory, floors, tenant=who.tenant, subject=asked.subject)
        except MemledgerError:
            return None
        try:
            return recall_answer(memory, who, asked, floor)
        except MemledgerError as error:
            return error


def _key(authorization: str) -> str | None:
    """The key of an ``Authorization`` header as the route reads it: a ``Bearer``'s or
    a ``Token``'s (:mod:`memledger.api._auth`)."""
    scheme, key = get_authorization_scheme_param(authorization)
    return key or None if scheme.lower() in ("bearer", "token") else None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever the client sends next."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
