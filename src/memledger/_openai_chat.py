"""What the chat-completion clients here share: the request with a strict
JSON-schema ``response_format`` at temperature 0, and reading the answer.

Used by the LLM extractor and the query rewriter. Reading an answer takes the
first choice's message content (a Markdown code fence around it is removed),
parses it as JSON and validates it against the client's answer model. Failures
go to the caller's ``fail`` with ``invalid_json`` (body not a chat completion,
no choices, no content, content not JSON, saying so when ``finish_reason:
"length"`` cut it off) or ``schema_mismatch`` (content JSON, answer model not
met).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError

from memledger._openai_http import Fail, M, excerpt, validate_body
from memledger.domain.faults import listing
from memledger.domain.records import JsonValue


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str | None = None
    refusal: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    choices: list[_Choice]


def chat_request(
    *, model: str, system: str, user: str, name: str, schema: dict[str, JsonValue]
) -> dict[str, JsonValue]:
    """The JSON body of a chat completion at temperature 0 whose answer must match
    ``schema`` (sent strict, as ``name``)."""
    return {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        },
    }


def read_answer(
    body: bytes,
    model: type[M],
    *,
    name: str,
    shown: str,
    fail: Fail,
    blank_is_missing: bool = False,
) -> tuple[M, bool]:
    """The first choice's content as ``model`` (the schema sent as ``name``), and
    whether the length limit cut it off. ``shown`` is the endpoint as messages
    may name it; with ``blank_is_missing``, whitespace content counts as none."""
    completion = validate_body(body, _Completion, what="a chat completion", shown=shown, fail=fail)
    if not completion.choices:
        fail(f"the response from {shown!r} has no choices", reason="invalid_json")
    choice = completion.choices[0]
    content = choice.message.content
    if content is None or (blank_is_missing and not content.strip()):
        refusal = f" (refusal: {choice.message.refusal!r})" if choice.message.refusal else ""
        fail(f"the first choice has no message content{refusal}", reason="invalid_json")
    truncated = choice.finish_reason == "length"
    try:
        data = json.loads(_strip_fence(content))
    except ValueError:
        cut = " (cut off by the length limit)" if truncated else ""
        fail(f"the message content is not JSON{cut}: {excerpt(content)!r}", reason="invalid_json")
    try:
        return model.model_validate(data), truncated
    except ValidationError as exc:
        fail(
            f"the message content does not match the {name!r} schema: {error_summary(exc)}",
            reason="schema_mismatch",
        )


def error_summary(exc: ValidationError) -> str:
    """Every error of ``exc`` (the first ten, with the count), each as ``place: message``."""
    return listing(
        [
            f"{'.'.join(str(p) for p in error['loc']) or '(root)'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        ]
    )


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```$", re.DOTALL)


def _strip_fence(content: str) -> str:
    """Content without a Markdown code fence some servers wrap JSON in."""
    text = content.strip()
    match = _FENCE.match(text)
    return match.group(1) if match else text
