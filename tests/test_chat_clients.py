"""What the chat-completion clients (``LLMExtractor``, ``LLMQueryRewriter``) do alike,
each checked on both: an endpoint nobody listens on, an answer slower than the timeout,
and constructor arguments refused before any request. What each asks and reads is
tested in ``test_llm_extractor.py`` and ``test_rewrite.py``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from chat_helpers import KEY
from memledger.errors import ExtractionError, InvalidInputError, RewriterError
from memledger.read.rewrite import LLMQueryRewriter
from memledger.testing.openai_server import FakeChatServer, Reply
from memledger.testing.scenarios import event
from memledger.write.extract.llm import LLMExtractor

pytestmark = pytest.mark.usefixtures("no_proxies")

NOW = datetime(2026, 10, 12, 9, 30, tzinfo=UTC)
EVENT = event("e1", "I moved to Lyon last week.", occurred_at=NOW)


def _extract(base_url: str, timeout: float) -> object:
    with LLMExtractor(base_url=base_url, model="m", api_key=KEY, timeout=timeout) as extractor:
        return extractor.extract(EVENT)


def _rewrite(base_url: str, timeout: float) -> object:
    with LLMQueryRewriter(base_url=base_url, model="m", api_key=KEY, timeout=timeout) as rewriter:
        return rewriter.rewrite("Which cities has John visited?", now=NOW)


@dataclass(frozen=True)
class ChatClient:
    make: Callable[..., object]
    call: Callable[[str, float], object]
    """``call(base_url, timeout)``: build the client (key ``KEY``) and call it once."""
    error: type[ExtractionError] | type[RewriterError]
    empty_answer: str
    bad_timeout: float


CLIENTS = [
    pytest.param(
        ChatClient(LLMExtractor, _extract, ExtractionError, '{"claims": [], "complete": true}', 0),
        id="extractor",
    ),
    pytest.param(
        ChatClient(
            LLMQueryRewriter,
            _rewrite,
            RewriterError,
            '{"queries": [], "names": [], "after": null, "before": null}',
            -1,
        ),
        id="rewriter",
    ),
]


@pytest.mark.parametrize("chat", CLIENTS)
def test_an_unreachable_endpoint(chat: ChatClient) -> None:
    with FakeChatServer() as server:
        base_url = server.base_url  # a port nobody listens on once closed
    with pytest.raises(chat.error) as caught:
        chat.call(base_url, 2.0)
    assert caught.value.reason == "endpoint_unreachable"
    assert base_url in str(caught.value) and KEY not in str(caught.value)


@pytest.mark.parametrize("chat", CLIENTS)
def test_a_slow_endpoint_times_out(server: FakeChatServer, chat: ChatClient) -> None:
    server.push(Reply(content=chat.empty_answer, delay=5.0))
    started = time.monotonic()
    with pytest.raises(chat.error) as caught:
        chat.call(server.base_url, 0.3)
    assert caught.value.reason == "timeout"
    assert "0.3 s" in str(caught.value) and KEY not in str(caught.value)
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("chat", CLIENTS)
def test_constructor_rejects_unusable_arguments(chat: ChatClient) -> None:
    with pytest.raises(InvalidInputError, match="http"):
        chat.make(base_url="127.0.0.1:8080/v1", model="m")
    with pytest.raises(InvalidInputError, match="model"):
        chat.make(base_url="http://127.0.0.1:1/v1", model=" ")
    with pytest.raises(InvalidInputError, match="timeout"):
        chat.make(base_url="http://127.0.0.1:1/v1", model="m", timeout=chat.bad_timeout)
    with pytest.raises(InvalidInputError) as caught:
        chat.make(base_url="ftp://user:hunter2@host/v1", model="m")
    assert "hunter2" not in str(caught.value)
