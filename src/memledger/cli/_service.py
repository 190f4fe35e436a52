"""The long-running ``memledger worker``: run batches until SIGINT or SIGTERM.

The first signal sets a stop flag: the batch in progress finishes (its jobs
commit or are queued for a retry) and the worker returns its report. A second
signal interrupts at once (``KeyboardInterrupt``: the open transaction rolls
back and the leased jobs are taken over by another worker when their lease
runs out).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""A long run keeps only its latest job errors for the summary (the outcomes count all)."""


@dataclass(slots=True)
class Stop:
    """Set by the first stop signal; ``signal`` names it."""

    event: threading.Event = field(default_factory=threading.Event)
    signal: str | None = None


@contextmanager
def stop_on_signals() -> Iterator[Stop]:
    """Turn SIGINT and SIGTERM into a :class:`Stop` for the duration of the block."""
    stop = Stop()

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.event.is_set():
            raise KeyboardInterrupt  # a second signal: stop now
        stop.signal = signal.Signals(signum).name
        stop.event.set()

    previous = {number: signal.signal(number, handle) for number in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
