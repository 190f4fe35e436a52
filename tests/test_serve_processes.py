"""Several serve processes over one store: two ``memledger serve`` processes on one
SQLite file and on one PostgreSQL database see each other's writes (under a consistency
token) and revocations at once; ``serve --processes 2`` answers from two request
processes (MCP included), replaces one that dies, stops them all on SIGTERM, and stops
with an error when they cannot start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from memledger.errors import InvalidInputError
from memledger.memory import Memory
from memledger.serve import ServeConfig, ServeError, run
from memledger.settings import Settings
from serve_helpers import banner, start_serve, stop_serve

TOKEN_HEADER = "Memledger-Consistency"
CURRENT = "/v1/subjects/alice/families/home_city/current"
QUESTION = {"query": "where does alice live?", "subject": "alice"}


def _auth(key_file: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {key_file.read_text().strip()}"}


def _cities(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [record["value"] for record in answer.json()]


def _recalled(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [item["memory_id"] for item in answer.json()["items"]]


def test_two_serve_processes_on_one_store_see_each_others_writes_and_revocations(
    backend_url: str, tmp_path: Path
) -> None:
    key = tmp_path / "admin-key"
    first, base_one, lines = start_serve(backend_url, "--key-file", str(key))
    try:
        banner(first, lines)
        second, base_two, lines = start_serve(backend_url, "--key-file", str(key))
        try:
            banner(second, lines)
            auth = _auth(key)
            with (
                httpx.Client(base_url=base_one, headers=auth, timeout=60) as one,
                httpx.Client(base_url=base_two, headers=auth, timeout=60) as two,
            ):
                # the second process reads first: whatever it holds must follow the store
                assert _cities(two.get(CURRENT)) == []
                assert _recalled(two.post("/v1/recall", json=QUESTION)) == []

                added = one.post(
                    "/v1/memories", json={"messages": "I live in Porto.", "user_id": "alice"}
                )
                assert added.status_code == 200, added.text
                token = added.headers[TOKEN_HEADER]
                assert "alice/home_city@1" in token.split(",")
                (porto,) = [m["id"] for m in added.json()["memories"] if m["family"] == "home_city"]
                with_token = {TOKEN_HEADER: token}
                assert _cities(two.get(CURRENT, headers=with_token)) == ["Porto"]
                assert porto in _recalled(two.post("/v1/recall", json=QUESTION, headers=with_token))
                # a token past what the store holds: refused, not answered from memory
                ahead = two.get(CURRENT, headers={TOKEN_HEADER: "alice/home_city@2"})
                assert ahead.status_code == 409
                assert ahead.json()["code"] == "revision_not_met"

                moved = one.post(
                    "/v1/memories", json={"messages": "I moved to Lisbon.", "user_id": "alice"}
                )
                assert moved.status_code == 200, moved.text
                corrected = {TOKEN_HEADER: moved.headers[TOKEN_HEADER]}
                assert _cities(two.get(CURRENT, headers=corrected)) == ["Lisbon"]
                (lisbon,) = [
                    m["id"] for m in moved.json()["memories"] if m["family"] == "home_city"
                ]

                # a context packet, large material included, on either store (no shared
                # corpus beside a PostgreSQL store: the packet reads none)
                packet = two.post(
                    "/v1/context",
                    json={
                        "request": "where does alice live?",
                        "subject": "alice",
                        "budget": 500,
                        "material": [{"name": "notes", "text": "Porto trip notes. " * 4000}],
                    },
                )
                assert packet.status_code == 200, packet.text
                revoked = one.delete(f"/v1/memories/{lisbon}")
                assert revoked.status_code == 200, revoked.text
                # honoured at once by the other process, with no token
                assert _cities(two.get(CURRENT)) == []
                assert lisbon not in _recalled(two.post("/v1/recall", json=QUESTION))
                found = two.post(
                    "/v1/memories/search",
                    json={"query": "where does alice live?", "user_id": "alice"},
                )
                assert found.status_code == 200, found.text
                assert lisbon not in [m["id"] for m in found.json()["results"]]
        finally:
            out = stop_serve(second)
        assert second.returncode == 0, out
    finally:
        out = stop_serve(first)
    assert first.returncode == 0, out


def _request_processes(supervisor: int) -> list[int]:
    """The request processes ``supervisor`` started (not multiprocessing's helper)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if parent == supervisor and b"spawn_main" in command:
            found.append(int(entry.name))
    return sorted(found)


def _recalls_counted(base: str) -> int:
    """The recalls the process that answers this request has served."""
    text = httpx.get(f"{base}/metrics", timeout=60).text
    (line,) = [line for line in text.splitlines() if line.startswith("memledger_recalls_total ")]
    return int(float(line.split()[1]))


def _mcp_post(
    base: str,
    auth: dict[str, str],
    method: str,
    params: dict[str, object],
    *,
    session: str | None = None,
) -> Any:
    """One MCP request on a connection of its own; ``initialize`` returns the session id
    (``None`` when the server keeps none), any other method its JSON-RPC answer."""
    headers = {
        **auth,
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    answer = httpx.post(
        f"{base}/mcp/",
        headers=headers,
        timeout=60,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
    )
    assert answer.status_code == 200, (answer.status_code, answer.text)
    if method == "initialize":
        return answer.headers.get("mcp-session-id")
    data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1]) if data else answer.json()


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def two_processes(
    backend_url: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str, Path, str]]:
    key = tmp_path / "admin-key"
    child, base, lines = start_serve(
        backend_url, "--key-file", str(key), "--processes", "2", group=True
    )
    try:
        printed = banner(child, lines)
        yield child, base, key, printed
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _listening_on(port: int) -> int:
    """Sockets in the LISTEN state on ``port`` (``/proc/net/tcp`` and ``tcp6``)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with suppress(FileNotFoundError), open(table, encoding="ascii") as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                count += state == "0A" and int(local.rsplit(":", 1)[1], 16) == port
    return count


def test_serve_with_two_request_processes_answers_from_both_and_replaces_one_that_dies(
    two_processes: tuple[subprocess.Popen[str], str, Path, str],
) -> None:
    from mcp_helpers import http_client, payload, recalled_ids

    child, base, key, printed = two_processes
    assert "processes 2 request processes (the worker runs in the supervising one)" in printed
    serving = _request_processes(child.pid)
    assert len(serving) == 2
    # each request process listens on a socket of its own on the one port: the kernel
    # spreads new connections over them (one shared socket would count once)
    assert _listening_on(int(base.rsplit(":", 1)[1])) == 2
    auth = _auth(key)
    added = httpx.post(
        f"{base}/v1/memories",
        headers=auth,
        timeout=60,
        json={"messages": "I live in Porto.", "user_id": "alice"},
    )
    assert added.status_code == 200, added.text
    (porto,) = [m["id"] for m in added.json()["memories"] if m["family"] == "home_city"]

    def recall(_: int) -> list[str]:  # a connection each: either process may take it
        return _recalled(httpx.post(f"{base}/v1/recall", headers=auth, json=QUESTION, timeout=60))

    with ThreadPoolExecutor(8) as pool:  # at once: one process busy, the other answers
        assert all(ids[:1] == [porto] for ids in pool.map(recall, range(32)))
    # each process counts its own recalls: one that counts some of the 32, not all,
    # tells that the other process answered the rest
    counted = {_recalls_counted(base) for _ in range(8)}
    assert all(0 < n < 32 for n in counted), counted
    assert len(counted) == 1 or sum(counted) == 32, counted
    search = {"query": "where does alice live?", "user_id": "alice"}

    async def through_mcp() -> None:
        async with http_client(f"{base}/mcp", auth["Authorization"].split()[1]) as client:
            assert porto in recalled_ids(await client.call_tool("recall", QUESTION))
            kept = payload(
                await client.call_tool("remember", {"subject": "alice", "text": "I like tea."})
            )
            assert kept["stored"]

    asyncio.run(through_mcp())
    # an MCP client's requests on connections of their own reach either process: each
    # is answered, none refused as belonging to a session the other process holds
    session = _mcp_post(
        base,
        auth,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )
    assert session is None  # no session held by one process
    for _ in range(8):
        called = _mcp_post(
            base, auth, "tools/call", {"name": "recall", "arguments": QUESTION}, session=session
        )
        assert called["result"]["isError"] is False, called

    os.kill(serving[0], signal.SIGKILL)
    _wait(
        lambda: len(now := _request_processes(child.pid)) == 2 and serving[0] not in now,
        "the request process that died was not replaced",
    )
    replaced = _request_processes(child.pid)
    gone = httpx.delete(f"{base}/v1/memories/{porto}", headers=auth, timeout=60)
    assert gone.status_code == 200, gone.text
    for _ in range(12):  # revoked through one process: no process shows it
        found = httpx.post(f"{base}/v1/memories/search", headers=auth, json=search, timeout=60)
        assert found.status_code == 200, found.text
        assert porto not in [m["id"] for m in found.json()["results"]]

    os.killpg(child.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole group
    out, _ = child.communicate(timeout=90)
    assert child.returncode == 0, out
    assert "Traceback" not in out
    assert f"request process {serving[0]} exited with code -9; starting another" in out
    assert "stopped; the worker ran" in out
    assert not any(_alive(pid) for pid in {*serving, *replaced})


def test_request_processes_stop_when_their_supervisor_is_killed(
    two_processes: tuple[subprocess.Popen[str], str, Path, str],
) -> None:
    child, _, _, _ = two_processes
    serving = _request_processes(child.pid)
    assert len(serving) == 2
    child.kill()
    child.wait()
    _wait(
        lambda: not any(_alive(pid) for pid in serving),
        "orphaned request processes ran on",
        seconds=20,
    )


@pytest.mark.parametrize("backend_url", ["sqlite"], indirect=True)
def test_request_processes_dying_at_start_stop_the_service_with_an_error(
    two_processes: tuple[subprocess.Popen[str], str, Path, str],
) -> None:
    child, _, _, _ = two_processes
    killed: set[int] = set()
    deadline = time.monotonic() + 120
    while child.poll() is None:  # every new request process killed as soon as it is seen
        assert time.monotonic() < deadline, "serve kept replacing processes that died at start"
        for pid in _request_processes(child.pid):
            if pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.05)
    out = stop_serve(child)
    assert child.returncode == 1, out
    assert "request processes exited at start 3 times in a row (last exit code -9" in out


def test_request_processes_that_cannot_open_the_store_stop_the_start(tmp_path: Path) -> None:
    from memledger.cli.serve import open_requests

    missing = f"sqlite:///{tmp_path / 'no-such-folder' / 'm.db'}"
    opener = partial(open_requests, missing, (), 1.0, None, Settings())
    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    told: list[str] = []
    try:
        with pytest.raises(
            ServeError,
            match=r"^a request process exited with code 1 before it "
            r"served",
        ):
            run(
                memory,
                None,
                ServeConfig(port=0, processes=2),
                announce=told.append,
                open_requests=opener,
            )
    finally:
        memory.close()
    assert told == []  # never announced


def test_serve_config_takes_1_to_64_processes_and_several_need_an_opener(tmp_path: Path) -> None:
    for bad in (0, 65, True, 2.0, "2"):
        with pytest.raises(
            InvalidInputError, match="processes must be a whole number from 1 to 64"
        ):
            ServeConfig(processes=bad)  # type: ignore[arg-type]
    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        with pytest.raises(InvalidInputError, match="needs open_requests"):
            run(memory, None, ServeConfig(port=0, processes=2), announce=print)
    finally:
        memory.close()
