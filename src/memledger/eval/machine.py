"""What machine a benchmark ran on, for its JSON report."""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path


def describe() -> dict[str, str | int]:
    cpu = "unknown"
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "sqlite": sqlite3.sqlite_version,
    }
