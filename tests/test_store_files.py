"""Who may read a store's files: the owner alone. Every file and folder memledger writes
beside a SQLite store (after a realistic workload), and the local files of the
PostgreSQL mode, have their mode bits checked with ``os.stat`` under a umask of 0o022;
a store with wider modes warns, naming the files and the ``chmod`` that fixes them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from cli_helpers import run
from memledger import Memory, StoreFileModeWarning, _files
from memledger.api import create_app
from memledger.api._extra import Shelf
from memledger.corpus import Corpus, default_corpus_path
from memledger.index import _ann
from memledger.index.derived import DerivedIndex, default_index_path
from memledger.index.embedders import HashingEmbedder
from memledger.serve import ServeConfig, ensure_admin_key
from memledger.session import SessionMemory, default_session_path
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.postgres import PostgresServer
from memledger.testing.scenarios import TENANT, actor, day, event
from memledger.write.worker import episode_of

THRESHOLD = 20
"""Live rows from which the approximate index is built: small, so the workload builds one."""


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, int]:
    """The permission bits of every file and folder under ``root`` (not ``root``)."""
    found = {}
    for where, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(where, name)
            found[str(path.relative_to(root))] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def wide(root: Path) -> dict[str, int]:
    """Those of :func:`modes` that are not 0600 (a file) or 0700 (a folder)."""
    return {
        name: mode
        for name, mode in modes(root).items()
        if mode != (0o700 if (root / name).is_dir() else 0o600)
    }


def _turns(memory: Memory, count: int, *, subject: str = "user-1", month: int = 10) -> None:
    for n in range(count):
        source = replace(
            event(
                f"{subject}-turn-{n}",
                f"we baked sourdough bread number {n} in the oven this weekend",
                occurred_at=day(month, 1, 9),
                who=actor(actor_id=subject),
                subject=subject,
            ),
            metadata={"session": "s1"},
        )
        memory.ingest(source, [episode_of(source)])


def _workload(store: Path, docs: Path) -> list[str]:
    """Everything that writes beside ``store``: ingest, process, recall (with an
    approximate index built and saved), corpus add and search, session memory,
    compaction, erasure, serve's admin key and a document uploaded over HTTP. Returns
    the modes seen while all of it was open: ``name mode`` lines of what is wrong."""
    db = store / "m.db"
    index = DerivedIndex(  # where default_index_path puts it
        Path(f"{db}.index"), embedder=HashingEmbedder(), ann_threshold=THRESHOLD
    )
    memory = Memory(open_store(db), clock=FrozenClock(day(10, 2)), index=index)
    corpus = Corpus(default_corpus_path(db), embedder=HashingEmbedder())
    sessions = SessionMemory(default_session_path(db))
    try:
        _turns(memory, THRESHOLD + 10)
        _turns(memory, 8, subject="user-2", month=8)  # a session old enough to compact
        memory.ingest(event("said", "I live in Lyon now.", occurred_at=day(9, 1)))
        memory.process()
        assert memory.recall("sourdough bread oven", tenant=TENANT).items
        doc = docs / "handbook.md"
        doc.write_text("# Returns\n\nParcels are returned within thirty days.\n")
        corpus.add(TENANT, [doc])
        assert corpus.search("returned parcels", tenant=TENANT)
        sessions.add_turn(TENANT, "chat-1", role="user", text="hello there, how are you")
        memory.compact(tenant=TENANT, older_than=timedelta(days=30))
        memory.erase(tenant=TENANT, event="said")  # purges the tenant's index entries
        index.sync(memory.store)
        assert index.search_vectors("sourdough oven", tenant=TENANT, k=5)  # builds the ANN
        admin = ensure_admin_key(memory, ServeConfig(tenant=TENANT))
        assert admin.token is not None
        with serve(create_app(memory)) as base:
            import httpx

            with httpx.Client(base_url=base, timeout=30) as client:
                sent = client.post(
                    "/v1/corpus/documents",
                    headers={"Authorization": f"Bearer {admin.token}"},
                    json={"name": "faq", "content": "Shipping takes two days."},
                )
                assert sent.status_code in (200, 201), sent.text
        return [f"{name} {mode:o}" for name, mode in wide(store).items()]
    finally:
        sessions.close()
        corpus.close()
        memory.close()


def test_every_file_and_folder_a_store_writes_is_the_owners_alone(tmp_path: Path) -> None:
    store, docs = tmp_path / "store", tmp_path / "docs"
    store.mkdir()
    docs.mkdir()
    assert _workload(store, docs) == []  # while open: -wal and -shm files included
    assert wide(store) == {}  # and after closing
    names = set(modes(store))
    expected = {
        "m.db",
        "m.db.lock",
        "m.db.index",
        "m.db.corpus",
        "m.db.sessions",
        "m.db.admin-key",
        "m.db.corpus.documents",
    }
    assert expected <= names, names
    assert any(n.startswith("m.db.corpus.documents/") and n.endswith("faq.md") for n in names)
    if _ann.available():
        graphs = {Path(n).suffix for n in names if n.startswith("m.db.index.ann/")}
        assert graphs == {".usearch", ".json"}, names


def test_a_database_open_shows_its_wal_and_shm_files_owner_only(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as memory:
        _turns(memory, 3)
        seen = modes(tmp_path)
        assert {"m.db-wal", "m.db-shm"} <= set(seen)
        assert wide(tmp_path) == {}


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o277, 0o000])
def test_the_helpers_make_owner_only_modes_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    os.umask(umask)
    _files.private_folder(tmp_path / "a" / "b")
    _files.private_file(tmp_path / "a" / "b" / "f")
    _files.write_private(tmp_path / "c" / "key", "secret\n")
    os.close(_files.open_private(tmp_path / "a" / "lock", os.O_RDWR))
    assert modes(tmp_path) == {
        "a": 0o700,
        "a/b": 0o700,
        "a/b/f": 0o600,
        "a/lock": 0o600,
        "c": 0o700,
        "c/key": 0o600,
    }
    assert (tmp_path / "c" / "key").read_text() == "secret\n"


def _loosen(store: Path) -> None:
    """What an older memledger left: files 0644, folders 0755."""
    for where, dirs, files in os.walk(store):
        for name in dirs:
            os.chmod(Path(where, name), 0o755)
        for name in files:
            os.chmod(Path(where, name), 0o644)


def _open_everything(db: Path, *, fix: bool = False) -> list[str]:
    """Open each part of the store at ``db`` as a service does; the warnings raised.
    ``fix``: run each warning's command while everything is still open (as an
    operator does on the running service, its -wal and -shm files there)."""
    with warnings.catch_warnings(record=True) as caught, ExitStack() as stack:
        warnings.simplefilter("always")
        index = DerivedIndex(f"{db}.index", embedder=HashingEmbedder(), ann_threshold=THRESHOLD)
        memory = stack.enter_context(Memory.open(db, index=index))
        memory.recall("sourdough", tenant=TENANT)
        ensure_admin_key(memory, ServeConfig(tenant=TENANT))
        shelf = Shelf(memory, corpus=None)  # the API's corpus and uploaded documents
        shelf.open(create=False)
        stack.callback(shelf.close)
        stack.enter_context(Corpus(default_corpus_path(db), embedder=HashingEmbedder()))
        stack.enter_context(SessionMemory(default_session_path(db)))
        messages = [str(w.message) for w in caught if issubclass(w.category, StoreFileModeWarning)]
        if fix:
            assert wide(db.parent) != {}  # a warning changes nothing
            for message in messages:
                command = message.split("make them the owner's alone with: ", 1)[1]
                assert command.startswith("chmod "), command
                subprocess.run(["sh", "-c", command], check=True)
            assert wide(db.parent) == {}
    return messages


def test_a_store_with_wider_modes_warns_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _workload(store, tmp_path)
    assert _open_everything(store / "m.db") == []  # an owner-only store warns of nothing
    _loosen(store)
    loose = wide(store)
    assert len(loose) >= 10, loose
    messages = _open_everything(store / "m.db", fix=True)
    named = " ".join(messages)
    for name, mode in loose.items():
        assert f"{str(store / name)!r} ({mode:04o})" in named, name
    assert f"{store / 'm.db-wal'!s}' (0644)" in named  # SQLite's files of a 0644 database
    assert wide(store) == {}
    assert _open_everything(store / "m.db") == []


def test_the_warning_is_given_once_per_process_for_one_file_and_mode(tmp_path: Path) -> None:
    Memory.open(tmp_path / "m.db").close()
    os.chmod(tmp_path / "m.db", 0o640)
    with pytest.warns(StoreFileModeWarning, match=r"m\.db' \(0640\).*chmod 600 "):
        Memory.open(tmp_path / "m.db").close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreFileModeWarning)
        Memory.open(tmp_path / "m.db").close()  # reported already
    os.chmod(tmp_path / "m.db", 0o604)  # another mode: reported again
    with pytest.warns(StoreFileModeWarning, match=r"\(0604\)"):
        Memory.open(tmp_path / "m.db").close()


def test_the_cli_shows_the_warning_as_one_line_and_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db) as memory:
        _turns(memory, 2)
    quiet = run(["recall", "sourdough", "--db", str(db), "--tenant", TENANT])
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.output
    os.chmod(db, 0o644)
    shown = run(["recall", "sourdough", "--db", str(db), "--tenant", TENANT])
    assert shown.exit_code == 0, shown.output
    lines = shown.stderr.splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines), lines
    assert any(f"chmod 600 {db}" in line for line in lines), lines
    assert "sourdough" in shown.stdout


def test_serve_warns_at_start(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    Memory.open(db).close()
    os.chmod(db, 0o644)
    child = subprocess.Popen(
        [sys.executable, "-m", "memledger.cli", "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any("API" in line for line in lines):
            line = child.stdout.readline()
            if not line:
                break
            lines.append(line)
    finally:
        child.terminate()
        child.communicate(timeout=60)
    printed = "".join(lines)
    assert "warning: store" in printed and f"chmod 600 {db}" in printed, printed
    assert stat.S_IMODE((tmp_path / "serve.db.admin-key").stat().st_mode) == 0o600


def test_the_local_files_of_the_postgresql_mode_are_the_owners_alone(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path / "cache" / "memledger"))
    with Memory.open(postgres.create_database()) as memory:
        _turns(memory, 3)
        key = ensure_admin_key(
            memory, ServeConfig(tenant=TENANT, key_file=tmp_path / "etc" / "admin-key")
        )
        assert key.token is not None
        path = default_index_path(memory.store)  # a machine-local index of a server store
        with DerivedIndex(path, embedder=HashingEmbedder()) as index:
            index.sync(memory.store)
            assert modes(tmp_path) == {
                "cache": 0o700,
                "cache/memledger": 0o700,
                f"cache/memledger/{path.name}": 0o600,
                f"cache/memledger/{path.name}-wal": 0o600,
                f"cache/memledger/{path.name}-shm": 0o600,
                "etc": 0o700,
                "etc/admin-key": 0o600,
            }
