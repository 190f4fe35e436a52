"""The asynchronous client: :class:`AsyncClient`, a thin facade over the calls of
:mod:`memledger.client._calls` sent with an ``httpx.AsyncClient``. Its methods are those
of :class:`~memledger.client.Client`, awaited (a test checks that their signatures
match)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

import httpx

from memledger import wire_models as wm
from memledger.client import _calls as calls
from memledger.client._calls import (
    Call,
    ClaimInput,
    ConsistencyInput,
    EventInput,
    Flow,
    doc_of,
)
from memledger.client._core import Core
from memledger.client._errors import sending
from memledger.domain.budget import Budget
from memledger.domain.families import Family
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import Grant
from memledger.errors import MemledgerError
from memledger.read.context import Constraint, LiveState, Material
from memledger.wire_models import SubjectPage

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient:
    """memledger over HTTP, for asyncio: :class:`~memledger.client.Client`'s methods,
    awaited. ``transport``: an ``httpx.AsyncBaseTransport``. Safe to share between tasks.

    ::

        async with AsyncClient("http://127.0.0.1:8765", api_key) as client:
            await client.ingest(event, claims)
            await client.current("user-42", "delivery_preference")
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        trust_env: bool = True,
    ) -> None:
        self._core = Core(base_url, api_key, timeout=timeout, trust_env=trust_env)
        self._http = _http(self._core, transport)

    @classmethod
    def _sharing(cls, core: Core) -> AsyncClient:
        """A client over ``core``: the same key, settings and consistency token."""
        made = cls.__new__(cls)
        made._core = core
        made._http = _http(core, None)
        return made

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self._core.base_url!r})"

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def consistency(self) -> wm.ConsistencyToken:
        """The floors of every write this client has seen (highest revision per family)."""
        return self._core.token

    @consistency.setter
    def consistency(self, token: wm.ConsistencyToken | None) -> None:
        self._core.reset(token)

    # -- sending -------------------------------------------------------------------------------

    async def send(self, call: Call[T]) -> T:
        """Send one call; its wire model, or the library's error."""
        request = self._core.prepare(call)
        with sending(call.describe(), self._core.base_url):
            response = await self._http.request(**request)
        return self._core.finish(call, response)

    async def run(self, flow: Flow[T]) -> T:
        """Drive a flow of calls to its result (errors are thrown into it)."""
        try:
            call = next(flow)
            while True:
                try:
                    result = await self.send(call)
                except MemledgerError as exc:
                    call = flow.throw(exc)
                else:
                    call = flow.send(result)
        except StopIteration as done:
            return cast(T, done.value)

    # -- events ----------------------------------------------------------------------------------

    @doc_of(calls.ingest)
    async def ingest(
        self,
        event: EventInput,
        claims: Sequence[ClaimInput] | None = None,
        *,
        complete: bool = True,
    ) -> wm.Receipt:
        return await self.send(calls.ingest(event, claims, complete=complete))

    @doc_of(calls.ingest_batch)
    async def ingest_batch(
        self, events: Iterable[EventInput | tuple[EventInput, Sequence[ClaimInput] | None]]
    ) -> list[wm.Receipt]:
        return await self.send(calls.ingest_batch(events))

    @doc_of(calls.event)
    async def event(self, event_id: str) -> wm.EventStatus:
        return await self.send(calls.event(event_id))

    @doc_of(calls.forget)
    async def forget(self, event_id: str, *, reason: str = "forgotten") -> wm.Forget:
        return await self.send(calls.forget(event_id, reason=reason))

    @doc_of(calls.erase)
    async def erase(
        self,
        *,
        event: str | None = None,
        memory_id: str | None = None,
        subject: str | None = None,
        reason: str = "erased",
    ) -> wm.Erasure:
        return await self.send(
            calls.erase(event=event, memory_id=memory_id, subject=subject, reason=reason)
        )

    @doc_of(calls.erasures)
    async def erasures(self) -> list[wm.Erasure]:
        return await self.send(calls.erasures())

    @doc_of(calls.undo)
    async def undo(self, change_id: str, *, reason: str = "undone") -> wm.Undo:
        return await self.send(calls.undo(change_id, reason=reason))

    @doc_of(calls.restore)
    async def restore(self, memory_id: str, *, reason: str = "restored") -> wm.Undo:
        return await self.send(calls.restore(memory_id, reason=reason))

    @doc_of(calls.change_log)
    async def change_log(self, *, limit: int = 100) -> list[wm.ChangeOut]:
        return await self.send(calls.change_log(limit=limit))

    @doc_of(calls.rollback)
    async def rollback(
        self,
        extractor: str,
        *,
        since: datetime | None = None,
        rederive: bool = False,
        reason: str = "rollback",
    ) -> wm.Rollback:
        return await self.send(
            calls.rollback(extractor, since=since, rederive=rederive, reason=reason)
        )

    @doc_of(calls.compact)
    async def compact(
        self,
        *,
        subject: str | None = None,
        older_than_days: float | None = None,
        before: datetime | None = None,
        min_turns: int = 2,
        max_tokens: int = 300,
        dry_run: bool = False,
        reason: str = "compacted",
    ) -> wm.Compaction:
        return await self.send(
            calls.compact(
                subject=subject,
                older_than_days=older_than_days,
                before=before,
                min_turns=min_turns,
                max_tokens=max_tokens,
                dry_run=dry_run,
                reason=reason,
            )
        )

    @doc_of(calls.consolidate)
    async def consolidate(
        self,
        *,
        subject: str | None = None,
        family: str | None = None,
        threshold: float | None = None,
        dry_run: bool = False,
        reason: str = "consolidated",
    ) -> wm.Consolidation:
        return await self.send(
            calls.consolidate(
                subject=subject,
                family=family,
                threshold=threshold,
                dry_run=dry_run,
                reason=reason,
            )
        )

    @doc_of(calls.retention)
    async def retention(self) -> dict[str, int]:
        return await self.send(calls.retention())

    @doc_of(calls.set_retention)
    async def set_retention(self, kind: str, days: int | None) -> dict[str, int]:
        return await self.send(calls.set_retention(kind, days))

    @doc_of(calls.process)
    async def process(self, *, max_jobs: int = 100) -> wm.WorkReport:
        return await self.send(calls.process(max_jobs=max_jobs))

    @doc_of(calls.jobs)
    async def jobs(self, *, include_done: bool = False) -> list[wm.Job]:
        return await self.send(calls.jobs(include_done=include_done))

    # -- reads ------------------------------------------------------------------------------------

    @doc_of(calls.recall)
    async def recall(
        self,
        query: str,
        *,
        subject: str | None = None,
        k: int = 10,
        valid_at: datetime | None = None,
        consistency: ConsistencyInput = None,
    ) -> wm.Recall:
        return await self.send(
            calls.recall(query, subject=subject, k=k, valid_at=valid_at, consistency=consistency)
        )

    @doc_of(calls.context)
    async def context(
        self,
        request: str,
        *,
        subject: str | None = None,
        budget: int | Budget = 2000,
        live: Sequence[LiveState | Mapping[str, object]] = (),
        constraints: Sequence[Constraint | Mapping[str, object]] = (),
        material: Sequence[Material | Mapping[str, object]] = (),
        k: int = 20,
        valid_at: datetime | None = None,
        corpus: bool = True,
        consistency: ConsistencyInput = None,
    ) -> wm.Packet:
        return await self.send(
            calls.context(
                request,
                subject=subject,
                budget=budget,
                live=live,
                constraints=constraints,
                material=material,
                k=k,
                valid_at=valid_at,
                corpus=corpus,
                consistency=consistency,
            )
        )

    @doc_of(calls.current)
    async def current(
        self,
        subject: str,
        family: str,
        *,
        valid_at: datetime | None = None,
        as_of: datetime | None = None,
        scope: str | None = None,
        include_revoked: bool = False,
        consistency: ConsistencyInput = None,
    ) -> list[wm.Record]:
        return await self.send(
            calls.current(
                subject,
                family,
                valid_at=valid_at,
                as_of=as_of,
                scope=scope,
                include_revoked=include_revoked,
                consistency=consistency,
            )
        )

    @doc_of(calls.timeline)
    async def timeline(
        self,
        subject: str,
        family: str,
        *,
        as_of: datetime | None = None,
        scope: str | None = None,
        consistency: ConsistencyInput = None,
    ) -> list[wm.Record]:
        return await self.send(
            calls.timeline(subject, family, as_of=as_of, scope=scope, consistency=consistency)
        )

    @doc_of(calls.history)
    async def history(
        self,
        subject: str,
        family: str,
        *,
        include_revoked: bool = False,
        consistency: ConsistencyInput = None,
    ) -> list[wm.Record]:
        return await self.send(
            calls.history(subject, family, include_revoked=include_revoked, consistency=consistency)
        )

    @doc_of(calls.changes)
    async def changes(self, subject: str, family: str) -> list[wm.HistoryEntry]:
        return await self.send(calls.changes(subject, family))

    @doc_of(calls.records)
    async def records(
        self,
        subject: str,
        *,
        valid_at: datetime | None = None,
        consistency: ConsistencyInput = None,
    ) -> list[wm.Record]:
        return await self.send(calls.records(subject, valid_at=valid_at, consistency=consistency))

    @doc_of(calls.families)
    async def families(self, subject: str) -> list[wm.FamilySlot]:
        return await self.send(calls.families(subject))

    @doc_of(calls.subjects)
    async def subjects(
        self, *, prefix: str | None = None, after: str | None = None, limit: int = 50
    ) -> SubjectPage:
        return await self.send(calls.subjects(prefix=prefix, after=after, limit=limit))

    @doc_of(calls.get)
    async def get(self, memory_id: str) -> wm.Record:
        return await self.send(calls.get(memory_id))

    @doc_of(calls.revoke)
    async def revoke(self, memory_id: str, *, reason: str = "revoked") -> wm.Revocation:
        return await self.send(calls.revoke(memory_id, reason=reason))

    # -- the review queue, keys, families ------------------------------------------------------

    @doc_of(calls.reviews)
    async def reviews(self, *, include_resolved: bool = False) -> list[wm.Review]:
        return await self.send(calls.reviews(include_resolved=include_resolved))

    @doc_of(calls.accept)
    async def accept(self, review_id: str, *, reason: str) -> wm.ReviewResolution:
        return await self.send(calls.accept(review_id, reason=reason))

    @doc_of(calls.reject)
    async def reject(self, review_id: str, *, reason: str) -> wm.ReviewResolution:
        return await self.send(calls.reject(review_id, reason=reason))

    @doc_of(calls.keys)
    async def keys(self) -> list[wm.Key]:
        return await self.send(calls.keys())

    @doc_of(calls.create_key)
    async def create_key(
        self,
        actor: str,
        *,
        principal: PrincipalKind = "user",
        role: KeyRole = "write",
        grants: Iterable[Grant | str] = (),
        label: str = "",
        reads: Iterable[str] = (),
    ) -> wm.KeyCreated:
        return await self.send(
            calls.create_key(
                actor, principal=principal, role=role, grants=grants, label=label, reads=reads
            )
        )

    @doc_of(calls.revoke_key)
    async def revoke_key(self, key_id: str) -> wm.Key:
        return await self.send(calls.revoke_key(key_id))

    @doc_of(calls.families_of)
    async def families_of(self) -> list[wm.Family]:
        return await self.send(calls.families_of())

    @doc_of(calls.register_family)
    async def register_family(self, family: Family) -> wm.Family:
        return await self.send(calls.register_family(family))

    @doc_of(calls.me)
    async def me(self) -> wm.WhoAmI:
        return await self.send(calls.me())

    @doc_of(calls.ready)
    async def ready(self) -> bool:
        return await self.run(calls.ready())

    # -- traces and the shared corpus ------------------------------------------------------------

    @doc_of(calls.traces)
    async def traces(self, *, subject: str | None = None, limit: int = 20) -> list[wm.TraceSummary]:
        return await self.send(calls.traces(subject=subject, limit=limit))

    @doc_of(calls.trace)
    async def trace(self, trace_id: str) -> wm.StoredTrace:
        return await self.send(calls.trace(trace_id))

    @doc_of(calls.replay)
    async def replay(self, trace_id: str) -> wm.Replay:
        return await self.send(calls.replay(trace_id))

    @doc_of(calls.documents)
    async def documents(self) -> list[wm.Document]:
        return await self.send(calls.documents())

    @doc_of(calls.add_document)
    async def add_document(
        self,
        name: str,
        content: str,
        *,
        media_type: Literal["text/plain", "text/markdown", "text/html"] = "text/markdown",
    ) -> wm.DocumentAdded:
        return await self.send(calls.add_document(name, content, media_type=media_type))

    @doc_of(calls.remove_document)
    async def remove_document(self, name: str) -> None:
        await self.send(calls.remove_document(name))

    @doc_of(calls.search_corpus)
    async def search_corpus(
        self, query: str, *, k: int = 5, floor: float | None = None
    ) -> wm.SearchResult:
        return await self.send(calls.search_corpus(query, k=k, floor=floor))


def _http(core: Core, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    options: dict[str, Any] = {}
    if transport is not None:
        options["transport"] = transport
    return httpx.AsyncClient(
        base_url=core.base_url,
        headers=core.headers,
        timeout=core.timeout,
        trust_env=core.trust_env,
        follow_redirects=False,
        **options,
    )
