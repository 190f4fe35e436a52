"""The phases of ``memledger bench serve`` about one tenant against another, and about
a burst of writes:

* **noisy neighbour**: a quiet tenant's closed-loop recalls alone, then the same while
  a noisy tenant floods the server with many concurrent context requests, each with
  large supplied material. Reported: the quiet tenant's p50/p95/p99 in both, and the
  requests shed (429/503) of both tenants. The flood comes from a process of its own
  (sending 200 kB bodies as fast as the server takes them keeps a Python client's
  event loop busy, and would make the quiet tenant's clients wait for their own
  loop): it starts first and runs until the quiet tenant's phase is over.
* **burst then read**: a burst of concurrent writes (chat turns the worker extracts),
  then one recall at once: the first read's latency after the burst.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import queue
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from memledger.eval.bench_serve import Phase, ServeBenchConfig

__all__ = ["burst_then_read", "noisy_neighbour"]

T = TypeVar("T")

_WORDS = (
    "the order shipped from the north warehouse after the courier confirmed the window "
    "and the customer asked for a call before delivery because the building has no "
    "reception on weekends while the invoice listed two pallets and a return label"
).split()


def material(chars: int, *, seed: int = 5) -> str:
    """About ``chars`` characters of prose in paragraphs (at most ``chars``)."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while True:
        paragraph = " ".join(rng.choice(_WORDS) for _ in range(80)) + "."
        if size + len(paragraph) + 2 > chars:
            break
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs) or "x" * max(1, chars)


async def _quiet(base: str, key: str, config: ServeBenchConfig, phase: Phase) -> None:
    from memledger.eval import bench_serve as bs

    await bs._closed_loop(base, key, config, concurrency=config.quiet_concurrency, into=phase)


async def _flood(
    base: str, key: str, config: ServeBenchConfig, phase: Phase, stop: Any, ready: Any
) -> None:
    """``config.noisy_concurrency`` clients sending context requests with large material,
    each again as soon as the last answered, from ``ready.set()`` until ``stop`` is set
    (or past ``config.duration`` plus a hard stop, whatever the other side does)."""
    from memledger.eval import bench_serve as bs

    body = json.dumps(
        {
            "request": "when does the courier call before delivery?",
            "budget": 2000,
            "material": [{"name": "shipping-log", "text": material(config.material_chars)}],
        }
    ).encode()  # once: encoding it is the clients' work, not the service's
    client = bs._client(base, key, config.noisy_concurrency, bs.REQUEST_TIMEOUT_S)
    try:
        start = time.perf_counter()
        end = start + config.duration + bs.HARD_STOP_S

        async def one() -> None:
            while not stop.is_set() and time.perf_counter() < end:
                t0 = time.perf_counter()
                status = await bs._send(client, "POST", "/v1/context", body)
                phase.add("context", (time.perf_counter() - t0) * 1000, status)
                if status in (429, 503):
                    await asyncio.sleep(0.005)  # a flood, not a spin on one core

        tasks = [asyncio.create_task(one()) for _ in range(config.noisy_concurrency)]
        ready.set()
        await bs._bounded(tasks, phase, until=end + bs.HARD_STOP_S)
        phase.offered = phase.requests + phase.not_answered
        phase.seconds = time.perf_counter() - start
    finally:
        await bs._close(client)


def _flood_process(
    base: str, key: str, config: ServeBenchConfig, name: str, stop: Any, ready: Any, out: Any
) -> None:
    """The flood in a process of its own: its :class:`Phase` goes back on ``out``."""
    from memledger.eval.bench_serve import Phase

    phase = Phase(name)
    try:
        asyncio.run(_flood(base, key, config, phase, stop, ready))
    finally:
        ready.set()  # a flood that failed to start does not hold the quiet phase
        out.put(phase)


LEAD_S = 0.5
"""Seconds the flood runs before the quiet tenant's phase begins."""
START_S = 120.0
"""Seconds the flood's process may take to start (it imports httpx and memledger)."""


async def noisy_neighbour(
    base: str, quiet_key: str, noisy_key: str, config: ServeBenchConfig
) -> list[Phase]:
    """The quiet tenant alone, then with the noisy tenant flooding (three phases)."""
    from memledger.eval.bench_serve import Phase

    alone = Phase(f"quiet tenant recall alone, {config.quiet_concurrency} clients")
    await _quiet(base, quiet_key, config, alone)
    beside = Phase(f"quiet tenant recall beside the flood, {config.quiet_concurrency} clients")
    name = (
        f"noisy tenant flood: {config.noisy_concurrency} clients of contexts with "
        f"{config.material_chars:,} chars of material"
    )
    spawn = multiprocessing.get_context("spawn")
    stop, ready, out = spawn.Event(), spawn.Event(), spawn.Queue()
    flooder = spawn.Process(
        target=_flood_process, args=(base, noisy_key, config, name, stop, ready, out), daemon=True
    )
    flooder.start()
    try:
        started = await asyncio.to_thread(_while_alive, flooder, lambda: ready.wait(0.2))
        if started:
            await asyncio.sleep(LEAD_S)
        await _quiet(base, quiet_key, config, beside)
    finally:
        stop.set()

    def report() -> Phase | None:
        try:
            found: Phase = out.get(timeout=0.2)
        except queue.Empty:
            return None
        return found

    flood = await asyncio.to_thread(_while_alive, flooder, report)
    await asyncio.to_thread(flooder.join, 10.0)
    if flooder.is_alive():
        flooder.kill()
    if flood is None:  # it could not start (in a script without a __main__ guard, say)
        flood = Phase(name)
        flood.errors["flood process gave no report"] += 1
    return [alone, beside, flood]


def _while_alive(process: Any, step: Callable[[], T | None]) -> T | None:
    """``step()`` again until it gives something, ``process`` has ended (one last
    try), or :data:`START_S` have passed."""
    give_up = time.monotonic() + START_S
    while time.monotonic() < give_up:
        found = step()
        if found:
            return found
        if not process.is_alive():
            return step() or None
    return None


async def burst_then_read(base: str, key: str, config: ServeBenchConfig) -> Phase:
    """``config.burst`` writes at once (16 connections), then one recall: the phase's
    ``first read`` operation is that recall's latency."""
    from memledger.eval import bench_serve as bs

    phase = bs.Phase(f"burst of {config.burst} writes, then the first read")
    rng = random.Random(13)
    client = bs._client(base, key, 16, bs.REQUEST_TIMEOUT_S)
    try:
        start = time.perf_counter()

        async def write(n: int) -> None:
            subject = f"user-{rng.randrange(config.subjects)}"
            turn = bs._turn(rng, subject, 10_000 + n)
            t0 = time.perf_counter()
            status = await bs._send(client, "POST", "/v1/events", turn)
            phase.add("ingest", (time.perf_counter() - t0) * 1000, status)

        tasks = [asyncio.create_task(write(n)) for n in range(config.burst)]
        await bs._bounded(tasks, phase, until=start + config.duration + bs.HARD_STOP_S)
        t0 = time.perf_counter()
        body = {"query": "where does the user live?", "subject": "user-0", "k": 10}
        status = await bs._send(client, "POST", "/v1/recall", body)
        phase.add("first read", (time.perf_counter() - t0) * 1000, status)
        phase.offered = config.burst + 1
        phase.seconds = time.perf_counter() - start
    finally:
        await bs._close(client)
    return phase
