"""``LLMExtractor`` with prompt ``claims-v3``: open attributes of the people who speak.

The model's answers are scripted on a real local HTTP server (``FakeChatServer``);
what they become is read back from a real SQLite store after ``Memory.ingest`` and
``Memory.process``: the write policy gives an authenticated user's own attributes
their own say, a single-valued attribute closes its old window, an additive one keeps
every value, another person's attribute stays theirs, and the lineage names the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chat_helpers import claims_answer, proposal
from memledger import Memory
from memledger.domain.families import Schema
from memledger.testing.openai_server import FakeChatServer, RecordedRequest
from memledger.write.extract import _attributes
from memledger.write.extract._attributes import ATTRIBUTES, Attribute
from memledger.write.extract.llm import DEFAULT_PROMPT_VERSION, LLMExtractor
from memledger.write.extract.prompts import claims_v2, claims_v3
from memledger.write.extract.rules import propose
from test_open_attributes import AT, said

pytestmark = pytest.mark.usefixtures("no_proxies")


def attribute(scope: str, value: object, statement: str, grounding: str, **fields: object) -> Any:
    """One ``attribute`` claim object as a model would write it."""
    said = {"statement": statement, "value": value, "scope": scope, "grounding": grounding}
    return proposal(**{"family": "attribute", **said, "polarity": "assert", **fields})


class Script:
    """Answers each request by the message it carries: ``text -> answer``."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    def __call__(self, request: RecordedRequest) -> str:
        user = request.content_of("user")
        for text, reply in self.answers.items():
            if text in user:
                return reply
        return claims_answer()


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(no_proxies: None, script: Script) -> Iterator[FakeChatServer]:
    """The shared fixture's server, answering by ``script`` what is not pushed."""
    with FakeChatServer(script) as running:
        yield running


@pytest.fixture
def extractor(server: FakeChatServer) -> Iterator[LLMExtractor]:
    with LLMExtractor(base_url=server.base_url, model="fake-model", timeout=5.0) as built:
        yield built


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    opened = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    yield opened
    opened.close()


Run = Callable[..., None]
"""``run((text, answer), ...)``: one event per turn (a day apart), each answered by the
model with its ``answer``, ingested and processed."""


@pytest.fixture
def run(memory: Memory, extractor: LLMExtractor, script: Script) -> Run:
    def ingested_and_processed(*turns: tuple[str, str]) -> None:
        for n, (text, reply) in enumerate(turns, 1):
            script.answers[text] = reply
            memory.ingest(said(n, text))
        outcomes = memory.process(extractor=extractor).outcomes
        assert outcomes == {"committed": len(turns)}, outcomes

    return ingested_and_processed


VEGETARIAN = (
    "I'm vegetarian.",
    claims_answer(attribute("diet", "vegetarian", "Is vegetarian", "vegetarian")),
)


def current(memory: Memory) -> set[tuple[str, object]]:
    return {(r.scope, r.value) for r in memory.current("ana", "attribute", tenant="acme")}


def history(memory: Memory, scope: str) -> list[Any]:
    return [r for r in memory.history("ana", "attribute", tenant="acme") if r.scope == scope]


# -- the request ------------------------------------------------------------------------------


def test_claims_v3_is_the_default_and_its_request_allows_family_attribute(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    assert DEFAULT_PROMPT_VERSION == "claims-v3" == extractor.info.prompt_version
    server.push(claims_answer())
    extractor.extract(said(1, "I'm vegetarian."))

    (request,) = server.requests
    sent = request.payload["response_format"]["json_schema"]
    assert sent["strict"] is True
    assert sent["schema"] == claims_v3.response_schema(Schema.default())
    mine, others = sent["schema"]["properties"]["claims"]["items"]["anyOf"]
    assert mine["properties"]["family"]["enum"] == ["attribute"]
    assert mine["properties"]["scope"]["pattern"] == claims_v3.scope_pattern()
    assert mine["properties"]["polarity"]["enum"] == ["assert", "retract"]
    assert "attribute" not in others["properties"]["family"]["enum"]
    assert "home_city" in others["properties"]["family"]["enum"]

    system = request.content_of("system")
    assert system.startswith(claims_v2.system_prompt(Schema.default()).split("\nFamilies:")[0])
    assert '"person:sister/diet"' in system and '"pet:dog-named-rex"' in system
    assert '"Is vegetarian"' in system and '"Has a dog named Rex"' in system
    for words in ("wishes", "quotes", "jokes", "hypotheticals", "the speaker is the assistant"):
        assert words in system.replace("\n   ", " ")
    assert "Speaker: user" in request.content_of("user")


def _section(system: str, start: str, end: str) -> set[str]:
    body = system[system.index(start) : system.index(end)]
    return set(re.findall(r"[a-z_]+", body))


def test_the_prompt_says_which_attributes_are_single_valued_and_which_additive() -> None:
    system = claims_v3.system_prompt(Schema.default())
    single = _section(system, "- single-valued", "- additive")
    additive = _section(system, "- additive", "- someone else's")
    for name, spec in ATTRIBUTES.items():
        if name in claims_v3.ELSEWHERE:
            assert name not in single | additive  # the speaker's own is another family's
        else:
            assert (name in additive, name in single) == (spec.additive, not spec.additive), name


def test_the_prompt_and_the_schema_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_attributes.ATTRIBUTES, "zodiac_sign", Attribute(False, "Is a {v}"))
    monkeypatch.setitem(_attributes.ATTRIBUTES, "tattoo", Attribute(True, "Has a {v} tattoo"))
    system = claims_v3.system_prompt(Schema.default())
    assert "zodiac_sign" in _section(system, "- single-valued", "- additive")
    assert "tattoo" in _section(system, "- additive", "- someone else's")
    pattern = re.compile(claims_v3.scope_pattern())
    assert pattern.match("zodiac_sign") and pattern.match("tattoo:rose")
    assert not pattern.match("zodiac_sign:leo") and not pattern.match("tattoo")


def test_the_answer_schema_matches_the_validating_model() -> None:
    schema: Any = claims_v3.response_schema(Schema.default())
    branches = schema["properties"]["claims"]["items"]["anyOf"]
    for branch in branches:
        assert set(branch["required"]) == set(branch["properties"])  # strict: all required
        assert set(branch["properties"]) == set(claims_v3.ClaimOut.model_fields)
        assert branch["additionalProperties"] is False
    families = [f for b in branches for f in b["properties"]["family"]["enum"]]
    assert sorted(families) == sorted(Schema.default().families)
    assert json.loads(json.dumps(schema)) == schema
    # a schema without family attribute gets claims-v2's answer schema
    plain = Schema.of([f for f in Schema.default().families.values() if f.name != "attribute"])
    assert claims_v3.response_schema(plain) == claims_v2.response_schema(plain)
    assert 'Family "attribute"' not in claims_v3.system_prompt(plain)


@pytest.mark.parametrize(
    "text",
    [
        "I'm vegetarian",
        "I have a dog named Rex",
        "I'm allergic to peanuts",
        "I speak French",
        "My first language is Portuguese",
        "My sister is a nurse",
        "my bf's allergic to cats",
        "My dad retired and now he's taken up woodworking",
        "Dune is my favourite book",
    ],
)
def test_every_scope_the_rule_extractor_writes_fits_the_pattern(text: str) -> None:
    scopes = [c.scope for c in propose(text, AT).claims if c.family == "attribute"]
    assert scopes
    for scope in scopes:
        assert re.match(claims_v3.scope_pattern(), scope), scope
        assert claims_v3.attribute_scope(scope, None) == scope  # already normal: unchanged


# -- through ingest and process ---------------------------------------------------------------


def test_a_new_diet_closes_the_old_window_at_the_time_the_turn_gives(
    memory: Memory, extractor: LLMExtractor, script: Script
) -> None:
    since = datetime(2026, 7, 1, tzinfo=UTC)  # "last month", said on 2026-08-14
    script.answers["I've been pescatarian since last month."] = claims_answer(
        attribute(
            "diet",
            "pescatarian",
            "Is pescatarian",
            "I've been pescatarian since last month",
            valid_from="2026-07-01T00:00:00Z",
        )
    )
    script.answers["I'm vegetarian."] = claims_answer(
        attribute("diet", "vegetarian", "Is vegetarian", "I'm vegetarian")
    )
    memory.ingest(said(1, "I'm vegetarian."))
    memory.ingest(said(2, "I've been pescatarian since last month.", days=60))
    assert memory.process(extractor=extractor).outcomes == {"committed": 2}

    assert current(memory) == {("diet", "pescatarian")}
    (now,) = memory.current("ana", "attribute", tenant="acme")
    assert now.valid_from == since and now.kind == "fact"  # own say: no observation
    assert now.extractor.prompt_version == "claims-v3"
    assert (now.extractor.kind, now.extractor.model) == ("llm", "fake-model")
    vegetarian = [r for r in history(memory, "diet") if r.value == "vegetarian"]
    assert any(r.valid_until == since for r in vegetarian)
    before = memory.current("ana", "attribute", tenant="acme", valid_at=since - timedelta(days=1))
    assert {(r.scope, r.value) for r in before} == {("diet", "vegetarian")}


def test_an_additive_attribute_keeps_every_value(memory: Memory, run: Run) -> None:
    run(
        (
            "I have a dog named Rex.",
            claims_answer(
                attribute(
                    "pet:dog-named-rex", "dog named rex", "Has a dog named Rex", "a dog named Rex"
                )
            ),
        ),
        (
            "We also adopted a cat.",
            claims_answer(attribute("pet:cat", "cat", "Has a cat", "We also adopted a cat")),
        ),
    )
    assert current(memory) == {("pet:dog-named-rex", "dog named rex"), ("pet:cat", "cat")}


def test_another_persons_attribute_is_theirs_and_leaves_the_speakers_alone(
    memory: Memory, run: Run
) -> None:
    run(
        VEGETARIAN,
        (
            "My sister is vegan, and she's a nurse.",
            claims_answer(
                attribute("person:sister/diet", "vegan", "Sister: is vegan", "My sister is vegan"),
                attribute(
                    "person:sister/role", "nurse", "Sister: works as a nurse", "she's a nurse"
                ),
            ),
        ),
    )
    assert current(memory) == {
        ("diet", "vegetarian"),
        ("person:sister/diet", "vegan"),
        ("person:sister/role", "nurse"),
    }
    assert memory.current("ana", "role", tenant="acme") == ()


def test_a_retraction_closes_the_value_as_retracted(memory: Memory, run: Run) -> None:
    run(
        (
            "I'm allergic to cats and to peanuts.",
            claims_answer(
                attribute("allergy:cats", "cats", "Is allergic to cats", "allergic to cats"),
                attribute("allergy:peanuts", "peanuts", "Is allergic to peanuts", "to peanuts"),
            ),
        ),
        (
            "I'm not allergic to cats any more.",
            claims_answer(
                attribute(
                    "allergy:cats",
                    "cats",
                    "No longer allergic to cats",
                    "not allergic to cats any more",
                    polarity="retract",
                )
            ),
        ),
    )
    assert current(memory) == {("allergy:peanuts", "peanuts")}
    cats = {r.status: r for r in history(memory, "allergy:cats")}
    assert set(cats) == {"retracted", "active"}  # the open window, closed by the retraction
    assert cats["active"].valid_until == AT + timedelta(days=2)  # as of the turn that said so


def test_an_off_convention_spelling_lands_in_the_rule_extractors_slot(
    memory: Memory, run: Run
) -> None:
    run(
        VEGETARIAN,
        (
            "Now I'm vegan.",
            claims_answer(
                attribute(" Diet:Vegan ", "Vegan", "Is vegan", "Now I'm vegan", kind="preference")
            ),
        ),
        (
            "My dad has a dog named Rex.",
            claims_answer(
                attribute(
                    "person:Dad/Pet: Dog Named Rex",
                    "a dog named Rex",
                    "Father: has a dog",
                    "dog named Rex",
                )
            ),
        ),
    )
    # one slot for the diet, so the new one closed the old; the dad is a father, as the
    # rule extractor reads "my dad"
    assert current(memory) == {
        ("diet", "vegan"),
        ("person:father/pet:dog-named-rex", "dog named rex"),
    }


def test_a_scope_of_no_attributes_shape_drops_that_claim_only(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    text = "I'm vegetarian, I work as a nurse and I love jazz."
    server.push(
        claims_answer(
            attribute("diet", "vegetarian", "Is vegetarian", "I'm vegetarian"),
            attribute("food preferences", "vegetarian", "Is vegetarian", "I'm vegetarian"),
            attribute("role", "nurse", "Works as a nurse", "I work as a nurse"),
            attribute("pet", None, "Has a pet", "I'm vegetarian"),
            attribute("person:sister/diet/extra", "vegan", "Is vegan", "I'm vegetarian"),
            attribute("favourite_music", "jazz", "Favourite music is jazz", "I love jazz"),
        )
    )
    extraction = extractor.extract(said(1, text))
    assert [(c.scope, c.value, c.kind) for c in extraction.claims] == [
        ("diet", "vegetarian", "fact"),
        ("favourite_music", "jazz", "preference"),  # the table's kind, whatever was proposed
    ]
    assert extraction.complete
    dropped = extraction.dropped
    assert len(dropped) == 4
    assert dropped[0].startswith("claim 1 ('attribute'): scope 'food preferences'")
    assert "is not an attribute" in dropped[0]
    assert "the speaker's role is family 'role'" in dropped[1]
    assert "'pet' holds several values" in dropped[2]
    assert "person:<relation>/<attribute>" in dropped[3]


def test_claims_v2_is_unchanged(server: FakeChatServer) -> None:
    server.push(claims_answer(attribute("Diet", "Vegetarian", "Is vegetarian", "I'm vegetarian")))
    with LLMExtractor(base_url=server.base_url, model="m", prompt_version="claims-v2") as old:
        (claim,) = old.extract(said(1, "I'm vegetarian.")).claims
        assert old.info.prompt_version == "claims-v2"
    assert (claim.scope, claim.value) == ("Diet", "Vegetarian")  # v2 asked no conventions
    (request,) = server.requests
    assert request.content_of("system") == claims_v2.system_prompt(Schema.default())
    assert "Speaker:" not in request.content_of("user")
    sent = request.payload["response_format"]["json_schema"]["schema"]
    assert sent == claims_v2.response_schema(Schema.default())


def test_the_prompt_says_who_spoke_and_the_assistants_words_set_nothing(
    memory: Memory, extractor: LLMExtractor, script: Script
) -> None:
    text = "Sounds like you're vegetarian."
    turn = replace(said(1, text), role="assistant")
    body: Any = extractor.request_body(turn)  # nested JSON, navigated freely
    assert "Speaker: assistant" in body["messages"][1]["content"]
    script.answers[text] = claims_answer(attribute("diet", "vegetarian", "Is vegetarian", text))
    memory.ingest(turn)
    memory.process(extractor=extractor)
    assert current(memory) == set()  # the assistant's words are nobody's own say
