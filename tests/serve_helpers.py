"""``memledger serve`` started as a user starts it: a real process on a free loopback
port, its banner read, stopped by SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import time

from memledger.eval.bench_serve import start_serve as start_child

URL_LINE = re.compile(r"API\s+(http://\S+)/v1")


def start_serve(
    url: str, *extra: str, group: bool = False
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """``memledger serve --db url --port 0 ...``: the process, its base URL and the
    lines it printed up to the URL. ``group``: in a process group of its own, as a
    terminal starts a command (Ctrl-C signals the whole group)."""
    child = start_child(url, "--poll", "0.05", *extra, group=group)
    assert child.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = URL_LINE.search(line)
        if found:
            return child, found.group(1), lines
    child.kill()
    child.wait()
    raise AssertionError("serve did not announce its URL:\n" + "".join(lines))


def banner(child: subprocess.Popen[str], lines: list[str]) -> str:
    """What serve printed once it is up: ``lines`` read on to its last line."""
    assert child.stdout is not None
    while not any("stop with" in line for line in lines):
        lines.append(child.stdout.readline())
        assert lines[-1], "serve stopped before it was up:\n" + "".join(lines)
    return "".join(lines)


def stop_serve(child: subprocess.Popen[str]) -> str:
    """SIGTERM, then what serve printed until it exited."""
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    try:
        out, _ = child.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        raise AssertionError("serve did not stop within 90 s of SIGTERM:\n" + out) from None
    return out
