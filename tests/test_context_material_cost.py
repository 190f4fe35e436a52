"""Long material costs what can be placed: paragraphs scored in one scan, blocks
counted only when they could fit, and the packet the same as counting every block."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger import BudgetError, Memory
from memledger.domain.budget import Budget, Piece, pack
from memledger.domain.gates import content_words
from memledger.eval._serve_tenants import material
from memledger.read._material import shares
from memledger.read._sizing import material_floor
from memledger.read.context import Candidate, Material, assemble, render_item
from memledger.store import open_store
from memledger.tokens import ApproxBpeTokenizer


class EveryBlock(ApproxBpeTokenizer):
    """The same counts, and not the packaged tokenizer itself: every block is
    counted, as without floors (the reference the lazy path must equal)."""


_TRICKY = [
    "the", "courier", "couriers", "call", "calls", "called", "calling", "deliveries",
    "delivery", "boxes", "box", "Straße", "strasse", "7842", "x", "a", "I", "it's",
    "re-deliver", "ÉTÉ", "été", "ﬁle", "file", "wished", "wishes", "dock", "docks",
]  # fmt: skip
_WORD = st.one_of(st.sampled_from(_TRICKY), st.text(min_size=1, max_size=12))
_SEP = st.sampled_from([" ", "  ", "\n", "\t", ", ", ". ", '"', "\\", "\x1f", ":", "'"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_WORD, _SEP), max_size=30))
    return "".join(w + s for w, s in parts)


@settings(max_examples=300, deadline=None)
@given(request=texts(), paragraph=texts())
def test_a_paragraphs_share_is_the_share_of_all_its_content_words(
    request: str, paragraph: str
) -> None:
    wanted = frozenset(content_words(request))
    whole = len(wanted & content_words(paragraph)) / len(wanted) if wanted else 0.0
    assert shares(wanted, [paragraph]) == [whole]


@settings(max_examples=300, deadline=None)
@given(text=texts(), part=st.integers(1, 10_000), name=st.sampled_from(["log", "a b", 'x"y']))
def test_a_material_floor_is_never_above_its_rendered_count(
    text: str, part: int, name: str
) -> None:
    fields = {"name": name, "part": part, "text": text}
    counted = ApproxBpeTokenizer().count(render_item(fields, "long_material", "k"))
    assert material_floor(text) <= counted


_SECTION = st.sampled_from(["long_material", "documents", "memories", "session"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(
        st.tuples(_SECTION, st.integers(1, 80), st.integers(0, 80), st.floats(0, 3)),
        max_size=25,
    ),
    total=st.integers(1, 400),
    caps=st.dictionaries(_SECTION, st.integers(1, 200)),
)
def test_packing_on_floors_is_the_packing_on_exact_sizes(
    sizes: list[tuple[str, int, int, float]], total: int, caps: dict[str, int]
) -> None:
    budget = Budget(total=total, sections=caps)  # type: ignore[arg-type]
    exact = {f"k{n}": size for n, (_, size, _, _) in enumerate(sizes)}
    request = Piece(section="request", key="r", tokens=1)
    full = [request] + [
        Piece(section=s, key=f"k{n}", tokens=size, relevance=r, order=n)  # type: ignore[arg-type]
        for n, (s, size, _, r) in enumerate(sizes)
    ]
    floors = [request] + [
        Piece(section=s, key=f"k{n}", tokens=max(0, size - less), relevance=r, order=n)  # type: ignore[arg-type]
        for n, (s, size, less, r) in enumerate(sizes)
    ]
    headers = {"long_material": 2, "memories": 1}
    try:
        want = pack(full, budget, headers=headers)
    except BudgetError:
        with pytest.raises(BudgetError):
            pack(floors, budget, headers=headers, exact=lambda p: exact[p.key])
        return
    got = pack(floors, budget, headers=headers, exact=lambda p: exact[p.key])
    assert got.included == want.included and got.tokens == want.tokens
    assert [(p.key, why) for p, why in got.excluded] == [(p.key, why) for p, why in want.excluded]


def _candidates(text: str, request: str) -> list[Candidate]:
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    wanted = frozenset(content_words(request))
    found = [Candidate(section="request", key="request", fields={"text": request})]
    for part, (paragraph, share) in enumerate(
        zip(paragraphs, shares(wanted, paragraphs), strict=True)
    ):
        found.append(
            Candidate(
                section="long_material",
                key=f"doc#{part + 1}",
                fields={"name": "doc", "part": part + 1, "text": paragraph},
                relevance=share,
                order=part,
            )
        )
    return found


def _random_material(rng: random.Random) -> str:
    words = 'courier call delivery the dock Porto 7842 north-warehouse pallets\' "late"'.split()
    words += ["déjà", "x\ty", "a\\b", "line\nbreak", "supercalifragilistic", "!!", "ies"]
    paragraphs = [
        " ".join(rng.choice(words) for _ in range(rng.randint(1, 60)))
        for _ in range(rng.randint(1, 120))
    ]
    return "\n\n".join(paragraphs)


@pytest.mark.parametrize("seed", range(40))
def test_assembly_on_floors_equals_counting_every_block(seed: int) -> None:
    rng = random.Random(seed)
    request = rng.choice(["when does the courier call?", "dock 7842 pallets", "x"])
    found = _candidates(_random_material(rng), request)
    caps = rng.choice([{}, {"long_material": rng.randint(5, 400)}])
    budget = Budget(total=rng.randint(20, 2500), sections=caps)  # type: ignore[arg-type]
    try:
        want = assemble(found, budget=budget, tokenizer=EveryBlock())
    except BudgetError:
        with pytest.raises(BudgetError):
            assemble(found, budget=budget, tokenizer=ApproxBpeTokenizer())
        return
    assert assemble(found, budget=budget, tokenizer=ApproxBpeTokenizer()) == want


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"))
    yield memory
    memory.close()


def test_a_large_material_counts_only_what_can_be_placed(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """250,000 characters (about 500 paragraphs) in a 2,000-token budget: a few dozen
    blocks counted, and the packet the one counting every block gives, replayed."""
    doc = Material(name="shipping-log", text=material(250_000))
    ask = "when does the courier call before delivery?"
    every = memory.context(ask, tenant="t", budget=2000, material=[doc], tokenizer=EveryBlock())
    counted: list[str] = []
    count = ApproxBpeTokenizer.count

    def counting(self: ApproxBpeTokenizer, text: str, /) -> int:
        counted.append(text)
        return count(self, text)

    monkeypatch.setattr(ApproxBpeTokenizer, "count", counting)
    packet = memory.context(ask, tenant="t", budget=2000, material=[doc])
    parts = [i for i in packet.items if i.section == "long_material"]
    assert len(doc.text.split("\n\n")) > 400 and 10 < len(parts) < 40
    assert len(counted) < 3 * len(parts)
    assert packet.text == every.text and packet.sha256 == every.sha256
    assert packet.items == every.items and packet.excluded == every.excluded
    assert memory.replay(packet.trace_id, tenant="t").matches
