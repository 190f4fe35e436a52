"""A real, scripted HTTP server that speaks the OpenAI chat-completions protocol.

:class:`FakeChatServer` listens on ``127.0.0.1`` (a free port) in a daemon
thread, using only the standard library, and answers:

* ``POST /v1/chat/completions`` with a ``chat.completion`` object whose
  content comes from the test's script;
* ``POST /v1/embeddings`` with an embeddings list: by default one
  deterministic vector per input from
  :class:`~memledger.index.embedders.HashingEmbedder` (of the request's
  ``dimensions``, else ``embedding_dimensions``), or what the
  ``embedding_responder`` or :meth:`FakeChatServer.push_embeddings` scripts;
* ``GET /v1/models`` with the configured model ids.

Every request is recorded (:attr:`FakeChatServer.requests`) so a test can
assert the prompt, the headers, the model and the ``response_format`` sent.
What the server answers is decided per request, first from the queue filled by
:meth:`FakeChatServer.push`, then by the ``responder``: a callable that gets
the :class:`RecordedRequest` and returns the content string, or a
:class:`Reply` to script a failure (a status and body, a delay, a raw body,
``finish_reason: "length"``). Embeddings requests have their own queue and
responder, answered with vectors or the same :class:`Reply` (a failure, a
delay, a raw body, or explicit ``vectors``). No clock, no randomness: the same
script gives the same bytes (``created`` is fixed, ids count up).

::

    with FakeChatServer(lambda request: '{"claims": [], "complete": true}') as server:
        extractor = LLMExtractor(base_url=server.base_url, model="fake-model")
        extraction = extractor.extract(event)
        assert "I live in Lyon" in server.completions[0].content_of("user")

    with FakeChatServer() as server:
        server.push_embeddings(Reply(status=503))
        embedder = OpenAIEmbedder(base_url=server.base_url, model="fake-embed", dimensions=384)
        embedder.embed(["a"])  # EmbedderError(reason="http_503"); the next call succeeds
"""

from __future__ import annotations

import base64
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType, TracebackType
from typing import Literal, TypeAlias

import numpy as np

from memledger.domain.records import JsonValue
from memledger.errors import InvalidInputError
from memledger.index.embedders import HashingEmbedder

__all__ = [
    "CREATED",
    "EmbeddingAnswer",
    "EmbeddingResponder",
    "FakeChatServer",
    "FinishReason",
    "RecordedRequest",
    "Reply",
    "Responder",
]

FinishReason = Literal["stop", "length", "content_filter", "tool_calls"]

CREATED = 1767225600
"""The ``created`` timestamp of every completion (2026-01-01T00:00:00Z)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    payload: JsonValue = None
    """The body parsed as JSON; ``None`` when it was empty or not JSON."""

    @property
    def messages(self) -> list[Mapping[str, JsonValue]]:
        """The chat messages of the request (empty if there are none)."""
        if not isinstance(self.payload, dict):
            return []
        messages = self.payload.get("messages")
        if not isinstance(messages, list):
            return []
        return [m for m in messages if isinstance(m, dict)]

    def content_of(self, role: str) -> str:
        """The text of the messages with ``role`` (``"system"``, ``"user"``), joined by newlines."""
        texts: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if message.get("role") == role and isinstance(content, str):
                texts.append(content)
        return "\n".join(texts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A scripted answer.

    ``content`` becomes ``choices[0].message.content``. ``status`` other than
    200 sends an OpenAI-style error body instead, unless ``body`` is given;
    ``body`` is sent verbatim (with ``content_type``) whatever the status.
    ``delay`` waits that many seconds before answering (cut short when the
    server closes, so a timed-out client does not hold up the test).

    For an embeddings request, ``content`` and ``finish_reason`` are ignored;
    ``vectors`` (one row per input, sent as given, unnormalised rows included)
    replaces the default hashing vectors.
    """

    content: str = ""
    finish_reason: FinishReason = "stop"
    status: int = 200
    body: str | bytes | None = None
    content_type: str = "application/json"
    delay: float = 0.0
    vectors: Sequence[Sequence[float]] | None = None


Responder: TypeAlias = Callable[[RecordedRequest], "str | Reply"]
"""Decides the answer to one chat-completions request."""

EmbeddingAnswer: TypeAlias = "Sequence[Sequence[float]] | Reply"
"""Rows (one per input) or a scripted :class:`Reply` for one embeddings request."""

EmbeddingResponder: TypeAlias = Callable[[RecordedRequest], EmbeddingAnswer]
"""Decides the answer to one embeddings request."""


def _unscripted(request: RecordedRequest) -> Reply:
    message = "FakeChatServer: no reply scripted (push a Reply or pass a responder)"
    return Reply(status=500, body=_error_body(message, kind="server_error", code=500))


def _error_body(message: str, *, kind: str, code: int) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}})


@dataclass(slots=True)
class _Script:
    responder: Responder
    model_ids: tuple[str, ...]
    embedding_responder: EmbeddingResponder | None = None
    embedding_dimensions: int = 384
    queue: deque[str | Reply] = field(default_factory=deque)
    embedding_queue: deque[EmbeddingAnswer] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    served: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class FakeChatServer:
    """An OpenAI-compatible chat server on ``127.0.0.1`` for tests. A context manager.

    ``responder`` answers requests the :meth:`push` queue does not; without
    one, unscripted requests get HTTP 500. ``models`` are listed by
    ``GET /v1/models``; completions echo the requested model.
    ``embedding_responder`` answers embeddings requests the
    :meth:`push_embeddings` queue does not; without one they get the
    :class:`~memledger.index.embedders.HashingEmbedder` vectors of each input,
    ``embedding_dimensions`` wide unless the request asks for ``dimensions``.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        models: tuple[str, ...] = ("fake-model",),
        embedding_responder: EmbeddingResponder | None = None,
        embedding_dimensions: int = 384,
    ) -> None:
        self._script = _Script(
            responder=responder or _unscripted,
            model_ids=models,
            embedding_responder=embedding_responder,
            embedding_dimensions=embedding_dimensions,
        )
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeChatServer:
        """Bind a free port and serve in a daemon thread. Idempotent."""
        if self._server is None:
            handler = type("_BoundHandler", (_Handler,), {"script": self._script})
            self._script.stopping.clear()
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="FakeChatServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, wake delayed replies and release the port. Idempotent."""
        if self._server is None:
            return
        self._script.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- addresses --------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeChatServer is not running; use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The API root clients take: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.url}/v1"

    # -- script -----------------------------------------------------------------------

    @property
    def responder(self) -> Responder:
        return self._script.responder

    @responder.setter
    def responder(self, responder: Responder) -> None:
        with self._script.lock:
            self._script.responder = responder

    def push(self, *replies: str | Reply) -> None:
        """Queue one-shot answers, used in order before the responder is asked."""
        with self._script.lock:
            self._script.queue.extend(replies)

    @property
    def embedding_responder(self) -> EmbeddingResponder | None:
        return self._script.embedding_responder

    @embedding_responder.setter
    def embedding_responder(self, responder: EmbeddingResponder | None) -> None:
        with self._script.lock:
            self._script.embedding_responder = responder

    def push_embeddings(self, *answers: EmbeddingAnswer) -> None:
        """Queue one-shot embeddings answers, used before the embedding responder."""
        with self._script.lock:
            self._script.embedding_queue.extend(answers)

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, in arrival order."""
        with self._script.lock:
            return tuple(self._script.requests)

    @property
    def completions(self) -> tuple[RecordedRequest, ...]:
        """The chat-completions requests received so far."""
        return tuple(r for r in self.requests if r.path == "/v1/chat/completions")

    @property
    def embeddings(self) -> tuple[RecordedRequest, ...]:
        """The embeddings requests received so far."""
        return tuple(r for r in self.requests if r.path == "/v1/embeddings")

    @property
    def errors(self) -> tuple[str, ...]:
        """Exceptions the responder raised (each was answered with HTTP 500)."""
        with self._script.lock:
            return tuple(self._script.errors)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.0: one request per connection, so closing never waits on idle clients."""

    script: _Script
    server_version = "FakeChatServer/1"
    timeout = 10.0  # a client that stalls mid-request cannot hold up close() for ever

    def log_message(self, format: str, *args: object) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        request = self._record(b"")
        if request.path == "/v1/models":
            data = [
                {"id": model, "object": "model", "created": CREATED, "owned_by": "memledger"}
                for model in self.script.model_ids
            ]
            self._send(200, json.dumps({"object": "list", "data": data}))
        else:
            self._not_found()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = self._record(self.rfile.read(length))
        if request.path not in ("/v1/chat/completions", "/v1/embeddings"):
            self._not_found()
            return
        if not isinstance(request.payload, dict):
            self._bad_request("request body must be a JSON object")
            return
        if request.path == "/v1/embeddings":
            self._embed(request, request.payload)
        else:
            self._answer(request, self._reply(request))

    def _bad_request(self, message: str) -> None:
        self._send(400, _error_body(message, kind="invalid_request", code=400))

    def _record(self, body: bytes) -> RecordedRequest:
        try:
            payload: JsonValue = json.loads(body) if body else None
        except ValueError:
            payload = None
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers=MappingProxyType({k.lower(): v for k, v in self.headers.items()}),
            body=body,
            payload=payload,
        )
        with self.script.lock:
            self.script.requests.append(request)
        return request

    def _reply(self, request: RecordedRequest) -> Reply:
        with self.script.lock:
            queued = self.script.queue.popleft() if self.script.queue else None
            responder = self.script.responder
        try:
            answer = queued if queued is not None else responder(request)
        except Exception as exc:  # a bug in the test's responder: answer 500 and keep it
            message = f"responder raised {type(exc).__name__}: {exc}"
            with self.script.lock:
                self.script.errors.append(message)
            return Reply(status=500, body=_error_body(message, kind="server_error", code=500))
        return answer if isinstance(answer, Reply) else Reply(content=answer)

    def _answer(self, request: RecordedRequest, reply: Reply) -> None:
        if reply.delay > 0 and self.script.stopping.wait(reply.delay):
            return  # the server is closing; the client has long given up
        if reply.body is not None:
            self._send(reply.status, reply.body, content_type=reply.content_type)
        elif reply.status != 200:
            body = _error_body(f"scripted HTTP {reply.status}", kind="api_error", code=reply.status)
            self._send(reply.status, body)
        else:
            self._send(200, json.dumps(self._completion(request, reply)))

    # -- embeddings -------------------------------------------------------------------

    def _embed(self, request: RecordedRequest, payload: dict[str, JsonValue]) -> None:
        raw = payload.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            self._bad_request("'input' must be a string or a list of strings")
            return
        texts = [t for t in inputs if isinstance(t, str)]
        asked = payload.get("dimensions")
        if asked is not None and (isinstance(asked, bool) or not isinstance(asked, int)):
            self._bad_request("'dimensions' must be an integer")
            return
        reply = self._embedding_reply(request)
        if reply.delay > 0 and self.script.stopping.wait(reply.delay):
            return  # the server is closing; the client has long given up
        if reply.body is not None:
            self._send(reply.status, reply.body, content_type=reply.content_type)
            return
        if reply.status != 200:
            body = _error_body(f"scripted HTTP {reply.status}", kind="api_error", code=reply.status)
            self._send(reply.status, body)
            return
        if reply.vectors is not None:
            rows = [[float(x) for x in row] for row in reply.vectors]
        else:
            size = asked if isinstance(asked, int) else self.script.embedding_dimensions
            try:
                embedder = HashingEmbedder(dimensions=size)
            except InvalidInputError as exc:
                self._bad_request(str(exc))
                return
            rows = embedder.embed(texts).tolist()
        encoding = payload.get("encoding_format")
        model = payload.get("model")
        tokens = sum(len(t.split()) for t in texts)
        data: list[JsonValue] = [
            {
                "object": "embedding",
                "index": index,
                "embedding": _base64_row(row) if encoding == "base64" else list(row),
            }
            for index, row in enumerate(rows)
        ]
        answer: dict[str, JsonValue] = {
            "object": "list",
            "data": data,
            "model": model if isinstance(model, str) else self.script.model_ids[0],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self._send(200, json.dumps(answer))

    def _embedding_reply(self, request: RecordedRequest) -> Reply:
        with self.script.lock:
            queued = self.script.embedding_queue.popleft() if self.script.embedding_queue else None
            responder = self.script.embedding_responder
        try:
            if queued is not None:
                answer = queued
            elif responder is not None:
                answer = responder(request)
            else:
                return Reply()
            if isinstance(answer, Reply):
                return answer
            return Reply(vectors=[[float(x) for x in row] for row in answer])
        except Exception as exc:  # a bug in the test's responder: answer 500 and keep it
            message = f"embedding responder raised {type(exc).__name__}: {exc}"
            with self.script.lock:
                self.script.errors.append(message)
            return Reply(status=500, body=_error_body(message, kind="server_error", code=500))

    # -- chat completions -------------------------------------------------------------

    def _completion(self, request: RecordedRequest, reply: Reply) -> dict[str, JsonValue]:
        with self.script.lock:
            self.script.served += 1
            number = self.script.served
        payload = request.payload if isinstance(request.payload, dict) else {}
        model = payload.get("model")
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        completion_tokens = len(reply.content.split())
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": CREATED,
            "model": model if isinstance(model, str) else self.script.model_ids[0],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _not_found(self) -> None:
        message = f"no route for {self.command} {self.path!r}"
        self._send(404, _error_body(message, kind="invalid_request", code=404))

    def _send(
        self, status: int, body: str | bytes, *, content_type: str = "application/json"
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (it timed out); nothing to tell it


def _base64_row(row: Sequence[float]) -> str:
    """``row`` as OpenAI's ``encoding_format: "base64"``: little-endian float32 bytes."""
    return base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode("ascii")
