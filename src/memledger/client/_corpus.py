"""The routes of stored context traces and of the tenant's shared corpus, as calls:
:func:`traces`, :func:`trace` and :func:`replay`; :func:`documents`,
:func:`add_document`, :func:`remove_document` and :func:`search_corpus`."""

from __future__ import annotations

from typing import Literal

from memledger import wire_models as wm
from memledger.client._requests import (
    Call,
    get_call,
    given,
    nothing,
    path_param,
    post_call,
    segment,
)

__all__ = [
    "add_document",
    "documents",
    "remove_document",
    "replay",
    "search_corpus",
    "trace",
    "traces",
]


def traces(*, subject: str | None = None, limit: int = 20) -> Call[list[wm.TraceSummary]]:
    """The most recent context traces, newest first."""
    return get_call("/v1/traces", list[wm.TraceSummary], subject=subject, limit=limit)


def trace(trace_id: str) -> Call[wm.StoredTrace]:
    """A context trace as stored."""
    return get_call(f"/v1/traces/{segment(trace_id)}", wm.StoredTrace)


def replay(trace_id: str) -> Call[wm.Replay]:
    """A stored packet rebuilt from the store, and whether it matches what was given."""
    return post_call(f"/v1/traces/{segment(trace_id)}/replay", wm.Replay)


def documents() -> Call[list[wm.Document]]:
    """The documents of the tenant's shared corpus."""
    return get_call("/v1/corpus/documents", list[wm.Document])


def add_document(
    name: str,
    content: str,
    *,
    media_type: Literal["text/plain", "text/markdown", "text/html"] = "text/markdown",
) -> Call[wm.DocumentAdded]:
    """Add (or replace) a shared document given as text (admin keys)."""
    body = {"name": name, "content": content, "media_type": media_type}
    return post_call("/v1/corpus/documents", wm.DocumentAdded, body)


def remove_document(name: str) -> Call[None]:
    """Remove a shared document (admin keys)."""
    return Call(method="DELETE", path=f"/v1/corpus/documents/{path_param(name)}", read=nothing)


def search_corpus(query: str, *, k: int = 5, floor: float | None = None) -> Call[wm.SearchResult]:
    """The shared document chunks most relevant to ``query`` (none below ``floor``)."""
    body = {"query": query, "k": k, **given(floor=floor)}
    return post_call("/v1/corpus/search", wm.SearchResult, body)
