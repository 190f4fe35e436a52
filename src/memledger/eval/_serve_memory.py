"""The resident memory of the child ``memledger serve`` of ``memledger bench serve``.

:class:`TreeMemory` samples, in a thread of its own, the resident set size (RSS) of a
process and of every process under it (a supervisor, its request processes and its
worker) every :data:`EVERY_S` seconds, and keeps each process's largest sample and the
largest sum. :meth:`TreeMemory.window` gives what a stretch of the run saw (a phase,
the seeding), so a report shows whether the server's memory levels off under load or
keeps climbing. The figures are samples: a peak shorter than :data:`EVERY_S` may be
missed, and the sum adds processes' pages they share (a spawned process's imports are
its own, so little is shared).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

EVERY_S = 0.25
"""Seconds between two samples."""

_MIB = 1024 * 1024


def _psutil() -> Any:
    try:
        import psutil
    except ImportError as exc:
        raise ImportError(
            "memledger bench serve reads the server's memory with psutil: "
            "pip install 'memledger[bench]'"
        ) from exc
    return psutil


@dataclass(frozen=True, slots=True)
class Window:
    """What the samples of one stretch of the run saw."""

    peak_mb: float
    """The largest sum of the tree's RSS, in MiB."""
    end_mb: float
    """The sum at the stretch's last sample, in MiB."""

    def to_json(self) -> dict[str, float]:
        return {"peak_mb": round(self.peak_mb, 1), "end_mb": round(self.end_mb, 1)}


@dataclass(slots=True)
class _Seen:
    window_peak: int = 0
    last: int = 0
    peak: int = 0
    peaks: dict[int, int] = field(default_factory=dict)
    """Each process's largest sample, by pid."""


class TreeMemory:
    """Samples of process ``pid``'s tree until :meth:`stop`; use as a context manager."""

    def __init__(self, pid: int, *, every: float = EVERY_S) -> None:
        psutil = _psutil()
        self._root = psutil.Process(pid)
        self._gone = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)
        self._every = every
        self._seen = _Seen()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-serve-memory", daemon=True)

    def __enter__(self) -> TreeMemory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.sample()

    def sample(self) -> int:
        """One sample now: the tree's RSS summed, in bytes (0 once the root is gone)."""
        sizes: dict[int, int] = {}
        try:
            tree = [self._root, *self._root.children(recursive=True)]
        except self._gone:
            tree = []
        for process in tree:
            try:
                sizes[process.pid] = process.memory_info().rss
            except self._gone:
                continue  # ended between the listing and the reading
        total = sum(sizes.values())
        with self._lock:
            seen = self._seen
            seen.last = total
            seen.window_peak = max(seen.window_peak, total)
            seen.peak = max(seen.peak, total)
            for pid, size in sizes.items():
                seen.peaks[pid] = max(seen.peaks.get(pid, 0), size)
        return total

    def window(self) -> Window:
        """The stretch since the last call (or the start), ended with a sample now."""
        self.sample()
        with self._lock:
            seen = self._seen
            done = Window(peak_mb=seen.window_peak / _MIB, end_mb=seen.last / _MIB)
            seen.window_peak = seen.last
        return done

    def to_json(self) -> dict[str, object]:
        """The run's peak sum and each process's peak (largest first), in MiB."""
        with self._lock:
            seen = self._seen
            return {
                "sampled_every_s": self._every,
                "peak_mb": round(seen.peak / _MIB, 1),
                "processes": len(seen.peaks),
                "process_peaks_mb": sorted(
                    (round(size / _MIB, 1) for size in seen.peaks.values()), reverse=True
                ),
            }
