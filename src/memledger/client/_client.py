"""The synchronous client: :class:`Client`, the calls of :mod:`memledger.client._calls`
as its methods (:mod:`memledger.client._methods`), sent with an ``httpx.Client``."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

import httpx

from memledger.client._base import Base
from memledger.client._errors import sending
from memledger.client._requests import Call, Flow, Running

__all__ = ["Client"]

T = TypeVar("T")


class Client(Base[httpx.BaseTransport, httpx.Client]):
    """memledger over HTTP, synchronously: the methods of :class:`~memledger.Memory` that
    the API serves, answering the shared wire models of :mod:`memledger.wire_models` and
    raising the library's own errors (:mod:`memledger.client._errors`).

    ::

        with Client("http://127.0.0.1:8765", api_key) as client:
            client.ingest(event, claims)
            client.current("user-42", "delivery_preference")  # sees the write

    The tenant and the actor of every request are the API key's. The client keeps the
    consistency token of every write it sees and sends it with later reads
    (:attr:`consistency`); ``consistency=`` on a read overrides it for that call.
    ``transport``: an ``httpx.BaseTransport`` (for example ``httpx.MockTransport``, or
    ``httpx.HTTPTransport(retries=3)``). Safe to share between threads.
    """

    def _open(self, transport: httpx.BaseTransport | None) -> httpx.Client:
        return httpx.Client(**self._options(transport))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self._core.base_url!r})"

    def send(self, call: Call[T]) -> T:
        """Send one call; its wire model, or the library's error."""
        request = self._core.prepare(call)
        with sending(call.describe(), self._core.base_url):
            response = self._http.request(**request)
        return self._core.finish(call, response)

    def run(self, flow: Flow[T]) -> T:
        """Drive a flow of calls to its result (errors are thrown into it)."""
        running = Running(flow)
        while running.call is not None:
            with running.answering() as answer:
                answer(self.send(running.call))
        return running.result
