"""Fixtures shared by the tests that talk to the fake OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memledger.testing.openai_server import FakeChatServer


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables even for loopback; these tests talk to 127.0.0.1."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server(no_proxies: None) -> Iterator[FakeChatServer]:
    """A real local HTTP server speaking the chat-completions and embeddings protocol."""
    with FakeChatServer() as running:
        yield running
