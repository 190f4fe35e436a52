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

from memledger.eval._serve_phase import (
    GRACE_S,
    STOP_S,
    Phase,
    client,
    close,
    run_phase,
    send,
    wait_until,
)

if TYPE_CHECKING:
    from memledger.eval.bench_serve import ServeBenchConfig

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


def _quiet(base: str, key: str, config: ServeBenchConfig, name: str) -> Phase:
    from memledger.eval.bench_serve import closed_loop

    return closed_loop(base, key, config, concurrency=config.quiet_concurrency, name=name)


LEAD_S = 0.5
"""Seconds the flood runs before the quiet tenant's phase begins."""
START_S = 30.0
"""Seconds the flood's process may take to start (it imports httpx and memledger)."""


REFUSED_PAUSE_S = 0.1
"""Seconds a flood client waits after a refusal before it sends again: a tenth of the
``Retry-After: 1`` it was told, so the flood keeps pressing (32 clients send up to
about 320 refused requests a second) without a spin at whatever rate this machine's
client can reach, which would make the phase measure the client's speed."""


def _flood(
    base: str, key: str, config: ServeBenchConfig, phase: Phase, stop: Any, ready: Any
) -> None:
    """``config.noisy_concurrency`` clients sending context requests with large material,
    each again as soon as the last ended, from ``ready.set()`` until ``stop`` is set (or
    past the longest the parent waits for, whatever the other side does)."""
    body = json.dumps(
        {
            "request": "when does the courier call before delivery?",
            "budget": 2000,
            "material": [{"name": "shipping-log", "text": material(config.material_chars)}],
        }
    ).encode()  # once: encoding it is the clients' work, not the service's
    longest = START_S + LEAD_S + config.duration + STOP_S

    async def work() -> None:
        http = client(base, key, config.noisy_concurrency)
        try:
            start = time.perf_counter()
            end = start + longest

            async def one() -> None:
                while not stop.is_set() and time.perf_counter() < end:
                    t0 = time.perf_counter()
                    phase.start()
                    status, detail = await send(
                        http, "POST", "/v1/context", body, deadline=end + GRACE_S
                    )
                    phase.add("context", (time.perf_counter() - t0) * 1000, status, detail)
                    if status == "shed" or status in (429, 503):
                        await asyncio.sleep(REFUSED_PAUSE_S)

            tasks = [asyncio.create_task(one()) for _ in range(config.noisy_concurrency)]
            ready.set()
            while not stop.is_set() and time.perf_counter() < end:
                await asyncio.sleep(0.02)
            phase.seconds = time.perf_counter() - start
            await wait_until(tasks, phase, deadline=time.perf_counter() + GRACE_S)
        finally:
            await close(http)

    run_phase(phase, work, seconds=longest)


def _flood_process(
    base: str, key: str, config: ServeBenchConfig, name: str, stop: Any, ready: Any, out: Any
) -> None:
    """The flood in a process of its own: its :class:`Phase` goes back on ``out``."""
    phase = Phase(name)
    try:
        _flood(base, key, config, phase, stop, ready)
    finally:
        ready.set()  # a flood that failed to start does not hold the quiet phase
        out.put(phase)


def noisy_neighbour(
    base: str, quiet_key: str, noisy_key: str, config: ServeBenchConfig
) -> list[Phase]:
    """The quiet tenant alone, then with the noisy tenant flooding (three phases)."""
    alone = _quiet(
        base, quiet_key, config, f"quiet tenant recall alone, {config.quiet_concurrency} clients"
    )
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
        if _while_alive(flooder, lambda: ready.wait(0.2), seconds=START_S):
            time.sleep(LEAD_S)
        beside = _quiet(
            base,
            quiet_key,
            config,
            f"quiet tenant recall beside the flood, {config.quiet_concurrency} clients",
        )
    finally:
        stop.set()

    def report() -> Phase | None:
        try:
            found: Phase = out.get(timeout=0.2)
        except queue.Empty:
            return None
        return found

    flood = _while_alive(flooder, report, seconds=STOP_S + 3.0)
    flooder.join(2.0)
    if flooder.is_alive():
        flooder.kill()
        flooder.join(2.0)
    if flood is None:  # it could not start (in a script without a __main__ guard, say)
        flood = Phase(name, note="the flood's process gave no report")
    return [alone, beside, flood]


def _while_alive(process: Any, step: Callable[[], T | None], *, seconds: float) -> T | None:
    """``step()`` again until it gives something, ``process`` has ended (one last
    try), or ``seconds`` have passed."""
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        found = step()
        if found:
            return found
        if not process.is_alive():
            return step() or None
    return None


def burst_then_read(base: str, key: str, config: ServeBenchConfig) -> Phase:
    """``config.burst`` writes at once (16 connections), then one recall: the phase's
    ``first read`` operation is that recall's latency. The writes and the read share
    the phase's ``config.duration``."""
    from memledger.eval.bench_serve import _turn

    phase = Phase(f"burst of {config.burst} writes, then the first read")
    rng = random.Random(13)

    async def work() -> None:
        http = client(base, key, 16)
        try:
            start = time.perf_counter()
            cut = start + config.duration + GRACE_S

            async def write(n: int) -> None:
                subject = f"user-{rng.randrange(config.subjects)}"
                turn = _turn(rng, subject, 10_000 + n)
                t0 = time.perf_counter()
                phase.start()
                status, detail = await send(http, "POST", "/v1/events", turn, deadline=cut)
                phase.add("ingest", (time.perf_counter() - t0) * 1000, status, detail)

            async def burst_and_read() -> None:
                await asyncio.gather(*(write(n) for n in range(config.burst)))
                t0 = time.perf_counter()
                body = {"query": "where does the user live?", "subject": "user-0", "k": 10}
                phase.start()
                status, detail = await send(http, "POST", "/v1/recall", body, deadline=cut)
                phase.add("first read", (time.perf_counter() - t0) * 1000, status, detail)
                phase.seconds = time.perf_counter() - start

            await wait_until([asyncio.create_task(burst_and_read())], phase, deadline=cut)
        finally:
            await close(http)

    return run_phase(phase, work, seconds=config.duration)
