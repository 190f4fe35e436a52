"""Admission of MCP requests over streamable HTTP, by the HTTP API's own :class:`Admission`.

``memledger serve`` gives the MCP app the API's :class:`~memledger.api._admission.Admission`,
so one tenant's requests over ``/v1`` and ``/mcp`` count together against the same
caps. Each ``POST`` (the transport of every MCP message) takes a place for as long as
the server works on it; ``GET`` (the stream of server notifications) and ``DELETE``
(the end of a session) do no tool work and are not counted.

A refused ``POST`` is answered at once, with nothing run and nothing written, and with
``Retry-After: 1``:

* a ``tools/call`` request: a tool error (HTTP 200, ``isError``), text
  ``tenant_overloaded: ...`` (or ``overloaded: ...``) and structured content
  ``{"error": {"code", "message"}}``, as every other tool error;
* any other request (``initialize``, ``tools/list``...): a JSON-RPC error at the
  problem's status (429 ``tenant_overloaded``, 503 ``overloaded``) whose ``data`` holds
  the code;
* a notification, a batch or a body that is no JSON-RPC request: the problem JSON the
  HTTP API answers.

Over stdio (``memledger mcp``) the server serves its one caller: admission is moot there.
"""

from __future__ import annotations

import json

from mcp_types import CallToolResult, TextContent
from starlette.types import Receive, Scope, Send

from memledger.api._admission import Admission, heavy_request
from memledger.api._problems import problem_response
from memledger.wire_models import ProblemKind

__all__ = ["admit", "refuse"]

MAX_REFUSED_BODY = 1024 * 1024
"""Bytes of a refused request read to find its JSON-RPC id; past it, the plain problem."""

SERVER_BUSY = -32000
"""The JSON-RPC error code of a refused request (the implementation-defined range)."""


async def admit(admission: Admission, scope: Scope) -> tuple[str, ProblemKind | None]:
    """The bucket a request counts under and, when it is refused, the problem to answer
    (:meth:`Admission.release` the bucket after an admitted one)."""
    bucket = await admission.bucket(scope)
    return bucket, admission.admit(bucket, heavy=heavy_request(scope))


async def refuse(kind: ProblemKind, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a refused request as the module docstring says."""
    request = await _message(receive)
    message = kind.detail or kind.title
    text = f"{kind.code}: {message}"
    headers = [(b"retry-after", str(kind.retry_after or 1).encode())]
    request_id = request.get("id") if request is not None else None
    if request is None or not isinstance(request_id, str | int) or isinstance(request_id, bool):
        await problem_response(kind)(scope, receive, send)
        return
    status = kind.status
    if request.get("method") == "tools/call":
        status = 200
        result = CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content={"error": {"code": kind.code, "message": message}},
            is_error=True,
        )
        answer: dict[str, object] = {
            "result": result.model_dump(by_alias=True, exclude_none=True, mode="json")
        }
    else:
        answer = {"error": {"code": SERVER_BUSY, "message": text, "data": {"code": kind.code}}}
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, **answer}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _message(receive: Receive) -> dict[str, object] | None:
    """The request's body as one JSON-RPC message, else ``None`` (too large, not JSON,
    a batch)."""
    body = b""
    while True:
        part = await receive()
        if part["type"] != "http.request":
            return None
        body += part.get("body", b"")
        if len(body) > MAX_REFUSED_BODY:
            return None
        if not part.get("more_body", False):
            break
    try:
        found = json.loads(body)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
