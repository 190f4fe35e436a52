"""memledger.client against a real server (uvicorn in a thread over SQLite): the seed 000
story through :class:`Client` only, read-your-corrections with the token the client keeps,
the library's errors for the API's problems, :class:`AsyncClient`, transport failures."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import socket
import subprocess
import sys
import threading
import typing
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

import memledger.client
from memledger import Memory
from memledger.client import AsyncClient, Client, ConsistencyToken, problem_of
from memledger.client import _calls as calls
from memledger.errors import (
    AuthenticationError,
    ConflictError,
    EventConflictError,
    InvalidInputError,
    MemoryNotFoundError,
    NotFoundError,
    PermissionDeniedError,
    RevisionNotMetError,
    StoreError,
    UnknownFamilyError,
)
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.serve import ServeConfig, build_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.scenarios import (
    FAMILY,
    SEED_000_WINDOWS,
    SUBJECT,
    TENANT,
    day,
    event,
    pref,
    seed_000,
)
from memledger.wire_models import CONSISTENCY_HEADER, Receipt, Record, SubjectPage


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 1))


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "memledger.index", embedder=HashingEmbedder())
    with Memory.open(tmp_path / "memledger.db", clock=clock, index=index) as opened:
        yield opened


@pytest.fixture
def base_url(memory: Memory, no_proxies: None) -> Iterator[str]:
    with serve(build_app(memory, ServeConfig(mcp=False, web=False))) as url:
        yield url


@dataclass(frozen=True, slots=True)
class Keys:
    admin: str
    writer: str
    """``user-42``, granted ``delivery_preference``."""
    ungranted: str
    reader: str
    service: str
    """``account-service``, a service granted every family."""


@pytest.fixture
def keys(memory: Memory) -> Keys:
    def key(actor: str, **options: object) -> str:
        return memory.create_key(TENANT, actor, **options)[1]  # type: ignore[arg-type]

    return Keys(
        admin=key("admin-1", role="admin"),
        writer=key(SUBJECT, grants=[FAMILY]),
        ungranted=key(SUBJECT),
        reader=key("auditor", role="read"),
        service=key("account-service", principal="service", grants=["*"]),
    )


@pytest.fixture
def client(base_url: str, keys: Keys) -> Iterator[Client]:
    with Client(base_url, keys.writer) as made:
        yield made


def story(client: Client, clock: FrozenClock) -> tuple[Receipt, Receipt]:
    """Seed 000: Oct 2, Fridays; Oct 19, daily through October and Friday from Nov 1."""
    receipts: list[Receipt] = []
    for told in seed_000():
        clock.set(told.at)
        receipts.append(client.ingest(told.event, told.claims))
    first, second = receipts
    return first, second


def values(records: list[object]) -> list[object]:
    return [r.value for r in records]  # type: ignore[attr-defined]


# -- the story ------------------------------------------------------------------------------------


def test_the_seed_story_through_the_client(client: Client, clock: FrozenClock) -> None:
    first, second = story(client, clock)
    assert first.outcome == "committed" and not first.duplicate
    assert [r.disposition for r in second.results] == ["current", "current"]

    def at(**when: object) -> list[object]:
        return values(client.current(SUBJECT, FAMILY, **when))  # type: ignore[arg-type]

    assert at(valid_at=day(10, 28)) == ["daily"]
    assert at(valid_at=day(11, 1, 0)) == ["friday"]
    assert at(valid_at=day(10, 5)) == ["friday"]
    assert at(valid_at=day(10, 1)) == []
    timeline = client.timeline(SUBJECT, FAMILY)
    assert [(r.value, r.valid_from, r.valid_until) for r in timeline] == [*SEED_000_WINDOWS]
    assert all(r.claim_faithful_to_source for r in timeline)
    assert not any(r.operational_setting_confirmed for r in timeline)  # chat is no setting
    # record time: what memledger believed before the Oct 19 correction
    before = day(10, 19) - timedelta(microseconds=1)
    (old,) = client.current(SUBJECT, FAMILY, valid_at=day(10, 28), as_of=before)
    assert (old.value, old.source_event_id) == ("friday", "evt-oct02")
    assert values(client.timeline(SUBJECT, FAMILY, as_of=before)) == ["friday"]  # type: ignore[arg-type]
    history = client.history(SUBJECT, FAMILY)
    closed = [r for r in history if r.status == "superseded"]
    assert [(r.value, r.valid_until, r.superseded_at) for r in closed] == [
        ("friday", None, day(10, 19))
    ]
    assert [c.action for c in client.changes(SUBJECT, FAMILY)] == [
        "recorded",
        "closed",
        "recorded",
        "recorded",
        "recorded",
    ]
    assert {r.family for r in client.records(SUBJECT, valid_at=day(10, 28))} == {FAMILY}
    (slot,) = client.families(SUBJECT)
    assert (slot.family, slot.revision) == (FAMILY, second.revisions[0].revision)
    assert client.get(old.memory_id).memory_id == old.memory_id
    assert client.event("evt-oct19").receipt == second.model_copy(update={"duplicate": False})
    assert [s.subject for s in client.subjects().subjects] == [SUBJECT]
    assert client.me().actor == SUBJECT
    # a context packet within its budget, stored as a trace that replays
    packet = client.context("When does my digest come?", subject=SUBJECT, budget=400)
    assert packet.tokens <= 400 and "daily" in [i.fields.get("value") for i in packet.items]
    (summary,) = client.traces(subject=SUBJECT)
    assert summary.trace_id == packet.trace_id
    assert client.trace(packet.trace_id).rendered_sha256 == packet.sha256
    assert client.replay(packet.trace_id).matches


def test_a_late_retry_is_a_duplicate_and_a_redelivery_historical(
    client: Client, clock: FrozenClock
) -> None:
    story(client, clock)
    clock.set(day(10, 28))
    (oct02, _) = seed_000()
    again = client.ingest(oct02.event, oct02.claims)
    assert again.duplicate and again.outcome == "committed"
    late = client.ingest(replace(oct02.event, event_id="evt-oct02-redelivered"), [pref("friday")])
    assert [(r.disposition, r.reason) for r in late.results] == [("historical", "older_sequence")]
    assert values(client.current(SUBJECT, FAMILY, valid_at=day(10, 28))) == ["daily"]  # type: ignore[arg-type]
    # the same id with other content is the library's EventConflictError
    with pytest.raises(EventConflictError):
        client.ingest(event("evt-oct02", "Mondays", occurred_at=day(10, 2, 9)), [pref("monday")])


def test_an_actor_without_the_grant_gets_observations(
    base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    with Client(base_url, keys.ungranted) as ungranted:
        for receipt in story(ungranted, clock):
            assert {(r.disposition, r.reason) for r in receipt.results} == {
                ("observation", "no_grant")
            }
        assert ungranted.current(SUBJECT, FAMILY, valid_at=day(10, 28)) == []
        history = ungranted.history(SUBJECT, FAMILY)
        assert {(r.kind, r.exclusion) for r in history} == {("observation", "no_grant")}


def test_revoke_forget_and_the_review_queue(
    client: Client, base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    story(client, clock)
    clock.set(day(10, 28))
    (daily,) = client.current(SUBJECT, FAMILY, valid_at=day(10, 28))
    revoked = client.revoke(daily.memory_id, reason="wrong")
    assert daily.memory_id in revoked.revoked and revoked.reason == "wrong"
    assert values(client.current(SUBJECT, FAMILY, valid_at=day(10, 28))) != ["daily"]  # type: ignore[arg-type]
    assert client.get(daily.memory_id).status == "revoked"
    forgotten = client.forget("evt-oct02", reason="asked to")
    assert forgotten.event_id == "evt-oct02" and forgotten.revocations
    # queued extraction, run on request
    queued = client.ingest(
        event("evt-q", "Please deliver my digest on Mondays.", occurred_at=day(10, 28, 9))
    )
    assert queued.outcome == "queued"
    assert [j.event_id for j in client.jobs()] == ["evt-q"]
    assert client.process(max_jobs=5).jobs == 1
    # equal precedence without order goes to review; an admin decides
    setting = {"channel": "account_service", "subject": "user-50"}
    with Client(base_url, keys.service) as service, Client(base_url, keys.admin) as admin:
        first, held = service.ingest_batch(
            [
                (event("a", "Fridays", occurred_at=day(10, 3), **setting), [pref("friday")]),  # type: ignore[arg-type]
                (event("b", "Mondays", occurred_at=day(10, 3), **setting), [pref("monday")]),  # type: ignore[arg-type]
            ]
        )
        assert (first.outcome, held.outcome) == ("committed", "review")
        (item,) = admin.reviews()
        assert item.review_id == held.review_id
        with pytest.raises(PermissionDeniedError):
            client.accept(item.review_id, reason="mine")
        done = admin.accept(item.review_id, reason="the newer instruction")
        assert (done.review.resolved_by, done.receipt and done.receipt.outcome) == (
            "admin-1",
            "committed",
        )
        assert values(admin.current("user-50", FAMILY, valid_at=day(10, 4))) == ["monday"]  # type: ignore[arg-type]
        with pytest.raises(ConflictError):
            admin.reject(item.review_id, reason="no")
        assert len(admin.reviews(include_resolved=True)) == 1
        assert admin.set_retention("episode", 30) == {"episode": 30} == admin.retention()
        assert admin.set_retention("episode", None) == {}
        erased = admin.erase(event="evt-q", reason="asked to")
        assert erased.events == ["evt-q"] and erased.complete
        assert [e.erasure_id for e in admin.erasures()] == [erased.erasure_id]
        made = admin.create_key("bot-1", principal="agent", role="read", reads=["agent:planner"])
        assert made.key.actor == "bot-1" and made.token.startswith("mlk_")
        assert made.key.reads == ["agent:planner"]
        assert {k.actor for k in admin.keys()} >= {"admin-1", "bot-1"}  # noqa: SIM118
        assert admin.revoke_key(made.key.key_id).revoked_at is not None


# -- consistency ----------------------------------------------------------------------------------


class Recording(httpx.BaseTransport):
    """The real network transport, recording each request's consistency header."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[tuple[str, str | None]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.url.path, request.headers.get(CONSISTENCY_HEADER)))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_reads_carry_the_token_of_the_writes_the_client_saw(
    base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    recording = Recording()
    with Client(base_url, keys.writer, transport=recording) as client:
        assert not client.consistency
        first, second = story(client, clock)
        revision = second.revisions[0].revision
        assert client.consistency.floor(SUBJECT, FAMILY) == revision > first.revisions[0].revision
        client.current(SUBJECT, FAMILY)
        client.recall("digest", subject=SUBJECT)
        client.current("user-43", FAMILY)  # no floor of its own concerns it
        sent = recording.sent[-3:]
        assert sent[0][1] == sent[1][1] == f"{SUBJECT}/{FAMILY}@{revision}"
        assert sent[2][1] is None
        # a revocation raises the floor; the next read is held to it
        (daily,) = client.current(SUBJECT, FAMILY, valid_at=day(10, 28))
        done = client.revoke(daily.memory_id, reason="corrected")
        assert client.consistency.floor(SUBJECT, FAMILY) == done.revision > revision
        assert "daily" not in values(client.current(SUBJECT, FAMILY, valid_at=day(10, 28)))  # type: ignore[arg-type]
        assert recording.sent[-1][1] == f"{SUBJECT}/{FAMILY}@{done.revision}"


def test_a_token_the_server_has_not_reached_is_refused_not_answered_stale(
    client: Client, clock: FrozenClock
) -> None:
    story(client, clock)
    ahead = ConsistencyToken({(SUBJECT, FAMILY): 99})
    with pytest.raises(RevisionNotMetError) as raised:
        client.current(SUBJECT, FAMILY, consistency=ahead)
    problem = problem_of(raised.value)
    assert problem is not None and (problem.status, problem.code) == (409, "revision_not_met")
    assert any("Retry-After: 1" in note for note in raised.value.__notes__)
    # the client's own token, set ahead, is sent automatically, by every read of the subject
    client.consistency = ahead
    for read in (
        lambda: client.timeline(SUBJECT, FAMILY),
        lambda: client.history(SUBJECT, FAMILY),
        lambda: client.records(SUBJECT),
        lambda: client.recall("digest", subject=SUBJECT),
        lambda: client.recall("digest"),  # across the tenant: every floor
        lambda: client.context("When is my digest?", subject=SUBJECT),
    ):
        with pytest.raises(RevisionNotMetError):
            read()
    # ... and overridden per call: an empty token sends none, a string is parsed
    assert values(client.current(SUBJECT, FAMILY, consistency=ConsistencyToken({})))  # type: ignore[arg-type]
    assert client.current(SUBJECT, FAMILY, consistency=f"{SUBJECT}/{FAMILY}@1")
    client.consistency = None
    assert client.current(SUBJECT, FAMILY)


# -- errors ----------------------------------------------------------------------------------------


def test_problems_raise_the_library_errors(base_url: str, keys: Keys, client: Client) -> None:
    with pytest.raises(MemoryNotFoundError) as missing:
        client.get("mem-0000")
    assert isinstance(missing.value, LookupError)
    problem = problem_of(missing.value)
    assert problem is not None and (problem.status, problem.code) == (404, "memory_not_found")
    assert str(missing.value) == problem.detail
    assert missing.value.problem is problem  # type: ignore[attr-defined]
    with Client(base_url, "mlk_000000000000.nope") as stranger, pytest.raises(AuthenticationError):
        stranger.me()
    with Client(base_url, keys.reader) as reader, pytest.raises(PermissionDeniedError) as denied:
        reader.ingest(event("evt-r", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    assert "read-only" in str(denied.value)
    with pytest.raises(UnknownFamilyError):
        client.current(SUBJECT, "no_such_family")
    with pytest.raises(InvalidInputError):  # the route's own schema: invalid_request, 422
        client.recall("x", k=10_000)
    with pytest.raises(NotFoundError):  # a route that does not exist: no_route, 404
        client.send(calls.Call(method="GET", path="/v1/nowhere", read=calls.get("x").read))
    with pytest.raises(InvalidInputError):  # refused before sending: not JSON
        client.ingest({"event_id": "x", "metadata": {"when": object()}})


def test_an_error_answer_that_is_no_problem_still_raises_by_status() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>Bad gateway</html>")

    with Client("http://memledger.test", "k", transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(StoreError, match="502") as raised:
            client.me()
        assert problem_of(raised.value) is None


def test_a_stopped_server_is_a_store_error(memory: Memory, keys: Keys) -> None:
    with serve(build_app(memory, ServeConfig(mcp=False, web=False))) as url:
        client = Client(url, keys.writer)
        assert client.ready() and client.me().actor == SUBJECT
    with client:  # the server is stopped: nothing listens on its port any more
        assert not client.ready()
        with pytest.raises(StoreError, match=r"GET /v1/me to http://127\.0\.0\.1") as raised:
            client.me()
        assert isinstance(raised.value.__cause__, httpx.TransportError)
        assert problem_of(raised.value) is None


def test_a_service_that_does_not_answer_times_out_as_a_store_error(keys: Keys) -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        with (
            Client(url, keys.writer, timeout=0.2) as client,
            pytest.raises(StoreError, match=r"timed out.*ingesting the same event"),
        ):
            client.ingest(event("evt-t", "Fridays", occurred_at=day(10, 2)), [pref("friday")])


# -- the async client ------------------------------------------------------------------------------


def test_the_async_client_tells_the_same_story(
    base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    async def main() -> None:
        async with AsyncClient(base_url, keys.writer) as client:
            assert await client.ready()
            clock.set(day(10, 2))
            receipt = await client.ingest(
                event("evt-a", "Deliver my digest on Fridays.", occurred_at=day(10, 2, 9)),
                [pref("friday", grounding="on Fridays")],
            )
            assert client.consistency.floor(SUBJECT, FAMILY) == receipt.revisions[0].revision
            found = await asyncio.gather(
                client.current(SUBJECT, FAMILY), client.recall("digest", subject=SUBJECT)
            )
            assert values(found[0]) == ["friday"]  # type: ignore[arg-type]
            assert found[1].items[0].record.value == "friday"
            with pytest.raises(MemoryNotFoundError):
                await client.get("mem-0000")
            with pytest.raises(RevisionNotMetError):
                await client.current(SUBJECT, FAMILY, consistency=f"{SUBJECT}/{FAMILY}@9")
        with socket.socket() as bound:  # a free port, released: nothing listens on it
            bound.bind(("127.0.0.1", 0))
            dead = f"http://127.0.0.1:{bound.getsockname()[1]}"
        async with AsyncClient(dead, keys.writer) as unreachable:
            assert not await unreachable.ready()
            with pytest.raises(StoreError):
                await unreachable.me()

    asyncio.run(main())


def test_old_sessions_compact_through_both_clients(
    memory: Memory, base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    from memledger.testing.conformance._compaction import _session

    clock.set(day(10, 1))
    _session(memory)
    before = day(9, 1)

    async def dry() -> object:
        async with AsyncClient(base_url, keys.admin) as client:
            return await client.compact(before=before, dry_run=True)

    planned = asyncio.run(dry())
    assert [s.session for s in planned.sessions] == ["march"]  # type: ignore[attr-defined]
    with Client(base_url, keys.admin) as client:
        done = client.compact(before=before, max_tokens=80, reason="monthly upkeep")
        (session,) = done.sessions
        assert session.summary is not None and len(session.covers) == 3
        assert client.get(session.summary).value["summary_of"] == "march"  # type: ignore[index]
        undone = client.undo(done.change_id or "")
        assert undone.closed == [session.summary]
    with Client(base_url, keys.writer) as writer, pytest.raises(PermissionDeniedError):
        writer.compact(before=before)


def test_a_rollback_re_derives_with_the_services_extractor(
    memory: Memory, base_url: str, keys: Keys, clock: FrozenClock
) -> None:
    """``rederive`` extracts the rolled-back events again with the service's extractor
    (here the offline rules, as ``POST /v1/process`` would)."""
    from memledger.testing.conformance._undo import _extract
    from memledger.testing.scenarios import actor

    clock.set(day(5, 2))
    said = event("evt-move", "I moved to Paris last month.", occurred_at=day(5, 1), who=actor("*"))
    memory.ingest(said)
    memory.process(
        extractor=_extract("Paris last", name="bad", version="7"),
        tenant=TENANT,
    )
    with Client(base_url, keys.admin) as client:
        rolled = client.rollback("bad@7", rederive=True, reason="bad prompt")
        assert rolled.events == ["evt-move"] and rolled.rederived
        (city,) = client.current(SUBJECT, "home_city")
        assert city.value == "Paris" and city.extractor.name == "rules"


def test_the_clients_share_one_core_and_thread_safely(base_url: str, keys: Keys) -> None:
    with Client(base_url, keys.writer) as client:
        errors: list[BaseException] = []

        def write(n: int) -> None:
            try:
                client.ingest(
                    event(f"evt-{n}", f"Fridays {n}", occurred_at=day(10, 2), subject=f"user-{n}"),
                    [pref("friday")],
                )
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert {s for s, _ in client.consistency.floors} == {f"user-{n}" for n in range(8)}


# -- the surface -----------------------------------------------------------------------------------


def test_all_is_sorted_and_complete() -> None:
    assert memledger.client.__all__ == sorted(memledger.client.__all__)
    for name in memledger.client.__all__:
        assert getattr(memledger.client, name) is not None, name


def _public(cls: type) -> dict[str, inspect.Signature]:
    """The public methods of ``cls``, its inherited ones included."""
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_the_async_client_has_the_sync_clients_methods_awaited() -> None:
    sync, other = _public(Client), _public(AsyncClient)
    assert set(sync) - {"close"} == set(other) - {"aclose"}
    for name, signature in sync.items():
        if name == "close":
            continue
        assert other[name] == signature, name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)), name
        assert not inspect.iscoroutinefunction(getattr(Client, name)), name
        method = getattr(calls, name, None)
        if method is not None:  # the signature and the docstring are written once, on the call
            assert getattr(Client, name).__doc__ == method.__doc__ is not None, name
            assert getattr(AsyncClient, name).__doc__ == method.__doc__, name
            assert [*signature.parameters.values()][1:] == [
                *inspect.signature(method).parameters.values()
            ], name


def test_every_call_is_a_method_of_both_clients() -> None:
    routes = {name for name in calls.__all__ if name.islower()} - {"event_body"}
    assert routes <= set(_public(Client)) & set(_public(AsyncClient))
    for cls in (Client, AsyncClient):
        assert "ingest" in vars(cls) and inspect.isfunction(vars(cls)["ingest"])


def test_help_shows_a_methods_own_signature_and_answer() -> None:
    shown = "(self, event: 'EventInput', claims: 'Sequence[ClaimInput] | None' = None, *, "
    shown += "complete: 'bool' = True) -> 'wm.Receipt'"
    assert f"ingest{shown}" in pydoc.render_doc(Client.ingest, renderer=pydoc.plaintext)
    assert f"async ingest{shown}" in pydoc.render_doc(AsyncClient.ingest, renderer=pydoc.plaintext)
    assert str(inspect.signature(AsyncClient.ready)) == "(self) -> 'bool'"
    assert typing.get_type_hints(Client.subjects)["return"] is SubjectPage
    assert typing.get_type_hints(AsyncClient.current)["return"] == list[Record]
    assert Client.ingest.__qualname__ == "Client.ingest"
    assert AsyncClient.ingest.__module__ == AsyncClient.__module__


def test_importing_the_client_without_httpx_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "try:\n    import memledger.client\n"
        "except ImportError as e:\n    print(e)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'memledger[client]'" in found.stdout, found
