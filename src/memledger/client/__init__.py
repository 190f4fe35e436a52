"""memledger over HTTP: :class:`Client` and :class:`AsyncClient` for a running
``memledger serve`` (or any app of :func:`memledger.api.create_app`). Needs the
``client`` extra (httpx)::

    from memledger.client import Client

    with Client("http://127.0.0.1:8765", api_key) as client:
        client.ingest({"event_id": "evt-1", "subject": "user-42", "channel": "chat",
                       "occurred_at": "2026-10-02T09:00:00Z", "text": "Fridays please",
                       "claims": [{"family": "delivery_preference", "kind": "preference",
                                   "statement": "Wants Fridays", "value": "friday"}]})
        client.current("user-42", "delivery_preference")   # read-your-writes

Both clients answer the wire models of :mod:`memledger.wire_models`, keep and send the
consistency tokens of what they wrote (:attr:`Client.consistency`), and raise the
library's own errors (a ``404 memory_not_found`` is a
:class:`~memledger.errors.MemoryNotFoundError`; the problem is :func:`problem_of` the
error). A service that cannot be reached raises :class:`~memledger.errors.StoreError`.
A dict they take may hold aware datetimes, dates and UUIDs at any depth
(:mod:`memledger.client._json`); a naive datetime is refused before anything is sent.
"""

from __future__ import annotations

try:
    import httpx  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"memledger.client needs the 'client' extra ({exc.name} is missing): "
        "pip install 'memledger[client]'"
    ) from exc

from memledger.client._async import AsyncClient
from memledger.client._client import Client
from memledger.client._errors import problem_of
from memledger.client._requests import Call, ClaimInput, ConsistencyInput, EventInput, Flow
from memledger.wire_models import ConsistencyToken, SubjectPage, SubjectSummary

__all__ = [
    "AsyncClient",
    "Call",
    "ClaimInput",
    "Client",
    "ConsistencyInput",
    "ConsistencyToken",
    "EventInput",
    "Flow",
    "SubjectPage",
    "SubjectSummary",
    "problem_of",
]
