"""Who may read the files memledger writes: their owner alone.

Every file memledger creates beside a store (the SQLite database, its lock file,
the derived index, the approximate index's graphs, the corpus, session memory,
uploaded documents, the admin key of ``serve``) is created mode ``0600`` and
every folder it creates ``0700``, whatever the process's umask. SQLite gives a
database's ``-wal``, ``-shm`` and ``-journal`` files the mode of the database
file, so creating the database file first (:func:`private_file`) covers them.

A file or folder found with group or other permission bits is left as it is:
the opener that owns it calls :func:`warn_loose`, which warns
(:class:`StoreFileModeWarning`) with the ``chmod`` command that fixes every such
path. Each loose path is reported once per process (per path and mode), by the
first open that finds it, so a store and the index beside it opened later in the
same process do not repeat one another.
"""

from __future__ import annotations

import os
import shlex
import stat
import threading
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "StoreFileModeWarning",
    "loose",
    "open_private",
    "private_file",
    "private_folder",
    "sqlite_files",
    "tree",
    "warn_loose",
    "write_private",
]

FILE_MODE = 0o600
"""The mode of every file memledger creates: read and write by the owner only."""
FOLDER_MODE = 0o700
"""The mode of every folder memledger creates."""
SQLITE_SUFFIXES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database file, with the database file's mode."""
_OTHERS = 0o077


class StoreFileModeWarning(UserWarning):
    """Files of a store that users other than the owner may read or write; the
    message names them and the ``chmod`` command that fixes them."""


def sqlite_files(path: Path) -> list[Path]:
    """A SQLite database file and the files SQLite keeps beside it."""
    return [path, *(Path(f"{path}{suffix}") for suffix in SQLITE_SUFFIXES)]


def tree(folder: Path) -> list[Path]:
    """``folder`` and everything under it (nothing when it does not exist)."""
    if not folder.is_dir():
        return []
    found = [folder]
    for root, dirs, files in os.walk(folder):
        found += [Path(root, name) for name in sorted(dirs) + sorted(files)]
    return found


def private_folder(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each new one mode ``0700``;
    folders that exist are left as they are."""
    missing: list[Path] = []
    at = Path(os.path.abspath(folder))
    while not at.exists():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, FOLDER_MODE)
        except FileExistsError:
            if not made.is_dir():
                raise
            continue  # another process made it first
        os.chmod(made, FOLDER_MODE)  # whatever the umask


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT)``, a new file created mode ``0600`` whatever
    the umask; an existing file keeps its mode."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path) -> None:
    """Create ``path`` empty, mode ``0600``, if it does not exist (a SQLite database
    made this way gives its ``-wal``/``-shm``/``-journal`` files the same mode).
    ``:memory:`` is no file and is left alone."""
    if str(path) == ":memory:":
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path``, mode ``0600``, replacing an older file atomically
    (through a hidden scratch file beside it, flushed to disk before the rename, so a
    reader finds the old file or the whole new one); missing folders are made ``0700``.
    A process killed before the rename leaves the scratch file, never a part of ``data``
    at ``path``."""
    private_folder(path.parent)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


def loose(paths: Iterable[Path]) -> list[tuple[Path, int]]:
    """The paths among ``paths`` that exist with group or other permission bits,
    each with its permission bits; missing paths are skipped."""
    found: list[tuple[Path, int]] = []
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and mode & _OTHERS:
            found.append((path, stat.S_IMODE(mode)))
    return found


def fix_command(found: Sequence[tuple[Path, int]]) -> str:
    """The ``chmod`` command that makes every path of ``found`` its owner's alone."""
    files = [shlex.quote(str(p)) for p, _ in found if not p.is_dir()]
    folders = [shlex.quote(str(p)) for p, _ in found if p.is_dir()]
    parts = []
    if files:
        parts.append(f"chmod {FILE_MODE:o} {' '.join(files)}")
    if folders:
        parts.append(f"chmod {FOLDER_MODE:o} {' '.join(folders)}")
    return " && ".join(parts)


_reported: set[tuple[str, int]] = set()
_reported_lock = threading.Lock()


def warn_loose(paths: Iterable[Path], *, what: str) -> None:
    """Warn (:class:`StoreFileModeWarning`) when any of ``paths`` (the files of
    ``what``, for the message) may be read by users other than its owner, naming
    each with its mode and the command that fixes them all. Each (path, mode) is
    reported once per process."""
    with _reported_lock:
        fresh = []
        for path, mode in loose(paths):
            key = (os.path.abspath(path), mode)
            if key not in _reported:
                _reported.add(key)
                fresh.append((path, mode))
    if not fresh:
        return
    fresh = [(Path(os.path.abspath(p)), m) for p, m in fresh]  # a command to run anywhere
    named = ", ".join(f"{str(p)!r} ({m:04o})" for p, m in fresh)
    warnings.warn(
        StoreFileModeWarning(
            f"{what}: {len(fresh)} file(s) or folder(s) that other users may read: {named};"
            f" make them the owner's alone with: {fix_command(fresh)}"
        ),
        stacklevel=2,  # the opener's line
    )
