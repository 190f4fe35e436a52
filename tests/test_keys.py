"""API keys: hashed at rest, one tenant and actor each, the same refusal for every bad
key, and writes on a key's behalf that take the tenant and actor from the key alone."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from cli_helpers import snapshot
from memledger import (
    Actor,
    ApiKey,
    AuthenticationError,
    Family,
    Grant,
    InvalidInputError,
    KeyNotFoundError,
    Memory,
    PermissionDeniedError,
    Principal,
    UnknownFamilyError,
)
from memledger.domain.keys import (
    REFUSED,
    KeyRole,
    PrincipalKind,
    hash_token,
    namespace_of,
    parse_token,
    verify_token,
)
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, actor, day, event, pref

WHEN = day(10, 1)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(WHEN)


def _files(path: Path) -> bytes:
    """Every byte SQLite keeps for the store: the file, its WAL and its shared memory."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(f"{path.name}*")))


# -- the token -------------------------------------------------------------------------


def test_the_token_is_shown_once_and_only_its_hash_is_stored(memory: Memory, db: Path) -> None:
    key, token = memory.create_key(TENANT, SUBJECT, grants=[FAMILY], label="phone app")
    key_id, _, secret = token.partition(".")
    assert key_id == key.key_id and len(secret) == 43  # 256 random bits, url-safe
    assert memory.create_key(TENANT, SUBJECT)[1] != token  # every key its own secret
    assert secret not in repr(memory.keys(TENANT)) and secret not in repr(key)
    stored = _files(db)
    assert secret.encode() not in stored and token.encode() not in stored
    assert key.key_id.encode() in stored  # the id is public, and the hash is there
    assert hash_token(token).encode() in stored
    assert hash_token(token) == "sha256$" + hashlib.sha256(token.encode()).hexdigest()
    conn = sqlite3.connect(db)
    (row,) = conn.execute("SELECT token_hash FROM api_keys WHERE key_id = ?", (key.key_id,))
    conn.close()
    assert row == (hash_token(token),) and verify_token(token, row[0])


def test_a_stored_hash_is_bound_to_its_key_id(memory: Memory) -> None:
    first, token = memory.create_key(TENANT, SUBJECT)
    second, _ = memory.create_key(TENANT, SUBJECT)
    _, _, secret = token.partition(".")
    with pytest.raises(AuthenticationError):
        memory.authenticate(f"{second.key_id}.{secret}")  # first's secret on second's id
    assert memory.authenticate(token).key_id == first.key_id


# -- authentication ----------------------------------------------------------------------


def test_a_good_key_is_its_tenant_and_its_actor(memory: Memory, clock: FrozenClock) -> None:
    key, token = memory.create_key(
        TENANT, "agent-7", principal="agent", role="read", grants=["home_city:*", "plan:plan:x"]
    )
    who = memory.authenticate(f"  {token}\n")  # as a header may carry it
    assert who == Principal(
        tenant=TENANT,
        actor=who.actor,
        role="read",
        kind="agent",
        key_id=key.key_id,
    )
    assert who.actor.id == "agent-7" and who.actor.authenticated
    assert who.actor.grants == {Grant(family="home_city"), Grant(family="plan", scope="plan:x")}
    assert (who.may_write, who.may_admin) == (False, False)
    assert memory.keys(TENANT)[0].last_used_at == WHEN


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "mlk_",
        "not a key",
        "Bearer mlk_0123456789ab.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "mlk_0123456789AB.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",  # upper-case hex
        "mlk_0123456789ab.short",
        "mlk_0123456789ab.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.extra",
        "mlk_0123456789ab:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        None,
        42,
    ],
)
def test_malformed_tokens_are_refused(memory: Memory, bad: object) -> None:
    with pytest.raises(AuthenticationError) as caught:
        memory.authenticate(bad)  # type: ignore[arg-type]
    assert str(caught.value) == REFUSED
    with pytest.raises(AuthenticationError):
        parse_token(bad)


def test_unknown_malformed_and_revoked_keys_get_one_answer(memory: Memory) -> None:
    key, token = memory.create_key(TENANT, SUBJECT)
    other_tenant_key, other_token = memory.create_key("globex", SUBJECT)
    unknown = "mlk_0123456789ab." + token.partition(".")[2]
    wrong_secret = key.key_id + "." + other_token.partition(".")[2]
    memory.revoke_key(TENANT, key.key_id)
    messages = set()
    for bad in (unknown, "mlk_nope", wrong_secret, token):
        with pytest.raises(AuthenticationError) as caught:
            memory.authenticate(bad)
        messages.add(str(caught.value))
        assert key.key_id not in str(caught.value)
    assert messages == {REFUSED}
    assert memory.authenticate(other_token).key_id == other_tenant_key.key_id


def test_revoking_a_key(memory: Memory, clock: FrozenClock) -> None:
    key, token = memory.create_key(TENANT, SUBJECT)
    clock.advance(timedelta(hours=1))
    revoked = memory.revoke_key(TENANT, key.key_id)
    assert revoked.revoked and revoked.revoked_at == WHEN + timedelta(hours=1)
    clock.advance(timedelta(hours=1))
    assert memory.revoke_key(TENANT, key.key_id) == revoked  # again: as it was revoked
    assert memory.keys(TENANT) == (revoked,)
    for tenant, key_id in (("globex", key.key_id), (TENANT, "mlk_0123456789ab")):
        with pytest.raises(KeyNotFoundError, match="no API key"):
            memory.revoke_key(tenant, key_id)
    with pytest.raises(AuthenticationError):
        memory.authenticate(token)


def test_use_is_stamped_at_most_once_a_minute(memory: Memory, clock: FrozenClock) -> None:
    _, token = memory.create_key(TENANT, SUBJECT)
    memory.authenticate(token, touch=False)
    assert memory.keys(TENANT)[0].last_used_at is None
    memory.authenticate(token)
    clock.advance(timedelta(seconds=30))
    memory.authenticate(token)
    assert memory.keys(TENANT)[0].last_used_at == WHEN
    clock.advance(timedelta(seconds=31))
    memory.authenticate(token)
    assert memory.keys(TENANT)[0].last_used_at == WHEN + timedelta(seconds=61)


def test_keys_are_checked_when_created(memory: Memory, db: Path) -> None:
    before = snapshot(db)
    with pytest.raises(UnknownFamilyError):
        memory.create_key(TENANT, SUBJECT, grants=["delivery_preferense"])  # misspelt
    with pytest.raises(InvalidInputError, match="principal"):
        memory.create_key(TENANT, SUBJECT, principal="robot")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="role"):
        memory.create_key(TENANT, SUBJECT, role="owner")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="one string"):
        memory.create_key(TENANT, SUBJECT, grants=FAMILY)
    with pytest.raises(InvalidInputError, match="actor id"):
        memory.create_key(TENANT, "two words")
    with pytest.raises(InvalidInputError, match="label"):
        memory.create_key(TENANT, SUBJECT, label="two\nlines")
    assert snapshot(db) == before
    memory.register_family(TENANT, Family(name="diet", kinds=frozenset({"preference"})))
    key, _ = memory.create_key(TENANT, SUBJECT, grants=["diet", Grant(family="*", scope="x")])
    assert key.grants == {Grant(family="diet"), Grant(family="*", scope="x")}
    with pytest.raises(UnknownFamilyError):
        memory.create_key("globex", SUBJECT, grants=["diet"])  # registered for acme only


def test_an_api_key_record_validates_itself() -> None:
    with pytest.raises(InvalidInputError, match="mlk_"):
        ApiKey(
            key_id="key-1",
            tenant=TENANT,
            actor_id=SUBJECT,
            principal="user",
            role="read",
            grants=frozenset(),
            created_at=WHEN,
        )


# -- writing on a key's behalf -----------------------------------------------------------


def test_the_tenant_and_actor_come_from_the_key(memory: Memory) -> None:
    _, token = memory.create_key(TENANT, SUBJECT, grants=[FAMILY])
    who = memory.authenticate(token)
    claimed = actor("*", authenticated=False, actor_id="mallory")  # what the body says
    receipt = memory.ingest_as(
        who,
        event("evt-1", "Send it on Fridays", occurred_at=day(10, 2), who=claimed),
        [pref("friday", grounding="on Fridays")],
    )
    assert [r.disposition for r in receipt.results] == ["current"]
    stored = memory.event("evt-1", tenant=TENANT)
    assert stored.actor == who.actor
    (record,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    assert (record.source_actor_id, record.source_identity_authenticated) == (SUBJECT, True)


def test_a_body_naming_another_tenant_is_refused(memory: Memory, db: Path) -> None:
    _, token = memory.create_key(TENANT, SUBJECT, role="admin", grants=["*"])
    who = memory.authenticate(token)
    before = snapshot(db)
    with pytest.raises(PermissionDeniedError, match="'globex'"):
        memory.ingest_as(
            who, event("evt-1", "Fridays", occurred_at=day(10, 2), tenant="globex"), [pref("x")]
        )
    with pytest.raises(PermissionDeniedError):
        memory.ingest_as(who, event("evt-2", "Fridays", occurred_at=day(10, 2), tenant="globex"))
    assert snapshot(db) == before


def test_a_read_only_key_cannot_write(memory: Memory, db: Path) -> None:
    _, token = memory.create_key(TENANT, SUBJECT, role="read", grants=["*"])
    who = memory.authenticate(token)
    before = snapshot(db)
    with pytest.raises(PermissionDeniedError, match="read-only"):
        memory.ingest_as(who, event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    with pytest.raises(PermissionDeniedError, match="read-only"):
        memory.ingest_as(who, event("evt-1", "Fridays", occurred_at=day(10, 2)))
    assert snapshot(db) == before
    admin = memory.authenticate(memory.create_key(TENANT, "ops", role="admin")[1])
    assert (admin.may_write, admin.may_admin) == (True, True)


def test_a_read_only_key_is_told_so_at_each_layer(memory: Memory, db: Path) -> None:
    """``Memory.ingest_as`` refuses a read-only key before anything else is checked;
    ``Principal.require_write_to`` (which every edge calls before a change about a
    subject) tells it it is read-only too, not that a subject is a private namespace."""
    who = memory.authenticate(memory.create_key(TENANT, SUBJECT, role="read", grants=["*"])[1])
    before = snapshot(db)
    elsewhere = event("evt-1", "Fridays", occurred_at=day(10, 2), tenant="globex")
    setting = event("evt-2", "Fridays", occurred_at=day(10, 2), channel="account_service")
    for refused in (elsewhere, setting):  # read-only, before tenant or channel
        with pytest.raises(PermissionDeniedError, match="is read-only: it cannot write"):
            memory.ingest_as(who, refused, [pref("friday")])
    assert snapshot(db) == before
    for subject in (SUBJECT, "agent:auditor", "agent:planner/user-42"):
        with pytest.raises(PermissionDeniedError, match="is read-only") as denied:
            who.require_write_to(subject)
        assert "namespace" not in str(denied.value), subject
    writer = memory.authenticate(memory.create_key(TENANT, SUBJECT)[1])
    with pytest.raises(PermissionDeniedError, match=r"private namespace \('agent:planner'\)"):
        writer.require_write_to("agent:planner/user-42")


def test_only_a_service_key_sends_on_a_setting_channel(memory: Memory) -> None:
    person = memory.authenticate(memory.create_key(TENANT, SUBJECT, grants=["*"])[1])
    system = memory.authenticate(
        memory.create_key(TENANT, "billing", principal="service", grants=["*"])[1]
    )
    setting = event("evt-1", "Weekly", occurred_at=day(10, 2), channel="account_service")
    with pytest.raises(PermissionDeniedError, match="service"):
        memory.ingest_as(person, setting, [pref("weekly")])
    receipt = memory.ingest_as(system, setting, [pref("weekly")])
    assert receipt.outcome == "committed"
    (record,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    assert record.operational_setting_confirmed and record.source_actor_id == "billing"


def test_an_actor_without_the_grant_leaves_observations_only(memory: Memory) -> None:
    granted = memory.authenticate(memory.create_key(TENANT, SUBJECT, grants=[FAMILY])[1])
    ungranted = memory.authenticate(memory.create_key(TENANT, SUBJECT, grants=["home_city"])[1])
    for name, who in (("evt-1", ungranted), ("evt-2", granted)):
        turn = event(name, "Please send my digest on Fridays", occurred_at=day(10, 2))
        assert memory.ingest_as(who, turn).outcome == "queued"
    extractor = FunctionExtractor(lambda _: [pref("friday", grounding="on Fridays")])
    assert memory.process(extractor=extractor).outcomes == {"committed": 2}
    records = [r for r in memory.history(SUBJECT, FAMILY, tenant=TENANT)]
    kinds = {r.source_event_id: (r.kind, r.scope_authorized, r.exclusion) for r in records}
    assert kinds == {
        "evt-1": ("observation", False, "no_grant"),
        "evt-2": ("preference", True, None),
    }
    (now,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    assert now.source_event_id == "evt-2"


def test_ingest_as_checks_its_arguments(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="Principal"):
        memory.ingest_as("mlk_x", event("evt-1", "x", occurred_at=day(10, 2)))  # type: ignore[arg-type]
    who = memory.authenticate(memory.create_key(TENANT, SUBJECT)[1])
    with pytest.raises(InvalidInputError, match="SourceEvent"):
        memory.ingest_as(who, {"tenant": TENANT})  # type: ignore[arg-type]


def _principal(
    actor: str, kind: PrincipalKind, role: KeyRole = "write", reads: frozenset[str] = frozenset()
) -> Principal:
    return Principal(
        tenant="acme",
        actor=Actor(id=actor),
        role=role,
        kind=kind,
        key_id="mlk_0123456789ab",
        reads=reads,
    )


def test_a_subject_under_agent_id_is_that_agents_private_namespace() -> None:
    assert namespace_of("agent:planner") == "agent:planner"
    assert namespace_of("agent:planner/user-42") == "agent:planner"
    for shared in ("user-42", "agent:", "agent:/x", "agents:planner", "team:agent:planner"):
        assert namespace_of(shared) is None, shared
    planner, booker = _principal("planner", "agent"), _principal("booker", "agent")
    assert planner.may_read("agent:planner/user-42") and planner.may_write_to("agent:planner")
    assert not booker.may_read("agent:planner/user-42")
    assert not booker.may_write_to("agent:planner/user-42") and booker.may_write_to("user-42")
    user = _principal("planner", "user")  # a user named like the agent is not the agent
    assert not user.may_read("agent:planner") and not user.may_write_to("agent:planner")
    auditor = _principal("auditor", "agent", role="read", reads=frozenset({"agent:planner"}))
    assert auditor.may_read("agent:planner/x") and not auditor.may_write_to("agent:auditor")
    admin = _principal("ops", "service", role="admin")
    assert admin.may_read("agent:planner") and not admin.may_write_to("agent:planner")


def test_a_key_reads_only_namespaces(memory: Memory) -> None:
    key, _ = memory.create_key(TENANT, "auditor", principal="agent", reads=["agent:planner"])
    assert key.reads == {"agent:planner"}
    assert memory.keys(TENANT)[0].reads == {"agent:planner"}  # kept by the store
    for bad in (["user-42"], ["agent:planner/user-42"], "agent:planner", 5, [5]):
        with pytest.raises(InvalidInputError):
            memory.create_key(TENANT, "auditor", principal="agent", reads=bad)
