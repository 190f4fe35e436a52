"""Finding and reading the files a corpus add names: walking, kinds, skip reasons."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memledger.corpus._model import Skipped
from memledger.corpus._parse import DocumentKind

__all__ = ["KINDS", "MAX_DOCUMENT_BYTES", "SourceFile", "absolute", "expand", "read_source"]

KINDS: dict[str, DocumentKind] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
}
"""The file name suffixes a corpus reads (case-insensitive), and how it parses them."""

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""Larger files are skipped (``too_large``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    path: str
    kind: DocumentKind
    text: str
    sha256: str
    last_modified: datetime


def absolute(path: str | Path) -> Path:
    """``path`` made absolute, ``~`` expanded and symbolic links resolved: how the
    corpus names a document."""
    return Path(path).expanduser().resolve()


def expand(paths: Iterable[str | Path]) -> tuple[list[Path], list[Skipped]]:
    """The files ``paths`` name, each once, in order: a file as given, a directory
    walked (sorted, hidden entries and other suffixes left out); a missing path
    is skipped."""
    found: dict[Path, None] = {}
    skipped: list[Skipped] = []
    for given in paths:
        path = absolute(given)
        if path.is_dir():
            for folder, subfolders, files in os.walk(path):
                subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith(".") and Path(name).suffix.casefold() in KINDS:
                        found.setdefault(Path(folder, name), None)
        elif path.exists() or path.is_symlink():
            found.setdefault(path, None)
        else:
            skipped.append(Skipped(path=str(path), reason="missing", detail="no such file"))
    return list(found), skipped


def read_source(path: Path) -> SourceFile | Skipped:
    """The text of the file at ``path``, or why it cannot be added."""
    kind = KINDS.get(path.suffix.casefold())
    if kind is None:
        detail = f"not one of {', '.join(sorted(KINDS))}"
        return Skipped(path=str(path), reason="unsupported", detail=detail)
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            return Skipped(path=str(path), reason="unreadable", detail="not a regular file")
        if status.st_size > MAX_DOCUMENT_BYTES:
            return Skipped(
                path=str(path),
                reason="too_large",
                detail=f"{status.st_size} bytes; at most {MAX_DOCUMENT_BYTES}",
            )
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(path=str(path), reason="unreadable", detail=exc.strerror or str(exc))
    if b"\x00" in data:
        return Skipped(path=str(path), reason="not_text", detail="binary (holds NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skipped(path=str(path), reason="not_text", detail=f"not UTF-8 text ({exc.reason})")
    return SourceFile(
        path=str(path),
        kind=kind,
        text=text,
        sha256=hashlib.sha256(data).hexdigest(),
        last_modified=datetime.fromtimestamp(status.st_mtime, tz=UTC),
    )
