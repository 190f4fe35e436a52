"""How much blocking work one serving process runs at once (``ServeConfig.threads``),
against a real server: recalls sent together run at most ``threads`` at a time, and
without a cap as many as the admission lets in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from memledger import Memory
from memledger.errors import InvalidInputError
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.serve import ServeConfig, build_app
from memledger.testing.http import serve


class _Overlap:
    """Counts the recalls running at the same moment; each waits until ``expected`` are
    running (or 0.75 s have passed), holding its thread meanwhile as blocking work does."""

    def __init__(self, recall: Any, expected: int) -> None:
        self._recall = recall
        self._all_in = threading.Condition()
        self._expected = expected
        self.now = 0
        self.most = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._all_in:
            self.now += 1
            self.most = max(self.most, self.now)
            self._all_in.notify_all()
            self._all_in.wait_for(lambda: self.most >= self._expected, timeout=0.75)
        try:
            return self._recall(*args, **kwargs)
        finally:
            with self._all_in:
                self.now -= 1


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "m.index", embedder=HashingEmbedder())
    with Memory.open(tmp_path / "m.db", index=index) as opened:
        yield opened


def _most_at_once(memory: Memory, config: ServeConfig, requests: int) -> int:
    _, token = memory.create_key("default", f"app-{config.threads}", principal="service")
    overlap = _Overlap(memory.recall, expected=requests)
    memory.recall = overlap  # type: ignore[method-assign]
    try:
        with serve(build_app(memory, config)) as base:

            def one(n: int) -> int:
                response = httpx.post(
                    f"{base}/v1/recall",
                    json={"query": f"where does user {n} live?", "subject": f"u{n}"},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=30,
                    trust_env=False,
                )
                return response.status_code

            with ThreadPoolExecutor(requests) as pool:
                statuses = list(pool.map(one, range(requests)))
    finally:
        del memory.recall
    assert statuses == [200] * requests, statuses
    return overlap.most


@pytest.mark.parametrize("threads", [1, 3])
def test_a_process_runs_at_most_its_threads_of_blocking_work_at_once(
    memory: Memory, no_proxies: None, threads: int
) -> None:
    config = ServeConfig(mcp=False, web=False, threads=threads)
    assert _most_at_once(memory, config, requests=8) == threads


def test_by_default_no_cap_below_the_admission_s_places(memory: Memory, no_proxies: None) -> None:
    """Eight recalls of one tenant are admitted (its four places and four borrowed of
    sixteen) and all eight run at once: a slow request holds no place the admission
    has promised to another."""
    assert ServeConfig().threads is None
    assert _most_at_once(memory, ServeConfig(mcp=False, web=False), requests=8) == 8


@pytest.mark.parametrize("threads", [0, -1, 257, True, 2.5, "2"])
def test_a_thread_count_out_of_range_is_refused(threads: object) -> None:
    with pytest.raises(InvalidInputError, match="threads must be a whole number"):
        ServeConfig(threads=threads)  # type: ignore[arg-type]


def test_serve_speaks_http_with_the_c_parser_on_uvloop(memory: Memory) -> None:
    """The server extra installs httptools and uvloop, and uvicorn picks them."""
    from memledger.serve import server_for

    config = server_for(build_app(memory, ServeConfig(mcp=False, web=False)), ServeConfig()).config
    config.load()
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
    assert config.get_loop_factory().__module__.startswith("uvloop")
