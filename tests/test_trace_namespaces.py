"""A trace is stored with the private namespaces of every memory it names, held or left
out: a packet across the tenant that left out an agent's private memory is no trace
for a key that may not read that namespace, on both backends, and a store upgraded
from before the rule gets its traces' namespaces again."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from memledger import Memory
from memledger.errors import TraceNotFoundError
from memledger.index.backends import open_index
from memledger.index.embedders import HashingEmbedder
from memledger.read import trace
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, day, event, planner_private_friday, pref

_UNAPPLY = (
    "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)"
)


def _left_out_trace(memory: Memory, clock: FrozenClock) -> tuple[str, str]:
    """A tenant-wide packet's trace id and the id of the planner's private memory it
    left out (the memory's window had ended)."""
    hidden = planner_private_friday(memory)
    clock.set(day(11, 1))
    packet = memory.context("Which deliveries are planned?", tenant=TENANT)
    assert hidden in [left.key for left in packet.excluded]
    assert hidden not in [item.memory_id for item in packet.memories]
    return packet.trace_id, hidden


def _visible(memory: Memory, trace_id: str, namespaces: frozenset[str]) -> bool:
    try:
        trace.get(memory.store, trace_id, tenant=TENANT, namespaces=namespaces)
    except TraceNotFoundError:
        return False
    return True


def _forget_the_rule(url: str) -> None:
    """The store as a release before the rule left it: the trace's namespaces those of
    the memories it held only (none here), the last migration not applied yet."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute("UPDATE traces SET namespaces = ''")
            conn.execute(_UNAPPLY)
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE traces SET namespaces = ''")
            conn.execute(_UNAPPLY)


def test_a_trace_naming_a_private_memory_it_left_out_is_hidden_and_stays_so_on_upgrade(
    backend_url: str,
) -> None:
    clock = FrozenClock(day(10, 5))
    memory = Memory.open(backend_url, clock=clock)
    memory = Memory(
        memory.store, clock=clock, index=open_index(memory.store, embedder=HashingEmbedder())
    )
    trace_id, _ = _left_out_trace(memory, clock)
    assert not _visible(memory, trace_id, frozenset())  # a key reading only shared memory
    assert _visible(memory, trace_id, frozenset({"agent:planner"}))
    memory.close()

    _forget_the_rule(backend_url)
    with Memory.open(backend_url) as upgraded:  # the migration runs on open
        assert not _visible(upgraded, trace_id, frozenset())
        assert _visible(upgraded, trace_id, frozenset({"agent:planner"}))
        assert _visible(upgraded, trace_id, None)  # an admin key reads every namespace


@pytest.mark.parametrize("backend_url", ["sqlite"], indirect=True)
def test_an_upgraded_trace_holding_nothing_private_stays_visible(backend_url: str) -> None:
    clock = FrozenClock(day(10, 5))
    with Memory.open(backend_url, clock=clock) as memory:
        memory.ingest(event("evt-1", "Fridays please", occurred_at=day(10, 5, 9)), [pref("friday")])
        packet = memory.context("When are deliveries?", tenant=TENANT, subject=SUBJECT)
    _forget_the_rule(backend_url)
    with Memory.open(backend_url) as upgraded:
        assert _visible(upgraded, packet.trace_id, frozenset())
