"""The wire models describe exactly what the dict helpers of ``memledger.wire`` build,
and the consistency token reads back what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from memledger import Memory, wire_models
from memledger.errors import InvalidQueryError
from memledger.read import trace
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref
from memledger.wire import (
    added_to_dict,
    change_to_dict,
    claim_to_dict,
    consolidation_to_dict,
    family_to_dict,
    forget_to_dict,
    history_entry_to_dict,
    item_to_dict,
    job_to_dict,
    key_to_dict,
    memory_change_to_dict,
    recall_to_dict,
    receipt_to_dict,
    record_to_dict,
    review_resolution_to_dict,
    review_to_dict,
    revocation_to_dict,
    rollback_to_dict,
    undo_to_dict,
    work_report_to_dict,
)
from memledger.wire_models import ConsistencyToken


def _exact(model: type[BaseModel], data: object) -> None:
    """``data`` validates, and dumps back to the same JSON (no field lost or added, the
    keys in the same order, so the API's schema lists them as the answer holds them)."""
    parsed = model.model_validate(data)
    assert json.loads(parsed.model_dump_json()) == json.loads(json.dumps(data)), model
    assert json.dumps(json.loads(parsed.model_dump_json())) == json.dumps(data), model


def test_every_wire_field_is_required() -> None:
    for name in wire_models.__all__:
        model = getattr(wire_models, name)
        if isinstance(model, type) and issubclass(model, BaseModel):
            assert model.model_config.get("extra") == "forbid", name
            for field, info in model.model_fields.items():
                if name != "Problem" or field not in ("errors", "error_count"):
                    assert info.is_required(), f"{name}.{field} has a default"


def test_the_models_match_the_dict_helpers(tmp_path: Path) -> None:
    clock = FrozenClock(day(10, 2))
    from api_helpers import open_memory

    with open_memory(tmp_path / "m.db", clock) as memory:
        _check_helpers(memory, clock)


def _check_helpers(memory: Memory, clock: FrozenClock) -> None:
    first = memory.ingest(
        event("a", "Fridays", occurred_at=day(10, 2), sequence=1),
        [pref("friday", grounding="Fridays")],
    )
    _exact(wire_models.Receipt, receipt_to_dict(first))
    queued = memory.ingest(event("q", "Please deliver on Mondays", occurred_at=day(10, 2)))
    _exact(wire_models.Receipt, receipt_to_dict(queued))
    (job,) = memory.jobs(tenant=TENANT)
    _exact(wire_models.Job, job_to_dict(job))
    _exact(
        wire_models.WorkReport,
        work_report_to_dict(memory.process(tenant=TENANT), mode="once", stopped_by=None),
    )
    held = memory.ingest(
        event("b", "Mondays", occurred_at=day(10, 2), subject="user-9"), [pref("monday")]
    )
    memory.ingest(event("c", "Sundays", occurred_at=day(10, 2), subject="user-9"), [pref("sunday")])
    for item in memory.reviews(tenant=TENANT, open_only=False):
        _exact(wire_models.Review, review_to_dict(item))
        for claim in item.claims:
            _exact(wire_models.ClaimOut, claim_to_dict(claim))
    assert held.outcome in ("committed", "review")
    reviews = memory.reviews(tenant=TENANT)
    if reviews:
        done = memory.resolve_review(
            TENANT, reviews[0].review_id, decision="accept", by="admin", reason="ok"
        )
        _exact(wire_models.ReviewResolution, review_resolution_to_dict(done))
    for record in memory.history(SUBJECT, FAMILY, tenant=TENANT):
        _exact(wire_models.Record, record_to_dict(record))
    recalled = memory.recall(
        "Fridays delivery", tenant=TENANT, subject=SUBJECT, valid_at=day(10, 3)
    )
    assert recalled.items
    _exact(wire_models.Recall, recall_to_dict(recalled))
    packet = memory.context(
        "When do I want deliveries?", tenant=TENANT, subject=SUBJECT, valid_at=day(10, 3)
    )
    _exact(wire_models.Packet, packet.to_dict())
    for summary in trace.recent(memory.store, tenant=TENANT):
        wire_models.TraceSummary.model_validate(summary)
    key, _ = memory.create_key(TENANT, "agent-1", principal="agent", grants=[FAMILY])
    _exact(wire_models.Key, key_to_dict(key))
    for family in memory.families_of(TENANT).families.values():
        _exact(wire_models.Family, family_to_dict(family, source="code"))
    clock.set(day(10, 3))
    (record,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    revoked = memory.revoke(record.memory_id, tenant=TENANT)
    _exact(wire_models.Revocation, revocation_to_dict(revoked))
    assert revoked.change_id is not None
    _exact(wire_models.Undo, undo_to_dict(memory.undo(revoked.change_id, tenant=TENANT)))
    _exact(wire_models.Rollback, rollback_to_dict(memory.rollback("rules@1", tenant=TENANT)))
    _exact(wire_models.Consolidation, consolidation_to_dict(memory.consolidate(tenant=TENANT)))
    _exact(wire_models.Forget, forget_to_dict(memory.forget("q", tenant=TENANT)))
    for change in memory.change_log(tenant=TENANT):
        _exact(wire_models.ChangeOut, change_to_dict(change))
    _exact(wire_models.Erasure, memory.erase(tenant=TENANT, subject=SUBJECT).to_dict())
    # every action history records, erasure and restoration included, is on the wire
    actions = {c.action for c in memory.changes(SUBJECT, FAMILY, tenant=TENANT)}
    assert {"restored", "erased"} <= actions
    for change in memory.changes(SUBJECT, FAMILY, tenant=TENANT):
        _exact(wire_models.HistoryEntry, history_entry_to_dict(change))


def test_a_consistency_token_as_text() -> None:
    token = ConsistencyToken({("user-42", "delivery_preference"): 3, ("user-42", "home_city"): 1})
    assert str(token) == "user-42/delivery_preference@3,user-42/home_city@1"
    assert ConsistencyToken.parse(str(token)) == token
    odd = ConsistencyToken({("repo:acme/api", "a@b"): 2})
    assert str(odd) == "repo:acme%2Fapi/a%40b@2"
    assert ConsistencyToken.parse(str(odd)).floor("repo:acme/api", "a@b") == 2
    merged = ConsistencyToken.parse("u/f@2, u/g@1").merge(ConsistencyToken.parse("u/f@1,v/f@4"))
    assert merged.floors == {("u", "f"): 2, ("u", "g"): 1, ("v", "f"): 4}
    assert merged.of_subject("u") == {"f": 2, "g": 1}
    assert ConsistencyToken.parse("u/f@1,u/f@5").floor("u", "f") == 5
    assert not ConsistencyToken({})
    for bad in ("", " ", "u", "u/f", "u/f@", "u/f@1.5", "/f@1", "u/@1", "u/f/g@1", "u/f@١"):
        with pytest.raises(InvalidQueryError, match="malformed consistency token"):
            ConsistencyToken.parse(bad)
    with pytest.raises(InvalidQueryError):
        ConsistencyToken.parse(",".join(f"u/f{n}@1" for n in range(300)))


_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@/+\-]{0,30}", fullmatch=True)


@given(st.dictionaries(st.tuples(_ID, _ID), st.integers(0, 2**63 - 1), min_size=1, max_size=8))
def test_a_consistency_token_reads_back_what_it_writes(floors: dict[tuple[str, str], int]) -> None:
    token = ConsistencyToken(floors)
    text = str(token)
    assert text.isascii() and " " not in text
    assert ConsistencyToken.parse(text) == token


def test_the_public_surfaces_are_sorted_and_resolve() -> None:
    import memledger.api

    def isort_style(name: str) -> tuple[int, str]:  # ruff's RUF022: constants, classes, rest
        return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)

    for module in (memledger.api, wire_models):
        assert module.__all__ == sorted(module.__all__, key=isort_style), module.__name__
        for name in module.__all__:
            assert getattr(module, name) is not None, name


def test_the_short_paths_models_match_its_dict_helpers(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "short.db", clock=FrozenClock(day(10, 1))) as memory:
        added = memory.add(
            [
                {"role": "user", "content": "I live in Lisbon."},
                {"role": "assistant", "content": "Ok."},
            ],
            user_id="alice",
            session="s1",
        )
        _exact(wire_models.Added, added_to_dict(added))
        found = memory.search("where does alice live?", user_id="alice")
        _exact(wire_models.MemorySearch, {"results": [item_to_dict(i) for i in found]})
        memory.delete(found[0].id)
        for change in memory.history(found[0].id):
            _exact(wire_models.MemoryChange, memory_change_to_dict(change))
