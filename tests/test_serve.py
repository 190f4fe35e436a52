"""``memledger serve``: the first admin key, the background worker's drain on stop, and
the whole process started as a user starts it, stopped by SIGTERM."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from memledger.domain.records import Claim, SourceEvent
from memledger.errors import InvalidInputError, LastAdminKeyError
from memledger.memory import Memory
from memledger.serve import BackgroundWorker, ServeConfig, ensure_admin_key, key_file_for
from memledger.testing import FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, day, event, pref
from serve_helpers import banner, start_serve, stop_serve


def test_the_first_admin_key_is_made_once_and_kept_from_other_users(tmp_path: Path) -> None:
    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        config = ServeConfig(tenant="acme")
        first = ensure_admin_key(memory, config)
        assert first.token is not None and first.path == tmp_path / "m.db.admin-key"
        assert first.path.read_text().strip() == first.token
        assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
        who = memory.authenticate(first.token)
        assert (who.tenant, who.role, who.kind) == ("acme", "admin", "service")

        again = ensure_admin_key(memory, config)
        assert again.token is None and again.key_id == first.key_id  # never shown twice
        assert first.path.read_text().strip() == first.token

        with pytest.raises(LastAdminKeyError):
            memory.revoke_key("acme", first.key_id)  # the tenant's only admin key
        # lost or leaked: another admin key first (memledger keys create), then revoke it
        spare, _ = memory.create_key("acme", "ops-1", role="admin")
        memory.revoke_key("acme", first.key_id)
        renewed = ensure_admin_key(memory, config)
        assert renewed.token is None and renewed.key_id == spare.key_id
        assert [k.role for k in memory.keys("globex")] == []


def test_serve_config_refuses_bad_values_and_names_a_key_file(tmp_path: Path) -> None:
    for bad in (
        {"tenant": "no spaces"},
        {"port": 70000},
        {"port": True},
        {"poll": 0},
        {"max_concurrency": 0},
        {"max_concurrency": True},
        {"max_in_flight": 0},
        {"max_in_flight": 1.5},
        {"limits": {"tenant_in_flight": 2}},
    ):
        with pytest.raises(InvalidInputError):
            ServeConfig(**bad)  # type: ignore[arg-type]
    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        chosen = tmp_path / "keys" / "admin"
        assert key_file_for(memory, ServeConfig(key_file=chosen)) == chosen


def test_stopping_the_worker_finishes_the_batch_it_holds(tmp_path: Path) -> None:
    """A stop while a batch is being extracted waits for it: its jobs commit."""
    started, release = threading.Event(), threading.Event()

    def slow(source: SourceEvent) -> list[Claim]:
        started.set()
        release.wait(10)
        return [pref("friday", grounding="Fridays")]

    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        receipt = memory.ingest(event("e1", "Deliver on Fridays.", occurred_at=day(10, 2)))
        assert receipt.job_id is not None
        worker = BackgroundWorker(memory, FunctionExtractor(slow), poll=0.05)
        worker.start()
        assert started.wait(10)
        stopping = threading.Thread(target=worker.stop)
        stopping.start()
        stopping.join(0.3)
        assert stopping.is_alive()  # waiting for the batch in flight, not abandoning it
        release.set()
        stopping.join(10)
        assert not stopping.is_alive()
        assert [r.value for r in memory.current(SUBJECT, "delivery_preference", tenant=TENANT)] == [
            "friday"
        ]
        assert memory.jobs(tenant=TENANT) == ()


def test_the_background_worker_erases_what_expired(tmp_path: Path) -> None:
    assert ServeConfig().expire_every == 600.0  # the service enforces retention by default
    with pytest.raises(InvalidInputError, match="expire_every"):
        ServeConfig(expire_every=0)
    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        past = datetime(2026, 1, 1, tzinfo=UTC)
        said = event("e1", "Deliver on Fridays.", occurred_at=past)
        memory.ingest(said, [replace(pref("friday"), expires_at=datetime(2026, 1, 2, tzinfo=UTC))])
        worker = BackgroundWorker(memory, FunctionExtractor(lambda e: []), expire_every=0.05)
        worker.start()
        deadline = time.monotonic() + 10
        while not memory.erasures(tenant=TENANT) and time.monotonic() < deadline:
            time.sleep(0.02)
        report = worker.stop()
        assert report.expired == 1
        assert memory.erasures(tenant=TENANT)[0].events == ("e1",)


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    return start_serve(f"sqlite:///{tmp_path / 'serve.db'}", *extra)


def test_serve_runs_the_api_web_page_mcp_and_worker_until_sigterm(tmp_path: Path) -> None:
    child, base, lines = _start(tmp_path, "--tenant", "acme")
    try:
        printed = banner(child, lines)
        token = (tmp_path / "serve.db.admin-key").read_text().strip()
        assert token in printed  # shown once, on first start
        assert f"{base}/ui/" in printed and f"{base}/mcp" in printed
        assert "erasing what expired every 600 s" in printed  # retention is enforced
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, timeout=30) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/readyz").status_code == 200
            assert client.get("/v1/me").status_code == 401
            assert client.get("/v1/me", headers=auth).json()["tenant"] == "acme"
            for path in ("/", "/ui", "/ui/"):
                page = client.get(path, follow_redirects=True)
                assert page.status_code == 200 and "<html" in page.text.lower(), path
            assert client.get("/openapi.json").json()["info"]["title"]
            sent = client.post(
                "/v1/events",
                headers=auth,
                json={
                    "event_id": "turn-1",
                    "subject": "user-5",
                    "actor": {"id": "user-5"},
                    "channel": "chat",
                    "occurred_at": datetime(2026, 11, 2, 9, tzinfo=UTC).isoformat(),
                    "text": "I live in Lisbon these days.",
                },
            )
            assert sent.status_code in (200, 201), sent.text
            deadline = time.monotonic() + 60  # the background worker extracts it
            while client.get("/v1/jobs", headers=auth).json():
                assert time.monotonic() < deadline, "the worker did not run the job"
                time.sleep(0.1)
            found = client.post(
                "/v1/recall",
                headers=auth,
                json={"query": "where does user-5 live?", "subject": "user-5"},
            ).json()
            assert any("Lisbon" in str(item) for item in found["items"])
            assert "# TYPE" in client.get("/metrics").text
    finally:
        out = stop_serve(child)
    assert child.returncode == 0, out
    assert "stopped; the worker ran 1 job(s)" in out

    again, _, lines = _start(tmp_path, "--tenant", "acme", "--no-worker")
    try:
        banner(again, lines)
    finally:
        out = stop_serve(again)
    assert token not in "".join(lines) + out  # the token is never printed again
    assert "its token was written to" in "".join(lines)
    assert again.returncode == 0 and "stopped" in out


CURL = re.compile(r"^\s+(curl \S.*)$", re.MULTILINE)


def _send(command: list[str]) -> object:
    """Run a printed ``curl`` command (with curl when installed, else the same request
    through httpx) and return the JSON it answered."""
    assert command[0] == "curl"
    if shutil.which("curl"):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        return json.loads(done.stdout)
    url, headers, body = None, {}, None
    words = iter(command[1:])
    for word in words:
        if word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(words)
        elif not word.startswith("-"):
            url = word
    assert url is not None and body is not None
    answer = httpx.post(url, headers=headers, content=body, timeout=120)
    assert answer.status_code < 300, answer.text
    return answer.json()


def test_the_first_start_banner_prints_curl_commands_that_add_and_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLEDGER_TENANT", raising=False)  # serve's default tenant
    child, base, lines = _start(tmp_path)
    try:
        printed = banner(child, lines)
        token = (tmp_path / "serve.db.admin-key").read_text().strip()
        assert "admin key of tenant 'default'" in printed
        add, search = (shlex.split(line) for line in CURL.findall(printed))
        assert f"{base}/v1/memories" in add and f"{base}/v1/memories/search" in search
        assert (
            f"Authorization: Bearer {token}" in add and f"Authorization: Bearer {token}" in search
        )
        added, found = _send(add), _send(search)
    finally:
        out = stop_serve(child)
    assert child.returncode == 0, out
    assert isinstance(added, dict) and isinstance(found, dict)
    assert {m["memory"] for m in added["memories"]} == {"I live in Porto.", "Lives in Porto"}
    assert found["results"][0]["memory"] == "Lives in Porto"
    assert all(r["user_id"] == "alice" for r in found["results"])


def _serve_refused(
    db: Path, *options: str, module: str = "memledger.cli", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m <module> serve --db <db> <options>`` run to its end (as when it refuses
    to start), its output captured."""
    return subprocess.run(
        [sys.executable, "-m", module, "serve", "--db", str(db), *options],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_refused(
            tmp_path / "x.db", "--port", str(port), "--no-worker", module="memledger", timeout=120
        )
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: cannot listen on 127.0.0.1:") and "--port" in line


def test_serve_refuses_a_bad_tenant_before_starting(tmp_path: Path) -> None:
    done = _serve_refused(tmp_path / "x.db", "--tenant", "bad tenant")
    assert done.returncode != 0
    assert "tenant" in done.stderr + done.stdout
    assert not (tmp_path / "x.db").exists()


def test_an_mcp_client_remembers_recalls_and_forgets_through_serve(tmp_path: Path) -> None:
    """The SDK's streamable-HTTP client against serve's whole app, at /mcp."""
    import asyncio

    from mcp_helpers import TOOLS, http_client, payload, recalled_ids
    from memledger.serve import build_app
    from memledger.testing.http import serve

    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    _, token = memory.create_key("acme", "user-42", grants=["home_city"])

    async def main(url: str) -> None:
        async with http_client(url, token) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            stored = payload(
                await client.call_tool(
                    "remember", {"subject": "user-42", "text": "I live in Berlin."}
                )
            )
            (memory_id,) = [r["memory_id"] for r in stored["stored"] if r["family"] == "home_city"]
            question = {"query": "where do I live?", "subject": "user-42"}
            assert memory_id in recalled_ids(await client.call_tool("recall", question))
            await client.call_tool("forget", {"memory_id": memory_id, "reason": "moved"})
            assert memory_id not in recalled_ids(await client.call_tool("recall", question))

    try:
        with serve(build_app(memory, ServeConfig(web=False))) as base:
            # the API's own lifespan ran under serve's: it opened the index at start
            assert memory._index is not None
            for path in ("/mcp", "/mcp/"):  # both spellings reach the MCP endpoint
                asyncio.run(main(f"{base}{path}"))
    finally:
        memory.close()


def test_the_listening_socket_sends_small_answers_at_once() -> None:
    """Nagle's algorithm off (TCP_NODELAY, inherited by accepted connections): without it
    small answers waited for delayed acknowledgements, about 40 ms each on loopback."""
    import memledger.serve as served

    with served._bind("127.0.0.1", 0) as sock:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_serve_passes_its_limits_to_the_api_and_refuses_bad_ones(tmp_path: Path) -> None:
    from memledger.api import ServiceLimits
    from memledger.serve import build_app
    from memledger.testing.http import serve

    limits = ServiceLimits(max_material_chars=10, tenant_in_flight=2)
    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        _, token = memory.create_key(TENANT, "admin-1", role="admin")
        config = ServeConfig(limits=limits, web=False, mcp=False)
        with serve(build_app(memory, config)) as base:
            material = [{"name": "log", "text": "x" * 11}]
            answer = httpx.post(
                f"{base}/v1/context",
                json={"request": "what happened?", "material": material},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 413 and answer.json()["code"] == "limit_exceeded"
    for option, value in (
        ("--request-seconds", "0"),
        ("--tenant-in-flight", "0"),
        ("--tenant-heavy-share", "0"),
        ("--tenant-heavy-share", "1.5"),
    ):
        done = _serve_refused(tmp_path / "x.db", option, value)
        assert done.returncode != 0 and option.lstrip("-").split("-")[0] in done.stderr, done
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.db").exists()


def test_serving_hands_the_interpreter_over_every_millisecond_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memledger.serve as serving

    seen: list[float] = []
    monkeypatch.setattr(serving, "_serve", lambda *_: seen.append(sys.getswitchinterval()))
    before = sys.getswitchinterval()
    with Memory.open(f"sqlite:///{tmp_path / 'm.db'}") as memory:
        serving.run(memory, None, ServeConfig(web=False, mcp=False), announce=lambda _: None)
    assert seen == [serving.SWITCH_INTERVAL_S] and before > serving.SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == before
