"""How much blocking work one serving process runs at once (``serve --threads N``).

FastAPI runs a route written as a plain function, and each such dependency, in a
worker thread of anyio's pool (40 threads). Over SQLite that work is Python between
short SQL steps, and Python runs one thread at a time: every SQL step gives the
interpreter up and takes it back, so each thread busy beside the first adds
hand-overs and no work done. On the serve benchmark's store one recall costs about
3 ms of CPU in a thread alone and 5 to 6 ms with a second or a fourth thread busy
beside it. ``threads`` caps the pieces of blocking work a process runs at once; the
rest wait their turn on its event loop.

The cap is off by default. Below the admission's places (``max_in_flight``, a
tenant's ``tenant_in_flight``), one tenant's slow requests (a long extraction run, a
write waiting for the store's lock, a read waiting for a replica) could hold every
thread while another tenant's admitted request waits behind them: the admission
promises the others room, and only a pool at least as large as its places keeps that
promise. Set it (2 over SQLite) where requests are short and throughput counts;
more processes (``serve --processes``), not more threads, use more cores.

The cap is anyio's default thread limiter of the process's event loop, set when the
app starts (:func:`thread_limit`); it covers the API, the MCP endpoint and key
look-ups alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["MAX_THREADS", "thread_limit"]

MAX_THREADS = 256


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
