"""A private Redis server for tests of the shared hot cache::

    from memledger.testing.redis import redis_server

    with redis_server() as url:  # "redis://127.0.0.1:PORT/0"
        ...

Starts ``redis-server`` on a free loopback port with nothing written to disk (no
snapshots, no append-only file, its working folder a temporary one), waits until it
answers as the process it started (its ``INFO`` names that process, so a server some
other test started on the same port is never mistaken for it), yields its URL and
stops it. ``port`` asks for a given port (to start a server again where a stopped one
was). Needs the server binary only, not the ``redis`` Python package; without the
binary it raises :class:`RedisServerError` saying how to install it. In a pytest
fixture::

    @pytest.fixture(scope="module")
    def redis_url() -> Iterator[str]:
        with redis_server() as url:
            yield url
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["RedisServerError", "free_port", "redis_server"]

_ATTEMPTS = 5
"""Tries on a free port (another process may take it between the check and the bind)."""


class RedisServerError(RuntimeError):
    """``redis-server`` is missing or did not start."""


def free_port() -> int:
    """A loopback TCP port nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _server_pid(port: int) -> int | None:
    """The ``process_id`` the server on ``port`` reports, or ``None`` if none answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"INFO server\r\n")
            reply = b""
            while b"process_id:" not in reply or not reply.endswith(b"\r\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                reply += chunk
    except OSError:
        return None
    for line in reply.decode("utf-8", "replace").splitlines():
        if line.startswith("process_id:"):
            return int(line.partition(":")[2])
    return None


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _start(executable: str, port: int, folder: Path, deadline: float) -> subprocess.Popen[bytes]:
    log = folder / f"redis-{port}.log"
    process = subprocess.Popen(
        [
            executable,
            *("--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
            *("--dir", str(folder), "--logfile", str(log), "--daemonize", "no"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if _server_pid(port) == process.pid:
            return process
        time.sleep(0.02)
    _stop(process)
    told = log.read_text(errors="replace")[-800:] if log.exists() else "(no log)"
    raise RedisServerError(f"redis-server did not start on 127.0.0.1:{port}:\n{told}")


@contextmanager
def redis_server(
    *, port: int | None = None, executable: str | None = None, timeout: float = 10.0
) -> Iterator[str]:
    """Run a private ``redis-server`` for the duration of the block; yields its URL."""
    found = executable or shutil.which("redis-server")
    if found is None:
        raise RedisServerError(
            "redis-server is not installed, and the Redis hot cache tests start their "
            "own: sudo apt-get install redis-server (Debian, Ubuntu) or brew install redis"
        )
    with tempfile.TemporaryDirectory(prefix="memledger-redis-") as folder:
        deadline = time.monotonic() + timeout
        for attempt in range(1 if port is not None else _ATTEMPTS):
            chosen = port if port is not None else free_port()
            try:
                process = _start(found, chosen, Path(folder), deadline)
                break
            except RedisServerError:
                if port is not None or attempt == _ATTEMPTS - 1:
                    raise
        try:
            yield f"redis://127.0.0.1:{chosen}/0"
        finally:
            _stop(process)
