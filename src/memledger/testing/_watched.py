"""Run a long copy for as long as it makes progress: a command that keeps copying is
never cut off for being slow (a loaded machine), one that stops copying is killed after
``stall`` seconds of no progress, and every one is killed after ``limit`` seconds."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

_POLL = 1.0
"""Seconds between two progress readings (a reading may walk a folder of many files)."""


class WatchError(RuntimeError):
    """The command stalled or ran out of time; the message says which, and how far it got."""


def megabytes(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


def run_watched(
    command: Sequence[str],
    *,
    progress: Callable[[], int],
    stall: float,
    limit: float,
    poll: float = _POLL,
    **popen: Any,
) -> tuple[int, str]:
    """Run ``command`` to its end; returns its exit code and its output (stderr, else
    stdout). ``progress()`` measures the work done (bytes copied): while it grows the
    command runs on, up to ``limit`` seconds; unchanged for ``stall`` seconds, the
    command is killed and :class:`WatchError` raised."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
            **popen,
        )
        done, last, changed = 0, -1, started
        try:
            while True:
                try:
                    code = process.wait(timeout=poll)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                done = progress()
                if done != last:
                    last, changed = done, now
                ran = f"ran {now - started:.0f} s, {megabytes(done)} done"
                if now - changed >= stall:
                    raise WatchError(f"made no progress for {stall:.0f} s ({ran})")
                if now - started >= limit:
                    raise WatchError(f"took longer than its limit of {limit:.0f} s ({ran})")
        finally:
            if process.poll() is None:
                _kill_group(process)
        err.seek(0)
        out.seek(0)
        return code, (err.read() or out.read()).strip()


def _kill_group(process: subprocess.Popen[str]) -> None:
    """Kill the command and every process it started (a shell's children too: killing
    the shell alone leaves a child that goes on writing)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
