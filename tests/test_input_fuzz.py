"""Fuzzing the input edges (issue 9): every input is accepted or refused with a
MemledgerError, and a refused input changes nothing in the store.

The strategies mix well-formed values with what callers get wrong: wrong types,
lone surrogates, JSON nested far too deep, integers past 64 bits, datetimes
that leave the UTC range, naive datetimes, bad grants, unknown families. The
store is compared table by table (``iterdump``) before and after every refused
call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from cli_helpers import snapshot
from memledger import (
    Actor,
    Claim,
    DerivedIndex,
    Grant,
    MemledgerError,
    Memory,
    RecallSettings,
    SourceEvent,
)
from memledger.domain.records import ExtractorInfo, canonical_json
from memledger.testing import FrozenClock
from memledger.wire import parse_events_json

NOW = datetime(2026, 10, 2, 12, tzinfo=UTC)
FUZZ = settings(
    max_examples=200,
    deadline=None,
    # one store for all the examples of a test, on purpose: later inputs meet the state
    # (duplicates, conflicts, revocations) that earlier accepted ones left
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

# -- strategies -------------------------------------------------------------------------


def nested(depth: int) -> object:
    return functools.reduce(lambda inner, _: [inner], range(depth), "x")


# not text on any store: lone surrogates (not UTF-8) and NUL (PostgreSQL cannot keep it)
not_text = st.sampled_from(["\ud800", "a\udfffb", "\udc80", "\ud83d", "\x00", "a\x00b"])
text_chars = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
good_texts = st.text(text_chars, max_size=30).filter(str.strip) | st.sampled_from(
    ["I live in Lyon.", "é\u2028x"]
)
bad_texts = st.builds(
    lambda a, s, b: a + s + b, st.text(text_chars, max_size=5), not_text, st.text(max_size=5)
) | st.sampled_from(["", "   "])
texts = good_texts | bad_texts
bad_ids = st.sampled_from(["a" * 256, "", " x", "a b", "é", "*"]) | bad_texts
ids = st.sampled_from(["acme", "user-42", "evt-1", "a" * 255]) | bad_ids
big_ints = st.sampled_from([2**63, -(2**63) - 1, 10**30, -1, 10**100])
offsets = st.integers(-(24 * 60) + 1, 24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
aware = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59), timezones=offsets
)
bad_moments = st.sampled_from(
    [
        datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
    ]
) | st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31))  # naive
moments = aware | bad_moments
depths = st.sampled_from([0, 1, 15, 16, 17, 63, 64, 65, 66, 67, 68, 300])
"""Deeper still (100,000 levels) is in test_input_defects: hypothesis cannot print it."""
good_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | good_texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(good_texts, inner, max_size=3),
    max_leaves=6,
)
leaves = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | big_ints | st.floats() | texts
json_like = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3) | st.tuples(inner)
    ),
    max_leaves=6,
)
junk = (
    json_like
    | depths.map(nested)
    | moments
    | st.sampled_from([b"bytes", {1, 2}, object(), 1.5, float("nan"), ["chat"], {"a": 1}])
)
event_ids = st.sampled_from(["evt-1", "evt-2"]) | st.integers(3, 10**6).map(lambda n: f"evt-{n}")
"""A few ids recur, so that replays and conflicting reuses of an id are tried too."""
families = st.sampled_from(["home_city", "delivery_preference", "plan", "conversation"])
bad_families = st.sampled_from(["nope", "plan:x", "home city"])
kinds = st.sampled_from(["fact", "preference", "episode", "observation"])
good_grant_texts = st.sampled_from(["home_city", "home_city:global", "*", "*:global", "plan:a:b"])
bad_grant_texts = st.sampled_from(["home_city:", "*:", "plan:x:*", ":x", "home city", ""])


@dataclass(frozen=True)
class Maybe:
    """A field's good values and its bad ones."""

    good: st.SearchStrategy[Any]
    bad: st.SearchStrategy[Any]


def maybe(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = junk) -> Maybe:
    return Maybe(good, bad)


def either(field: Maybe) -> st.SearchStrategy[Any]:
    """Mostly a good value, sometimes a bad one."""
    return st.one_of(field.good, field.good, field.good, field.bad)


def mostly(
    fields: dict[str, Any], optional: dict[str, Any] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of good values, in one draw out of three with one or two fields
    spoiled, so that most examples get past construction and reach the store."""
    extra = optional or {}

    @st.composite
    def spoil(draw: st.DrawFn) -> dict[str, Any]:
        spoiled = (
            draw(st.lists(st.sampled_from([*fields, *extra]), min_size=1, max_size=2, unique=True))
            if draw(st.sampled_from([False, False, True]))
            else []
        )
        out: dict[str, Any] = {}
        for name, spec in [*fields.items(), *extra.items()]:
            if name in extra and name not in spoiled and not draw(st.booleans()):
                continue
            if isinstance(spec, Maybe):
                out[name] = draw(spec.bad if name in spoiled else spec.good)
            else:
                out[name] = draw(spec)
        return out

    return spoil()


@dataclass(frozen=True)
class Make:
    """A record to build in the test, not while drawing: building may be refused."""

    cls: Callable[..., Any]
    fields: dict[str, Any]

    def __repr__(self) -> str:
        return f"Make({getattr(self.cls, '__name__', self.cls)}, {self.fields!r})"


def make(cls: Callable[..., Any], **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Make]:
    return mostly(fields).map(lambda drawn: Make(cls, drawn))


def resolve(value: object) -> Any:
    """``value`` with its recipes built (in a list too, one level down); a refused
    recipe raises its MemledgerError."""
    if isinstance(value, Make):
        return value.cls(**{k: resolve(v) for k, v in value.fields.items()})
    if isinstance(value, list) and any(isinstance(item, Make) for item in value):
        return [resolve(item) for item in value]
    return value


def build(cls: Callable[..., Any], fields: dict[str, Any]) -> Any:
    """An instance, or ``None`` when construction refused the fields with a MemledgerError."""
    try:
        return resolve(Make(cls, fields))
    except MemledgerError:
        return None


grants = either(
    maybe(
        make(
            Grant,
            family=maybe(families | st.just("*"), bad_ids),
            scope=maybe(st.just("*") | st.just("global"), bad_ids),
        )
        | good_grant_texts,
        bad_grant_texts | junk,
    )
)
actors = make(
    Actor,
    id=maybe(st.just("user-42") | st.just("agent-7"), bad_ids | junk),
    authenticated=maybe(st.booleans()),
    grants=maybe(st.lists(grants, max_size=3) | st.frozensets(st.builds(Grant, family=families))),
)
event_fields = mostly(
    {
        "tenant": maybe(st.just("acme"), bad_ids | junk),
        "event_id": maybe(event_ids, bad_ids | junk),
        "subject": maybe(st.just("user-42"), bad_ids | junk),
        "actor": maybe(actors),
        "channel": maybe(
            st.sampled_from(["chat", "tool", "account_service"]), st.just("fax") | junk
        ),
        "occurred_at": maybe(st.just(NOW) | aware, bad_moments | junk),
        "text": maybe(
            good_texts | st.just("x" * 100_001), bad_texts | st.just("x" * 8_388_609) | junk
        ),
        "sequence": maybe(st.none() | st.integers(0, 10) | st.just(2**63 - 1), big_ints | junk),
        "stream": maybe(st.none() | st.just("s1"), bad_ids | junk),
        "metadata": maybe(
            st.dictionaries(good_texts, good_json, max_size=3),
            st.dictionaries(texts, json_like | depths.map(nested), min_size=1, max_size=3) | junk,
        ),
    }
)
claim_fields = mostly(
    {
        "family": maybe(families, bad_families | junk),
        "kind": maybe(kinds, st.just("x") | junk),
        "statement": maybe(st.just("Lives in Lyon") | good_texts, bad_texts | junk),
        "value": maybe(good_json, json_like | depths.map(nested) | junk),
        "scope": maybe(st.just("global") | st.just("team:a"), bad_ids | junk),
        "subject": maybe(st.none() | st.just("user-42"), bad_ids | junk),
        "valid_from": maybe(st.none() | aware, bad_moments | junk),
        "valid_until": maybe(st.none() | aware, bad_moments | junk),
        "grounding": maybe(st.none() | st.just("I live in Lyon"), bad_texts | junk),
        "confidence": maybe(st.floats(0, 1), st.floats() | junk),
    }
)
extractors = either(
    maybe(
        make(
            ExtractorInfo,
            kind=maybe(st.sampled_from(["caller", "rules", "llm"]), st.just("human") | junk),
            name=maybe(st.just("caller") | good_texts, bad_texts | junk),
            version=maybe(st.just("1"), bad_texts | junk),
            model=maybe(st.none() | good_texts, bad_texts | junk),
        )
    )
)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "mem.db.index", embedder=None)
    with Memory.open(tmp_path / "mem.db", clock=FrozenClock(NOW), index=index) as opened:
        opened.ingest(
            SourceEvent(
                tenant="acme",
                event_id="evt-0",
                subject="user-42",
                actor=Actor(
                    id="user-42", authenticated=True, grants=frozenset({Grant(family="*")})
                ),
                channel="chat",
                occurred_at=NOW,
                text="I live in Lyon.",
            ),
            [Claim(family="home_city", kind="fact", statement="Lives in Lyon", value="Lyon")],
        )
        yield opened


def store_of(memory: Memory) -> Path:
    return Path(memory.url.removeprefix("sqlite:///"))


def accepted_or_refused(memory: Memory, call: Callable[[], object]) -> object:
    """Run ``call``: it returns, or raises a MemledgerError and the store is unchanged."""
    db = store_of(memory)
    before = snapshot(db)
    try:
        result = call()
    except MemledgerError as exc:
        note(f"refused: {type(exc).__name__}")
        assert snapshot(db) == before, "a refused input changed the store"
        return None
    note(f"accepted: {type(result).__name__}")
    return result


# -- construction -----------------------------------------------------------------------


@FUZZ
@given(actors, event_fields, claim_fields, grants)
def test_records_are_built_whole_or_refused(
    actor: Make, event: dict[str, Any], claim: dict[str, Any], grant: Any
) -> None:
    built_actor = build(Actor, actor.fields)
    if built_actor is not None:
        for g in built_actor.grants:
            assert Grant.parse(str(g)) == g
    source = build(SourceEvent, event)
    if source is not None:  # what was accepted is safe for json and for the store
        source.content_hash().encode()
        canonical_json(source.metadata).encode()
    made = build(Claim, claim)
    if made is not None:
        canonical_json(made.value).encode()
    if isinstance(grant, str):
        parsed = build(Grant.parse, {"text": grant})  # type: ignore[arg-type]
        assert parsed is None or Grant.parse(str(parsed)) == parsed


# -- the Python entry points ------------------------------------------------------------


@FUZZ
@given(
    event=event_fields,
    claims=either(
        maybe(
            st.none()
            | st.lists(either(maybe(claim_fields.map(lambda f: Make(Claim, f)))), max_size=3)
        )
    ),
    complete=either(maybe(st.booleans())),
    extractor=extractors,
)
def test_ingest_accepts_or_refuses_and_a_refusal_changes_nothing(
    memory: Memory, event: dict[str, Any], claims: Any, complete: Any, extractor: Any
) -> None:
    source = build(SourceEvent, event)
    if source is None:
        return
    if isinstance(claims, list):
        claims = [build(Claim, c.fields) if isinstance(c, Make) else c for c in claims]
    try:
        extractor = resolve(extractor)
    except MemledgerError:
        return
    accepted_or_refused(
        memory,
        lambda: memory.ingest(source, claims, complete=complete, extractor=extractor),
    )


reads = mostly(
    {
        "subject": maybe(st.just("user-42")),
        "family": maybe(families),
        "tenant": maybe(st.just("acme")),
        "scope": maybe(st.none() | st.just("global")),
        "valid_at": maybe(st.none() | moments),
        "as_of": maybe(st.none() | moments),
        "min_revision": maybe(st.none() | st.integers(0, 5) | big_ints),
        "query": maybe(st.just("where do I live") | texts),
        "k": maybe(st.integers(1, 10) | big_ints),
        "settings": maybe(st.none() | st.builds(RecallSettings), junk),
        "memory_id": maybe(st.just("mem-1") | ids),
        "reason": maybe(st.just("asked") | texts),
    }
)


@FUZZ
@given(reads)
def test_reads_and_revocations_accept_or_refuse(memory: Memory, args: dict[str, Any]) -> None:
    a = args
    calls: list[Callable[[], object]] = [
        lambda: memory.current(
            a["subject"],
            a["family"],
            tenant=a["tenant"],
            scope=a["scope"],
            valid_at=a["valid_at"],
            as_of=a["as_of"],
            min_revision=a["min_revision"],
        ),
        lambda: memory.timeline(
            a["subject"],
            a["family"],
            tenant=a["tenant"],
            scope=a["scope"],
            as_of=a["as_of"],
            min_revision=a["min_revision"],
        ),
        lambda: memory.recall(
            a["query"],
            tenant=a["tenant"],
            subject=a["subject"],
            k=a["k"],
            valid_at=a["valid_at"],
            min_revision=a["min_revision"],
            settings=a["settings"],
        ),
        lambda: memory.revoke(a["memory_id"], tenant=a["tenant"], reason=a["reason"]),
        lambda: memory.revoke_family(
            a["subject"], a["family"], tenant=a["tenant"], reason=a["reason"]
        ),
        lambda: memory.forget(a["memory_id"], tenant=a["tenant"], reason=a["reason"]),
        lambda: memory.history(a["subject"], a["family"], tenant=a["tenant"]),
    ]
    for call in calls:
        accepted_or_refused(memory, call)


# -- the JSON wire format ---------------------------------------------------------------


json_junk = (
    json_like | depths.map(nested) | st.just(nested(60)) | moments.map(lambda m: m.isoformat())
)
wire_event = mostly(
    {
        "event_id": maybe(event_ids, json_junk),
        "subject": maybe(st.just("user-42"), json_junk),
        "actor": maybe(
            mostly(
                {
                    "id": maybe(st.just("user-42"), json_junk),
                    "authenticated": maybe(st.booleans(), json_junk),
                    "grants": maybe(
                        st.lists(good_grant_texts, max_size=3),
                        st.lists(bad_grant_texts, min_size=1, max_size=2) | json_junk,
                    ),
                }
            ),
            json_junk,
        ),
        "channel": maybe(st.just("chat"), json_junk),
        "occurred_at": maybe(
            st.just("2026-10-02T09:00:00Z") | aware.map(lambda m: m.isoformat()),
            bad_moments.map(lambda m: m.isoformat()) | json_junk,
        ),
        "text": maybe(st.just("I live in Lyon."), json_junk),
    },
    optional={
        "tenant": maybe(st.just("acme"), json_junk),
        "sequence": maybe(st.integers(0, 9), big_ints | json_junk),
        "metadata": maybe(
            st.dictionaries(good_texts, good_json, max_size=3),
            st.dictionaries(texts, json_junk, min_size=1, max_size=3) | json_junk,
        ),
        "claims": maybe(
            st.lists(
                mostly(
                    {
                        "family": maybe(families, bad_families | json_junk),
                        "kind": maybe(kinds, json_junk),
                        "statement": maybe(st.just("Lives in Lyon"), json_junk),
                        "value": maybe(good_json, json_junk),
                    },
                    optional={
                        "grounding": maybe(st.just("I live in Lyon"), json_junk),
                        "valid_from": maybe(
                            aware.map(lambda m: m.isoformat()),
                            bad_moments.map(lambda m: m.isoformat()) | json_junk,
                        ),
                        "confidence": maybe(st.floats(0, 1), json_junk),
                    },
                ),
                max_size=3,
            ),
            json_junk,
        ),
    },
)


def wire(**fields: object) -> str:
    """One event as JSON text, with ``fields`` changed."""
    body: dict[str, object] = {
        "event_id": "evt-w",
        "subject": "user-42",
        "actor": {"id": "user-42", "authenticated": True, "grants": ["home_city"]},
        "channel": "chat",
        "occurred_at": "2026-10-02T09:00:00Z",
        "text": "I live in Lyon.",
    }
    return json.dumps({**body, **fields})


def dumps(value: object) -> str:
    """JSON text as a client may send it: escapes for lone surrogates, any depth."""
    try:
        return json.dumps(value, default=repr)
    except (ValueError, RecursionError):
        return "[" * 100_000  # too deep to write: an unfinished document instead


@FUZZ
@given(
    st.one_of(
        wire_event,
        st.lists(wire_event, max_size=2),
        wire_event.map(lambda e: {**e, "unknown": 1}),
        json_junk,
    ).map(dumps)
    | st.text()
)
@example(wire(text="Lyon \ud800"))  # the cases, always tried
@example(wire(metadata={"k": "\udfff"}))
@example(wire(metadata=functools.reduce(lambda inner, _: {"a": inner}, range(500), {})))
@example(wire(occurred_at="0001-01-01T01:00:00+05:00"))
@example(wire(occurred_at="9999-12-31T23:00:00-05:00"))
@example(wire(sequence=2**63))
@example(wire(text="x" * 8_388_609))
@example(wire(actor={"id": "user-42", "grants": ["home_city:"]}))
@example(
    wire(claims=[{"family": "home_city", "kind": "fact", "statement": "s", "value": nested(70)}])
)
def test_the_wire_format_parses_or_refuses_and_ingest_agrees(memory: Memory, text: str) -> None:
    try:
        parsed = parse_events_json(text, tenant="acme")
    except MemledgerError as exc:
        message = str(exc)
        assert "\n" not in message
        message.encode("utf-8")  # printable on one line: no raw surrogates
        return
    for item in parsed:
        accepted_or_refused(
            memory, lambda item=item: memory.ingest(item.event, item.claims, complete=item.complete)
        )
