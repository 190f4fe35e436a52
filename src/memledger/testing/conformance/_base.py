from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator

import pytest

from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import day

SPAWN = multiprocessing.get_context("spawn")

UrlFactory = Callable[[], str]


class Base:
    @pytest.fixture
    def fresh_url(self) -> UrlFactory:  # pragma: no cover - subclasses provide it
        raise NotImplementedError("a conformance subclass must provide a fresh_url fixture")

    @pytest.fixture
    def store_url(self, fresh_url: UrlFactory) -> str:
        return fresh_url()

    @pytest.fixture
    def clock(self) -> FrozenClock:
        return FrozenClock(day(10, 1))

    @pytest.fixture
    def memory(self, store_url: str, clock: FrozenClock) -> Iterator[Memory]:
        memory = Memory(open_store(store_url), clock=clock)
        yield memory
        memory.close()
