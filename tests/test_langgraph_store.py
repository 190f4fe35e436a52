"""MemledgerStore, the LangGraph long-term store backed by memledger, against a real
server (``memledger serve``'s app under uvicorn in a thread): a LangGraph graph's store
round trip with the one line changed, namespace isolation, delete as revocation, batch
and abatch, and what the store refuses rather than ignores."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from memledger import Memory
from memledger.client import AsyncClient, Client
from memledger.errors import (
    ConflictError,
    InvalidInputError,
    InvalidQueryError,
    PermissionDeniedError,
    UnknownFamilyError,
)
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.integrations.langgraph import (
    FAMILY,
    MemledgerStore,
    item_family,
    key_of,
    namespace_of,
    scope_of,
    subject_of,
)
from memledger.serve import ServeConfig, build_app
from memledger.testing.http import serve

TENANT = "acme"
ALICE = ("memories", "alice")
BOB = ("memories", "bob")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "memledger.index", embedder=HashingEmbedder())
    with Memory.open(tmp_path / "memledger.db", index=index) as opened:
        yield opened


@pytest.fixture
def base_url(memory: Memory, no_proxies: None) -> Iterator[str]:
    """``memledger serve``'s app (API, MCP endpoint, web page) under a real server."""
    with serve(build_app(memory, ServeConfig())) as url:
        yield url


@dataclass(frozen=True, slots=True)
class Keys:
    admin: str
    agent: str
    """An agent's key granted the store's family."""
    ungranted: str
    reader: str


@pytest.fixture
def keys(memory: Memory, base_url: str) -> Keys:
    admin = memory.create_key(TENANT, "admin-1", role="admin")[1]
    with Client(base_url, admin) as client:  # once per tenant, with an admin key
        assert client.register_family(item_family()).name == FAMILY
    return Keys(
        admin=admin,
        agent=memory.create_key(TENANT, "agent-7", principal="agent", grants=[FAMILY])[1],
        ungranted=memory.create_key(TENANT, "agent-8", principal="agent")[1],
        reader=memory.create_key(TENANT, "auditor", role="read")[1],
    )


@pytest.fixture
def store(base_url: str, keys: Keys) -> Iterator[MemledgerStore]:
    with MemledgerStore(base_url, api_key=keys.agent) as made:
        yield made


# -- a LangGraph graph, with the one line changed --------------------------------------------------


class State(TypedDict, total=False):
    user: str
    found: list[str]
    after_delete: list[str]
    food: dict[str, Any] | None


def remember(state: State, *, store: BaseStore) -> State:
    namespace = ("memories", state["user"])
    store.put(namespace, "food", {"text": "loves spicy ramen", "kind": "preference"})
    store.put(namespace, "city", {"text": "lives in Lisbon", "kind": "fact"})
    store.put(namespace, "pet", {"text": "has a cat called Miso", "kind": "fact"})
    return {}


def recall(state: State, *, store: BaseStore) -> State:
    namespace = ("memories", state["user"])
    hits = store.search(namespace, query="what food does the user love? ramen")
    return {"found": [h.key for h in hits], "food": store.get(namespace, "food").value}  # type: ignore[union-attr]


def forget(state: State, *, store: BaseStore) -> State:
    namespace = ("memories", state["user"])
    store.delete(namespace, "food")
    return {"after_delete": sorted(i.key for i in store.search(namespace))}


def agent(store: BaseStore) -> Callable[[State], Any]:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_node("forget", forget)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", "forget")
    builder.add_edge("forget", END)
    return builder.compile(store=store).invoke


def test_a_langgraph_agent_round_trip_with_one_line_changed(base_url: str, keys: Keys) -> None:
    reference = agent(InMemoryStore())({"user": "alice"})
    store = MemledgerStore(base_url, api_key=keys.agent)  # was: store = InMemoryStore()
    out = agent(store)({"user": "alice"})
    assert out["food"] == reference["food"] == {"text": "loves spicy ramen", "kind": "preference"}
    assert out["found"][0] == "food"  # recall ranks it first; InMemoryStore does not rank
    assert set(out["found"]) <= set(reference["found"])
    assert out["after_delete"] == reference["after_delete"] == ["city", "pet"]
    # each put is an event of the ledger, each item a record of the agent's own writing
    (slot,) = store.client.families("memories/alice")
    assert slot.family == FAMILY and slot.generation == 1  # one revocation: the delete
    records = store.client.timeline("memories/alice", FAMILY)
    assert {(r.scope, r.source_actor_id, r.authorised) for r in records} == {
        ("key:city", "agent-7", True),
        ("key:pet", "agent-7", True),
    }
    store.close()


def test_the_async_graph_round_trip(base_url: str, keys: Keys) -> None:
    async def main() -> dict[str, Any]:
        async with AsyncClient(base_url, keys.agent) as client:
            store = MemledgerStore(client)
            await store.aput(ALICE, "food", {"text": "loves spicy ramen"})
            await store.aput(BOB, "food", {"text": "avoids spice"})
            hits = await store.asearch(ALICE, query="ramen")
            got = await store.aget(ALICE, "food")
            await store.adelete(ALICE, "food")
            gone = await store.aget(ALICE, "food")
            await store.aclose()
            return {"hits": hits, "got": got, "gone": gone}

    found = asyncio.run(main())
    assert [(h.namespace, h.key) for h in found["hits"]] == [(ALICE, "food")]
    assert found["hits"][0].score is not None
    assert found["got"].value == {"text": "loves spicy ramen"}
    assert found["gone"] is None


# -- the mapping ---------------------------------------------------------------------------------


def test_namespaces_are_isolated(store: MemledgerStore) -> None:
    store.put(ALICE, "profile", {"text": "vegetarian, loves mushrooms"})
    store.put(BOB, "profile", {"text": "eats everything, loves mushrooms"})
    store.put(("memories", "alice", "work"), "desk", {"text": "desk by the window"})
    assert store.get(ALICE, "profile").value["text"].startswith("vegetarian")  # type: ignore[union-attr]
    assert store.get(BOB, "profile").value["text"].startswith("eats")  # type: ignore[union-attr]
    for who in (ALICE, BOB):  # another namespace's item is never found
        found = store.search(who, query="mushrooms")
        assert found[0].namespace == who and found[0].key == "profile"
        assert {i.namespace for i in found} <= {who, ("memories", "alice", "work")}
    assert [i.namespace for i in store.search(BOB)] == [BOB]
    # a namespace prefix: the namespace and those under it, as in InMemoryStore
    assert {i.namespace for i in store.search(ALICE)} == {ALICE, ("memories", "alice", "work")}
    ranked = store.search(("memories",), query="mushrooms")
    assert {i.namespace for i in ranked[:2]} == {ALICE, BOB}
    nearest = store.search(ALICE, query="desk window")  # ranked: the nearest first
    assert (nearest[0].namespace, nearest[0].key) == (("memories", "alice", "work"), "desk")
    assert store.search(("memories", "carol"), query="mushrooms") == []
    assert store.list_namespaces() == [ALICE, ("memories", "alice", "work"), BOB]
    assert store.list_namespaces(prefix=("memories", "alice")) == [
        ALICE,
        ("memories", "alice", "work"),
    ]
    assert store.list_namespaces(suffix=("bob",)) == [BOB]
    assert store.list_namespaces(max_depth=1) == [("memories",)]
    assert store.list_namespaces(prefix=("memories", "*"), limit=1, offset=1) == [
        ("memories", "alice", "work")
    ]


def test_a_later_put_closes_the_earlier_window(store: MemledgerStore) -> None:
    store.put(ALICE, "note", {"text": "I like pizza."})
    first = store.get(ALICE, "note")
    store.put(ALICE, "note", {"text": "I like pizza!"})  # reads alike: still a new value
    store.put(ALICE, "note", {"text": "I like pizza!"})  # the same value: a repeat, no window
    second = store.get(ALICE, "note")
    assert first is not None and second is not None
    assert second.value == {"text": "I like pizza!"}
    assert second.created_at == first.created_at < second.updated_at
    store.put(ALICE, "note", {"text": "I like pizza."})  # back to the first value: set again
    assert store.get(ALICE, "note").value == {"text": "I like pizza."}  # type: ignore[union-attr]
    windows = store.client.timeline("memories/alice", FAMILY, scope=scope_of("note"))
    assert [(w.value, w.valid_until is None) for w in windows] == [
        ({"text": "I like pizza."}, False),
        ({"text": "I like pizza!"}, False),
        ({"text": "I like pizza."}, True),
    ]
    # other keys holding the same value are other items (no folding across keys)
    store.put(ALICE, "copy", {"text": "I like pizza."})
    assert {i.key for i in store.search(ALICE)} == {"note", "copy"}


def test_a_put_that_arrives_after_a_later_one_is_kept_as_history(
    store: MemledgerStore, base_url: str, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    late = MemledgerStore(base_url, api_key=keys.agent)  # another process, its clock behind
    monkeypatch.setattr(late._stamps, "next", lambda: datetime(2020, 1, 1, tzinfo=UTC))
    store.put(ALICE, "food", {"text": "ramen"})
    with pytest.raises(ConflictError, match=r"historical: older_sequence"):
        late.put(ALICE, "food", {"text": "udon"})
    assert store.get(ALICE, "food").value == {"text": "ramen"}  # type: ignore[union-attr]
    late.put(ALICE, "drink", {"text": "tea"})  # nothing newer in its own key: it is set
    assert store.get(ALICE, "drink").value == {"text": "tea"}  # type: ignore[union-attr]
    history = store.client.history("memories/alice", FAMILY)
    assert [(r.value, r.status) for r in history if r.scope == "key:food"] == [
        ({"text": "ramen"}, "active"),
        ({"text": "udon"}, "historical"),
    ]
    late.close()


def test_delete_is_a_revocation(store: MemledgerStore, base_url: str, keys: Keys) -> None:
    store.put(ALICE, "food", {"text": "loves udon"})
    store.put(ALICE, "food", {"text": "loves spicy ramen"})
    store.put(ALICE, "city", {"text": "lives in Lisbon"})
    (record,) = store.client.current("memories/alice", FAMILY, scope="key:food")
    event = store.client.event(record.source_event_id).event
    store.delete(ALICE, "food")
    store.delete(ALICE, "never-there")  # a missing key: nothing to do, as InMemoryStore
    assert store.get(ALICE, "food") is None  # not the earlier value either: the item is gone
    assert [i.key for i in store.search(ALICE, query="spicy ramen")] == ["city"]  # the rest
    assert [i.key for i in store.search(ALICE, query="udon")] == ["city"]
    assert [i.key for i in store.search(ALICE)] == ["city"]
    # history keeps it, as revoked, with the reason; only an audit shows it
    assert store.client.get(record.memory_id).status == "revoked"
    with Client(base_url, keys.admin) as admin:
        audit = admin.history("memories/alice", FAMILY, include_revoked=True)
        changes = admin.changes("memories/alice", FAMILY)
    assert record.memory_id in [r.memory_id for r in audit]
    assert ("revoked", record.memory_id) in [(c.action, c.memory_id) for c in changes]
    assert any("deleted through the LangGraph store: key 'food'" in c.cause for c in changes)
    # sending the put's event again (a replay) never brings it back
    replayed = store.client.ingest(event.model_dump(mode="json", exclude={"tenant", "actor"}))
    assert replayed.duplicate
    assert store.get(ALICE, "food") is None
    # a new put of the same value is a new event under the new generation: it is set again
    store.put(ALICE, "food", {"text": "loves spicy ramen"})
    again = store.get(ALICE, "food")
    assert again is not None and again.value == {"text": "loves spicy ramen"}
    (now,) = store.client.current("memories/alice", FAMILY, scope="key:food")
    assert now.memory_id != record.memory_id and now.generation == record.generation + 1
    assert again.created_at == again.updated_at > record.valid_from


def test_filters(store: MemledgerStore) -> None:
    store.put(ALICE, "a", {"kind": "fact", "score": 5, "tags": ["x"], "meta": {"n": 1}})
    store.put(ALICE, "b", {"kind": "preference", "score": 2, "tags": ["x", "y"]})
    store.put(ALICE, "c", {"kind": "fact", "score": 3.5, "meta": {"n": 2}})

    def keys(**query: Any) -> list[str]:
        return sorted(i.key for i in store.search(ALICE, **query))

    assert keys(filter={"kind": "fact"}) == ["a", "c"]
    assert keys(filter={"score": {"$gt": 3}}) == ["a", "c"]
    assert keys(filter={"score": {"$gte": 2, "$lt": 5}}) == ["b", "c"]
    assert keys(filter={"kind": {"$ne": "fact"}}) == ["b"]
    assert keys(filter={"meta": {"n": 2}}) == ["c"]
    assert keys(filter={"tags": ["x"]}) == ["a"]
    assert keys(filter={"kind": "fact"}, query="fact") == ["a", "c"]
    assert keys(limit=2) == ["b", "c"]  # newest first
    assert keys(limit=2, offset=2) == ["a"]
    with pytest.raises(InvalidQueryError, match=r"\$in"):
        store.search(ALICE, filter={"kind": {"$in": ["fact"]}})


# -- batches ---------------------------------------------------------------------------------------


def test_batch_reads_before_it_writes_and_the_last_write_of_a_key_wins(
    store: MemledgerStore,
) -> None:
    store.put(ALICE, "food", {"text": "ramen"})
    results = store.batch(
        [
            PutOp(ALICE, "food", {"text": "udon"}),
            GetOp(ALICE, "food"),
            PutOp(ALICE, "food", {"text": "soba"}),
            PutOp(BOB, "food", {"text": "pho"}),
            SearchOp(("memories",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("memories",)),)),
            PutOp(ALICE, "city", None),
        ]
    )
    assert results[0] is None and results[2] is None and results[6] is None
    assert results[1].value == {"text": "ramen"}  # type: ignore[union-attr]
    assert [i.key for i in results[4]] == ["food"]  # type: ignore[union-attr]
    assert results[5] == [ALICE]
    assert store.get(ALICE, "food").value == {"text": "soba"}  # type: ignore[union-attr]
    assert store.get(BOB, "food").value == {"text": "pho"}  # type: ignore[union-attr]
    windows = store.client.timeline("memories/alice", FAMILY, scope="key:food")
    assert [w.value for w in windows] == [{"text": "ramen"}, {"text": "soba"}]  # udon: never sent


def test_abatch(base_url: str, keys: Keys) -> None:
    async def main() -> list[Any]:
        store = MemledgerStore(base_url, api_key=keys.agent)
        await store.abatch([PutOp(ALICE, f"k{n}", {"n": n}) for n in range(6)])
        found = await store.abatch(
            [GetOp(ALICE, "k3"), SearchOp(ALICE, filter={"n": {"$gte": 4}}), GetOp(BOB, "k3")]
        )
        await store.aclose()
        return found

    got, searched, missing = asyncio.run(main())
    assert got.value == {"n": 3}
    assert sorted(i.key for i in searched) == ["k4", "k5"]
    assert missing is None


# -- authority and refusals ------------------------------------------------------------------------


def test_authority_comes_from_the_key(base_url: str, keys: Keys, memory: Memory) -> None:
    with MemledgerStore(base_url, api_key=keys.ungranted) as ungranted:
        with pytest.raises(PermissionDeniedError, match=r"observation.*no_grant"):
            ungranted.put(ALICE, "food", {"text": "ramen"})
        assert ungranted.get(ALICE, "food") is None  # kept in the ledger, never a value
    (kept,) = memory.history("memories/alice", FAMILY, tenant=TENANT)
    assert (kept.kind, kept.exclusion) == ("observation", "no_grant")
    with MemledgerStore(base_url, api_key=keys.reader) as reader:
        with pytest.raises(PermissionDeniedError, match="read-only"):
            reader.put(ALICE, "food", {"text": "ramen"})
        assert reader.search(ALICE) == []
    # a tenant without the family: reads find nothing, a put says how to register it
    globex = memory.create_key("globex", "agent-1", role="admin")[1]
    with MemledgerStore(base_url, api_key=globex) as other:
        assert other.get(ALICE, "food") is None and other.search(ALICE) == []
        with pytest.raises(UnknownFamilyError) as raised:
            other.put(ALICE, "food", {"text": "ramen"})
        assert any("register_family" in note for note in raised.value.__notes__)
        assert other.setup().name == FAMILY  # the admin key registers it
        assert other.list_namespaces() == []


def test_what_the_store_refuses_rather_than_ignores(store: MemledgerStore) -> None:
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(ALICE, "k", {"a": 1}, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(ALICE, "k", {"a": 1}, ttl=5)])
    with pytest.raises(NotImplementedError, match="index"):
        store.put(ALICE, "k", {"a": 1}, index=False)
    with pytest.raises(InvalidInputError, match="JSON"):
        store.put(ALICE, "k", {"a": float("nan")})
    with pytest.raises(InvalidNamespaceError, match="letter or digit"):
        store.put(("_private", "x"), "k", {"a": 1})
    with pytest.raises(InvalidNamespaceError, match="at most 255"):
        store.put(("x" * 300,), "k", {"a": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidInputError, match="at most 255"):
        store.put(ALICE, "k" * 300, {"a": 1})
    assert store.search(ALICE) == []  # nothing was sent


# -- names -----------------------------------------------------------------------------------------


def test_names_map_both_ways() -> None:
    assert subject_of(("user-42",)) == "user-42"
    assert subject_of(("memories", "user:42@acme")) == "memories/user:42@acme"
    assert subject_of(("a b", "x/y", "ü+")) == "a+20b/x+2Fy/+C3+BC+2B"
    assert namespace_of("a+20b/x+2Fy/+C3+BC+2B") == ("a b", "x/y", "ü+")
    assert scope_of("profile.v1") == "key:profile.v1" and key_of("key:profile.v1") == "profile.v1"
    assert key_of("key:a+20b") == "a b" and scope_of("") == "key:" and key_of("key:") == ""
    for foreign in ("user.42", "a//b", "a+2", "a+41", "x+zz"):
        assert namespace_of(foreign) is None, foreign
    assert key_of("global") is None and key_of("key:a+4") is None


labels = st.text(
    st.characters(blacklist_characters=".\x00", blacklist_categories=("Cs",)), min_size=1
)


@given(st.lists(labels, min_size=1, max_size=4), labels)
def test_every_namespace_and_key_round_trips(namespace: list[str], key: str) -> None:
    try:
        subject = subject_of(tuple(namespace))
    except InvalidNamespaceError:
        return  # refused (too long, or not starting with a letter or digit), never mangled
    assert namespace_of(subject) == tuple(namespace)
    try:
        scope = scope_of(key)
    except InvalidInputError:
        return
    assert key_of(scope) == key


def test_importing_the_store_without_langgraph_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None; sys.modules['langgraph.store'] = None\n"
        "sys.modules['langgraph.store.base'] = None\n"
        "try:\n    import memledger.integrations.langgraph\n"
        "except ImportError as e:\n    print(e)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'memledger[langgraph]'" in found.stdout, found


def test_search_answers_the_nearest_items_even_when_none_is_said_alike(
    tmp_path: Path, no_proxies: None
) -> None:
    """A store's search ranks what it holds: with the default (semantic) embedder a
    question sharing no word with the item still finds it, where recall abstains, and
    another namespace's items stay out."""
    with Memory.open(tmp_path / "semantic.db") as memory:
        admin = memory.create_key(TENANT, "admin-1", role="admin")[1]
        with serve(build_app(memory, ServeConfig(mcp=False, web=False))) as url:
            with Client(url, admin) as client:
                client.register_family(item_family())
            agent = memory.create_key(TENANT, "agent-7", principal="agent", grants=[FAMILY])[1]
            with MemledgerStore(url, api_key=agent) as store:
                store.put(ALICE, "food", {"text": "I love spicy ramen"})
                store.put(BOB, "food", {"text": "I love spicy ramen too"})
                hits = store.search(ALICE, query="what food does the user like?")
                question = store.client.recall(
                    "what food does the user like?", subject="memories/alice"
                )
    assert [(h.namespace, h.key) for h in hits] == [(ALICE, "food")]
    assert hits[0].score is not None
    assert question.abstained
