"""Procedures checked before use (issue 11, item 9): a procedure whose file, git path,
config value or document moved on is left out of the packet, saying what changed."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memledger import Claim, Memory
from memledger.read.procedures import FileChecker, GitChecker, ValueChecker
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event

NOW = datetime(2026, 10, 28, 9, tzinfo=UTC)
ASK = "How do I run the release tests?"
LEAD = actor("workflow", actor_id="lead")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "conftest.py").write_text("FIXTURES = 'release'\n")
    git(repo, "add", "conftest.py")
    git(repo, "commit", "-qm", "fixtures")
    return repo


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    yield memory
    memory.close()


def remember(memory: Memory, depends_on: list[dict[str, Any]]) -> str:
    text = "To run the release tests: pytest -x tests/release with the release fixtures."
    event_id = f"e{len(depends_on)}-{sha(str(depends_on))[:8]}"
    receipt = memory.ingest(
        event(event_id, text, occurred_at=NOW, subject="repo-main", who=LEAD),
        [
            Claim(
                family="workflow",
                kind="procedure",
                scope="release-tests",
                statement="Run the release tests with pytest -x tests/release",
                value={"command": "pytest -x tests/release", "depends_on": depends_on},
                grounding="pytest -x tests/release",
            )
        ],
    )
    (result,) = [r for r in receipt.results if r.memory_id]
    assert result.memory_id is not None
    return result.memory_id


def packet_ids(memory: Memory, **kwargs: Any) -> tuple[set[str], list[str]]:
    packet = memory.context(ASK, tenant="acme", subject="repo-main", budget=1500, **kwargs)
    return {i.memory_id for i in packet.memories if i.memory_id}, list(packet.notes)


def test_a_procedure_whose_file_or_git_path_moved_on_is_left_out(
    memory: Memory, repo: Path
) -> None:
    head = git(repo, "log", "-1", "--format=%H")
    procedure = remember(
        memory,
        [
            {"kind": "file", "path": "conftest.py", "sha256": sha("FIXTURES = 'release'\n")},
            {"kind": "git", "repo": ".", "path": "conftest.py", "commit": head[:10]},
        ],
    )
    checkers = {"file": FileChecker(repo), "git": GitChecker(repo)}
    ids, notes = packet_ids(memory, checkers=checkers)
    assert procedure in ids and not notes
    (repo / "conftest.py").write_text("FIXTURES = 'nightly'\n")  # edited, not committed
    ids, notes = packet_ids(memory, checkers=checkers)
    assert procedure not in ids
    assert notes == [
        f"procedure {procedure} left out (stale_procedure): conftest.py changed "
        f"(sha256 {sha(chr(70) + 'IXTURES = ' + repr('nightly') + chr(10))[:12]})"
    ]
    # the file back as it was, but committed again: the git path moved on
    (repo / "conftest.py").write_text("FIXTURES = 'release'\n")
    git(repo, "commit", "-qam", "touch", "--allow-empty")
    (repo / "conftest.py").write_text("FIXTURES = 'release'  # same\n")
    git(repo, "commit", "-qam", "again")
    (repo / "conftest.py").write_text("FIXTURES = 'release'\n")
    ids, notes = packet_ids(
        memory, checkers={"git": GitChecker(repo)} | {"file": FileChecker(repo)}
    )
    assert procedure not in ids and "changed in ." in notes[0]
    packet = memory.context(ASK, tenant="acme", subject="repo-main", budget=1500, checkers=checkers)
    assert (procedure, "stale_procedure") in {(e.key, e.reason) for e in packet.excluded}


def test_values_documents_and_unchecked_dependencies(memory: Memory) -> None:
    config = {"ci.python": "3.11"}
    procedure = remember(
        memory,
        [
            {"kind": "value", "key": "ci.python", "sha256": sha("3.11")},
            {"kind": "document", "id": "handbook", "version": 14},
        ],
    )
    documents = {"handbook": 14}

    class Documents:
        def check(self, dependency: Any, /) -> str | None:
            now = documents.get(dependency["id"])
            return None if now == dependency["version"] else f"handbook is now v{now}"

    checkers = {"value": ValueChecker(config.get), "document": Documents()}
    assert procedure in packet_ids(memory, checkers=checkers)[0]
    ids, notes = packet_ids(memory, checkers={"value": ValueChecker(config.get)})
    assert procedure not in ids and "unchecked_procedure" in notes[0]  # no document checker
    documents["handbook"] = 15
    ids, notes = packet_ids(memory, checkers=checkers)
    assert procedure not in ids and notes[0].endswith("handbook is now v15")
    documents["handbook"] = 14
    config["ci.python"] = "3.12"
    ids, notes = packet_ids(memory, checkers=checkers)
    assert procedure not in ids and notes[0].endswith("ci.python changed")


def test_a_procedure_without_dependencies_says_to_check_it(memory: Memory) -> None:
    procedure = remember(memory, [])
    packet = memory.context(ASK, tenant="acme", subject="repo-main", budget=1500)
    (item,) = [i for i in packet.memories if i.memory_id == procedure]
    assert "procedure: check_before_use" in item.fields["does_not_prove"]  # type: ignore[operator]
