"""Prometheus metrics of the HTTP API, in a registry of each app's own.

Labels are the method, the route *template* (``/v1/memories/{memory_id}``, or
``<unmatched>``), the status, a problem's code and an admission refusal's reason: never
a tenant, an id or content.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client import generate_latest as _generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memledger.api._admission import REFUSAL_REASONS, Admission
from memledger.errors import MemledgerError
from memledger.freshness import Freshness

__all__ = ["CONTENT_TYPE", "Metrics", "MetricsMiddleware"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _StoreReads(Collector):
    """Where the store's reads went (a store with read replicas counts them: ``primary``,
    ``replica``, ``replica_behind``, ``replica_down``), read at each scrape."""

    def __init__(self, reads: Callable[[], Mapping[str, int]]) -> None:
        self._reads = reads

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "memledger_store_reads",
            "Store reads by where they went (primary, replica) and replica misses.",
            labels=("route",),
        )
        for route, count in sorted(self._reads().items()):
            family.add_metric((route,), count)
        yield family


class _Freshness(Collector):
    """The freshness contract's figures (:mod:`memledger.freshness`), read at each scrape,
    of every tenant together: no tenant is in any label."""

    def __init__(self, read: Callable[[], Freshness]) -> None:
        self._read = read

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # registered without reading the store; the figures come at each scrape

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        def gauge(name: str, text: str, value: float | None) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, text)
            if value is not None:
                family.add_metric((), value)
            return family

        try:
            now = self._read()
        except MemledgerError:  # the store is down: say so, never fail the scrape
            yield gauge("memledger_freshness_up", "Whether the freshness figures could be read.", 0)
            return
        yield gauge("memledger_freshness_up", "Whether the freshness figures could be read.", 1)

        yield gauge("memledger_extraction_backlog_jobs", "Extraction jobs queued.", now.queued_jobs)
        yield gauge(
            "memledger_extraction_oldest_queued_seconds",
            "Age of the oldest queued extraction job.",
            now.oldest_queued_seconds,
        )
        lag = GaugeMetricFamily(
            "memledger_extraction_lag_seconds",
            "Seconds from an event's job queued to its accepted update, jobs of the last hour.",
            labels=("quantile",),
        )
        for quantile, value in (("0.5", now.extraction_lag_p50), ("0.95", now.extraction_lag_p95)):
            if value is not None:
                lag.add_metric((quantile,), value)
        yield lag
        yield gauge(
            "memledger_index_lag_rows", "Outbox rows the index has not applied.", now.index_lag
        )
        reads = now.reads
        for name, key, text in (
            ("memledger_recalls", "recalls", "Recalls served by this process."),
            ("memledger_recalls_abstained", "abstained", "Recalls that returned no memory."),
            ("memledger_recalls_lexical_only", "lexical_only", "Recalls run without vectors."),
        ):
            counted = CounterMetricFamily(name, text)
            counted.add_metric((), reads[key])
            yield counted
        excluded = CounterMetricFamily(
            "memledger_recall_exclusions",
            "Candidates the canonical recheck refused, by reason (stale_index: the index "
            "held an older revision).",
            labels=("reason",),
        )
        for reason, count in reads["excluded"].items():
            excluded.add_metric((reason,), count)
        yield excluded


class _Admitted(Collector):
    """Admission's counts (:mod:`memledger.api._admission`), API and MCP together, read
    at each scrape: refusals by reason and requests in flight, no tenant in any label."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        refused = CounterMetricFamily(
            "memledger_admission_refusals",
            "Requests refused at admission (overloaded: the service's cap; "
            "tenant_overloaded: the tenant's) or stopped past the work budget "
            "(budget_exceeded), by reason.",
            labels=("reason",),
        )
        counts = dict(self._admission.refused)
        for reason in REFUSAL_REASONS:
            refused.add_metric((reason,), counts.get(reason, 0))
        yield refused
        yield GaugeMetricFamily(
            "memledger_requests_in_flight",
            "Admitted requests (/v1 and MCP) in flight, every tenant together.",
            value=self._admission.in_flight,
        )
        yield GaugeMetricFamily(
            "memledger_requests_in_flight_busiest_tenant",
            "Admitted requests in flight of the one tenant with the most.",
            value=self._admission.busiest(),
        )
        limit = GaugeMetricFamily(
            "memledger_requests_in_flight_limit",
            "Requests admitted at once: every tenant together (scope=service), one "
            "tenant (scope=tenant).",
            labels=("scope",),
        )
        limit.add_metric(("service",), self._admission.max_in_flight)
        limit.add_metric(("tenant",), self._admission.tenant_in_flight)
        yield limit


class Metrics:
    """Request counts, latencies and problems by code; with ``store_reads``, the store's
    reads by where they went; with ``freshness``, the freshness figures; with
    ``admission``, its refusals by reason and requests in flight."""

    def __init__(
        self,
        *,
        store_reads: Callable[[], Mapping[str, int]] | None = None,
        freshness: Callable[[], Freshness] | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        if admission is not None:
            self.registry.register(_Admitted(admission))
        if store_reads is not None:
            self.registry.register(_StoreReads(store_reads))
        if freshness is not None:
            self.registry.register(_Freshness(freshness))
        self.requests = Counter(
            "memledger_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "memledger_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ("method", "route"),
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.problems = Counter(
            "memledger_http_problems",
            "Problem responses, by problem code.",
            ("code",),
            registry=self.registry,
        )

    def problem(self, code: str) -> None:
        self.problems.labels(code=code).inc()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method=method, route=route, status=str(status)).inc()
        self.latency.labels(method=method, route=route).observe(seconds)

    def text(self) -> bytes:
        return bytes(_generate_latest(self.registry))


def route_of(scope: Scope) -> str:
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "<unmatched>"


class MetricsMiddleware:
    """Times every HTTP request and counts it by its route template and status (an
    exception that escapes the app counts as a 500)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.observe(
                str(scope.get("method", "")), route_of(scope), status, time.perf_counter() - started
            )
