"""Context packets (issue 11): budget first, placement, routing, what a memory does not
prove, long material, traces and their exact replay after the store changed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger import (
    Actor,
    BudgetError,
    Claim,
    InvalidInputError,
    Memory,
    SourceEvent,
    TraceNotFoundError,
)
from memledger.domain.budget import SECTIONS, Budget, Piece, pack, place
from memledger.domain.records import Grant
from memledger.read.context import (
    Candidate,
    Constraint,
    LiveState,
    Material,
    assemble,
    header,
    render_item,
    route,
)
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.tokens import ApproxBpeTokenizer, WordPieceTokenizer

NOW = datetime(2026, 10, 28, 9, 30, tzinfo=UTC)
ACCOUNT = Actor(
    id="acct-9", authenticated=True, grants=frozenset({Grant(family="delivery_preference")})
)
ORDER = LiveState(
    name="live_order",
    value={"id": "7842", "status": "CREDIT_HOLD", "finance_approval": "not_recorded"},
    observed_at=NOW - timedelta(minutes=15),
    source="order-service",
)
POLICY = Constraint(
    id="credit-hold-v14",
    rule="Finance approval required before release",
    effective_from=datetime(2026, 10, 27, tzinfo=UTC),
)
ASK = "Release order 7842 like the last urgent shipment, delivered daily as usual"


def said(n: int, text: str, *, day: int, session: str = "s1") -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id=f"e{n}",
        subject="acct-9",
        actor=ACCOUNT,
        channel="chat",
        occurred_at=datetime(2026, 9, day, 10, tzinfo=UTC),
        text=text,
        metadata={"session": session},
    )


def daily(valid_until: datetime | None = None) -> Claim:
    return Claim(
        family="delivery_preference",
        kind="preference",
        statement="Daily regular shipments through October 31",
        value="daily",
        grounding="daily regular shipments",
        valid_until=valid_until,
    )


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    memory.ingest(
        said(1, "Please send daily regular shipments until the end of October.", day=1),
        [daily(datetime(2026, 11, 1, tzinfo=UTC))],
    )
    memory.ingest(
        said(2, "Thanks for releasing order 7311 as a one-time exception, urgent shipment.", day=20)
    )
    for n in range(3, 12):
        memory.ingest(said(n, f"The warehouse in Porto ships pallets on dock {n}.", day=21))
    memory.process()
    yield memory
    memory.close()


def test_the_order_7842_packet(memory: Memory) -> None:
    """Seed 000's packet: constraints and live state on top, authoritative with their
    observation time; the remembered preference with its id, revision, source and what
    it does not prove; the request last; within budget; stored as a trace."""
    packet = memory.context(
        ASK, tenant="acme", subject="acct-9", budget=700, live=[ORDER], constraints=[POLICY]
    )
    sections = [i.section for i in packet.items]
    assert sections[0] == "constraints" and sections[1] == "live_state"
    assert sections[-1] == "request" and packet.text.rstrip().endswith(f"request: {ASK}")
    assert [s for s in SECTIONS if s in sections] == list(dict.fromkeys(sections))
    assert packet.tokens <= 700 and ApproxBpeTokenizer().count(packet.text) == packet.tokens
    assert "authoritative: true" in packet.text and "observed_at" in packet.text
    preference = next(i for i in packet.memories if i.fields["family"] == "delivery_preference")
    assert preference.memory_id and preference.revision == 1
    assert preference.fields["does_not_prove"] == ["operational_setting: verify_in_account_service"]
    assert preference.fields["source"] == {
        "event": "e1",
        "actor": "acct-9",
        "channel": "chat",
        "authenticated": True,
    }
    exception = next(i for i in packet.memories if "7311" in str(i.fields["statement"]))
    assert "said_in_conversation: not_a_setting" in exception.fields["does_not_prove"]  # type: ignore[operator]
    assert all(i.memory_id and i.revision for i in packet.memories)
    relevance = [i.relevance for i in packet.memories]
    assert relevance == sorted(relevance)  # the most relevant nearest the request
    assert memory.replay(packet.trace_id, tenant="acme").matches


def test_a_budget_too_small_for_what_must_fit_is_refused_and_stores_nothing(
    memory: Memory,
) -> None:
    with pytest.raises(BudgetError, match="total budget"):
        memory.context(ASK, tenant="acme", budget=30, live=[ORDER], constraints=[POLICY])
    with pytest.raises(BudgetError, match="live_state section"):
        memory.context(
            ASK,
            tenant="acme",
            budget=Budget(total=900, sections={"live_state": 5}),
            live=[ORDER],
        )
    with memory.store.read() as unit:
        assert unit.traces("acme") == []
    for bad in (0, -5, 10**9):
        with pytest.raises(BudgetError):
            Budget(total=bad)
    with pytest.raises(BudgetError, match="unknown section"):
        Budget(total=100, sections={"footnotes": 5})  # type: ignore[dict-item]


def test_section_caps_leave_out_what_does_not_fit_with_a_reason(memory: Memory) -> None:
    capped = Budget(total=2000, sections={"memories": 120})
    packet = memory.context("Porto warehouse dock pallets", tenant="acme", budget=capped)
    used = sum(i.tokens for i in packet.memories)
    assert 0 < used <= 120
    assert {"section_budget"} <= {e.reason for e in packet.excluded}
    wide = memory.context("Porto warehouse dock pallets", tenant="acme", budget=2000)
    assert len(wide.memories) > len(packet.memories)


def test_replay_rebuilds_the_packet_after_the_store_changed(
    memory: Memory, clock: FrozenClock
) -> None:
    packet = memory.context(ASK, tenant="acme", subject="acct-9", budget=900, live=[ORDER])
    first = next(i for i in packet.memories if i.fields["family"] == "delivery_preference")
    # the customer says it again (a mention: revision 2), then corrects it, and more
    # turns arrive
    clock.set(NOW + timedelta(days=1))
    memory.ingest(
        said(39, "Daily regular shipments, as agreed.", day=28),
        [daily(datetime(2026, 11, 1, tzinfo=UTC))],
    )
    again = memory.get(first.memory_id or "", tenant="acme")
    assert again.revision == 2 and again.mentions == 2
    memory.ingest(
        said(40, "Actually, weekly shipments from now on.", day=29),
        [
            Claim(
                family="delivery_preference",
                kind="preference",
                statement="Weekly shipments",
                value="weekly",
                grounding="weekly shipments",
            )
        ],
    )
    memory.ingest(said(41, "The Porto dock 3 is closed for repairs.", day=29))
    memory.process()
    now = memory.context(ASK, tenant="acme", subject="acct-9", budget=900, live=[ORDER])
    assert now.text != packet.text
    replayed = memory.replay(packet.trace_id, tenant="acme")
    assert replayed.matches and replayed.packet.text == packet.text
    assert replayed.packet.items == packet.items and not replayed.revoked
    # revoked since: still shown (an audit of what the model saw), and said so;
    # a new packet never shows it
    memory.revoke(first.memory_id or "", tenant="acme", reason="customer asked")
    replayed = memory.replay(packet.trace_id, tenant="acme")
    assert replayed.revoked == (first.memory_id,) and replayed.matches
    after = memory.context(ASK, tenant="acme", subject="acct-9", budget=900, live=[ORDER])
    assert first.memory_id not in {i.memory_id for i in after.items}
    assert first.memory_id not in after.text
    with pytest.raises(TraceNotFoundError):
        memory.replay("ctx-nope", tenant="acme")
    with pytest.raises(TraceNotFoundError):
        memory.replay(packet.trace_id, tenant="globex")  # another tenant's trace


def test_a_replay_of_a_trace_whose_memory_is_gone_does_not_match(memory: Memory) -> None:
    packet = memory.context(ASK, tenant="acme", subject="acct-9", budget=900)
    gone = packet.memories[0].memory_id
    with memory.store.write() as unit:  # erased behind the trace's back (issue 14's erasure)
        unit.conn.execute("DELETE FROM records WHERE memory_id = ?", (gone,))  # type: ignore[attr-defined]
    replayed = memory.replay(packet.trace_id, tenant="acme")
    assert not replayed.matches and replayed.missing == (gone,)


@pytest.mark.parametrize(
    ("request_text", "corpus", "memory_only"),
    [
        ("How do I configure a credit hold release in the order system?", True, False),
        ("What is the procedure for expedited orders?", True, False),
        ("What did we decide last Tuesday about the Porto shipments?", False, True),
        ("How do I get my order 7842 released like last time?", False, True),
        ("Tell me about the Expedited Orders Handbook", True, False),  # a corpus entity
    ],
)
def test_routing(request_text: str, corpus: bool, memory_only: bool) -> None:
    routing = route(
        request_text,
        at=NOW,
        corpus_entities=frozenset({"expedited orders handbook"}),
        has_corpus=True,
    )
    assert routing.memory and routing.corpus == corpus
    assert (routing.memory and not routing.corpus and not routing.long_context) == memory_only
    assert routing.reasons[0].startswith("specificity")
    assert not route(request_text, at=NOW, has_corpus=False).corpus
    assert route(request_text, at=NOW, has_material=True).long_context


def test_supplied_material_goes_to_long_context_most_related_parts_first(
    memory: Memory,
) -> None:
    paragraphs = [f"Clause {n}: the parties meet every {n} weeks." for n in range(30)]
    paragraphs[17] = "Clause 17: a credit hold is released only after Finance approval."
    contract = Material(name="contract.txt", text="\n\n".join(paragraphs))
    packet = memory.context(
        "When is a credit hold released under the contract?",
        tenant="acme",
        budget=Budget(total=1500, sections={"long_material": 60}),
        material=[contract],
    )
    assert packet.routing.long_context
    parts = [i for i in packet.items if i.section == "long_material"]
    assert "contract.txt#18" in [p.key for p in parts]  # the clause about credit holds
    assert sum(p.tokens for p in parts) <= 60
    assert [int(p.key.split("#")[1]) for p in parts] == sorted(
        int(p.key.split("#")[1]) for p in parts
    )  # in the document's order
    assert any(e.section == "long_material" for e in packet.excluded)


def test_bad_input_is_refused_before_anything_is_stored(memory: Memory) -> None:
    for call in (
        lambda: memory.context("", tenant="acme"),
        lambda: memory.context(ASK, tenant="bad tenant!"),
        lambda: memory.context(ASK, tenant="acme", live=[ORDER, ORDER]),
        lambda: memory.context(
            ASK,
            tenant="acme",
            material=[Material(name="a", text="x"), Material(name="a", text="y")],
        ),
        lambda: memory.context(ASK, tenant="acme", constraints=["no"]),  # type: ignore[list-item]
    ):
        with pytest.raises(InvalidInputError):
            call()
    with pytest.raises(InvalidInputError):
        LiveState(name="x", value={"at": object()}, observed_at=NOW)  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError):
        LiveState(name="x", value={}, observed_at=datetime(2026, 1, 1))
    with memory.store.read() as unit:
        assert unit.traces("acme") == []


@pytest.mark.parametrize("bad", ["\ud800", "\x00"], ids=["surrogate", "nul"])
def test_live_state_and_material_must_be_text(bad: str) -> None:
    """Else the packet's text reaches its hash (and the trace its store) unencodable."""
    for make in (
        lambda: LiveState(name="x", value={"state": bad}, observed_at=NOW),
        lambda: LiveState(name="x", value={bad: 1}, observed_at=NOW),
        lambda: LiveState(name="x", value={"a": [{"b": bad}]}, observed_at=NOW),
        lambda: LiveState(name="x", value={}, observed_at=NOW, source=bad),
        lambda: Material(name=f"notes{bad}", text="x"),
    ):
        with pytest.raises(InvalidInputError, match=r"lone surrogate|NUL"):
            make()


class Lumpy:
    """A tokenizer whose count of a whole is more than the sum of its parts."""

    name = "lumpy"

    def count(self, text: str, /) -> int:
        lines = len(text.splitlines())
        return lines + 5 * (lines // 10)


def test_a_tokenizer_that_is_not_additive_still_never_exceeds_the_budget(
    memory: Memory,
) -> None:
    packet = memory.context(
        "Porto warehouse dock pallets", tenant="acme", budget=60, tokenizer=Lumpy()
    )
    assert packet.tokens == Lumpy().count(packet.text) <= 60
    assert packet.tokenizer == "lumpy"
    assert any(e.reason == "total_budget" for e in packet.excluded)


def test_the_packaged_tokenizer_counts_wordpieces() -> None:
    words = WordPieceTokenizer()
    assert words.count("") == 0
    assert words.count("hello world") == 2
    assert words.count("unbelievably") > 1  # split into word pieces
    assert ApproxBpeTokenizer().count("hello world") == 2


# -- the budget as a property --------------------------------------------------------------

_SECTION = st.sampled_from(["long_material", "documents", "memories"])
_WORDS = st.lists(st.sampled_from("alpha beta gamma delta order ship dock 7842 Porto".split()))


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    out = [Candidate(section="request", key="request", fields={"text": "release order 7842"})]
    for n in range(draw(st.integers(0, 3))):
        out.append(
            Candidate(
                section=draw(st.sampled_from(["constraints", "live_state"])),
                key=f"fixed-{n}",
                fields={"rule": " ".join(draw(_WORDS)) or "x"},
                order=n,
            )
        )
    for n in range(draw(st.integers(0, 25))):
        text = " ".join(draw(_WORDS)) + "\nsecond line" * draw(st.integers(0, 2))
        out.append(
            Candidate(
                section=draw(_SECTION),
                key=f"k{n}",
                fields={"memory_id": f"mem-{n}", "revision": n + 1, "statement": text},
                relevance=draw(st.floats(0, 10, allow_nan=False)),
                order=n,
                memory_id=f"mem-{n}",
                revision=n + 1,
            )
        )
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    found=candidates(),
    total=st.integers(1, 600),
    caps=st.dictionaries(_SECTION, st.integers(1, 300)),
)
def test_a_packet_never_exceeds_its_budget(
    found: list[Candidate], total: int, caps: dict[str, int]
) -> None:
    budget = Budget(total=total, sections=caps)  # type: ignore[arg-type]
    counter = ApproxBpeTokenizer()
    try:
        items, left, tokens, text = assemble(found, budget=budget, tokenizer=counter)
    except BudgetError:  # refused only when what must fit does not
        need: dict[str, int] = {}
        for c in found:
            if c.section in ("request", "constraints", "live_state"):
                block = counter.count(render_item(c.fields, c.section, c.key))
                first = 0 if c.section in need else counter.count(header(c.section))
                need[c.section] = need.get(c.section, 0) + block + first
        assert sum(need.values()) > total or any(
            need.get(section, 0) > cap for section, cap in caps.items()
        )
        return
    assert tokens == counter.count(text) <= total
    sections = [i.section for i in items]
    assert sections[-1] == "request"
    assert [s for s in SECTIONS if s in sections] == list(dict.fromkeys(sections))
    for section, cap in caps.items():
        assert sum(i.tokens for i in items if i.section == section) <= cap
    for section in ("documents", "memories"):
        relevance = [i.relevance for i in items if i.section == section]
        assert relevance == sorted(relevance)
    keys = {(i.section, i.key) for i in items} | {(e.section, e.key) for e in left}
    assert keys == {(c.section, c.key) for c in found}  # nothing lost without a reason
    assert all(i.memory_id and i.revision for i in items if i.section == "memories")


def test_pack_takes_the_most_relevant_first() -> None:
    pieces = [
        Piece(section="request", key="r", tokens=5),
        Piece(section="memories", key="low", tokens=10, relevance=1.0),
        Piece(section="memories", key="high", tokens=10, relevance=9.0),
        Piece(section="memories", key="mid", tokens=10, relevance=5.0),
    ]
    packed = pack(pieces, Budget(total=27), headers={"memories": 2})
    assert [p.key for p in packed.included] == ["mid", "high", "r"]
    assert [(p.key, why) for p, why in packed.excluded] == [("low", "total_budget")]
    assert packed.tokens == 27
    assert [p.key for p in place(pieces)] == ["low", "mid", "high", "r"]


def test_a_corpus_entity_named_by_the_live_state_routes_to_the_corpus() -> None:
    entities = frozenset({"credit hold", "expedited orders"})
    ask = "Release order 7842 like the last urgent shipment"
    assert not route(ask, at=NOW, corpus_entities=entities, has_corpus=True).corpus
    routed = route(
        ask, at=NOW, corpus_entities=entities, has_corpus=True, live_words="7842 CREDIT_HOLD"
    )
    assert routed.corpus and "credit hold" in routed.reasons[-1]
    # a part of a word is not the entity
    assert not route(
        "the holdings", at=NOW, corpus_entities=frozenset({"hold"}), has_corpus=True
    ).corpus


def test_the_sessions_recent_turns_sit_just_before_the_request(
    memory: Memory, tmp_path: Path
) -> None:
    from memledger.session import CompactionPolicy, SessionMemory

    policy = CompactionPolicy(window_turns=4, every_turns=2)
    with SessionMemory(tmp_path / "s.sessions", policy=policy) as sessions:
        for n in range(8):
            role = "user" if n % 2 == 0 else "assistant"
            sessions.add_turn("acme", "call-1", role=role, text=f"Turn {n} about order 7842.")
        view = sessions.view("acme", "call-1")
    assert view.summary is not None
    packet = memory.context(ASK, tenant="acme", budget=2000, session=view)
    sections = [i.section for i in packet.items]
    assert sections[-2:] == ["session", "request"] and sections.count("session") == len(view.items)
    keys = [i.key for i in packet.items if i.section == "session"]
    assert keys == [f"session#{item.seq}" for item in view.items]  # summary first, in order
    tight = Budget(total=2000, sections={"session": 60})
    short = memory.context(ASK, tenant="acme", budget=tight, session=view)
    kept = [i.key for i in short.items if i.section == "session"]
    newest = f"session#{view.items[-1].seq}"
    assert kept and newest in kept and len(kept) < len(view.items)
    assert kept == sorted(kept, key=lambda k: int(k.split("#")[1]))
    assert memory.replay(short.trace_id, tenant="acme").matches
