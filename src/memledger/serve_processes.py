"""Several request processes over one store: ``memledger serve --processes N``.

The supervising process binds the address, holds the first admin key and runs the
background worker (the extraction queue of every tenant, expiry, the index's
catch-up). It starts ``N`` request processes afresh (``spawn``: nothing of its own
state is copied); each opens the store and the extractor itself (the picklable
:data:`~memledger.serve.Opener`) and serves the whole app (API, web page, MCP) on the
one listening socket, the kernel handing each new connection to one of them. Only
the processes' Python is parallel: every answer still comes from the one store.

What holds across processes, because every process reads the canonical store:

* a write acknowledged by one process is read by every other: a consistency token
  (``Memledger-Consistency``) is honoured whichever process answers, and a replica
  that has not reached it is not read;
* a revocation acknowledged by one process is honoured at once by every other: each
  read rechecks its hits against the store, and the hot tier serves a value only
  while the subject's family stamps in the store are unchanged;
* on SQLite, writes are serialised by the store's write gate (a ``flock`` every
  process takes); the index file is shared, kept caught up by the supervisor's
  worker (a read applies a bounded part of its tenant's backlog), and the vectors a
  process holds in memory follow the file's change stamp; on PostgreSQL each process
  has its own pool, and the index lives in the database;
* the MCP endpoint is stateless (each request stands alone), so any process answers
  any MCP request;
* the limits (``max_concurrency``, ``max_in_flight``, a tenant's in-flight and heavy
  share) count in each process: ``N`` processes admit up to ``N`` times as much.

A request process that exits is replaced; one that exits within :data:`START_GRACE_S`
of starting :data:`MAX_QUICK_EXITS` times in a row stops the service with an error
(a store it cannot open, a broken extractor setting). SIGTERM or SIGINT stops the
request processes (each finishes the requests in flight), then the worker finishes
the batch it holds. A request process whose supervisor is gone stops by itself.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.serve import (
    SWITCH_INTERVAL_S,
    Opener,
    ServeConfig,
    ServeError,
    _bind,
    _stop_signals,
    _switch_interval,
    background_worker,
    build_app,
    on_stop_signals,
    server_for,
)
from memledger.write.worker import WorkReport

__all__ = ["MAX_QUICK_EXITS", "START_GRACE_S", "START_S", "STOP_S", "run_processes"]

log = logging.getLogger("memledger.serve")

START_S = 120.0
"""Seconds a request process may take to open the store and listen."""
STOP_S = 30.0
"""Seconds a request process may take to finish its requests once asked to stop;
then it is killed."""
START_GRACE_S = 10.0
"""A request process that exits sooner than this after it started exited "at start"."""
MAX_QUICK_EXITS = 3
"""Request processes exiting at start in a row before the service stops."""
_LOOK_S = 0.2
"""Seconds between the supervisor's looks at its processes."""


def run_processes(
    memory: Memory,
    extractor: Extractor | None,
    config: ServeConfig,
    open_requests: Opener,
    *,
    announce: Callable[[str], None],
) -> WorkReport | None:
    """Serve ``config.processes`` request processes until SIGTERM or SIGINT, the
    worker running here over ``memory``; returns the worker's report (``None``
    without a worker). Raises :class:`~memledger.serve.ServeError` when the address
    cannot be used or the request processes cannot start."""
    sock = _bind(config.host, config.port, share_port=True)
    base = f"http://{config.host}:{sock.getsockname()[1]}"
    stop = threading.Event()
    group = _Group(config, open_requests, sock, stop)
    worker = background_worker(memory, extractor, config)
    with sock, on_stop_signals(stop.set):
        if worker is not None:
            worker.start()
        try:
            group.start()
            if not stop.is_set():
                announce(base)
            group.keep()
        finally:
            group.stop()
            report = worker.stop() if worker is not None else None
    return report


@dataclass(slots=True)
class _Running:
    process: BaseProcess
    up: Any  # a multiprocessing Event: set once the process listens
    started: float


class _Group:
    """The request processes: started, replaced when one exits, stopped."""

    def __init__(
        self, config: ServeConfig, opener: Opener, sock: socket.socket, stop: threading.Event
    ) -> None:
        self._config = config
        self._opener = opener
        self._sock = sock
        self._stop = stop
        self._context = multiprocessing.get_context("spawn")
        self._running: list[_Running] = []
        self._quick_exits = 0

    def _spawn(self, number: int) -> _Running:
        up = self._context.Event()
        process = self._context.Process(
            target=_serve_requests,
            args=(self._config, self._opener, self._sock, up, os.getpid()),
            name=f"memledger-requests-{number}",
            daemon=False,
        )
        # started with SIGINT blocked (the mask is inherited) until it has left this
        # process group: a Ctrl-C meanwhile does not reach it half started
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return _Running(process, up, time.monotonic())

    def start(self) -> None:
        """Start every process and wait until each listens."""
        self._running = [self._spawn(n) for n in range(self._config.processes)]
        deadline = time.monotonic() + START_S
        for running in self._running:
            while not running.up.wait(_LOOK_S):
                if self._stop.is_set():
                    return
                if not running.process.is_alive():
                    raise ServeError(
                        f"a request process exited with code {running.process.exitcode} "
                        "before it served (its error is above)"
                    )
                if time.monotonic() > deadline:
                    raise ServeError(f"a request process did not listen within {START_S:g} s")

    def keep(self) -> None:
        """Replace every process that exits, until asked to stop."""
        while not self._stop.wait(_LOOK_S):
            for number, running in enumerate(self._running):
                if running.process.is_alive():
                    continue
                code = running.process.exitcode
                quick = time.monotonic() - running.started < START_GRACE_S
                self._quick_exits = self._quick_exits + 1 if quick else 0
                if self._quick_exits >= MAX_QUICK_EXITS:
                    raise ServeError(
                        f"request processes exited at start {MAX_QUICK_EXITS} times in a row "
                        f"(last exit code {code}; their errors are above)"
                    )
                log.warning(
                    "memledger serve: request process %s exited with code %s; starting another",
                    running.process.pid,
                    code,
                )
                self._running[number] = self._spawn(number)

    def stop(self) -> None:
        """Ask every process to stop, wait while they finish their requests (up to
        :data:`STOP_S`), then kill what is left."""
        for running in self._running:
            if running.process.is_alive() and running.process.pid is not None:
                os.kill(running.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        try:
            for running in self._running:
                running.process.join(max(0.0, deadline - time.monotonic()))
        finally:
            for running in self._running:
                if running.process.is_alive():
                    running.process.kill()
                    running.process.join()


def _serve_requests(
    config: ServeConfig, opener: Opener, sock: socket.socket, up: Any, supervisor: int
) -> None:
    """One request process: the whole app over its own store handle, on ``sock``."""
    os.setpgrp()  # a terminal's Ctrl-C reaches the supervisor, which stops this process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # one sent to the group meanwhile is dropped
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    with opener() as (memory, extractor):
        server = server_for(build_app(memory, config, extractor=extractor), config)

        def follow() -> None:
            while not server.started:
                if server.should_exit:
                    return
                time.sleep(0.05)
            up.set()
            while not server.should_exit:
                if os.getppid() != supervisor:  # the supervisor is gone: stop too
                    server.should_exit = True
                time.sleep(0.5)

        threading.Thread(target=follow, name="memledger-follow", daemon=True).start()
        with _stop_signals(server), _switch_interval(SWITCH_INTERVAL_S):
            server.run(sockets=[_listening(sock)])


def _listening(shared: socket.socket) -> socket.socket:
    """The socket this request process listens on: one of its own on the shared
    socket's address, where the platform lets sockets share a port (``SO_REUSEPORT``):
    the kernel then spreads new connections evenly over the request processes. On the
    shared socket itself, whichever process wakes first takes every connection waiting
    (clients that open their connections together may all land on one process)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        return shared
    try:
        own = _bind(*shared.getsockname()[:2], share_port=True)
    except ServeError:
        return shared
    shared.close()  # the supervisor's copy keeps the address while this process runs
    return own
