"""A serving process's cap on requests at once: a real uvicorn, a real ``memledger serve``."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from memledger.api._admission import Admission
from memledger.errors import InvalidInputError
from memledger.serve_cap import RequestCap
from memledger.testing.http import serve
from serve_helpers import banner, start_serve, stop_serve


def _held_app(release: threading.Event, entered: threading.Semaphore) -> Starlette:
    async def slow(_: Request) -> PlainTextResponse:
        entered.release()
        while not release.is_set():
            await asyncio.sleep(0.01)
        return PlainTextResponse("done")

    async def fast(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/slow", slow), Route("/fast", fast), Route("/healthz", fast)])


def test_past_the_cap_a_request_is_the_overloaded_problem_and_probes_still_pass() -> None:
    release, entered = threading.Event(), threading.Semaphore(0)
    admission = Admission(max_in_flight=16, tenant_in_flight=4, tenant_of=lambda token: None)
    cap = RequestCap(_held_app(release, entered), limit=2, admission=admission)
    with serve(cap) as base:
        held: list[httpx.Response] = []

        def hold() -> None:
            held.append(httpx.get(f"{base}/slow", timeout=30))

        holders = [threading.Thread(target=hold) for _ in range(2)]
        for thread in holders:
            thread.start()
        for _ in holders:
            assert entered.acquire(timeout=10)  # both in progress
        assert cap.in_flight == 2
        refused = httpx.get(f"{base}/fast")
        assert refused.status_code == 503
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["code"] == "overloaded"
        assert admission.refused["overloaded"] == 1
        assert httpx.get(f"{base}/healthz").text == "ok"  # a probe is never refused
        release.set()
        for thread in holders:
            thread.join(30)
        assert [r.text for r in held] == ["done", "done"]
        assert cap.in_flight == 0
        assert httpx.get(f"{base}/fast").text == "ok"  # places given back


def test_a_cap_is_a_whole_number_of_at_least_one() -> None:
    app = Starlette()
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(InvalidInputError, match="limit"):
            RequestCap(app, limit=bad)  # type: ignore[arg-type]


def _request(path: str, key: str, body: bytes, *, sent: int) -> tuple[bytes, bytes]:
    """A POST of ``body`` to ``path`` cut in two: its headers and the first ``sent``
    bytes of the body, then the rest."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body[:sent], body[sent:]


def test_serve_caps_requests_not_idle_connections(tmp_path: Path) -> None:
    key_file = tmp_path / "admin-key"
    child, base, lines = start_serve(
        f"sqlite:///{tmp_path / 'm.db'}", "--key-file", str(key_file), "--max-concurrency", "2"
    )
    try:
        banner(child, lines)
        key = key_file.read_text().strip()
        auth = {"Authorization": f"Bearer {key}"}
        host, port = base.removeprefix("http://").split(":")
        # ten idle connections, as agents' pools keep them: nothing is refused
        idle = [socket.create_connection((host, int(port))) for _ in range(10)]
        time.sleep(0.2)
        assert httpx.get(f"{base}/healthz").status_code == 200
        assert httpx.get(f"{base}/v1/subjects", headers=auth).status_code == 200
        for connection in idle:
            connection.close()
        # two recalls in progress, their bodies half sent: the third is refused at once
        body = json.dumps({"query": "where do I live?", "subject": "u1"}).encode()
        held = []
        for _ in range(2):
            connection = socket.create_connection((host, int(port)))
            first, rest = _request("/v1/recall", key, body, sent=10)
            connection.sendall(first)
            held.append((connection, rest))
        deadline = time.monotonic() + 30
        while True:
            third = httpx.post(f"{base}/v1/recall", json={"query": "x"}, headers=auth)
            if third.status_code == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # the held requests are not in progress yet
        assert third.status_code == 503, third.text
        assert third.json()["code"] == "overloaded" and third.headers["retry-after"] == "1"
        assert httpx.get(f"{base}/healthz").status_code == 200
        metrics = httpx.get(f"{base}/metrics").text
        assert 'memledger_admission_refusals_total{reason="overloaded"}' in metrics
        for connection, rest in held:  # the held ones finish and are answered
            connection.sendall(rest)
            answer = connection.recv(65536).decode()
            assert answer.startswith("HTTP/1.1 200"), answer[:200]
            connection.close()
        answered = httpx.post(
            f"{base}/v1/recall", json={"query": "x", "subject": "u1"}, headers=auth
        )
        assert answered.status_code == 200, answered.text
    finally:
        stop_serve(child)
