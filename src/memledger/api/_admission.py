"""Admission by tenant: no request of one tenant can take the service from the others.

:class:`ServiceLimits` holds what one tenant may ask of the service at once:

* ``tenant_in_flight``: ``/v1`` requests of one tenant served at once, inside the
  app's ``max_in_flight`` for everyone. Past it, that tenant's next request is
  answered at once with a 429 ``tenant_overloaded`` problem (``Retry-After: 1``)
  while other tenants still get in; past ``max_in_flight``, anyone's with a 503
  ``overloaded`` one. A flooding tenant is thus shed first, by its own cap. A light
  request (a body of at most 64 KiB) past the cap may borrow a free place while
  ``tenant_in_flight`` places stay free for the others: a lone tenant is not held to
  its cap on an idle service, and the others always find room.
* ``tenant_heavy_in_flight``: heavy requests (a body past 64 KiB: large material, a
  document) of one tenant served at once while another tenant is being served or
  was within the last second (:data:`SHARED_WINDOW_S`); past it, a 429
  ``tenant_overloaded``. A heavy request holds the interpreter for tens of
  milliseconds of CPU-bound Python, which a cap on counts alone does not bound: the
  flooding tenant's heavy requests queue behind each other, not in front of the
  other tenants'. A tenant alone on the service gets its whole ``tenant_in_flight``.
* ``tenant_heavy_share``: the share of the service's time one tenant's heavy requests
  may take while another tenant is served: a heavy request is admitted only while
  that tenant's heavy requests were in flight less than this share of the last second
  (:data:`SHARED_WINDOW_S`); past it, a 429 ``tenant_overloaded``. One heavy request
  at a time still holds the interpreter for most of the time if they follow each
  other back to back; this bounds how much of every second the others lose to them.
* ``max_material_chars``: characters of supplied ``material`` in one context
  request, and ``max_document_chars``: characters of one shared corpus document.
  Past them the request is refused before any work with a 413 ``limit_exceeded``
  problem. In a Python process, CPU-bound work of one request slows every other
  (the interpreter runs one thread at a time); these sizes are what bound it.
* ``request_seconds``: the work budget of one request (:mod:`memledger.deadline`).
  Context assembly, corpus indexing and recall check it between their steps and
  before they write; a request past it answers 503 ``budget_exceeded`` and leaves
  nothing written.

The tenant of a request is its key's: the first request of a key
(``mlk_<id>.<secret>``, sent as a ``Bearer`` or a ``Token``) authenticates it (in a
worker thread, counted under the shared bucket below while it does; the first requests
of one token arriving together wait for that one look-up) and the token is counted
under its tenant from then on, so every key of a tenant shares that tenant's cap. A
token that does not authenticate (a wrong secret for a known key id included), and a
request without one, count under one shared bucket (the route refuses them at once).
Health, readiness, metrics and the OpenAPI document are never shed. The MCP endpoint
that ``memledger serve`` mounts is admitted by the same :class:`Admission`
(:mod:`memledger.mcp._http`): a tenant's requests over HTTP and MCP count together
against one cap.

:attr:`Admission.refused` counts refusals by reason and :attr:`Admission.in_flight`
the requests in flight; ``/metrics`` exports both, with no tenant in any label.

Without admission an overloaded service keeps working on requests whose clients have
long timed out, and the rate it answers in time collapses; without the per-tenant cap
one tenant's flood fills every place and the others are refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from memledger.api._problems import REQUEST_PROBLEMS, problem_response
from memledger.deadline import Budget, check_seconds, within
from memledger.errors import InvalidInputError, LimitExceededError
from memledger.wire_models import ProblemKind

__all__ = [
    "REFUSAL_REASONS",
    "TENANT_OVERLOADED",
    "Admission",
    "AdmissionMiddleware",
    "RefusalReason",
    "ServiceLimits",
    "heavy_request",
]

RefusalReason = Literal["overloaded", "tenant_overloaded", "budget_exceeded"]
REFUSAL_REASONS: tuple[RefusalReason, ...] = ("overloaded", "tenant_overloaded", "budget_exceeded")

TENANT_OVERLOADED = REQUEST_PROBLEMS["tenant_overloaded"]

ANONYMOUS = "anonymous"
"""The bucket of requests without a valid key (and of look-ups of new key ids)."""
_TOKEN = re.compile(
    rb"^\s*(?:bearer|token)\s+((mlk_[0-9a-f]{12})\.[A-Za-z0-9_-]{43})\s*$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceLimits:
    """What one tenant may ask of the HTTP service at once (see the module docstring)."""

    tenant_in_flight: int = 4
    """``/v1`` requests of one tenant served at once (at most the app's ``max_in_flight``)."""
    tenant_heavy_in_flight: int = 1
    """Heavy requests of one tenant served at once while other tenants are served."""
    tenant_heavy_share: float = 0.1
    """Share of each second one tenant's heavy requests may take while others are served."""
    max_material_chars: int = 250_000
    """Characters of ``material`` in one context request, all pieces together."""
    max_document_chars: int = 1_000_000
    """Characters of one shared corpus document."""
    request_seconds: float = 10.0
    """The work budget of one request, in seconds."""

    def __post_init__(self) -> None:
        for name in (
            "tenant_in_flight",
            "tenant_heavy_in_flight",
            "max_material_chars",
            "max_document_chars",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be a whole number >= 1, got {value!r}")
        share = self.tenant_heavy_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise InvalidInputError(f"tenant_heavy_share must be in (0, 1], got {share!r}")
        check_seconds(self.request_seconds)

    def check_material(self, sizes: list[int]) -> None:
        """Refuse material of more characters in all than ``max_material_chars``."""
        total = sum(sizes)
        if total > self.max_material_chars:
            raise LimitExceededError(
                f"material has {total:,} characters in all; this server takes at most "
                f"{self.max_material_chars:,} in one context request"
            )

    def check_document(self, size: int) -> None:
        """Refuse a corpus document of more characters than ``max_document_chars``."""
        if size > self.max_document_chars:
            raise LimitExceededError(
                f"the document has {size:,} characters; this server takes documents of at "
                f"most {self.max_document_chars:,}"
            )


class Admission:
    """The counts admission decides by: requests in flight, in all and by tenant, on the
    event loop only. ``tenant_of``: the tenant of a token, ``None`` when it does not
    authenticate (called once per key id, in a worker thread). ``tenant_heavy_share``
    1.0 leaves heavy requests bounded by their count alone."""

    def __init__(
        self,
        *,
        max_in_flight: int,
        tenant_in_flight: int,
        tenant_of: Callable[[str], str | None],
        tenant_heavy_in_flight: int = 1,
        tenant_heavy_share: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_in_flight = max_in_flight
        self.tenant_in_flight = min(tenant_in_flight, max_in_flight)
        self.tenant_heavy_in_flight = min(tenant_heavy_in_flight, self.tenant_in_flight)
        self.in_flight = 0
        self.by_bucket: Counter[str] = Counter()
        self.heavy_by_bucket: Counter[str] = Counter()
        self.tenant_heavy_share = tenant_heavy_share
        self._heavy_done: dict[str, list[tuple[float, float]]] = {}
        """Each tenant's heavy requests that ended within :data:`SHARED_WINDOW_S`:
        (admitted, ended)."""
        self._heavy_begun: dict[str, list[float]] = {}
        """When each tenant's heavy requests in flight were admitted."""
        self._seen: dict[str, float] = {}
        """When each tenant's bucket last had a request admitted or finished."""
        self._clock = clock
        self.refused: Counter[RefusalReason] = Counter()
        """Requests refused or stopped, by reason: ``tenant_overloaded`` (the tenant's
        own cap), ``overloaded`` (the service's), ``budget_exceeded`` (past the work
        budget, counted by :meth:`over_budget`)."""
        self._lock = threading.Lock()
        self._tenant_of = tenant_of
        self._known: dict[bytes, str] = {}
        """The tenant of each token that authenticated, by the token's SHA-256 (a wrong
        secret for a known key id is another token: it never counts under that tenant)."""
        self._looking: dict[bytes, asyncio.Future[str | None]] = {}
        """Look-ups under way: the first requests of one token share one."""

    async def bucket(self, scope: Scope) -> str:
        """Whose cap a request counts against: its key's tenant, else the one bucket of
        requests without a valid key."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                found = _TOKEN.match(value)
                if found is None:
                    break
                token = found[1]
                digest = hashlib.sha256(token).digest()
                tenant = self._known.get(digest)
                if tenant is None:
                    tenant = await self._resolve(token.decode(), digest)
                    if tenant is None:
                        break
                    self._known[digest] = tenant
                return f"tenant:{tenant}"
        return ANONYMOUS

    async def _resolve(self, token: str, digest: bytes) -> str | None:
        """The tenant of a token not seen yet, looked up under the shared bucket's cap
        (a flood of unknown tokens takes no more places than one tenant); the first
        requests of one token, arriving together, wait for one look-up."""
        under_way = self._looking.get(digest)
        if under_way is not None:
            return await asyncio.shield(under_way)
        if self.admit(ANONYMOUS) is not None:
            return None  # counted as anonymous: refused below, or by the route
        looking: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._looking[digest] = looking
        tenant: str | None = None
        try:
            tenant = await run_in_threadpool(self._tenant_of, token)
        finally:
            del self._looking[digest]
            looking.set_result(tenant)  # a failed look-up: anonymous, for every waiter
            self.release(ANONYMOUS)
        return tenant

    def admit(self, bucket: str, *, heavy: bool = False) -> ProblemKind | None:
        """Take a place for a request of ``bucket``; else the problem to answer.

        A tenant at its cap may still borrow a free place for a light request while
        at least ``tenant_in_flight`` places stay free for the others, so that a lone
        tenant is not held to its cap on an idle service; a ``heavy`` request (a large
        body) never borrows."""
        if self.in_flight >= self.max_in_flight:
            self._count("overloaded")
            return REQUEST_PROBLEMS["overloaded"]
        spare = self.max_in_flight - self.in_flight > self.tenant_in_flight
        lender = not heavy and spare and bucket != ANONYMOUS  # no key: no borrowing
        if self.by_bucket[bucket] >= self.tenant_in_flight and not lender:
            self._count("tenant_overloaded")
            return TENANT_OVERLOADED
        now = self._clock()
        queued = heavy and bucket != ANONYMOUS  # no key: refused by the route anyway
        queued = queued and self.heavy_by_bucket[bucket] >= self.tenant_heavy_in_flight
        if queued and self._shared(bucket, now):
            self._count("tenant_overloaded")
            return TENANT_OVERLOADED
        if heavy and bucket != ANONYMOUS and self._over_share(bucket, now):
            self._count("tenant_overloaded")
            return TENANT_OVERLOADED
        self.in_flight += 1
        self.by_bucket[bucket] += 1
        if heavy:
            self.heavy_by_bucket[bucket] += 1
            self._heavy_begun.setdefault(bucket, []).append(now)
        if bucket != ANONYMOUS:
            self._seen[bucket] = now
        return None

    def over_budget(self) -> None:
        """Count a request stopped past its work budget (from any thread)."""
        self._count("budget_exceeded")

    def _count(self, reason: RefusalReason) -> None:
        with self._lock:
            self.refused[reason] += 1

    def busiest(self) -> int:
        """Requests in flight of the tenant with the most (the shared bucket included)."""
        return max(self.by_bucket.values(), default=0)

    def release(self, bucket: str, *, heavy: bool = False) -> None:
        self.in_flight -= 1
        self.by_bucket[bucket] -= 1
        if self.by_bucket[bucket] <= 0:
            del self.by_bucket[bucket]
        now = self._clock()
        if heavy:
            self.heavy_by_bucket[bucket] -= 1
            if self.heavy_by_bucket[bucket] <= 0:
                del self.heavy_by_bucket[bucket]
            begun = self._heavy_begun.get(bucket)
            if begun:  # the oldest: which one ended does not change the time they took
                self._heavy_done[bucket] = [*self._recent(bucket, now), (begun.pop(0), now)]
                if not begun:
                    del self._heavy_begun[bucket]
        if bucket != ANONYMOUS:
            self._seen[bucket] = now

    def _over_share(self, bucket: str, now: float) -> bool:
        """Whether ``bucket``'s heavy requests took more than ``tenant_heavy_share`` of
        the last :data:`SHARED_WINDOW_S` while the service is shared with another tenant."""
        if self.tenant_heavy_share >= 1.0:
            return False
        since = now - SHARED_WINDOW_S
        busy = sum(b - max(a, since) for a, b in self._recent(bucket, now))
        busy += sum(now - max(a, since) for a in self._heavy_begun.get(bucket, ()))
        return busy >= self.tenant_heavy_share * SHARED_WINDOW_S and self._shared(bucket, now)

    def _recent(self, bucket: str, now: float) -> list[tuple[float, float]]:
        """``bucket``'s heavy requests that ended within the last :data:`SHARED_WINDOW_S`
        (the older ones forgotten)."""
        done = [(a, b) for a, b in self._heavy_done.pop(bucket, ()) if b > now - SHARED_WINDOW_S]
        if done:
            self._heavy_done[bucket] = done
        return done

    def _shared(self, bucket: str, now: float) -> bool:
        """Whether another tenant is served, or was within :data:`SHARED_WINDOW_S`."""
        for other, at in list(self._seen.items()):
            if other not in self.by_bucket and now - at > SHARED_WINDOW_S:
                del self._seen[other]  # gone quiet: forgotten
        return any(other != bucket for other in self._seen)


class AdmissionMiddleware:
    """ASGI middleware: admits ``/v1`` requests by :class:`Admission` and runs each
    under the work budget ``request_seconds``."""

    def __init__(self, app: ASGIApp, *, admission: Admission, request_seconds: float) -> None:
        self.app = app
        self.admission = admission
        self.request_seconds = request_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        bucket = await self.admission.bucket(scope)
        heavy = heavy_request(scope)
        refused = self.admission.admit(bucket, heavy=heavy)
        if refused is not None:
            await problem_response(refused)(scope, receive, send)
            return
        budget: Budget | None = None
        try:
            with within(self.request_seconds) as budget:
                await self.app(scope, receive, send)
        finally:
            self.admission.release(bucket, heavy=heavy)
            if budget is not None and budget.spent:
                self.admission.over_budget()


SHARED_WINDOW_S = 1.0
"""How long after a tenant's last request the service still counts as shared with it."""
HEAVY_BYTES = 64 * 1024
"""A request body past this (or of unknown length) is heavy: it never borrows a place."""


def heavy_request(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return not value.isdigit() or int(value) > HEAVY_BYTES
        if name == b"transfer-encoding":
            return True
    return False
