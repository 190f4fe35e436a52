"""The query rewriter against a real HTTP server: ``memledger.testing.openai_server``.

Every ``LLMQueryRewriter`` test talks HTTP to a ``FakeChatServer`` on a
loopback port; nothing is mocked below the socket except the test that hides
httpx.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest

from chat_helpers import (
    CHAT_FAILURES,
    KEY,
    built_for,
    check_failure,
    the_chat_request,
)
from memledger.errors import InvalidQueryError, MemledgerError
from memledger.read import rewrite
from memledger.read.rewrite import (
    LLMQueryRewriter,
    NoRewriter,
    QueryRewriter,
    Rewrite,
    RewriteOut,
    RewriterError,
)
from memledger.testing.openai_server import FakeChatServer, Reply

NOW = datetime(2026, 10, 12, 9, 30, tzinfo=UTC)  # a Monday
QUESTION = "Which cities has John visited?"


def answer(
    queries: list[object] | None = None,
    names: list[object] | None = None,
    after: object = None,
    before: object = None,
) -> str:
    return json.dumps(
        {"queries": queries or [], "names": names or [], "after": after, "before": before}
    )


pytestmark = pytest.mark.usefixtures("no_proxies")


@pytest.fixture
def rewriter(server: FakeChatServer) -> Iterator[LLMQueryRewriter]:
    with built_for(server, LLMQueryRewriter) as built:
        yield built


# -- a good answer -----------------------------------------------------------------------------


def test_a_good_answer_becomes_a_rewrite_with_the_original_query_first(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(
        answer(
            queries=[
                "John trip to",
                "which cities has JOHN visited?",  # the question again: dropped
                "  John   travelled to ",  # whitespace tidied
                "john TRIP to",  # a case-insensitive repeat: dropped
                "",  # empty: dropped
                "x" * (rewrite.MAX_QUERY + 1),  # too long: dropped
                "John visited city",
                "John holiday in",
                "John flew to",  # a fifth alternative: over the limit
            ],
            names=["John", " john ", "Maria", ""],
            after="2026-05-01",
            before="2026-06-01",
        )
    )
    typed: QueryRewriter = rewriter
    result = typed.rewrite(QUESTION, now=NOW)

    assert result == Rewrite(
        queries=(
            QUESTION,
            "John trip to",
            "John travelled to",
            "John visited city",
            "John holiday in",
        ),
        names=("John", "Maria"),
        after=datetime(2026, 5, 1, tzinfo=UTC),
        before=datetime(2026, 6, 1, tzinfo=UTC),
        model="fake-model",
        prompt_version="rewrite-v1",
    )
    assert result.after is not None and result.after.tzinfo is UTC
    assert len(result.queries) == 1 + rewrite.MAX_ALTERNATIVES


def test_the_original_query_is_kept_verbatim(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    query = "  Where does  Maria live?"
    server.push(answer(queries=["where does maria live?", "Maria lives in"]))
    assert rewriter.rewrite(query, now=NOW).queries == (query, "Maria lives in")


def test_an_answer_without_anything_to_add_is_the_query_alone(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(answer())
    result = rewriter.rewrite("hello", now=NOW)
    assert (result.queries, result.names, result.after, result.before) == (
        ("hello",),
        (),
        None,
        None,
    )


def test_a_json_answer_in_a_code_fence_and_extra_properties_are_accepted(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    content = json.dumps({"queries": ["John trip"], "names": ["John"], "note": "extra"})
    server.push(Reply(content=f"```json\n{content}\n```"))
    result = rewriter.rewrite(QUESTION, now=NOW)
    assert result.queries == (QUESTION, "John trip") and result.names == ("John",)
    assert (result.after, result.before) == (None, None)  # absent dates mean null


# -- the request -------------------------------------------------------------------------------


def test_the_request_carries_model_schema_key_question_and_todays_date(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(answer())
    rewriter.rewrite(QUESTION, now=NOW)

    name = "memledger_query_rewrite"
    system, user = the_chat_request(server, name=name, schema=rewrite.RESPONSE_SCHEMA)
    assert server.requests[0].payload == rewriter.request_body(QUESTION, now=NOW)
    assert "last May" in system and "exclusive" in system and "sub-question" in system
    assert "Today (UTC): 2026-10-12, a Monday" in user
    assert QUESTION in user


def test_the_date_sent_is_the_utc_date_of_now(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(answer(), answer())
    late_evening_in_new_york = datetime(2026, 3, 1, 22, 0, tzinfo=timezone(timedelta(hours=-5)))
    rewriter.rewrite("what did I do last week?", now=late_evening_in_new_york)
    rewriter.rewrite("what did I do last week?", now=datetime(2027, 1, 4, tzinfo=UTC))
    first, second = (r.content_of("user") for r in server.requests)
    assert "Today (UTC): 2026-03-02, a Monday" in first
    assert "Today (UTC): 2027-01-04, a Monday" in second
    assert "2026-10-12" not in first + second


def test_without_a_key_no_authorization_header_is_sent(server: FakeChatServer) -> None:
    server.push(answer())
    with LLMQueryRewriter(base_url=server.base_url + "/", model="m") as rewriter:
        rewriter.rewrite(QUESTION, now=NOW)
    (request,) = server.requests
    assert "authorization" not in request.headers
    assert request.path == "/v1/chat/completions"


def test_the_response_schema_matches_the_validating_model() -> None:
    schema = rewrite.RESPONSE_SCHEMA
    properties = schema["properties"]
    assert isinstance(properties, dict) and isinstance(schema["required"], list)
    assert set(schema["required"]) == set(properties) == set(RewriteOut.model_fields)
    assert schema["additionalProperties"] is False
    assert json.loads(json.dumps(schema)) == schema


# -- windows -----------------------------------------------------------------------------------

WINDOWS: list[tuple[object, object, datetime | None, datetime | None]] = [
    ("2026-05-01", None, datetime(2026, 5, 1, tzinfo=UTC), None),
    (None, "2026-09-28", None, datetime(2026, 9, 28, tzinfo=UTC)),
    (
        " 2026-05-01 ",
        "2026-05-02",
        datetime(2026, 5, 1, tzinfo=UTC),
        datetime(2026, 5, 2, tzinfo=UTC),
    ),
    ("2026-05-01", "2026-05-01", None, None),  # empty
    ("2026-06-01", "2026-05-01", None, None),  # inverted
    ("2026-02-30", "2026-03-01", None, None),  # no such day
    ("last May", None, None, None),
    ("20260501", "2026-06-01", None, None),  # not YYYY-MM-DD
    ("2026-05-01", "2026-W23-1", None, None),  # a week date
    ("2026-05-01T00:00:00Z", None, None, None),
]


@pytest.mark.parametrize(("after", "before", "start", "end"), WINDOWS)
def test_windows_are_half_open_utc_days_and_bad_ones_are_dropped(
    server: FakeChatServer,
    rewriter: LLMQueryRewriter,
    after: object,
    before: object,
    start: datetime | None,
    end: datetime | None,
) -> None:
    server.push(answer(queries=["John trip"], after=after, before=before))
    result = rewriter.rewrite(QUESTION, now=NOW)
    assert (result.after, result.before) == (start, end)
    assert result.queries == (QUESTION, "John trip")  # a dropped window keeps the rest


# -- failures ----------------------------------------------------------------------------------

FAILURES: dict[str, tuple[Reply, str, str]] = {
    **CHAT_FAILURES,
    "empty content": (Reply(content=""), "invalid_json", "no message content"),
    "blank content": (Reply(content=" \n "), "invalid_json", "no message content"),
    "truncated": (
        Reply(content='{"queries": ["John tr', finish_reason="length"),
        "invalid_json",
        "content is not JSON",
    ),
    "wrong top-level key": (
        Reply(content='{"rewrites": [], "names": []}'),
        "schema_mismatch",
        "queries",
    ),
    "a list, not an object": (Reply(content="[]"), "schema_mismatch", "memledger_query_rewrite"),
    "queries not a list": (
        Reply(content='{"queries": "John trip", "names": []}'),
        "schema_mismatch",
        "queries",
    ),
    "a query not a string": (Reply(content=answer(queries=[7])), "schema_mismatch", "queries.0"),
    "names missing": (Reply(content='{"queries": []}'), "schema_mismatch", "names"),
    "a date not a string": (Reply(content=answer(after=20260501)), "schema_mismatch", "after"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_failure_raises_rewriter_error_with_its_reason(
    server: FakeChatServer, rewriter: LLMQueryRewriter, case: str
) -> None:
    raised = check_failure(
        server, FAILURES[case], RewriterError, lambda: rewriter.rewrite(QUESTION, now=NOW)
    )
    assert isinstance(raised, MemledgerError)


def test_the_key_is_masked_even_when_the_server_echoes_it(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(
        Reply(status=401, body=json.dumps({"error": f"invalid api key {KEY}"})),
        Reply(content=f"not JSON, but the key: {KEY}"),
    )
    for reason in ("http_401", "invalid_json"):
        with pytest.raises(RewriterError) as caught:
            rewriter.rewrite(QUESTION, now=NOW)
        assert caught.value.reason == reason
        assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert KEY not in repr(rewriter) and "fake-model" in repr(rewriter)


def test_a_failure_does_not_spoil_the_next_call(
    server: FakeChatServer, rewriter: LLMQueryRewriter
) -> None:
    server.push(Reply(status=503), answer(queries=["John trip"]))
    with pytest.raises(RewriterError, match="HTTP 503"):
        rewriter.rewrite(QUESTION, now=NOW)
    assert rewriter.rewrite(QUESTION, now=NOW).queries == (QUESTION, "John trip")


# -- bad input ---------------------------------------------------------------------------------

BAD_CALLS: list[tuple[object, object, str]] = [
    ("", NOW, "non-empty"),
    ("   ", NOW, "non-empty"),
    (None, NOW, "non-empty"),
    ("x" * (rewrite.MAX_QUERY + 1), NOW, "at most 4000"),
    (QUESTION, datetime(2026, 10, 12, 9, 30), "timezone-aware"),
    (QUESTION, "2026-10-12", "must be a datetime"),
]


@pytest.mark.parametrize(("query", "now", "fragment"), BAD_CALLS)
def test_bad_input_raises_invalid_query_error_before_any_request(
    server: FakeChatServer, rewriter: LLMQueryRewriter, query: object, now: object, fragment: str
) -> None:
    for candidate in (rewriter, NoRewriter()):
        with pytest.raises(InvalidQueryError, match=fragment):
            candidate.rewrite(query, now=now)  # type: ignore[arg-type]
    assert server.requests == ()


def test_without_httpx_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # makes ``import httpx`` fail
    with pytest.raises(ImportError, match=r"LLMQueryRewriter needs httpx.*memledger\[llm\]"):
        LLMQueryRewriter(base_url="http://127.0.0.1:1/v1", model="m")


def test_a_client_passed_in_stays_open_and_an_owned_one_is_closed(
    server: FakeChatServer,
) -> None:
    server.push(answer(), answer())
    with httpx.Client() as client:
        with LLMQueryRewriter(base_url=server.base_url, model="m", client=client) as borrowed:
            borrowed.rewrite(QUESTION, now=NOW)
        assert not client.is_closed
        owned = LLMQueryRewriter(base_url=server.base_url, model="m")
        owned.rewrite(QUESTION, now=NOW)
        owned.close()
        with pytest.raises(RuntimeError, match="closed"):
            owned.rewrite(QUESTION, now=NOW)
    assert len(server.requests) == 2


# -- NoRewriter and the Rewrite value ----------------------------------------------------------


def test_no_rewriter_is_the_identity() -> None:
    typed: QueryRewriter = NoRewriter()
    assert isinstance(typed, QueryRewriter)
    assert typed.rewrite(" Where is  John? ", now=NOW) == Rewrite(
        queries=(" Where is  John? ",),
        names=(),
        after=None,
        before=None,
        model="none",
        prompt_version="none",
    )


def test_the_llm_rewriter_satisfies_the_protocol_and_other_things_do_not(
    rewriter: LLMQueryRewriter,
) -> None:
    assert isinstance(rewriter, QueryRewriter)
    assert not isinstance(object(), QueryRewriter)


def test_a_rewrite_holds_its_invariants() -> None:
    def make(**fields: object) -> Rewrite:
        base: dict[str, object] = {
            "queries": ("q",),
            "names": (),
            "after": None,
            "before": None,
            "model": "m",
            "prompt_version": "p",
        }
        return Rewrite(**{**base, **fields})  # type: ignore[arg-type]

    plus_two = timezone(timedelta(hours=2))
    shifted = make(after=datetime(2026, 5, 1, 2, tzinfo=plus_two))
    assert shifted.after == datetime(2026, 5, 1, tzinfo=UTC) and shifted.after.tzinfo is UTC
    with pytest.raises(InvalidQueryError, match="at least the original query"):
        make(queries=())
    with pytest.raises(InvalidQueryError, match="before must be timezone-aware"):
        make(before=datetime(2026, 5, 1))
    with pytest.raises(InvalidQueryError, match="empty or inverted"):
        make(after=datetime(2026, 5, 1, tzinfo=UTC), before=datetime(2026, 5, 1, tzinfo=UTC))
