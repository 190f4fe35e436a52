"""The phases of ``memledger bench serve`` about one tenant against another, and about
a burst of writes:

* **noisy neighbour**: a quiet tenant's closed-loop recalls alone, then the same while
  a noisy tenant floods the server with many concurrent context requests, each with
  large supplied material. Reported: the quiet tenant's p50/p95/p99 in both, and the
  requests shed (429/503) of both tenants.
* **burst then read**: a burst of concurrent writes (chat turns the worker extracts),
  then one recall at once: the first read's latency after the burst.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memledger.eval.bench_serve import Phase, ServeBenchConfig

__all__ = ["burst_then_read", "noisy_neighbour"]

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


async def _flood(base: str, key: str, config: ServeBenchConfig, phase: Phase) -> None:
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
        end = start + config.duration

        async def one() -> None:
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                status = await bs._send(client, "POST", "/v1/context", body)
                phase.add("context", (time.perf_counter() - t0) * 1000, status)
                if status in (429, 503):
                    await asyncio.sleep(0.005)  # a flood, not a spin on one core

        tasks = [asyncio.create_task(one()) for _ in range(config.noisy_concurrency)]
        await bs._bounded(tasks, phase, until=end + bs.HARD_STOP_S)
        phase.offered = phase.requests + phase.not_answered
        phase.seconds = time.perf_counter() - start
    finally:
        await bs._close(client)


async def noisy_neighbour(
    base: str, quiet_key: str, noisy_key: str, config: ServeBenchConfig
) -> list[Phase]:
    """The quiet tenant alone, then with the noisy tenant flooding (three phases)."""
    from memledger.eval.bench_serve import Phase

    alone = Phase(f"quiet tenant recall alone, {config.quiet_concurrency} clients")
    await _quiet(base, quiet_key, config, alone)
    beside = Phase(f"quiet tenant recall beside the flood, {config.quiet_concurrency} clients")
    flood = Phase(
        f"noisy tenant flood: {config.noisy_concurrency} clients of contexts with "
        f"{config.material_chars:,} chars of material"
    )
    await asyncio.gather(
        _quiet(base, quiet_key, config, beside), _flood(base, noisy_key, config, flood)
    )
    return [alone, beside, flood]


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
