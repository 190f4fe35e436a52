"""Helpers of the web page tests: the seeded store, the browser and its launch options,
and where screenshots go."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memledger import Memory
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.testing import FrozenClock
from memledger.testing.conformance._story import story
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, actor, day, event, fact, pref

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "web"
"""Screenshots of the page as the tests saw it."""

CHROMIUM = Path("/usr/bin/chromium")
"""The Debian ``chromium`` package's binary: Playwright drives it, downloads nothing."""

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless :data:`CHROMIUM` under Playwright (a ``Browser``); skips the test when
    either is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


NOW: datetime = day(10, 28)
"""The instant the server's clock and the browser's clock both stand at: the seed story's
October 28, when daily deliveries hold."""

INJECTED = '<img src=x onerror="window.__pwned = 1">'
"""Memory text that would run script if the page ever inserted it as markup."""

INJECTED_SUBJECT = "user-7"
REVIEW_SUBJECT = "user-8"
TRACE_REQUEST = "How should deliveries go on Friday?"
"""A request whose packet holds the daily preference and leaves two windows out."""


def open_memory(path: Path, clock: FrozenClock) -> Memory:
    """A SQLite store at ``path`` with a deterministic embedder (no model to load)."""
    index = DerivedIndex(path.with_suffix(".index"), embedder=HashingEmbedder())
    return Memory.open(path, clock=clock, index=index)


def seed(memory: Memory, clock: FrozenClock) -> None:
    """Seed 000's story for ``user-42`` (Friday; then daily through October and Friday
    again from November 1), a memory whose text is markup for ``user-7`` and an
    observation (a claim its actor had no grant for) of ``user-7``, an event held
    for review for ``user-8``, and one context packet's trace; the clock left at
    :data:`NOW`."""
    story(memory, clock)
    clock.set(day(10, 20))
    memory.ingest(
        event(
            "evt-markup",
            f"Call me {INJECTED} please",
            occurred_at=day(10, 20, 9),
            subject=INJECTED_SUBJECT,
            who=actor(FAMILY, actor_id=INJECTED_SUBJECT),
        ),
        [pref(INJECTED, grounding=INJECTED)],
    )
    memory.ingest(  # said without a grant for home_city: kept, as an observation only
        event(
            "evt-lyon",
            "I live in Lyon now",
            occurred_at=day(10, 20, 10),
            subject=INJECTED_SUBJECT,
            who=actor(actor_id=INJECTED_SUBJECT),
        ),
        [fact("home_city", "Lives in Lyon", "Lyon", grounding="live in Lyon")],
    )
    for event_id, value in (("evt-hold-a", "friday"), ("evt-hold-b", "monday")):
        memory.ingest(
            event(
                event_id,
                f"{value.title()} please",
                occurred_at=day(10, 21, 9),
                subject=REVIEW_SUBJECT,
                who=actor(FAMILY, actor_id=REVIEW_SUBJECT),
            ),
            [pref(value)],
        )
    clock.set(NOW)
    memory.context(TRACE_REQUEST, tenant=TENANT, subject=SUBJECT, valid_at=NOW)
