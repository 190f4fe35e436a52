"""Long copies under watch (``memledger.testing._watched``): a command that keeps making
progress runs past the stall window, one that stops is killed, and every one is killed
at its limit, with an error saying which and how far it got."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memledger.testing._watched import WatchError, run_watched


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def test_a_command_that_keeps_copying_runs_past_the_stall_window(tmp_path: Path) -> None:
    out = tmp_path / "copied"
    script = f"for i in 1 2 3 4 5 6; do echo x >> {out}; sleep 0.4; done; echo fine"
    started = time.monotonic()
    code, told = run_watched(
        ["sh", "-c", script], progress=lambda: _size(out), stall=1.2, limit=60, poll=0.1
    )
    assert (code, told) == (0, "fine")
    assert time.monotonic() - started > 1.2  # longer than the stall window, never cut off
    assert _size(out) == 12


def test_a_command_that_copies_nothing_is_killed_after_the_stall(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    started = time.monotonic()
    with pytest.raises(WatchError, match=r"^made no progress for 1 s \(ran \d+ s, 0\.0 MB done\)$"):
        run_watched(
            ["sh", "-c", f"sleep 3; touch {marker}"],
            progress=lambda: 0,
            stall=1.0,
            limit=60,
            poll=0.1,
        )
    assert time.monotonic() - started < 2.5
    time.sleep(1.0)
    assert not marker.exists()  # killed, not left running


def test_a_command_past_its_limit_is_killed_however_it_progresses(tmp_path: Path) -> None:
    out = tmp_path / "copied"
    # the writing loop runs in a child shell, so killing the outer shell alone leaves it
    loop = f"while true; do head -c 65536 /dev/zero >> {out}; sleep 0.05; done"
    script = f"sh -c '{loop}'; true"
    with pytest.raises(
        WatchError, match=r"^took longer than its limit of 1 s \(ran 1 s, [0-9.]+ MB"
    ):
        run_watched(
            ["sh", "-c", script], progress=lambda: _size(out), stall=30, limit=1.0, poll=0.1
        )
    time.sleep(0.1)  # a write under way when the kill came ends
    size = _size(out)
    time.sleep(0.5)
    assert _size(out) == size  # the command and its children killed, none left running


def test_a_failing_command_returns_its_code_and_what_it_said() -> None:
    code, told = run_watched(
        ["sh", "-c", "echo partial; echo broken >&2; exit 3"],
        progress=lambda: 0,
        stall=30,
        limit=30,
    )
    assert (code, told) == (3, "broken")
