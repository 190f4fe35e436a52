"""Fixtures shared across the tests: the Hypothesis profiles; ``db``, a SQLite store
file in the test's folder; ``memory``, a ``Memory`` over it on the module's ``clock``;
``indexed_memory``, one with a lexical derived index on a clock frozen at a given time;
``index``, a derived index lexical-only and with vectors; ``backend_url``, a new store
of each backend; the fake OpenAI-compatible ``server``; a private ``postgres``; and the
``scratch_databases`` a benchmark makes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from memledger import Memory
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.testing import FrozenClock
from memledger.testing.openai_server import FakeChatServer
from memledger.testing.postgres import PostgresServer, postgres_server

# Hypothesis profiles. The default keeps the suite quick. For a long nightly search:
#
#     HYPOTHESIS_PROFILE=nightly .venv/bin/python -m pytest -p no:xdist -q tests/
#
# ``nightly`` runs 1000 examples in the property tests that take their count from the
# loaded profile (the conformance suite's random histories, see
# ``memledger.testing.conformance._properties.examples``) and, in the conformance kill
# checks, kills a child process before every write step instead of a sample of them.
settings.register_profile(
    "nightly",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The SQLite store file of ``memory`` and ``indexed_memory``: ``m.db`` in the test's
    folder."""
    return tmp_path / "m.db"


@pytest.fixture
def memory(db: Path, clock: FrozenClock) -> Iterator[Memory]:
    """A ``Memory`` over the SQLite store ``db``, on the ``clock`` fixture of the test's
    module (which a module extends by a ``memory`` fixture of its own taking this one)."""
    with Memory.open(db, clock=clock) as opened:
        yield opened


@pytest.fixture
def indexed_memory(db: Path, tmp_path: Path) -> Iterator[Callable[[datetime], Memory]]:
    """``indexed_memory(now)``: a ``Memory`` over the SQLite store ``db`` with a lexical
    derived index ``m.index`` in the test's folder, its clock frozen at ``now``; closed
    after the test."""
    opened: list[Memory] = []

    def open_at(now: datetime) -> Memory:
        index = DerivedIndex(tmp_path / "m.index")
        opened.append(Memory.open(f"sqlite:///{db}", clock=FrozenClock(now), index=index))
        return opened[-1]

    yield open_at
    for each in opened:
        each.close()


@pytest.fixture(params=["lexical", "hashing"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DerivedIndex]:
    """A derived index ``m.index`` in the test's folder: every test that takes it runs on
    a lexical-only index and on one with (hashing) vectors."""
    embedder = HashingEmbedder() if request.param == "hashing" else None
    index = DerivedIndex(tmp_path / "m.index", embedder=embedder)
    yield index
    index.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest, db: Path) -> str:
    """The URL of a new store of each backend: every test that takes it runs on the SQLite
    file ``db`` and on a new database of the private ``postgres`` (a module narrows a test
    to one with ``pytest.mark.parametrize("backend_url", ["sqlite"], indirect=True)``)."""
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres").create_database()
        return url
    return f"sqlite:///{db}"


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


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A private PostgreSQL 16 with pgvector for this test session (started on first use)."""
    with postgres_server() as running:
        yield running


@pytest.fixture
def scratch_databases(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URL of every scratch database a benchmark makes during the test (so a test
    can tell a run really kept its store on PostgreSQL)."""
    from memledger.eval import _scratch

    made: list[str] = []
    real = _scratch.scratch_database

    @contextmanager
    def noted(server: str) -> Iterator[str]:
        with real(server) as url:
            made.append(url)
            yield url

    monkeypatch.setattr(_scratch, "scratch_database", noted)
    return made
