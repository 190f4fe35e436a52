"""The child server's memory as ``bench serve`` samples it: a real process tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memledger.eval._serve_memory import TreeMemory

# a child that holds 200 MiB of touched pages until a line comes on its input
HOLDER = "import sys; data = b'x' * (200 << 20); print('ready', flush=True); sys.stdin.readline()"
# the root of the tree: starts the holder, hands it its own input and output, waits
ROOT = (
    "import subprocess, sys; "
    f"subprocess.run([sys.executable, '-c', {HOLDER!r}], stdin=sys.stdin, stdout=sys.stdout)"
)


def test_the_samples_count_every_process_under_the_root_and_each_window_its_own() -> None:
    root = subprocess.Popen(
        [sys.executable, "-c", ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert root.stdout is not None and root.stdin is not None
        assert root.stdout.readline().strip() == "ready"
        with TreeMemory(root.pid, every=0.05) as memory:
            held = memory.window()
            assert held.peak_mb >= held.end_mb >= 200  # the grandchild's pages count
            root.stdin.write("\n")
            root.stdin.flush()
            root.wait(timeout=30)
            ended = memory.window()
            assert ended.end_mb == 0  # the tree is gone
            assert ended.peak_mb >= 200  # the stretch began with the tree still there
            after = memory.window()
        assert after.peak_mb == after.end_mb == 0
        whole = memory.to_json()
        assert whole["processes"] == 2
        peaks = whole["process_peaks_mb"]
        assert isinstance(peaks, list) and len(peaks) == 2
        assert peaks[0] >= 200 > peaks[1] > 0  # the holder, then the root
        assert whole["peak_mb"] >= peaks[0] + peaks[1] - 1
        assert whole["sampled_every_s"] == 0.05
    finally:
        root.kill()
        root.wait()


def test_without_psutil_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)
    with pytest.raises(ImportError, match=r"memledger\[bench\]"):
        TreeMemory(1)
