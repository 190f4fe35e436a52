"""What the chat-completion clients (the LLM extractor and the query rewriter) do alike,
as their tests check it over a ``FakeChatServer``:

* ``KEY``, the API key the tests give the clients, which no error may show;
* ``CHAT_FAILURES``, replies of a failing server and bodies that are no chat completion,
  each with the reason and the words of the error the client raises for it;
* ``built_for``: a client of a ``FakeChatServer`` as the tests build it;
* ``proposal`` and ``claims_answer``: a claim object and an extractor's answer as a
  model writes them, for the fake model to send;
* ``the_chat_request``: the one request a client sent, checked as every client sends it;
* ``check_failure``: the error a client raises for a reply of such a table.

What they do alike on a bad endpoint or with bad arguments is tested, for each, in
``test_chat_clients.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import pytest

from memledger.errors import ExtractionError, RewriterError
from memledger.testing.openai_server import FakeChatServer, Reply

KEY = "sk-test-SECRET-0123456789"

CHAT_FAILURES: dict[str, tuple[Reply, str, str]] = {
    "500 with a body": (
        Reply(status=500, body='{"error": {"message": "model overloaded"}}'),
        "http_500",
        "model overloaded",
    ),
    "429 without a body": (Reply(status=429), "http_429", "scripted HTTP 429"),
    "body not JSON": (
        Reply(body="<html>Bad Gateway</html>", content_type="text/html"),
        "invalid_json",
        "is not JSON",
    ),
    "no choices": (Reply(body='{"id": "x", "choices": []}'), "invalid_json", "no choices"),
    "not a completion": (Reply(body='{"ok": true}'), "invalid_json", "not a chat completion"),
    "null content": (
        Reply(body=json.dumps({"choices": [{"message": {"content": None, "refusal": "no"}}]})),
        "invalid_json",
        "refusal: 'no'",
    ),
    "content not JSON": (
        Reply(content="Sure! Here is what the text says."),
        "invalid_json",
        "content is not JSON",
    ),
}
"""Name -> (the reply, the error's ``reason``, words its message holds)."""

ChatError = type[ExtractionError] | type[RewriterError]

C = TypeVar("C")


def built_for(server: FakeChatServer, make: Callable[..., C]) -> C:
    """``make`` (a client class) for ``server``: model ``fake-model``, key ``KEY``, a
    timeout of 2 s."""
    return make(base_url=server.base_url, model="fake-model", api_key=KEY, timeout=2.0)


def proposal(**fields: object) -> dict[str, object]:
    """One claim object as a model writes it: ``fields`` over a fact that the subject
    lives in Lyon, grounded in ``I moved to Lyon``."""
    claim: dict[str, object] = {
        "family": "home_city",
        "kind": "fact",
        "statement": "The subject lives in Lyon.",
        "value": "lyon",
        "scope": "global",
        "valid_from": None,
        "valid_until": None,
        "grounding": "I moved to Lyon",
        "confidence": None,
    }
    claim.update(fields)
    return claim


def claims_answer(*claims: object, complete: bool = True) -> str:
    """An extractor's answer as a model writes it: ``claims``, and whether they are all."""
    return json.dumps({"claims": list(claims), "complete": complete})


def the_chat_request(server: FakeChatServer, *, name: str, schema: object) -> tuple[str, str]:
    """The system and the user message of the one request ``server`` was sent, checked:
    ``POST /v1/chat/completions`` with the key as a bearer token, model ``fake-model`` at
    temperature 0, a strict JSON schema ``schema`` named ``name`` for the answer, and the
    key nowhere in the body."""
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert isinstance(request.payload, dict)
    assert request.payload["model"] == "fake-model"
    assert request.payload["temperature"] == 0
    assert request.payload["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": True},
    }
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert KEY not in request.body.decode()
    return request.content_of("system"), request.content_of("user")


def check_failure(
    server: FakeChatServer,
    failure: tuple[Reply, str, str],
    error: ChatError,
    call: Callable[[], object],
) -> Exception:
    """``call`` with the ``failure`` (reply, reason, words) scripted raises ``error`` of
    that reason, whose message holds the words and not the key; returns the error."""
    reply, reason, fragment = failure
    server.push(reply)
    with pytest.raises(error) as caught:
        call()
    assert caught.value.reason == reason
    assert fragment in str(caught.value)
    assert KEY not in str(caught.value)
    return caught.value
