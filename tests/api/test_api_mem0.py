"""mem0's own Python client (``mem0ai``'s ``MemoryClient``) against a real memledger
server over loopback: add, search, list, get, update, history and delete through the
mem0-compatible routes, with memledger's own view checked beside it, and the errors
the client raises. mem0 is imported with its telemetry off, and every connection the
tests open is checked to stay on loopback."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from api_helpers import client, ok, problem

from memledger import Memory
from memledger.api._mem0_shapes import Mem0Scope, history_steps, scope_of
from memledger.domain.items import MemoryChange
from memledger.domain.quotas import Quotas
from memledger.errors import InvalidQueryError
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, day

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "I live in Lisbon."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "I love spicy ramen."},
]
LOOPBACK = ("127.0.0.1", "::1", "localhost")
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "mem0.md"

Mem0Client = Callable[..., Any]
"""What the ``mem0_client`` fixture gives: ``mem0_client(actor="chat-app", **options)`` is
a ``mem0.MemoryClient`` of the test's server holding a new key of ``actor`` (a
``service`` key unless ``options`` say otherwise)."""


@pytest.fixture(scope="module")
def mem0(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """mem0, imported with its telemetry off and its config directory a temporary one."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEM0_TELEMETRY", "False")
        env.setenv("MEM0_DIR", str(tmp_path_factory.mktemp("mem0")))
        import mem0
        from mem0.memory import telemetry
    assert telemetry.MEM0_TELEMETRY is False
    assert telemetry.client_telemetry.posthog is None  # no PostHog client, no thread
    return mem0


@pytest.fixture(autouse=True)
def connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every address a socket of this process connects to or looks up during the test;
    one off loopback fails the test at once."""
    seen: list[object] = []
    connect = socket.socket.connect
    lookup = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        seen.append(address)
        assert not isinstance(address, tuple) or address[0] in LOOPBACK, address
        connect(self, address)

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(host)
        assert host in LOOPBACK or host is None, host
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    return seen


@pytest.fixture
def mem0_client(
    mem0: ModuleType, memory: Memory, base_url: str, no_proxies: None
) -> Iterator[Mem0Client]:
    made: list[Any] = []

    def make(actor: str = "chat-app", **options: Any) -> Any:
        options.setdefault("principal", "service")
        _, token = memory.create_key(TENANT, actor, **options)
        made.append(mem0.MemoryClient(api_key=token, host=base_url))
        return made[-1]

    yield make
    for each in made:
        each.client.close()


def test_mem0s_client_runs_the_whole_life_of_a_memory(
    mem0_client: Mem0Client, memory: Memory, clock: FrozenClock, connections: list[object]
) -> None:
    from mem0.exceptions import MemoryNotFoundError

    app = mem0_client()
    added = app.add(CHAT, user_id="alice", run_id="trip-1", metadata={"source": "onboarding"})
    assert added["status"] == "SUCCEEDED" and len(added["event_ids"]) == 3
    assert {(r["event"], r["memory"]) for r in added["results"]} >= {
        ("ADD", "Lives in Lisbon"),
        ("ADD", "I love spicy ramen."),
    }
    assert all(r["data"] == {"memory": r["memory"]} for r in added["results"])
    again = app.add(CHAT, user_id="alice", run_id="trip-1", metadata={"source": "onboarding"})
    assert again["event_ids"] == added["event_ids"] and again["results"] == []

    found = app.search("where does she live?", filters={"user_id": "alice"})["results"]
    assert found[0]["memory"] == "Lives in Lisbon" and isinstance(found[0]["score"], float)
    assert found[0]["user_id"] == "alice" and found[0]["run_id"] == "trip-1"
    assert found[0]["metadata"] == {"source": "onboarding"}
    assert found[0]["categories"] == ["home_city"] and all(r["relevant"] for r in found)
    in_run = {"AND": [{"user_id": "alice"}, {"run_id": "trip-1"}]}
    in_trip = app.search("where does she live?", filters=in_run)["results"]
    assert [r["id"] for r in in_trip] == [r["id"] for r in found]
    elsewhere = {"AND": [{"user_id": "alice"}, {"run_id": "trip-2"}]}
    assert app.search("where does she live?", filters=elsewhere)["results"] == []
    assert app.search("capital of France?", filters={"user_id": "alice"})["results"] == []
    nearest = app.search("capital of France?", filters={"user_id": "alice"}, threshold=0.0)
    assert nearest["results"] and not any(r["relevant"] for r in nearest["results"])

    listed = app.get_all(filters={"user_id": "alice"})
    every = {m["id"]: m for m in listed["results"]}
    assert listed["count"] == len(every) == len(added["results"])
    assert {r["id"] for r in added["results"]} == set(every)
    first = app.get_all(filters={"user_id": "alice"}, page=1, page_size=2)
    second = app.get_all(filters={"user_id": "alice"}, page=2, page_size=2)
    assert first["count"] == listed["count"] and first["previous"] is None
    assert first["next"].endswith("page=2&page_size=2") and second["previous"] is not None
    assert [m["id"] for m in first["results"] + second["results"]] == list(every)[:4]
    assert app.get_all(filters={"AND": [{"user_id": "alice"}, {"run_id": "trip-2"}]}) == {
        "count": 0,
        "next": None,
        "previous": None,
        "results": [],
    }

    (lisbon,) = [m for m in every.values() if m["categories"] == ["home_city"]]
    assert app.get(lisbon["id"]) == lisbon
    clock.set(day(10, 2))
    updated = app.update(lisbon["id"], text="I live in Porto now.")
    assert updated["replaces"] == lisbon["id"] and updated["memory"] == "Lives in Porto"
    assert updated["user_id"] == "alice" and updated["run_id"] == "trip-1"
    assert updated["categories"] == ["home_city"] and updated["id"] != lisbon["id"]
    assert updated["metadata"] == {"source": "onboarding"}  # the old turn's
    # memledger's own view agrees: the old value revoked, the new one current
    with client(app.host) as native:
        native.headers["Authorization"] = f"Token {app.api_key}"
        (city,) = ok(native.get("/v1/subjects/alice/families/home_city/current")).json()
        assert city["value"] == "Porto" and city["source_actor_id"] == "alice"
        assert ok(native.get(f"/v1/memories/{lisbon['id']}")).json()["status"] == "revoked"
    with pytest.raises(MemoryNotFoundError):
        app.get(lisbon["id"])
    steps = [(s["event"], s["old_memory"], s["new_memory"]) for s in app.history(lisbon["id"])]
    assert steps == [
        ("ADD", None, "Lives in Lisbon"),
        ("UPDATE", "Lives in Lisbon", "Lives in Porto"),
    ]
    porto = app.get(updated["id"])
    assert {k: v for k, v in updated.items() if k != "replaces"} == porto
    assert app.history(porto["id"])[-1]["input"] == [
        {"role": "user", "content": "I live in Porto now."}
    ]

    clock.set(day(10, 3))
    assert app.delete(porto["id"]) == {"message": "Memory deleted successfully!"}
    assert memory.current("alice", "home_city", tenant=TENANT) == ()
    with pytest.raises(MemoryNotFoundError):
        app.get(porto["id"])
    with pytest.raises(MemoryNotFoundError):
        app.delete(porto["id"])
    assert [s["event"] for s in app.history(porto["id"])][-1] == "DELETE"
    assert porto["id"] not in {
        m["id"] for m in app.get_all(filters={"user_id": "alice"})["results"]
    }
    assert connections and all(a[0] in LOOPBACK for a in connections if isinstance(a, tuple))


def test_the_client_raises_what_the_server_refuses(
    mem0: ModuleType, mem0_client: Mem0Client, base_url: str
) -> None:
    from mem0.exceptions import AuthenticationError, MemoryError, MemoryNotFoundError
    from mem0.exceptions import ValidationError as Mem0ValidationError

    with pytest.raises(ValueError, match="API key not accepted"):
        mem0.MemoryClient(api_key="mlk_000000000000." + "x" * 43, host=base_url)
    app = mem0_client()
    with pytest.raises(MemoryNotFoundError, match="memory_not_found"):
        app.get("mem-missing")
    with pytest.raises(MemoryNotFoundError):
        app.history("mem-missing")
    with pytest.raises(Mem0ValidationError, match="OR is not supported"):
        app.search("x", filters={"OR": [{"user_id": "a"}, {"user_id": "b"}]})
    with pytest.raises(Mem0ValidationError, match="operators"):
        app.get_all(filters={"user_id": {"in": ["a", "b"]}})
    with pytest.raises(Mem0ValidationError, match="custom_categories is not supported"):
        app.add("I live in Oslo.", user_id="bob", custom_categories=[{"travel": "trips"}])
    with pytest.raises(Mem0ValidationError, match="infer=false is not supported"):
        app.add("I live in Oslo.", user_id="bob", infer=False)
    with pytest.raises(Mem0ValidationError, match="user_id or agent_id"):
        app.get_all(filters={"run_id": "trip-1"})  # a service's key names whose memory
    with pytest.raises(Mem0ValidationError, match="threshold"):
        app.search("x", filters={"user_id": "bob"}, threshold=0.5)
    with pytest.raises(MemoryError, match="batch update and batch delete is not supported"):
        app.batch_delete([{"memory_id": "mem-x"}])
    with pytest.raises(MemoryError, match="not_supported"):
        app.users()
    assert (app.org_id, app.project_id) == (TENANT, TENANT)  # the ping names the tenant
    with pytest.raises(MemoryError, match="organisations and projects is not supported"):
        app.project.get()
    alice = mem0_client("alice", principal="user")
    with pytest.raises(AuthenticationError, match="adds 'alice'"):
        alice.add("I live in Rome.", user_id="carol")
    assert alice.add("I live in Rome.")["results"]  # a user's key adds its own turns
    assert {m["user_id"] for m in alice.get_all()["results"]} == {"alice"}


def test_an_update_that_cannot_be_written_leaves_the_old_value(
    mem0_client: Mem0Client, memory: Memory
) -> None:
    from mem0.exceptions import ValidationError as Mem0ValidationError

    app = mem0_client()
    app.add("I live in Lisbon.", user_id="erin")
    held = app.get_all(filters={"user_id": "erin"})
    (city,) = [m for m in held["results"] if m["categories"] == ["home_city"]]
    memory.set_quotas(Quotas(max_records=held["count"]), tenant=TENANT)
    with pytest.raises(Mem0ValidationError, match="taken back"):  # a 409
        app.update(city["id"], text="I live in Porto now.")
    # the revocation was undone (Lisbon restored as a new record) and the new turn
    # forgotten: with room again, a worker does not bring Porto in later
    memory.set_quotas(Quotas(), tenant=TENANT)
    memory.process(tenant=TENANT)
    (current,) = memory.current("erin", "home_city", tenant=TENANT)
    assert current.value == "Lisbon" and current.status == "active"
    assert "Lives in Porto" not in {
        m["memory"] for m in app.get_all(filters={"user_id": "erin"})["results"]
    }


def test_an_agents_key_keeps_its_own_namespace(mem0_client: Mem0Client) -> None:
    from mem0.exceptions import AuthenticationError

    planner = mem0_client("planner", principal="agent")
    planner.add("Customer prefers email.", agent_id="planner")
    (note,) = planner.get_all(filters={"agent_id": "planner"})["results"]
    assert note["agent_id"] == "planner" and note["user_id"] is None
    assert planner.get_all()["results"] == [note]  # its own by default
    found = planner.search("email", filters={"agent_id": "planner"}, threshold=0.0)["results"]
    assert [r["id"] for r in found] == [note["id"]]
    with pytest.raises(AuthenticationError, match="cannot speak as agent 'billing'"):
        planner.add("Refunds need approval.", agent_id="billing")
    billing = mem0_client("billing", principal="agent")
    with pytest.raises(AuthenticationError):
        billing.get_all(filters={"agent_id": "planner"})
    with pytest.raises(AuthenticationError):
        billing.search("email", filters={"agent_id": "planner"})
    app = mem0_client()  # not even a service's key writes into an agent's own namespace
    with pytest.raises(AuthenticationError, match="private namespace"):
        app.add("Escalate refunds.", agent_id="planner")


def test_token_and_bearer_work_everywhere_and_the_native_routes_are_unchanged(
    memory: Memory, base_url: str
) -> None:
    _, token = memory.create_key(TENANT, "chat-app", principal="service")
    with client(base_url) as api:
        for scheme in ("Token", "token", "Bearer"):
            api.headers["Authorization"] = f"{scheme} {token}"
            assert ok(api.get("/v1/ping/")).json()["tenant"] == TENANT
            assert ok(api.get("/v1/me")).json()["actor"] == "chat-app"
        added = ok(api.post("/v1/memories", json={"messages": "I live in Oslo.", "user_id": "dan"}))
        (city,) = [m for m in added.json()["memories"] if m["family"] == "home_city"]
        native = ok(api.get(f"/v1/memories/{city['id']}")).json()
        assert native["memory_id"] == city["id"] and native["claim"] == "Lives in Oslo"
        assert ok(api.get(f"/v1/memories/{city['id']}/")).json()["memory"] == "Lives in Oslo"
        assert ok(api.get(f"/v1/memories/{city['id']}/history")).json()[0]["action"] == "recorded"
        assert ok(api.get(f"/v1/memories/{city['id']}/history/")).json()[0]["event"] == "ADD"
        api.headers["Authorization"] = "Token mlk_000000000000." + "x" * 43
        problem(api.get("/v1/ping/"), 401, "unauthenticated")
        del api.headers["Authorization"]
        problem(api.get("/v1/ping/"), 401, "unauthenticated")
        found = problem(api.put("/v1/batch/", json={"memories": []}), 501, "not_supported")
        assert "batch update" in str(found["detail"])
        problem(api.get("/api/v1/orgs/organizations/o/projects/p/"), 501, "not_supported")


def test_the_guide_runs_as_written(
    mem0: ModuleType,
    memory: Memory,
    base_url: str,
    no_proxies: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    _, token = memory.create_key(TENANT, "chat-app", principal="service")
    names: dict[str, Any] = {"__name__": "docs", "KEY": token, "URL": base_url}
    try:
        exec(compile(block, str(GUIDE), "exec"), names)
    finally:
        if "client" in names:
            names["client"].client.close()
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == [
        "Lives in Lisbon True",
        "Lives in Porto True",
        "[('ADD', 'Lives in Lisbon'), ('UPDATE', 'Lives in Porto')]",
    ]
    assert memory.current("alice", "home_city", tenant=TENANT) == ()  # deleted at the end


def test_filters_name_one_memory() -> None:
    assert scope_of({"user_id": "alice"}) == Mem0Scope(user_id="alice")
    nested = {"AND": [{"user_id": "alice"}, {"AND": [{"run_id": "r"}, {"agent_id": "*"}]}]}
    assert scope_of(nested) == Mem0Scope(user_id="alice", run_id="r")
    assert scope_of({"run_id": "r"}, user_id="alice", agent_id=None) == Mem0Scope(
        "alice", None, "r"
    )
    assert scope_of(None) == Mem0Scope()
    for bad, words in (
        ({"user_id": "*"}, "every user"),
        ({"AND": []}, "non-empty list"),
        ({"AND": ["x"]}, "must be an object"),
        ({"NOT": {"user_id": "a"}}, "AND only"),
        ({"user_id": 7}, "must be a string"),
        ({"app_id": "shop"}, "no apps"),
        ({"created_at": {"gte": "2026-01-01"}}, "created_at is not supported"),
        ({"AND": [{"user_id": "a"}, {"user_id": "b"}]}, "named twice"),
    ):
        with pytest.raises(InvalidQueryError, match=words):
            scope_of(bad)  # type: ignore[arg-type]


def _change(memory_id: str, action: str, status: str, memory: str, cause: str) -> MemoryChange:
    return MemoryChange(
        memory_id=memory_id,
        action=action,  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        memory=memory,
        at=day(10, 1),
        cause=cause,
    )


def test_history_speaks_mem0s_three_events() -> None:
    corrected = [
        _change("m1", "recorded", "active", "Lives in Lisbon", "e1"),
        _change("m1", "closed", "superseded", "Lives in Lisbon", "e2"),
        _change("m2", "recorded", "active", "Lives in Lisbon", "e2"),  # its past window
        _change("m3", "recorded", "active", "Lives in Porto", "e2"),
        _change("m3", "mentioned", "active", "Lives in Porto", "e3"),
        _change("m3", "revoked", "revoked", "Lives in Porto", "rvk-1: deleted"),
    ]
    assert [(s.event, s.change.memory_id, s.old, s.new) for s in history_steps(corrected)] == [
        ("ADD", "m1", None, "Lives in Lisbon"),
        ("UPDATE", "m3", "Lives in Lisbon", "Lives in Porto"),
        ("DELETE", "m3", "Lives in Porto", None),
    ]
    updated = [
        _change("m1", "recorded", "active", "Lives in Lisbon", "e1"),
        _change("m1", "revoked", "revoked", "Lives in Lisbon", "rvk-1: updated"),
        _change("m2", "recorded", "active", "Lives in Porto", "e2"),
    ]
    assert [(s.event, s.old, s.new) for s in history_steps(updated)] == [
        ("ADD", None, "Lives in Lisbon"),
        ("UPDATE", "Lives in Lisbon", "Lives in Porto"),
    ]
    # an update whose text wrote nothing here: the revocation is the memory's end
    assert [s.event for s in history_steps(updated[:2])] == ["ADD", "DELETE"]
    retracted = [
        _change("m1", "recorded", "active", "Likes ramen", "e1"),
        _change("m1", "closed", "retracted", "Likes ramen", "e2"),
    ]
    assert [s.event for s in history_steps(retracted)] == ["ADD", "DELETE"]
