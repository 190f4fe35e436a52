"""What the MCP tools answer: JSON payloads for the model, and errors as tool results.

A tool's answer is one ``CallToolResult``: its JSON as a text block (what every
client shows the model) and as ``structuredContent``. A :class:`MemledgerError`
becomes a result with ``isError`` set, whose text is ``<code>: <message>`` and whose
structured content is ``{"error": {"code": ..., "message": ...}}``. Code and message
are the HTTP API's (:data:`memledger.wire_models.PROBLEMS`): one stable code per error
class, and a fixed message where the error's own could tell what the caller must not
learn (another tenant's ids) or the server's internals (those are logged here). Never
a stack trace.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

from mcp_types import CallToolResult, TextContent

from memledger.domain.records import JsonValue, MemoryRecord
from memledger.errors import MemledgerError
from memledger.wire import JsonObject, isoformat
from memledger.wire_models import PROBLEMS, ProblemKind

__all__ = ["error_code", "error_result", "ok_result", "problem_of", "record_brief"]

log = logging.getLogger("memledger.mcp")


def problem_of(error: MemledgerError | type[MemledgerError]) -> ProblemKind:
    """How the HTTP API tells an error (class): the nearest class in ``PROBLEMS``."""
    cls = error if isinstance(error, type) else type(error)
    for base in cls.__mro__:
        if base in PROBLEMS:
            return PROBLEMS[base]
    return PROBLEMS[MemledgerError]  # pragma: no cover - every error derives from it


def error_code(error: MemledgerError | type[MemledgerError]) -> str:
    """The stable code of an error class, as the HTTP API has it: ``PermissionDeniedError``
    is ``permission_denied``, ``MemoryNotFoundError`` ``memory_not_found``."""
    return problem_of(error).code


def error_message(error: MemledgerError) -> str:
    """The error's own message on one line, or the fixed one its problem kind has."""
    kind = problem_of(error)
    if kind.status >= 500:
        log.warning("%s: %s", type(error).__name__, error)
    return kind.detail or " ".join(str(error).split())


def error_result(error: MemledgerError) -> CallToolResult:
    """A tool error the model can read and act on: the code and the message, one line."""
    code, message = error_code(error), error_message(error)
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def ok_result(payload: JsonObject, *, text: str | None = None) -> CallToolResult:
    """A successful answer: ``payload`` as JSON text and as structured content;
    ``text`` (the context packet) goes first, as a block of its own."""
    blocks = [] if text is None else [TextContent(type="text", text=text)]
    blocks.append(TextContent(type="text", text=dumps(payload)))
    return CallToolResult(content=list(blocks), structured_content=dict(payload))


def dumps(payload: JsonObject) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else isoformat(value)


def record_brief(record: MemoryRecord) -> JsonObject:
    """What a model needs of a memory record: its id and revision, what it says, whether
    it is authorised, its windows and where it came from."""
    brief: dict[str, JsonValue] = {
        "memory_id": record.memory_id,
        "revision": record.revision,
        "subject": record.subject,
        "family": record.family,
        "kind": record.kind,
        "text": record.claim,
        "value": record.value,
        "scope": record.scope,
        "status": record.status,
        "authorised": record.authorised,
        "confidence": record.confidence,
        "valid_from": _iso(record.valid_from),
        "valid_until": _iso(record.valid_until),
        "recorded_at": _iso(record.recorded_at),
        "superseded_at": _iso(record.superseded_at),
        "source_event_id": record.source_event_id,
        "source_actor_id": record.source_actor_id,
        "source_channel": record.source_channel,
    }
    return brief
