"""The MCP server, driven by the SDK's own client: over stdio (``memledger mcp`` as a
subprocess), over streamable HTTP (a real uvicorn server in a thread, the app mounted
in a host as ``memledger serve`` mounts it) and in process. Real SQLite files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from mcp import Client
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from mcp_helpers import (
    OTHER_TENANT,
    QUESTION,
    STATEMENT,
    SUBJECT,
    TENANT,
    TOOLS,
    Keys,
    error_of,
    http_client,
    make_keys,
    payload,
    recalled_ids,
    serving,
    stdio_params,
)
from memledger import Memory
from memledger.domain.keys import REFUSED
from memledger.errors import MemoryNotFoundError, PermissionDeniedError, StoreLockedError
from memledger.mcp import CURRENT_URI, build_server, error_code, streamable_http_app
from memledger.mcp._server import derived_event_id


@pytest.fixture
def keys(memory: Memory) -> Keys:
    return make_keys(memory)


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def current_uri(subject: str) -> str:
    return CURRENT_URI.replace("{subject}", subject)


def home_city(result: Any) -> str:
    """The home_city memory ``remember`` stored."""
    (found,) = [s for s in payload(result)["stored"] if s["family"] == "home_city"]
    return str(found["memory_id"])


# -- stdio: memledger mcp -----------------------------------------------------------------


def test_stdio_lists_remembers_recalls_forgets(memory: Memory, keys: Keys, store: Path) -> None:
    async def main() -> None:
        async with Client(stdio_params(f"sqlite:///{store}", keys.write)) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == TOOLS
            described = {name: tool.description or "" for name, tool in listed.items()}
            assert "does not change business settings" in described["remember"]
            assert "never become" in described["remember"]
            assert "does not erase the source event" in described["forget"]
            assert "History keeps that it existed" in described["forget"]
            for name in ("recall", "history"):
                assert "Read-only" in described[name]
            assert "changes no memory" in described["context"]
            assert listed["recall"].annotations and listed["recall"].annotations.read_only_hint

            remembered = await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            assert payload(remembered)["receipt"]["outcome"] == "committed"
            memory_id = home_city(remembered)

            recalled = await client.call_tool("recall", {"query": QUESTION, "subject": SUBJECT})
            assert memory_id in recalled_ids(recalled)

            read = await client.read_resource(current_uri(SUBJECT))
            families = json.loads(read.contents[0].text)["families"]  # type: ignore[union-attr]
            assert [r["value"] for r in families["home_city"]["records"]] == ["Berlin"]

            forgot = await client.call_tool(
                "forget", {"memory_id": memory_id, "reason": "the user asked"}
            )
            assert memory_id in payload(forgot)["revoked"]

            again = await client.call_tool("recall", {"query": QUESTION, "subject": SUBJECT})
            assert memory_id not in recalled_ids(again)
            assert "Berlin" not in json.dumps(payload(again)["items"])

            history = payload(
                await client.call_tool("history", {"subject": SUBJECT, "family": "home_city"})
            )
            assert (memory_id, "revoked") in [
                (c["memory_id"], c["action"]) for c in history["changes"]
            ]
            assert history["records"] == []  # the value is gone; that it existed is not

    run(main)
    assert memory.get(memory_id_of(memory), tenant=TENANT).status == "revoked"


def memory_id_of(memory: Memory) -> str:
    (change,) = [
        c for c in memory.changes(SUBJECT, "home_city", tenant=TENANT) if c.action == "recorded"
    ]
    return change.memory_id


def test_stdio_refuses_a_bad_key_before_serving(memory: Memory, keys: Keys, store: Path) -> None:
    memory.revoke_key(TENANT, memory.keys(TENANT)[0].key_id)  # the write key
    for token in ("mlk_000000000000." + "A" * 43, keys.write, "not-a-key"):
        params = stdio_params(f"sqlite:///{store}", token)
        done = subprocess.run(
            [params.command, *params.args],
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.strip() == f"error: {REFUSED}"


# -- streamable HTTP ------------------------------------------------------------------------


def host_app(memory: Memory) -> Starlette:
    """The MCP app mounted in a host as ``memledger serve`` does: at ``/mcp`` (and below),
    beside an API at ``/``, its session manager run by the host's lifespan."""
    mcp_app = streamable_http_app(memory)
    api = FastAPI()

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.lifespan():
            yield

    return Starlette(
        routes=[Route("/mcp", endpoint=mcp_app), Mount("/mcp", app=mcp_app), Mount("/", app=api)],
        lifespan=lifespan,
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_lists_remembers_recalls_forgets(memory: Memory, keys: Keys, mode: str) -> None:
    async def main(url: str) -> None:
        async with http_client(url, keys.write, mode=mode) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            remembered = await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            memory_id = home_city(remembered)
            assert memory_id in recalled_ids(
                await client.call_tool("recall", {"query": QUESTION, "subject": SUBJECT})
            )
            packet = payload(
                await client.call_tool("context", {"request": QUESTION, "subject": SUBJECT})
            )
            assert packet["trace_id"] and "Berlin" in packet["text"]
            assert memory_id in [m["memory_id"] for m in packet["memories"]]
            forgot = await client.call_tool("forget", {"memory_id": memory_id, "reason": "moved"})
            assert memory_id in payload(forgot)["revoked"]
            assert memory_id not in recalled_ids(
                await client.call_tool("recall", {"query": QUESTION, "subject": SUBJECT})
            )

    with serving(host_app(memory)) as base:
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}  # the host still serves
        run(lambda: main(f"{base}/mcp"))
    event = memory.event(
        memory.get(memory_id_of(memory), tenant=TENANT).source_event_id, tenant=TENANT
    )
    assert (event.actor.id, event.actor.authenticated, event.channel) == (SUBJECT, True, "chat")


def test_http_refuses_requests_without_a_good_key(memory: Memory, keys: Keys) -> None:
    revoked = memory.create_key(TENANT, "gone")
    memory.revoke_key(TENANT, revoked[0].key_id)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    with serving(streamable_http_app(memory)) as base:  # served on its own: its own lifespan
        for headers in (
            {},
            {"Authorization": "Basic dXNlcjpwYXNz"},
            {"Authorization": "Bearer"},
            {"Authorization": "Bearer mlk_000000000000." + "A" * 43},
            {"Authorization": f"Bearer {revoked[1]}"},
            {"Authorization": f"Bearer {keys.write}x"},
        ):
            answer = httpx.post(f"{base}/mcp", json=initialize, headers={**accept, **headers})
            assert answer.status_code == 401, headers
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert answer.headers["content-type"] == "application/problem+json"
            problem = answer.json()
            assert (problem["status"], problem["code"]) == (401, "unauthenticated")
            assert "Traceback" not in answer.text

        opened = httpx.post(
            f"{base}/mcp",
            json=initialize,
            headers={**accept, "Authorization": f"Bearer {keys.write}"},
        )
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        stolen = httpx.post(
            f"{base}/mcp",
            json=listing,
            headers={
                **accept,
                "Authorization": f"Bearer {keys.other_tenant}",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        assert stolen.status_code == 404  # a session answers the key that opened it only

        async def with_wrong_key() -> None:
            async with http_client(f"{base}/mcp", "mlk_000000000000." + "A" * 43) as client:
                await client.list_tools()

        with pytest.raises(Exception):  # noqa: B017 - the SDK's client reports no status
            run(with_wrong_key)


def test_http_read_only_key_cannot_write(memory: Memory, keys: Keys, store: Path) -> None:
    from cli_helpers import snapshot

    async def main(url: str) -> None:
        async with http_client(url, keys.read) as client:
            assert payload(await client.call_tool("recall", {"query": QUESTION}))["items"] == []
            before = snapshot(store)
            refused = await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            error = error_of(refused)
            assert error["code"] == error_code(PermissionDeniedError) == "permission_denied"
            assert "read-only" in error["message"]
            assert snapshot(store) == before  # nothing written
            # the tools' own check: refused before the input is read or anything looked up
            malformed = {"subject": SUBJECT, "text": STATEMENT, "occurred_at": "not a time"}
            for tool, arguments in (
                ("remember", malformed),
                ("forget", {"memory_id": "mem-x", "reason": "no"}),
                ("forget", {"event_id": "evt-x", "reason": "no"}),
            ):
                error = error_of(await client.call_tool(tool, arguments))
                assert error["code"] == "permission_denied", (tool, error)
                assert f"read-only: it cannot {tool}" in error["message"], (tool, error)
            assert snapshot(store) == before

    with serving(host_app(memory)) as base:
        run(lambda: main(f"{base}/mcp"))
    assert memory.jobs(tenant=TENANT, open_only=False) == ()


def test_http_tenant_isolation(memory: Memory, keys: Keys) -> None:
    async def main(url: str) -> None:
        async with http_client(url, keys.write) as client:
            memory_id = home_city(
                await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            )
        async with http_client(url, keys.other_tenant) as client:
            for arguments in ({"query": QUESTION, "subject": SUBJECT}, {"query": "Berlin"}):
                found = payload(await client.call_tool("recall", arguments))
                assert found["items"] == []
            packet = payload(
                await client.call_tool("context", {"request": QUESTION, "subject": SUBJECT})
            )
            assert "Berlin" not in packet["text"] and packet["memories"] == []
            history = payload(
                await client.call_tool("history", {"subject": SUBJECT, "family": "home_city"})
            )
            assert history["records"] == [] and history["changes"] == []
            read = await client.read_resource(current_uri(SUBJECT))
            assert json.loads(read.contents[0].text)["families"] == {}  # type: ignore[union-attr]
            missing = await client.call_tool("forget", {"memory_id": memory_id, "reason": "x"})
            nowhere = await client.call_tool("forget", {"memory_id": "mem-nope", "reason": "x"})
            assert error_of(missing) == error_of(nowhere)  # A's ids are not even confirmed
            assert error_of(missing)["code"] == "memory_not_found"
            # a tool argument cannot pick the tenant: it comes from the key
            await client.call_tool(
                "remember", {"subject": SUBJECT, "text": "I live in Oslo.", "tenant": TENANT}
            )
        assert [r.value for r in memory.current(SUBJECT, "home_city", tenant=TENANT)] == ["Berlin"]
        assert [r.value for r in memory.current(SUBJECT, "home_city", tenant=OTHER_TENANT)] == [
            "Oslo"
        ]

    with serving(host_app(memory)) as base:
        run(lambda: main(f"{base}/mcp"))


# -- in process (the server stdio builds, without the subprocess) ---------------------------


def in_process(memory: Memory, token: str) -> Client:
    return Client(build_server(memory, key=token), cache=None)


def test_remember_is_idempotent_and_carries_no_authority(memory: Memory, keys: Keys) -> None:
    said = {"subject": SUBJECT, "text": STATEMENT, "occurred_at": "2026-10-02T09:00:00+02:00"}

    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            first = payload(await client.call_tool("remember", said))
            again = payload(await client.call_tool("remember", said))
            event_id = first["receipt"]["event_id"]
            assert event_id.startswith("mcp-") and again["receipt"]["event_id"] == event_id
            assert (first["receipt"]["duplicate"], again["receipt"]["duplicate"]) == (False, True)
            assert again["stored"] == first["stored"]
            mine = {**said, "event_id": "turn-1"}
            assert (
                payload(await client.call_tool("remember", mine))["receipt"]["event_id"] == "turn-1"
            )
            retried = payload(await client.call_tool("remember", mine))["receipt"]
            assert retried["duplicate"] is True
        async with in_process(memory, keys.ungranted) as client:
            stored = payload(
                await client.call_tool("remember", {"subject": SUBJECT, "text": "I live in Rome."})
            )["stored"]
            (claim,) = [s for s in stored if s["family"] == "home_city"]
            assert claim["authorised"] is False and claim["source_actor_id"] == "agent-7"

    run(main)
    event = memory.event("turn-1", tenant=TENANT)
    assert event.occurred_at.utcoffset() is not None and event.actor.id == SUBJECT
    assert [r.value for r in memory.current(SUBJECT, "home_city", tenant=TENANT)] == ["Berlin"]


def test_errors_are_tool_results_with_codes(memory: Memory, keys: Keys) -> None:
    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            cases = [
                ("forget", {"memory_id": "mem-nope", "reason": "x"}, "memory_not_found"),
                ("forget", {"reason": "x"}, "invalid_input"),
                (
                    "remember",
                    {"subject": SUBJECT, "text": "hi", "occurred_at": "2026-10-02"},
                    "invalid_input",
                ),
                ("remember", {"subject": "", "text": STATEMENT}, "invalid_event"),
                ("recall", {"query": QUESTION, "k": 0}, "invalid_query"),
                ("history", {"subject": SUBJECT, "family": "no_such_family"}, "unknown_family"),
            ]
            for tool, arguments, code in cases:
                assert error_of(await client.call_tool(tool, arguments))["code"] == code, tool

    run(main)
    assert error_code(MemoryNotFoundError) == "memory_not_found"
    assert error_code(StoreLockedError("x")) == "store_locked"


def test_text_that_is_not_text_is_a_tool_error(memory: Memory, keys: Keys) -> None:
    """A lone surrogate or a NUL in any tool's text is a one-line tool error with a code,
    and nothing is written; ``remember`` derives its event id from the text, so it checks
    the text first."""

    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            made = payload(
                await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            )
            memory_id = made["stored"][0]["memory_id"]
            event_id = made["receipt"]["event_id"]
            cases = [
                (
                    "remember",
                    {"subject": SUBJECT, "text": "I live in \ud800 Berlin."},
                    "invalid_event",
                ),
                ("remember", {"subject": "user-\ud800", "text": STATEMENT}, "invalid_event"),
                (
                    "remember",
                    {"subject": SUBJECT, "text": "I live in \x00 Paris."},
                    "invalid_event",
                ),
                ("recall", {"query": "where \ud800"}, "invalid_query"),
                ("context", {"request": "where \ud800", "subject": SUBJECT}, "invalid_input"),
                ("forget", {"memory_id": memory_id, "reason": "\ud800"}, "invalid_input"),
                ("forget", {"event_id": event_id, "reason": "\x00"}, "invalid_input"),
                ("history", {"subject": SUBJECT, "family": "home\ud800"}, "invalid_query"),
            ]
            for tool, arguments, code in cases:
                error = error_of(await client.call_tool(tool, arguments))
                assert error["code"] == code, (tool, error)
                assert (
                    "lone surrogate" in error["message"]
                    or "NUL" in error["message"]
                    or ("not a valid identifier" in error["message"])
                ), error

    run(main)
    (record,) = memory.current(SUBJECT, "home_city", tenant=TENANT)
    assert record.value == "Berlin"  # no remember wrote, neither forget took
    assert len(memory.history(SUBJECT, "home_city", tenant=TENANT)) == 1


def test_forget_by_event(memory: Memory, keys: Keys) -> None:
    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            said = payload(
                await client.call_tool("remember", {"subject": SUBJECT, "text": STATEMENT})
            )
            event_id = said["receipt"]["event_id"]
            forgot = payload(
                await client.call_tool("forget", {"event_id": event_id, "reason": "oops"})
            )
            revoked = {m for r in forgot["revocations"] for m in r["revoked"]}
            assert {s["memory_id"] for s in said["stored"]} <= revoked
            assert recalled_ids(await client.call_tool("recall", {"query": QUESTION})) == []

    run(main)
    assert memory.event(derived_event_id_of(memory), tenant=TENANT).text == STATEMENT  # kept


def derived_event_id_of(memory: Memory) -> str:
    (event_id,) = memory.family_events(SUBJECT, "home_city", tenant=TENANT)
    return event_id


def test_derived_event_ids_are_stable_across_offsets(memory: Memory, keys: Keys) -> None:
    from datetime import datetime

    principal = memory.authenticate(keys.write)
    utc = datetime.fromisoformat("2026-10-02T07:00:00+00:00")
    paris = datetime.fromisoformat("2026-10-02T09:00:00+02:00")
    assert derived_event_id(principal, SUBJECT, STATEMENT, utc) == derived_event_id(
        principal, SUBJECT, STATEMENT, paris
    )
    assert derived_event_id(principal, SUBJECT, STATEMENT, utc) != derived_event_id(
        principal, "user-43", STATEMENT, utc
    )


# -- without the server extra ---------------------------------------------------------------


def test_without_the_sdk_the_import_names_the_extra() -> None:
    script = (
        "import sys\n"
        "sys.modules['mcp'] = None\n"
        "try:\n"
        "    import memledger.mcp\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "from memledger.cli import main\n"
        "raise SystemExit(main(['mcp', '--key', 'x']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert "pip install 'memledger[server]'" in done.stdout
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: memledger.mcp needs the MCP SDK: pip install 'memledger[server]'"
    )


def test_current_resource_for_any_subject_identifier(memory: Memory, keys: Keys) -> None:
    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            (template,) = (await client.list_resource_templates()).resource_templates
            assert (template.uri_template, template.mime_type) == (CURRENT_URI, "application/json")
            for subject, in_uri in (("u:42", "u:42"), ("repo:acme/api", "repo%3Aacme%2Fapi")):
                await client.call_tool("remember", {"subject": subject, "text": STATEMENT})
                read = await client.read_resource(current_uri(in_uri))
                shown = json.loads(read.contents[0].text)  # type: ignore[union-attr]
                assert shown["subject"] == subject
                (city,) = shown["families"]["home_city"]["records"]
                assert (city["value"], city["authorised"]) == ("Berlin", True)
                assert shown["families"]["conversation"]["count"] == 1

    run(main)


def test_without_a_principal_nothing_is_served(memory: Memory) -> None:
    """The server built for HTTP (no principal of its own) refuses a call that did not
    come through the authenticating app."""

    async def main() -> None:
        async with Client(build_server(memory), cache=None) as client:
            for tool, arguments in (
                ("recall", {"query": QUESTION}),
                ("remember", {"subject": SUBJECT, "text": STATEMENT}),
            ):
                assert (
                    error_of(await client.call_tool(tool, arguments))["code"] == "unauthenticated"
                )

    run(main)
    assert memory.jobs(tenant=TENANT, open_only=False) == ()


def test_a_key_revoked_while_serving_stops_working(memory: Memory, keys: Keys) -> None:
    async def main() -> None:
        async with in_process(memory, keys.write) as client:
            assert payload(await client.call_tool("recall", {"query": QUESTION}))["items"] == []
            (write_key, *_) = memory.keys(TENANT)
            memory.revoke_key(TENANT, write_key.key_id)
            for tool, arguments in (
                ("recall", {"query": QUESTION}),
                ("remember", {"subject": SUBJECT, "text": STATEMENT}),
            ):
                error = error_of(await client.call_tool(tool, arguments))
                assert (error["code"], error["message"]) == ("unauthenticated", REFUSED)

    run(main)
    assert memory.jobs(tenant=TENANT, open_only=False) == ()


def test_another_agents_private_notes_stay_out_of_reach(memory: Memory) -> None:
    """Item 6 over MCP: the planner's notes under agent:planner/... reach neither the
    booker's recall nor its history, and the booker cannot forget them."""
    planner = memory.create_key(TENANT, "planner", principal="agent")[1]
    booker = memory.create_key(TENANT, "booker", principal="agent")[1]
    private = "agent:planner/customer-7"

    async def main(url: str) -> None:
        async with http_client(url, planner) as client:
            done = payload(
                await client.call_tool(
                    "remember", {"subject": private, "text": "Invoices in Norwegian kroner."}
                )
            )
            (noted,) = [s["memory_id"] for s in done["stored"]]
            found = await client.call_tool("recall", {"query": "which currency for invoices?"})
            assert noted in recalled_ids(found)
        async with http_client(url, booker) as client:
            found = await client.call_tool("recall", {"query": "which currency for invoices?"})
            assert noted not in recalled_ids(found)
            refused = await client.call_tool(
                "history", {"subject": private, "family": "conversation"}
            )
            assert error_of(refused)["code"] == "permission_denied"
            gone = await client.call_tool("forget", {"memory_id": noted, "reason": "no"})
            assert error_of(gone)["code"] == "memory_not_found"
            wrote = await client.call_tool("remember", {"subject": private, "text": "Wrong."})
            assert error_of(wrote)["code"] == "permission_denied"

    with serving(host_app(memory)) as base:
        run(lambda: main(f"{base}/mcp"))
