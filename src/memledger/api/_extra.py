"""What the API needs and the library does not offer yet, kept in one place.

* :func:`outcome` and :func:`job`: an event's stored receipt and an extraction job
  (``Memory.outcome`` / ``Memory.job``).
* :class:`Shelf`: the tenant's shared corpus, with documents given as text rather
  than as files on the server (:class:`~memledger.corpus.Corpus` adds files only):
  each is written to ``<corpus>.documents/<tenant hash>/<name>`` and added from
  there, so a document's name is all a caller sees of where it is kept.

Each of these is a stand-in for a library call, and goes once the library has it.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Literal

from memledger._files import private_folder, tree, warn_loose
from memledger.corpus import KINDS, AddReport, Corpus, DocumentKind, default_corpus_path
from memledger.domain.records import Job, Receipt
from memledger.errors import InvalidInputError
from memledger.index.embedders import Embedder
from memledger.memory import Memory

__all__ = ["MEDIA_TYPES", "MediaType", "Shelf", "job", "outcome"]


def outcome(memory: Memory, event_id: str, *, tenant: str) -> Receipt | None:
    """The receipt stored for an event (``None``: it has none yet)."""
    return memory.outcome(event_id, tenant=tenant)


def job(memory: Memory, job_id: str, *, tenant: str) -> Job | None:
    """An extraction job of ``tenant`` (``None``: no such job)."""
    return memory.job(job_id, tenant=tenant)


MediaType = Literal["text/plain", "text/markdown", "text/html"]
MEDIA_TYPES: dict[MediaType, DocumentKind] = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/html": "html",
}
_SUFFIX: dict[DocumentKind, str] = {"text": ".txt", "markdown": ".md", "html": ".html"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
NAME_PATTERN = _NAME.pattern


def document_name(name: str, media_type: MediaType) -> str:
    """``name`` with the suffix its media type reads as (``handbook`` as markdown is
    ``handbook.md``); :class:`InvalidInputError` for a name that is not one plain
    file name of at most 100 characters."""
    if not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"document name {name!r} must be 1 to 100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    kind = MEDIA_TYPES[media_type]
    if KINDS.get(Path(name).suffix.casefold()) == kind:
        return name
    return name + _SUFFIX[kind]


class Shelf:
    """The corpus beside the store (``<store file>.corpus``, as the CLI's), opened on
    first use: reads of a corpus that does not exist find nothing and create nothing."""

    def __init__(self, memory: Memory, *, corpus: Corpus | None) -> None:
        self._memory = memory
        self._corpus = corpus
        self._given = corpus is not None
        self._lock = threading.Lock()
        self._path = corpus.path if corpus is not None else None

    @property
    def path(self) -> Path:
        """Where the corpus is; worked out on first use, so that a store with no default
        corpus path (PostgreSQL) serves everything but the corpus routes, and those
        answer that a corpus path is needed."""
        if self._path is None:
            self._path = _default_path(self._memory)
        return self._path

    @property
    def folder(self) -> Path:
        return Path(f"{self.path}.documents")

    def _tenant_folder(self, tenant: str) -> Path:
        return self.folder / hashlib.sha256(tenant.encode()).hexdigest()[:24]

    def _embedder(self) -> Embedder | None:
        return self._memory.index.embedder

    def open(self, *, create: bool) -> Corpus | None:
        """The corpus; ``None`` when it does not exist and ``create`` is false (a store
        with no default corpus path and none given has none to read)."""
        if not create and self._path is None and not _has_default_path(self._memory):
            return None
        with self._lock:
            if self._corpus is None and (create or self.path.exists()):
                self._corpus = Corpus(self.path, embedder=self._embedder())
                warn_loose(tree(self.folder), what=f"corpus documents {str(self.folder)!r}")
            return self._corpus

    def close(self) -> None:
        with self._lock:
            if self._corpus is not None and not self._given:
                self._corpus.close()
            self._corpus = None

    def add(self, tenant: str, name: str, text: str) -> AddReport:
        """Keep ``text`` as the tenant's document ``name`` and add (or refresh) it."""
        corpus = self.open(create=True)
        assert corpus is not None
        folder = self._tenant_folder(tenant)
        private_folder(folder)
        target = folder / name
        kept = Path(f"{target}.kept") if target.exists() else None
        if kept is not None:  # the document it replaces, put back if this one is not added
            os.replace(target, kept)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")  # mode 0600
        added = False
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(text)
            os.replace(temporary, target)
            report = corpus.add(tenant, [target])  # may stop past the work budget
            added = not report.skipped
        finally:
            Path(temporary).unlink(missing_ok=True)
            if kept is not None:
                if added:
                    kept.unlink(missing_ok=True)
                else:
                    os.replace(kept, target)
            elif not added:
                target.unlink(missing_ok=True)
        return report

    def name_of(self, tenant: str, path: str) -> str:
        """How a caller names the document at ``path``: its name if it was given as text,
        else the path it was added from (by the CLI, on the server)."""
        folder = self._tenant_folder(tenant).resolve()
        found = Path(path)
        return found.name if found.parent == folder else path

    def path_of(self, tenant: str, name: str) -> str:
        """The stored path of the tenant's document called ``name``."""
        if _NAME.fullmatch(name):
            return str((self._tenant_folder(tenant) / name).resolve())
        return name

    def remove(self, tenant: str, name: str) -> int:
        """Remove the tenant's document ``name``; how many chunks went (0: none)."""
        corpus = self.open(create=False)
        if corpus is None:
            return 0
        path = self.path_of(tenant, name)
        if path not in {d.path for d in corpus.documents(tenant)}:
            return 0  # only a document of this tenant, never a directory walk
        removed = corpus.remove(tenant, path)
        if Path(path).parent == self._tenant_folder(tenant).resolve():
            Path(path).unlink(missing_ok=True)
        return removed


def _default_path(memory: Memory) -> Path:
    return default_corpus_path(memory.url)


def _has_default_path(memory: Memory) -> bool:
    try:
        _default_path(memory)
    except InvalidInputError:
        return False
    return True
