"""The hot cache in Redis (issue 11 item 7, issue 13 item 5): one cache shared by
several processes over one canonical store, served only while the store's stamps
agree, so a commit or revocation in any process is seen by all at their next read.

Real parts: a private ``redis-server`` (``memledger.testing.redis``), SQLite files in
``tmp_path``, and a second OS process for the cross-process cases."""

from __future__ import annotations

import importlib
import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from hot_helpers import FAMILY, NOW, digest, event
from memledger import Memory
from memledger.domain.records import (
    Channel,
    ExclusionReason,
    ExtractorInfo,
    ExtractorKind,
    Kind,
    MemoryRecord,
    RecordStatus,
)
from memledger.errors import InvalidInputError
from memledger.read._hot_redis import FORMAT, decode, encode, redis_key
from memledger.read.hot import (
    HotKey,
    HotTier,
    HotValues,
    RedisHotCache,
    hot_key,
    stamp_of,
)
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.redis import redis_server


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def url(server: str) -> str:
    """The module's server, emptied for each test."""
    with redis.Redis.from_url(server) as client:
        client.flushdb()
    return server


def shared(path: Path, url: str, **options: float) -> Memory:
    """A Memory (one service process) over the SQLite file, its hot tier in Redis."""
    hot = HotTier(cache=RedisHotCache(url, **options))  # type: ignore[arg-type]
    return Memory(open_store(path), clock=FrozenClock(NOW), hot=hot)


def values(memory: Memory, *, tenant: str = "acme", subject: str = "u1") -> list[object]:
    found = memory.hot.current(memory.reading, tenant=tenant, subject=subject).values
    return [r.value for r in found.get(FAMILY, ())]


def entry(memory: Memory, url: str, *, tenant: str = "acme", subject: str = "u1") -> HotValues:
    """What Redis holds for the subject, read straight from Redis."""
    key = hot_key(memory.store, tenant, subject)
    with redis.Redis.from_url(url) as client:
        raw = client.get(redis_key(key))
    assert isinstance(raw, bytes), f"no entry at {redis_key(key)!r}"
    return decode(raw, key)


def memory_ids(found: HotValues) -> set[str]:
    return {r.memory_id for records in found.values.values() for r in records}


# -- two processes, one store, one Redis -----------------------------------------------------


def test_two_processes_serve_each_others_values_and_see_each_others_changes(
    tmp_path: Path, url: str
) -> None:
    a, b = shared(tmp_path / "m.db", url), shared(tmp_path / "m.db", url)
    a.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    assert values(a) == ["fridays"] and a.hot.stats.reloads == 1
    assert values(b) == ["fridays"]
    assert (b.hot.stats.hits, b.hot.stats.reloads) == (1, 0)  # A's entry, from Redis

    b.ingest(event(2, "Actually the digest daily."), digest("daily"))  # B corrects
    assert values(a) == ["daily"] and a.hot.stats.reloads == 2  # never "fridays"
    assert entry(a, url).stamp == stamp_of(a.store, "acme", "u1")  # the entry was replaced
    assert values(b) == ["daily"] and b.hot.stats.hits == 2  # A's write-back

    (current,) = a.current("u1", FAMILY, tenant="acme")
    a.revoke(current.memory_id, tenant="acme", reason="asked to forget")  # acknowledged
    assert values(b) == [] and b.hot.stats.reloads == 1  # B's next read: gone
    replaced = entry(b, url)
    assert replaced.stamp == stamp_of(b.store, "acme", "u1") and replaced.values == {}
    assert values(a) == [] and a.hot.stats.hits == 1
    assert a.hot.stats.fallbacks == b.hot.stats.fallbacks == 0
    a.close()
    b.close()


CHILD = textwrap.dedent(
    """
    import sys
    from datetime import datetime

    from memledger import Actor, Claim, Memory, SourceEvent
    from memledger.domain.records import Grant
    from memledger.read.hot import HotTier, RedisHotCache
    from memledger.store import open_store
    from memledger.testing import FrozenClock

    path, url, action, reads, now = sys.argv[1:]
    hot = HotTier(cache=RedisHotCache(url))
    memory = Memory(open_store(path), clock=FrozenClock(datetime.fromisoformat(now)), hot=hot)
    if action == "revoke":
        (current,) = memory.current("u1", "delivery_preference", tenant="acme")
        memory.revoke(current.memory_id, tenant="acme", reason="asked to forget")
    else:
        grants = frozenset({Grant(family="delivery_preference")})
        who = Actor(id="u1", authenticated=True, grants=grants)
        said = SourceEvent(
            tenant="acme", event_id="e2", subject="u1", actor=who, channel="chat",
            occurred_at=datetime.fromisoformat(now), text="Actually the digest daily.",
        )
        claim = Claim(
            family="delivery_preference", kind="preference", statement="Digest delivered daily",
            value="daily", grounding="digest daily",
        )
        memory.ingest(said, [claim])
    if reads == "reads":
        memory.hot.current(memory.reading, tenant="acme", subject="u1")  # writes its entry back
    memory.close()
    """
)


@pytest.mark.parametrize(
    ("action", "reads", "after"),
    [("correct", "quiet", ["daily"]), ("revoke", "reads", []), ("revoke", "quiet", [])],
)
def test_another_os_process_corrects_or_revokes(
    tmp_path: Path, url: str, action: str, reads: str, after: list[object]
) -> None:
    a = shared(tmp_path / "m.db", url)
    a.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    assert values(a) == ["fridays"] and values(a) == ["fridays"]  # warm, then a hit
    (old,) = memory_ids(entry(a, url))
    child = [sys.executable, "-c", CHILD, str(tmp_path / "m.db"), url, action, reads]
    subprocess.run([*child, NOW.isoformat()], check=True, timeout=120)  # acknowledged
    if reads == "quiet":  # Redis still holds A's entry, now stale
        assert memory_ids(entry(a, url)) == {old}
    assert values(a) == after  # A's next read: never the superseded or revoked value
    assert old not in memory_ids(entry(a, url))
    assert entry(a, url).stamp == stamp_of(a.store, "acme", "u1")
    assert a.hot.stats.hits == (2 if reads == "reads" else 1)  # the child's write-back
    a.close()


def test_invalidate_deletes_the_entry_and_every_write_sets_the_ttl(
    tmp_path: Path, url: str
) -> None:
    memory = shared(tmp_path / "m.db", url)
    memory.hot = HotTier(cache=RedisHotCache(url, ttl=timedelta(minutes=5)))
    memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    values(memory)
    key = redis_key(hot_key(memory.store, "acme", "u1"))
    with redis.Redis.from_url(url) as client:
        assert 0 < client.pttl(key) <= 5 * 60 * 1000
        memory.hot.invalidate("acme", "u1")
        assert client.exists(key) == 0
    assert values(memory) == ["fridays"] and memory.hot.stats.reloads == 2
    memory.close()


def test_prepared_results_stay_in_their_process(tmp_path: Path, url: str) -> None:
    a, b = shared(tmp_path / "m.db", url), shared(tmp_path / "m.db", url)
    a.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    a.prepare("When should the digest be delivered?", tenant="acme", subject="u1")
    assert b.hot.prepared(b.reading, tenant="acme", subject="u1") is None
    packet = b.context("When is the digest?", tenant="acme", subject="u1", tier="prepared")
    assert "fridays" in packet.text  # from the shared hot values instead
    a.close()
    b.close()


# -- keys --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("one", "two"),
    [
        (("a:b", "c"), ("a", "b:c")),
        (("a", "b:c"), ("a:b:c", "x")),
        (("a%3Ab", "c"), ("a:b", "c")),
        (("a/b", "c"), ("a", "b/c")),
    ],
)
def test_tenant_and_subject_never_share_a_key(one: tuple[str, str], two: tuple[str, str]) -> None:
    assert redis_key(HotKey("s", *one)) != redis_key(HotKey("s", *two))
    assert redis_key(HotKey("s1", "a", "b")) != redis_key(HotKey("s2", "a", "b"))
    assert redis_key(HotKey("s", "a:b", "c")) == f"memledger:hot:{FORMAT}:s:a%3Ab:c"
    assert redis_key(HotKey("s", "a", "b:c")) == f"memledger:hot:{FORMAT}:s:a:b%3Ac"


def test_look_alike_subjects_with_equal_stamps_keep_their_own_values(
    tmp_path: Path, url: str
) -> None:
    """The stamps of these two are equal (revision 1 of one family): only the key
    keeps them apart."""
    memory = shared(tmp_path / "m.db", url)
    memory.ingest(event(1, "The digest fridays.", tenant="a:b", subject="c"), digest("fridays"))
    memory.ingest(event(1, "The digest daily.", tenant="a", subject="b:c"), digest("daily"))
    assert stamp_of(memory.store, "a:b", "c") == stamp_of(memory.store, "a", "b:c")
    for _ in range(2):
        assert values(memory, tenant="a:b", subject="c") == ["fridays"]
        assert values(memory, tenant="a", subject="b:c") == ["daily"]
    assert memory.hot.stats.hits == 2
    memory.close()


def test_an_entry_planted_under_another_subjects_key_is_never_served(
    tmp_path: Path, url: str
) -> None:
    memory = shared(tmp_path / "m.db", url)
    memory.ingest(event(1, "The digest fridays.", subject="u1"), digest("fridays"))
    memory.ingest(event(2, "The digest daily.", subject="u2"), digest("daily"))
    values(memory, subject="u1")
    u1, u2 = (hot_key(memory.store, "acme", s) for s in ("u1", "u2"))
    with redis.Redis.from_url(url) as client:
        planted = client.get(redis_key(u1))
        assert isinstance(planted, bytes)
        client.set(redis_key(u2), planted.replace(b'"e1"', b'"e2"'))  # u1's, as if u2's
    assert stamp_of(memory.store, "acme", "u1") == stamp_of(memory.store, "acme", "u2")
    assert values(memory, subject="u2") == ["daily"]
    cache = memory.hot.cache
    assert isinstance(cache, RedisHotCache) and cache.unreadable == 1
    assert values(memory, subject="u2") == ["daily"] and memory.hot.stats.hits == 1
    memory.close()


# -- the codec -----------------------------------------------------------------------------------

ids = st.from_regex(r"[A-Za-z0-9._:@/+-]{1,12}", fullmatch=True)
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
times = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
extractors = st.builds(
    ExtractorInfo,
    kind=st.sampled_from(get_args(ExtractorKind)),
    name=ids,
    version=ids,
    model=st.none() | ids,
    prompt_version=st.none() | ids,
)


def records(tenant: str, subject: str, family: str) -> st.SearchStrategy[MemoryRecord]:
    return st.builds(
        MemoryRecord,
        tenant=st.just(tenant),
        memory_id=ids,
        subject=st.just(subject),
        family=st.just(family),
        kind=st.sampled_from(get_args(Kind)),
        proposed_kind=st.sampled_from(get_args(Kind)),
        claim=texts,
        value=json_values,
        scope=ids,
        status=st.sampled_from(get_args(RecordStatus)),
        source_event_id=ids,
        source_actor_id=ids,
        source_channel=st.sampled_from(get_args(Channel)),
        source_identity_authenticated=st.booleans(),
        scope_authorized=st.booleans(),
        claim_faithful_to_source=st.booleans(),
        operational_setting_confirmed=st.booleans(),
        recorded_at=times,
        superseded_at=st.none() | times,
        closed_by=st.none() | ids,
        valid_from=times,
        valid_until=st.none() | times,
        revision=st.integers(0, 2**53),
        generation=st.integers(0, 2**53),
        confidence=finite,
        grounding=st.none() | texts,
        extractor=extractors,
        supersedes=st.none() | ids,
        exclusion=st.none() | st.sampled_from(get_args(ExclusionReason)),
        mentions=st.integers(1, 2**40),
        trust=finite,
    )


@st.composite
def hot_values(draw: st.DrawFn, tenant: str, subject: str) -> HotValues:
    families = draw(st.lists(ids, max_size=3, unique=True))
    return HotValues(
        stamp=tuple(
            (f, draw(st.integers(0, 2**53)), draw(st.integers(0, 2**53))) for f in families
        ),
        values={
            f: tuple(draw(st.lists(records(tenant, subject, f), max_size=3))) for f in families
        },
        holds_from=draw(st.none() | times),
        holds_until=draw(st.none() | times),
    )


@given(tenant=ids, subject=ids, data=st.data())
def test_the_codec_round_trips_hot_values_exactly(
    tenant: str, subject: str, data: st.DataObject
) -> None:
    found = data.draw(hot_values(tenant, subject))
    key = HotKey("store", tenant, subject)
    text = encode(found)
    assert text.isascii()
    back = decode(text, key)
    assert back == found
    assert [list(v) for v in back.values.values()] == [list(v) for v in found.values.values()]
    assert decode(text.encode(), key) == found
    if any(found.values.values()):  # records of another subject are refused
        with pytest.raises(ValueError, match="another"):
            decode(text, HotKey("store", tenant, subject + "x"))


def test_the_codec_refuses_what_it_did_not_write(tmp_path: Path, url: str) -> None:
    memory = shared(tmp_path / "m.db", url)
    memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    values(memory)
    key = hot_key(memory.store, "acme", "u1")
    good = json.loads(encode(entry(memory, url)))
    older = json.loads(encode(entry(memory, url)))
    del older["values"][FAMILY][0]["trust"]  # a version before records had a trust
    bad_entries: list[str | bytes] = [
        b"\x80 not text",
        "not json",
        "[]",
        json.dumps({**good, "format": FORMAT + 1}),
        json.dumps(older),
        json.dumps({**good, "stamp": [[FAMILY, 1]]}),
        json.dumps({**good, "stamp": [[FAMILY, 1.0, 0]]}),
        json.dumps({**good, "stamp": [[FAMILY, "1", 0]]}),
    ]
    for bad in bad_entries:
        with pytest.raises(ValueError):
            decode(bad, key)
    with redis.Redis.from_url(url) as client:  # an old entry reads as a miss, rewritten
        client.set(redis_key(key), json.dumps(older))
    assert values(memory) == ["fridays"]
    assert memory.hot.stats.reloads == 2 and entry(memory, url) == decode(json.dumps(good), key)
    memory.close()


# -- Redis gone or slow ------------------------------------------------------------------------


def test_a_redis_stopped_mid_run_never_fails_or_falsifies_a_read(tmp_path: Path) -> None:
    with redis_server() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        a = shared(tmp_path / "m.db", url, retry_after=0.0)
        b = shared(tmp_path / "m.db", url, retry_after=0.0)
        a.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
        assert values(a) == ["fridays"] and values(b) == ["fridays"]
        assert b.hot.stats.hits == 1
    # Redis is gone: every read goes to the store, none fails
    started = time.monotonic()
    assert values(b) == ["fridays"]
    (current,) = a.current("u1", FAMILY, tenant="acme")
    a.revoke(current.memory_id, tenant="acme", reason="asked to forget")
    a.hot.invalidate("acme", "u1")  # no exception either
    assert values(b) == [] and values(a) == []
    assert time.monotonic() - started < 5
    assert (b.hot.stats.fallbacks, b.hot.stats.reloads, b.hot.stats.hits) == (2, 2, 1)
    assert a.hot.stats.fallbacks == 1 and a.hot.stats.cache_errors == 2  # + the delete
    with redis_server(port=port):  # back, and empty: entries come back on reads
        assert values(a) == [] and values(b) == []
        assert b.hot.stats.hits == 2 and b.hot.stats.fallbacks == 2
    a.close()
    b.close()


def test_a_redis_that_does_not_answer_costs_one_timeout_then_is_skipped(
    tmp_path: Path,
) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        memory = shared(tmp_path / "m.db", url, timeout=0.5, retry_after=60.0)
        memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
        started = time.monotonic()
        assert values(memory) == ["fridays"]
        first = time.monotonic() - started
        started = time.monotonic()
        assert values(memory) == ["fridays"]
        second = time.monotonic() - started
    assert 0.5 <= first < 1.4  # waited for the timeout once, and did not retry
    assert second < 0.25  # then did not ask Redis at all
    assert memory.hot.stats.fallbacks == 2 and memory.hot.stats.reloads == 2
    memory.close()


# -- building it -------------------------------------------------------------------------------


def test_building_the_cache(url: str) -> None:
    with redis.Redis.from_url(url) as client:
        given_client = RedisHotCache(client, prefix="other")
        assert given_client.client is client
        given_client.close()
        assert client.ping()  # a client passed in is not ours to close
        with pytest.raises(InvalidInputError, match="timeout applies"):
            RedisHotCache(client, timeout=1.0)
    for wrong in [
        {"prefix": ""},
        {"prefix": "a\nb"},
        {"ttl": timedelta(0)},
        {"ttl": 60},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"retry_after": -1},
    ]:
        with pytest.raises(InvalidInputError):
            RedisHotCache(url, **wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="redis URL"):
        RedisHotCache(6379)  # type: ignore[arg-type]
    quick = RedisHotCache("redis://127.0.0.1:1/0")  # nothing touches the network yet
    settings = quick.client.connection_pool.connection_kwargs
    assert settings["socket_timeout"] == settings["socket_connect_timeout"] == 0.05
    quick.close()


def test_without_redis_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.delitem(sys.modules, "memledger.read._hot_redis")
    with pytest.raises(ImportError, match=r"pip install 'memledger\[redis\]'"):
        importlib.import_module("memledger.read._hot_redis")
    hot = importlib.import_module("memledger.read.hot")
    with pytest.raises(ImportError, match=r"pip install 'memledger\[redis\]'"):
        hot.RedisHotCache  # noqa: B018
