"""The asynchronous client: :class:`AsyncClient`, the calls of
:mod:`memledger.client._calls` as its methods (:mod:`memledger.client._methods`,
awaited), sent with an ``httpx.AsyncClient``. Its methods are those of
:class:`~memledger.client.Client`, awaited (a test checks that their signatures
match)."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

import httpx

from memledger.client._base import Base
from memledger.client._errors import sending
from memledger.client._requests import Call, Flow, Running

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient(Base[httpx.AsyncBaseTransport, httpx.AsyncClient]):
    """memledger over HTTP, for asyncio: :class:`~memledger.client.Client`'s methods,
    awaited. ``transport``: an ``httpx.AsyncBaseTransport``. Safe to share between tasks.

    ::

        async with AsyncClient("http://127.0.0.1:8765", api_key) as client:
            await client.ingest(event, claims)
            await client.current("user-42", "delivery_preference")
    """

    def _open(self, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        return httpx.AsyncClient(**self._options(transport))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self._core.base_url!r})"

    async def send(self, call: Call[T]) -> T:
        """Send one call; its wire model, or the library's error."""
        request = self._core.prepare(call)
        with sending(call.describe(), self._core.base_url):
            response = await self._http.request(**request)
        return self._core.finish(call, response)

    async def run(self, flow: Flow[T]) -> T:
        """Drive a flow of calls to its result (errors are thrown into it)."""
        running = Running(flow)
        while running.call is not None:
            with running.answering() as answer:
                answer(await self.send(running.call))
        return running.result
