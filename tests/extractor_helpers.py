"""An extractor that keeps a service busy, for the tests of admission and limits (over
HTTP and over MCP): ``holding_extractor``."""

from __future__ import annotations

import threading

from memledger.domain.records import Claim, SourceEvent
from memledger.testing import FunctionExtractor


def holding_extractor() -> tuple[FunctionExtractor, threading.Event, list[int]]:
    """An extractor whose every extraction waits (20 s at most) until the event is set,
    then proposes nothing; the event; and how many extractions have started (in a
    one-item list the extractor updates)."""
    release, started = threading.Event(), [0]

    def held(source: SourceEvent) -> list[Claim]:
        started[0] += 1
        release.wait(20)
        return []

    return FunctionExtractor(held), release, started
