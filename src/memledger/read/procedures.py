"""Procedures checked before use (seed 000: a remembered test setup helps only if it
still matches the repository).

A procedure record may name what it depends on, in its value's ``depends_on``
list; each dependency is a mapping with a ``kind``:

* ``{"kind": "file", "path": ..., "sha256": ...}``: the file still has that content;
* ``{"kind": "git", "repo": ..., "path": ..., "commit": ...}``: the last commit that
  touched ``path`` in ``repo`` is still ``commit``;
* ``{"kind": "value", "key": ..., "sha256": ...}``: a configuration value still
  hashes to that (read through a caller-supplied reader);
* any other kind a caller registers a :class:`DependencyChecker` for (for example
  ``"document"`` with an id and a version).

Before a packet includes a procedure, every dependency is checked; a procedure
whose dependency no longer holds is left out with the reason ``stale_procedure``
and the packet's notes say what changed; one whose dependency has no checker is
left out as ``unchecked_procedure`` (it cannot be confirmed). A procedure that
names no dependency enters with ``procedure: check_before_use`` among what it does
not prove.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from memledger.domain.records import JsonValue, MemoryRecord

Dependency = Mapping[str, JsonValue]


class DependencyChecker(Protocol):
    def check(self, dependency: Dependency, /) -> str | None:
        """``None`` when the dependency still holds, else what changed (one line)."""
        ...


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileChecker:
    """``file`` dependencies: the file at ``path`` (relative paths from ``root``) still
    has the content whose sha256 the procedure recorded."""

    def __init__(self, root: Path | str = ".") -> None:
        self._root = Path(root)

    def check(self, dependency: Dependency, /) -> str | None:
        path, digest = dependency.get("path"), dependency.get("sha256")
        if not isinstance(path, str) or not isinstance(digest, str):
            return "a file dependency needs 'path' and 'sha256'"
        where = self._root / path
        try:
            found = _sha256(where.read_bytes())
        except OSError:
            return f"{path} is gone"
        return None if found == digest else f"{path} changed (sha256 {found[:12]})"


class GitChecker:
    """``git`` dependencies: the last commit that touched ``path`` in ``repo`` (relative
    to ``root``) is still ``commit`` (a prefix of at least 7 hex digits counts)."""

    def __init__(self, root: Path | str = ".", *, git: str = "git") -> None:
        self._root = Path(root)
        self._git = git

    def check(self, dependency: Dependency, /) -> str | None:
        repo, path, commit = (dependency.get(k) for k in ("repo", "path", "commit"))
        if not all(isinstance(v, str) and v for v in (repo, path, commit)):
            return "a git dependency needs 'repo', 'path' and 'commit'"
        assert isinstance(repo, str) and isinstance(path, str) and isinstance(commit, str)
        try:
            done = subprocess.run(
                [self._git, "-C", str(self._root / repo), "log", "-1", "--format=%H", "--", path],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot read git history of {repo}: {exc}"
        last = done.stdout.strip()
        if done.returncode != 0 or not last:
            return f"{path} has no history in {repo}"
        if len(commit) >= 7 and last.startswith(commit):
            return None
        return f"{path} changed in {repo} since {commit[:12]} (now {last[:12]})"


class ValueChecker:
    """``value`` dependencies: ``read(key)`` still gives a value whose sha256 (of its
    UTF-8 text) the procedure recorded."""

    def __init__(self, read: Callable[[str], str | None]) -> None:
        self._read = read

    def check(self, dependency: Dependency, /) -> str | None:
        key, digest = dependency.get("key"), dependency.get("sha256")
        if not isinstance(key, str) or not isinstance(digest, str):
            return "a value dependency needs 'key' and 'sha256'"
        value = self._read(key)
        if value is None:
            return f"{key} is no longer set"
        return None if _sha256(value.encode()) == digest else f"{key} changed"


def default_checkers(root: Path | str = ".") -> dict[str, DependencyChecker]:
    """File and git checkers from ``root`` (value checkers need a reader: add one)."""
    return {"file": FileChecker(root), "git": GitChecker(root)}


def check_procedure(
    record: MemoryRecord, checkers: Mapping[str, DependencyChecker]
) -> tuple[str, str] | None:
    """``None`` when ``record`` is not a procedure, names no dependency, or every
    dependency holds; else ``(reason, what)``: ``stale_procedure`` with what changed,
    or ``unchecked_procedure`` when a dependency has no checker."""
    if record.kind != "procedure" or not isinstance(record.value, dict):
        return None
    needs = record.value.get("depends_on")
    if not isinstance(needs, list):
        return None
    for dependency in needs:
        if not isinstance(dependency, dict):
            return ("unchecked_procedure", f"a dependency is not a mapping: {dependency!r}")
        kind = dependency.get("kind")
        checker = checkers.get(kind) if isinstance(kind, str) else None
        if checker is None:
            return ("unchecked_procedure", f"no checker for a {kind!r} dependency")
        changed = checker.check(dependency)
        if changed is not None:
            return ("stale_procedure", changed)
    return None
