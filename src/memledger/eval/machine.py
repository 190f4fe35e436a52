"""What machine a benchmark ran on, for its report."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
from pathlib import Path


def describe() -> dict[str, str | int]:
    """CPU model, cores, memory (``"7.8 GiB"``), Python, SQLite, platform, and ``commit``: the
    memledger checkout's commit (``+dirty`` with changes not committed) when it runs
    from a git checkout."""
    cpu = "unknown"
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    found: dict[str, str | int] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "sqlite": sqlite3.sqlite_version,
    }
    memory = _memory_gib()
    if memory:
        found["memory"] = f"{memory:g} GiB"
    commit = _commit()
    if commit:
        found["commit"] = commit
    return found


def _memory_gib() -> float:
    info = Path("/proc/meminfo")
    if info.exists():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    return 0.0


def _commit() -> str:
    """The commit of the git checkout memledger runs from, or ``""``."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    with contextlib.suppress(OSError, subprocess.SubprocessError):
        top = git("rev-parse", "--show-toplevel")
        if not top or not (Path(top) / "src" / "memledger").is_dir():
            return ""  # installed inside some other repository
        commit = git("rev-parse", "--short", "HEAD")
        if commit and git("status", "--porcelain", "--untracked-files=no"):
            commit += "+dirty"
        return commit
    return ""
