"""``LLMExtractor`` against a real HTTP server: ``memledger.testing.openai_server``.

Every test talks HTTP to a ``FakeChatServer`` on a loopback port; nothing is
mocked below the socket except the one test that hides httpx.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from chat_helpers import (
    CHAT_FAILURES,
    KEY,
    built_for,
    check_failure,
    claims_answer,
    proposal,
    the_chat_request,
)
from memledger.domain.families import Family, Schema
from memledger.domain.records import Actor, Claim, SourceEvent
from memledger.errors import ExtractionError, InvalidInputError
from memledger.ports import Extractor
from memledger.settings import Settings
from memledger.testing.openai_server import FakeChatServer, RecordedRequest, Reply
from memledger.write.extract import llm
from memledger.write.extract.llm import LLMExtractor
from memledger.write.extract.prompts import claims_v1, claims_v2, claims_v3

EVENT = SourceEvent(
    tenant="acme",
    event_id="e1",
    subject="alice",
    actor=Actor(id="alice"),
    channel="chat",
    occurred_at=datetime(2026, 10, 12, 9, 30, tzinfo=UTC),
    text=(
        "I moved to Lyon last week. Our trip to Lisbon is off. "
        "Please send the digest daily from November 1."
    ),
)


pytestmark = pytest.mark.usefixtures("no_proxies")


@pytest.fixture
def extractor(server: FakeChatServer) -> Iterator[LLMExtractor]:
    with built_for(server, LLMExtractor) as built:
        yield built


# -- the happy path and the request contract ---------------------------------------------


def test_a_good_answer_becomes_claims_with_lineage(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(
        claims_answer(
            proposal(confidence=0.9),
            proposal(
                family="plan",
                statement="The subject's trip to Lisbon is cancelled.",
                value="cancelled",
                scope="plan:trip-to-lisbon",
                grounding="Our trip to Lisbon is off",
            ),
            proposal(
                family="delivery_preference",
                kind="preference",
                statement="The subject wants the digest daily.",
                value="daily",
                valid_from="2026-11-01T00:00:00Z",
                valid_until="2027-01-01T00:00:00+01:00",
                grounding="send the digest daily from November 1",
            ),
        )
    )
    typed: Extractor = extractor
    extraction = typed.extract(EVENT)

    assert extraction.complete and extraction.dropped == ()
    home, plan, delivery = extraction.claims
    assert home == Claim(
        family="home_city",
        kind="fact",
        statement="The subject lives in Lyon.",
        value="lyon",
        grounding="I moved to Lyon",
        confidence=0.9,
    )
    assert plan.scope == "plan:trip-to-lisbon" and plan.value == "cancelled"
    assert plan.confidence == 0.65  # no confidence proposed: the claim's default
    assert delivery.valid_from == datetime(2026, 11, 1, tzinfo=UTC)
    assert delivery.valid_until == datetime(2026, 12, 31, 23, tzinfo=UTC)
    assert all(c.subject is None for c in extraction.claims)  # never the model's to choose
    info = typed.info
    assert (info.kind, info.name, info.version) == ("llm", "openai-compatible", llm.VERSION)
    assert (info.model, info.prompt_version) == ("fake-model", claims_v3.VERSION)  # the default
    assert [c.polarity for c in extraction.claims] == ["assert"] * 3  # none proposed


def test_the_request_carries_model_temperature_schema_key_text_and_families(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(claims_answer())
    extractor.extract(EVENT)

    schema = claims_v3.response_schema(Schema.default())
    system, user = the_chat_request(server, name="memledger_claims", schema=schema)
    for family in Schema.default().families.values():
        assert f"- {family.name} (kinds: " in system
        assert family.description in system
    assert 'item-scoped, scope "plan:<slug>"' in system
    assert "ISO 8601" in system and "exact quote" in system and "Do not" in system
    assert EVENT.text in user and "2026-10-12T09:30:00Z" in user and "alice" in user


def test_claims_v2_carries_polarity_and_claims_v1_stays_as_it_was(server: FakeChatServer) -> None:
    retraction = proposal(
        family="tool",
        statement="No longer uses TensorFlow",
        value="tensorflow",
        scope="tool:tensorflow",
        grounding="Our trip to Lisbon is off",
        polarity="retract",
    )
    server.push(claims_answer(proposal(polarity="assert"), retraction, proposal(polarity=None)))
    with LLMExtractor(base_url=server.base_url, model="m", prompt_version="claims-v2") as extractor:
        claims = extractor.extract(EVENT).claims
    assert [(c.family, c.value, c.polarity) for c in claims] == [
        ("home_city", "lyon", "assert"),
        ("tool", "tensorflow", "retract"),
        ("home_city", "lyon", "assert"),
    ]
    v2 = server.requests[0]
    assert '"polarity": "assert" for what is true' in v2.content_of("system")
    items = v2.payload["response_format"]["json_schema"]["schema"]["properties"]["claims"]["items"]
    assert items["properties"]["polarity"]["enum"] == ["assert", "retract"]
    assert "polarity" in items["required"]

    server.push(claims_answer(retraction))
    with LLMExtractor(base_url=server.base_url, model="m", prompt_version="claims-v1") as old:
        (claim,) = old.extract(EVENT).claims
        assert old.info.prompt_version == "claims-v1"
    assert claim.polarity == "assert"  # v1 never asked: its claims assert
    v1 = server.requests[1]
    assert v1.content_of("system") == claims_v1.system_prompt(Schema.default())
    assert "polarity" not in json.dumps(v1.payload["response_format"])


def test_a_claim_with_an_unknown_polarity_is_dropped(server: FakeChatServer) -> None:
    server.push(claims_answer(proposal(polarity="negate"), proposal()))
    with LLMExtractor(base_url=server.base_url, model="m") as extractor:
        extraction = extractor.extract(EVENT)
    assert len(extraction.claims) == 1
    (reason,) = extraction.dropped
    assert reason.startswith("claim 0 ('home_city'): malformed:") and "polarity" in reason


def test_an_unknown_prompt_version_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="claims-v9"):
        LLMExtractor(base_url="http://127.0.0.1:9/v1", model="m", prompt_version="claims-v9")


def test_without_a_key_no_authorization_header_is_sent(server: FakeChatServer) -> None:
    server.push(claims_answer())
    with LLMExtractor(base_url=server.base_url + "/", model="m") as extractor:
        extractor.extract(EVENT)
    (request,) = server.requests
    assert "authorization" not in request.headers
    assert request.path == "/v1/chat/completions"  # the trailing slash is not doubled


@pytest.mark.parametrize("prompt", [claims_v1, claims_v2])
def test_the_response_schema_matches_the_validating_model(prompt: Any) -> None:
    schema: Any = prompt.response_schema(Schema.default())  # nested JSON, navigated freely
    items = schema["properties"]["claims"]["items"]
    assert set(items["required"]) == set(items["properties"])  # strict mode: all required
    assert set(items["properties"]) == set(prompt.ClaimOut.model_fields)
    assert items["additionalProperties"] is False and schema["additionalProperties"] is False
    assert items["properties"]["family"]["enum"] == list(Schema.default().families)
    assert "observation" not in items["properties"]["kind"]["enum"]
    assert json.loads(json.dumps(schema)) == schema  # plain JSON


def test_a_custom_schema_gets_its_own_families(server: FakeChatServer) -> None:
    pets = Schema.of(
        [Family(name="pet", kinds=frozenset({"fact"}), description="Pets; scope pet:<slug>.")]
    )
    server.push(
        claims_answer(
            proposal(family="pet", scope="pet:rex", value="dog", grounding="Lyon"), proposal()
        )
    )
    with LLMExtractor(base_url=server.base_url, model="m", schema=pets) as extractor:
        extraction = extractor.extract(EVENT)
    assert [c.family for c in extraction.claims] == ["pet"]
    assert extraction.dropped == (
        "claim 1 ('home_city'): unknown family 'home_city'; known families: ['pet']",
    )
    system = server.requests[0].content_of("system")
    assert '- pet (kinds: fact; item-scoped, scope "pet:<slug>")' in system
    assert "home_city" not in system


# -- claims dropped one by one ---------------------------------------------------------------

BAD_CLAIMS: list[tuple[dict[str, object], str]] = [
    (proposal(family="shoe_size"), "unknown family 'shoe_size'"),
    (proposal(kind="preference"), "does not hold kind 'preference'"),
    (proposal(kind="observation"), "kind 'observation' is the policy's"),
    (proposal(kind="belief"), "does not hold kind 'belief'"),
    (proposal(statement="  "), "statement must be a non-empty string"),
    (proposal(grounding=""), "grounding, when given, must be a non-empty quote"),
    (
        proposal(valid_from="2026-11-01T00:00:00Z", valid_until="2026-10-01T00:00:00Z"),
        "not after valid_from",
    ),
    (proposal(valid_from="2026-11-01T00:00:00"), "must be timezone-aware"),
    (proposal(valid_until="next Tuesday"), "valid_until 'next Tuesday' is not an ISO 8601"),
    (proposal(confidence=1.5), "confidence must be within [0, 1]"),
    (proposal(confidence="high"), "malformed: confidence"),
    (proposal(scope="not a scope!"), "scope 'not a scope!' is not a valid identifier"),
    ({k: v for k, v in proposal().items() if k != "grounding"}, "malformed: grounding"),
    (proposal(statement=7), "malformed: statement"),
]


def test_bad_claims_are_dropped_with_reasons_and_good_ones_survive(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    good = proposal(family="employer", statement="The subject works at Acme.", value="acme")
    server.push(claims_answer(*(bad for bad, _ in BAD_CLAIMS), good))

    extraction = extractor.extract(EVENT)

    assert [c.family for c in extraction.claims] == ["employer"]
    assert extraction.complete
    assert len(extraction.dropped) == len(BAD_CLAIMS)
    for index, ((_, fragment), reason) in enumerate(
        zip(BAD_CLAIMS, extraction.dropped, strict=True)
    ):
        assert reason.startswith(f"claim {index}"), reason
        assert fragment in reason, (fragment, reason)


# -- incomplete answers ------------------------------------------------------------------------


def test_a_truncated_answer_that_parses_is_returned_incomplete(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(Reply(content=claims_answer(proposal()), finish_reason="length"))
    extraction = extractor.extract(EVENT)
    assert not extraction.complete
    assert [c.family for c in extraction.claims] == ["home_city"]


def test_the_model_may_say_it_left_claims_out(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(claims_answer(proposal(), complete=False))
    assert not extractor.extract(EVENT).complete


def test_a_json_answer_in_a_code_fence_is_read(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(f"```json\n{claims_answer(proposal())}\n```")
    assert len(extractor.extract(EVENT).claims) == 1


# -- failures ------------------------------------------------------------------------------------

FAILURES: dict[str, tuple[Reply, str, str]] = {
    **CHAT_FAILURES,
    "truncated and unparseable": (
        Reply(content='{"claims": [{"family": "home_ci', finish_reason="length"),
        "invalid_json",
        "cut off by the length limit",
    ),
    "wrong top-level key": (Reply(content='{"facts": []}'), "schema_mismatch", "claims"),
    "a list, not an object": (Reply(content="[]"), "schema_mismatch", "memledger_claims"),
    "claims not a list": (
        Reply(content='{"claims": "none", "complete": true}'),
        "schema_mismatch",
        "claims",
    ),
    "complete not a boolean": (
        Reply(content='{"claims": [], "complete": "yes"}'),
        "schema_mismatch",
        "complete",
    ),
    "a claim not an object": (
        Reply(content='{"claims": ["Lyon"], "complete": true}'),
        "schema_mismatch",
        "claims.0",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_failure_raises_extraction_error_with_its_reason(
    server: FakeChatServer, extractor: LLMExtractor, case: str
) -> None:
    check_failure(server, FAILURES[case], ExtractionError, lambda: extractor.extract(EVENT))


def test_the_key_is_masked_even_when_the_server_echoes_it(
    server: FakeChatServer, extractor: LLMExtractor
) -> None:
    server.push(Reply(status=401, body=json.dumps({"error": f"invalid api key {KEY}"})))
    with pytest.raises(ExtractionError) as caught:
        extractor.extract(EVENT)
    assert caught.value.reason == "http_401"
    assert KEY not in str(caught.value) and "invalid api key ***" in str(caught.value)
    assert KEY not in repr(extractor) and KEY not in repr(extractor.info)


# -- httpx is optional ---------------------------------------------------------------------------


def test_without_httpx_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # makes ``import httpx`` fail
    with pytest.raises(ImportError, match=r"pip install 'memledger\[llm\]'"):
        LLMExtractor(base_url="http://127.0.0.1:1/v1", model="m")


def test_memledger_imports_without_httpx() -> None:
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "import memledger, memledger.settings\n"
        "import memledger.write.extract.llm, memledger.testing.openai_server\n"
        "assert 'httpx' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- settings ------------------------------------------------------------------------------------


def test_settings_build_the_extractor_and_hide_the_key(server: FakeChatServer) -> None:
    env = {
        "MEMLEDGER_LLM_BASE_URL": server.base_url,
        "MEMLEDGER_LLM_MODEL": "fake-model",
        "MEMLEDGER_LLM_API_KEY": KEY,
    }
    settings = Settings.from_env(env)
    assert (settings.llm_base_url, settings.llm_model, settings.llm_api_key) == (
        server.base_url,
        "fake-model",
        KEY,
    )
    assert KEY not in repr(settings)
    server.push(claims_answer(proposal()))
    with settings.llm_extractor(timeout=2.0) as extractor:
        assert len(extractor.extract(EVENT).claims) == 1
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_settings_name_what_is_missing() -> None:
    assert Settings.from_env({"MEMLEDGER_LLM_MODEL": ""}).llm_model is None
    with pytest.raises(InvalidInputError, match="MEMLEDGER_LLM_BASE_URL and MEMLEDGER_LLM_MODEL"):
        Settings().llm_extractor()
    with pytest.raises(InvalidInputError, match=r"set MEMLEDGER_LLM_MODEL \("):
        Settings(llm_base_url="http://127.0.0.1:1/v1").llm_extractor()


# -- the fake server itself ------------------------------------------------------------------------


def test_the_fake_server_speaks_the_openai_shapes() -> None:
    seen: list[RecordedRequest] = []

    def responder(request: RecordedRequest) -> str:
        seen.append(request)
        return f"echo {request.content_of('user')}"

    with FakeChatServer(responder, models=("a", "b")) as server:
        models = httpx.get(f"{server.base_url}/models").json()
        body = {"model": "a", "messages": [{"role": "user", "content": "hi"}]}
        first = httpx.post(f"{server.base_url}/chat/completions", json=body).json()
        second = httpx.post(f"{server.base_url}/chat/completions", json=body).json()
        missing = httpx.post(f"{server.url}/chat/completions", json=body)

    assert [m["id"] for m in models["data"]] == ["a", "b"] and models["object"] == "list"
    assert first["object"] == "chat.completion" and first["model"] == "a"
    assert first["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "echo hi"},
            "finish_reason": "stop",
        }
    ]
    assert set(first["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert (first["id"], second["id"]) == ("chatcmpl-fake-1", "chatcmpl-fake-2")
    assert first["created"] == second["created"]  # deterministic
    assert missing.status_code == 404
    assert [r.payload for r in seen] == [body, body]


def test_the_fake_server_reports_unscripted_requests_and_responder_bugs() -> None:
    def broken(request: RecordedRequest) -> str:
        raise KeyError("oops")

    with FakeChatServer() as server:
        unscripted = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m"})
        server.responder = broken
        failed = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m"})
        not_json = httpx.post(f"{server.base_url}/chat/completions", content=b"{")
        assert server.errors == ("responder raised KeyError: 'oops'",)
    assert unscripted.status_code == 500 and "no reply scripted" in unscripted.text
    assert failed.status_code == 500 and "KeyError" in failed.text
    assert not_json.status_code == 400
