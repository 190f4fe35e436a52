"""A real HTTP server for tests: an ASGI app under uvicorn, in a thread, on loopback.

::

    with serve(create_app(memory)) as base_url:
        httpx.get(f"{base_url}/healthz")

The socket is bound (to a free port) before the server starts, so there is no race
for the port; :func:`serve` returns once the server accepts connections, and on exit
asks it to stop, waits for requests in flight and joins the thread. Needs uvicorn
(the ``server`` extra).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp

__all__ = ["serve"]


@contextmanager
def serve(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    start_timeout: float = 15.0,
    stop_timeout: float = 15.0,
    log_level: str = "warning",
) -> Iterator[str]:
    """Run ``app`` under uvicorn in a daemon thread; yield its base URL
    (``http://127.0.0.1:<port>``). ``port=0`` picks a free one."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(stop_timeout),
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported to the caller below
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{bound}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if failure or not thread.is_alive():
                raise RuntimeError(f"the server did not start: {failure[0] if failure else '?'}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server did not start within {start_timeout} s")
            time.sleep(0.01)
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(stop_timeout)
        sock.close()
        if thread.is_alive():  # pragma: no cover - a handler that never returns
            server.force_exit = True
            thread.join(stop_timeout)
