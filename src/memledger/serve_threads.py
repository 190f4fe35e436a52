"""How much blocking work one serving process runs at once.

FastAPI runs a route written as a plain function, and each such dependency, in a
worker thread of anyio's pool (40 threads unless told otherwise). Over SQLite that
work is Python between short SQL steps, and Python runs one thread at a time: every
SQL step gives the interpreter up and takes it back, so each thread busy beside the
first adds hand-overs and no work done. On the serve benchmark's store, one recall
costs about 3 ms of CPU in a thread alone and 5 to 6 ms with a second or a fourth
thread busy beside it. A serving process therefore runs at most ``threads`` pieces of
blocking work at once, and the rest wait their turn on its event loop:

* over SQLite, :data:`SQLITE_THREADS`: a long request (a context with large
  material) does not hold up the short ones behind it, and no more threads than that
  share the interpreter. More processes (``serve --processes``), not more threads,
  use more cores.
* over a database server, :data:`SERVER_THREADS`: a request there spends most of its
  time waiting on the server, and those waits overlap.

The limit is anyio's default thread limiter of the process's event loop, set when
the app starts (:func:`thread_limit`); it covers the API, the MCP endpoint and key
look-ups alike. Admission (``max_in_flight``, the tenants' caps) still decides what
is served at all; this decides how much of it runs at the same moment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["MAX_THREADS", "SERVER_THREADS", "SQLITE_THREADS", "thread_limit", "threads_for"]

SQLITE_THREADS = 2
"""Blocking work a process runs at once over a SQLite store."""
SERVER_THREADS = 8
"""Blocking work a process runs at once over a PostgreSQL store."""
MAX_THREADS = 256


def threads_for(store_url: str, threads: int | None) -> int:
    """``threads`` if given, else the default for the store at ``store_url``."""
    if threads is not None:
        return threads
    return SQLITE_THREADS if store_url.startswith("sqlite") else SERVER_THREADS


@asynccontextmanager
async def thread_limit(threads: int) -> AsyncIterator[None]:
    """At most ``threads`` worker threads busy at once on this event loop, while open."""
    import anyio.to_thread

    limiter = anyio.to_thread.current_default_thread_limiter()
    before = limiter.total_tokens
    limiter.total_tokens = threads
    try:
        yield
    finally:
        limiter.total_tokens = before
