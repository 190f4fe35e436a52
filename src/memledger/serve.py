"""``memledger serve``: the HTTP API, the web page, the MCP endpoint and a background
worker over one store, in one process or (``processes``) in several request processes
beside a supervising one that runs the worker (:mod:`memledger.serve_processes`).

What runs where, under one base URL:

=============  ==============================================================
path           what
=============  ==============================================================
``/v1/...``    the HTTP API (:mod:`memledger.api`), ``/openapi.json``, ``/docs``
``/healthz``   liveness; ``/readyz`` readiness; ``/metrics`` Prometheus text
``/mcp``       the MCP server over streamable HTTP (:mod:`memledger.mcp`)
``/ui/``       the web page to inspect and correct memory (``/`` redirects)
=============  ==============================================================

Every request authenticates with an API key (``Authorization: Bearer mlk_...``).
On first start, when the tenant has no admin key, one is created: its token is
shown once and written to a file only the user can read (``<store>.admin-key``,
mode 0600); later starts say where it is and never print it again.

The background worker runs the extraction queue of every tenant. SIGTERM or
SIGINT stops the server (uvicorn finishes the requests in flight), then the
worker finishes the batch it holds (its jobs commit or are queued again) before
the process exits.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
)
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from memledger._files import warn_loose, write_private
from memledger.domain.records import require_id
from memledger.errors import InvalidInputError, MemledgerError
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.serve_threads import MAX_THREADS, thread_limit
from memledger.write.worker import Worker, WorkerSettings, WorkReport

try:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route
    from starlette.types import ASGIApp

    from memledger.api import ServiceLimits
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        f"memledger serve needs the server extra: pip install 'memledger[server]' ({exc})"
    ) from exc

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
MAX_PROCESSES = 64
"""Most request processes one ``serve`` starts."""

__all__ = [
    "MAX_PROCESSES",
    "AdminKey",
    "BackgroundWorker",
    "Opener",
    "ServeConfig",
    "ServeError",
    "background_worker",
    "build_app",
    "ensure_admin_key",
    "key_file_for",
    "run",
    "server_for",
]


class ServeError(MemledgerError):
    """The service could not start (its address is taken or cannot be used)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeConfig:
    """How ``memledger serve`` runs."""

    host: str = "127.0.0.1"
    """Loopback by default: exposing the service is a decision, not a default."""
    port: int = 8765
    tenant: str = "default"
    """The tenant the first admin key is created for."""
    worker: bool = True
    """Run the extraction queue in the background."""
    poll: float = 0.5
    """Seconds the idle worker waits between looks for jobs."""
    expire_every: float | None = 600.0
    """Seconds between the worker's expiry runs (TTL and retention); ``None``: never."""
    batch: int = WorkerSettings().batch
    key_file: Path | None = None
    """Where the first admin key's token is written; ``None``: ``<store>.admin-key``."""
    mcp: bool = True
    web: bool = True
    max_concurrency: int = 64
    """Requests one process serves at once, every route together; past it the next is
    answered at once with a 503 ``overloaded`` problem (load is shed instead of queued
    until every client times out). Open connections do not count, and health,
    readiness and metrics are never refused (:mod:`memledger.serve_cap`)."""
    max_in_flight: int = 16
    """``/v1`` requests the API serves at once, every tenant together."""
    limits: ServiceLimits = field(default_factory=ServiceLimits)
    """What one tenant may ask at once (:class:`memledger.api.ServiceLimits`)."""
    processes: int = 1
    """Request processes serving the one address; past 1 they run beside a supervising
    process that runs the worker (:mod:`memledger.serve_processes`). ``max_concurrency``,
    ``max_in_flight``, ``threads`` and ``limits`` count in each process."""
    threads: int | None = None
    """Blocking work (store reads and writes) one process runs at once; ``None``: no cap
    but anyio's pool of 40 (:mod:`memledger.serve_threads`)."""

    def __post_init__(self) -> None:
        require_id(self.tenant, "tenant", InvalidInputError)
        if isinstance(self.port, bool) or not isinstance(self.port, int):
            raise InvalidInputError(f"port must be a whole number, got {self.port!r}")
        if not 0 <= self.port <= 65535:
            raise InvalidInputError(f"port must be 0-65535, got {self.port}")
        if isinstance(self.max_concurrency, bool) or not isinstance(self.max_concurrency, int):
            raise InvalidInputError(
                f"max_concurrency must be a whole number, got {self.max_concurrency!r}"
            )
        if self.max_concurrency < 1:
            raise InvalidInputError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if (
            isinstance(self.max_in_flight, bool)
            or not isinstance(self.max_in_flight, int)
            or self.max_in_flight < 1
        ):
            raise InvalidInputError(
                f"max_in_flight must be a whole number >= 1, got {self.max_in_flight!r}"
            )
        if not isinstance(self.limits, ServiceLimits):
            raise InvalidInputError(f"limits must be a ServiceLimits, got {self.limits!r}")
        if (
            isinstance(self.processes, bool)
            or not isinstance(self.processes, int)
            or not 1 <= self.processes <= MAX_PROCESSES
        ):
            raise InvalidInputError(
                f"processes must be a whole number from 1 to {MAX_PROCESSES}, "
                f"got {self.processes!r}"
            )
        if self.threads is not None and (
            isinstance(self.threads, bool)
            or not isinstance(self.threads, int)
            or not 1 <= self.threads <= MAX_THREADS
        ):
            raise InvalidInputError(
                f"threads must be a whole number from 1 to {MAX_THREADS}, got {self.threads!r}"
            )
        if self.poll <= 0:
            raise InvalidInputError(f"poll must be > 0 seconds, got {self.poll}")
        if self.expire_every is not None and not self.expire_every > 0:
            raise InvalidInputError(f"expire_every must be > 0 seconds, got {self.expire_every}")


# -- the first admin key -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdminKey:
    """The tenant's admin key as serve found or made it."""

    key_id: str
    path: Path
    token: str | None
    """The token when it was created just now (show it once); else ``None``."""


def key_file_for(memory: Memory, config: ServeConfig) -> Path:
    """``config.key_file``, else ``<store file>.admin-key`` beside a SQLite store."""
    if config.key_file is not None:
        return config.key_file
    prefix = "sqlite:///"
    if not memory.url.startswith(prefix):
        raise InvalidInputError(
            f"no default key file for store {memory.url!r}; pass --key-file PATH"
        )
    return Path(memory.url.removeprefix(prefix) + ".admin-key")


def ensure_admin_key(memory: Memory, config: ServeConfig) -> AdminKey:
    """The tenant's first admin key: created (and its token written to the key file,
    readable by the user alone) when the tenant has no live admin key, else found."""
    path = key_file_for(memory, config)
    live = [k for k in memory.keys(config.tenant) if k.role == "admin" and k.revoked_at is None]
    if live:
        warn_loose([path], what=f"admin key file {str(path)!r}")
        return AdminKey(key_id=live[0].key_id, path=path, token=None)
    key, token = memory.create_key(
        config.tenant, "admin", principal="service", role="admin", label="first admin key"
    )
    write_private(path, token + "\n")
    return AdminKey(key_id=key.key_id, path=path, token=token)


# -- the background worker ---------------------------------------------------------------


class BackgroundWorker:
    """The extraction queue of every tenant, run on a thread until :meth:`stop`."""

    def __init__(
        self,
        memory: Memory,
        extractor: Extractor,
        *,
        settings: WorkerSettings | None = None,
        poll: float = 0.5,
        expire_every: float | None = None,
    ) -> None:
        self._worker = Worker(memory.writing, extractor, settings=settings)
        self._poll = poll
        self._expire_every = expire_every
        self._stop = threading.Event()
        self._report: WorkReport | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="memledger-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._report = self._worker.run(
                stop=self._stop, poll=self._poll, expire_every=self._expire_every
            )
        except BaseException as exc:  # kept for stop() to raise in the serving thread
            self._error = exc

    def stop(self) -> WorkReport:
        """Ask the worker to stop and wait while it finishes the batch it holds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._report or WorkReport()


# -- the app ----------------------------------------------------------------------------


def build_app(
    memory: Memory, config: ServeConfig | None = None, *, extractor: Extractor | None = None
) -> ASGIApp:
    """The API, the MCP endpoint and the web page as one ASGI app over ``memory``;
    ``extractor`` is what ``POST /v1/process`` and MCP's ``remember`` extract with
    (default: the offline rule-based one)."""
    from memledger.api import create_app
    from memledger.api._problems import OddPath, http_problem
    from memledger.serve_cap import RequestCap

    config = config or ServeConfig()
    routes: list[Route | Mount] = []
    lifespans: list[Callable[[], AbstractAsyncContextManager[object]]] = []
    api = create_app(
        memory, extractor=extractor, max_in_flight=config.max_in_flight, limits=config.limits
    )
    if config.mcp:
        from memledger.mcp import streamable_http_app

        # the API's admission: a tenant's requests over /v1 and /mcp count together
        mcp_app = streamable_http_app(
            memory,
            extractor=extractor,
            # over several processes each request stands alone: any process serves it
            stateless=config.processes > 1,
            limits=config.limits,
            admission=api.state.memledger.admission,
        )
        routes.append(Route("/mcp", endpoint=mcp_app))  # /mcp itself, as clients write it
        routes.append(Mount("/mcp", app=mcp_app))
        lifespans.append(mcp_app.lifespan)
    if config.web:
        from memledger.web import web_app

        routes.append(Route("/", _to_ui, include_in_schema=False))
        routes.append(Route("/ui", _to_ui, include_in_schema=False))
        routes.append(Mount("/ui", app=web_app()))
    routes.append(Mount("/", app=api))
    # a mounted app's lifespan is not run by its host: enter it here (index warm-up,
    # the corpus closed on shutdown)
    lifespans.append(lambda: api.router.lifespan_context(api))
    if (threads := config.threads) is not None:
        lifespans.append(lambda: thread_limit(threads))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            for enter in lifespans:
                await stack.enter_async_context(enter())
            yield

    # the host's own refusals are problems too, and a path with a control character
    # (which a Mount's pattern may take for its prefix) is no route of any app
    host = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_problem}
    )
    return RequestCap(
        OddPath(host), limit=config.max_concurrency, admission=api.state.memledger.admission
    )


async def _to_ui(request: object) -> RedirectResponse:
    return RedirectResponse("/ui/")


def run(
    memory: Memory,
    extractor: Extractor | None,
    config: ServeConfig,
    *,
    announce: Callable[[str], None],
    open_requests: Opener | None = None,
) -> WorkReport | None:
    """Serve until SIGTERM or SIGINT, then drain the worker; returns its report
    (``None`` without a worker). With ``config.processes`` over 1, ``open_requests``
    opens the store and the extractor in each request process
    (:func:`memledger.serve_processes.run_processes`)."""
    if config.processes > 1:
        from memledger.serve_processes import run_processes

        if open_requests is None:
            raise InvalidInputError(
                "serving with several processes needs open_requests: how each process "
                "opens the store and the extractor"
            )
        return run_processes(memory, extractor, config, open_requests, announce=announce)
    server = server_for(build_app(memory, config, extractor=extractor), config)
    worker = background_worker(memory, extractor, config)
    with _stop_signals(server), _switch_interval(SWITCH_INTERVAL_S):
        if worker is not None:
            worker.start()
        try:
            _serve(server, config, announce)
        finally:
            report = worker.stop() if worker is not None else None
    return report


Opener = Callable[[], AbstractContextManager[tuple[Memory, Extractor | None]]]
"""Opens the store and the extractor a request process serves with (picklable: it is
sent to each process started)."""


def background_worker(
    memory: Memory, extractor: Extractor | None, config: ServeConfig
) -> BackgroundWorker | None:
    """The worker ``config`` asks for (``None`` when off or without an extractor)."""
    if not config.worker or extractor is None:
        return None
    return BackgroundWorker(
        memory,
        extractor,
        settings=WorkerSettings(batch=config.batch),
        poll=config.poll,
        expire_every=config.expire_every,
    )


def server_for(app: ASGIApp, config: ServeConfig) -> uvicorn.Server:
    """The uvicorn server of one serving process."""
    return uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_level="warning",
            lifespan="on",
            access_log=False,
            # no limit_concurrency: it counts idle connections; build_app caps requests
        )
    )


SWITCH_INTERVAL_S = 0.001
"""How long a thread may hold the interpreter while another waits for it, while serving
(Python's default is 5 ms). A recall gives the interpreter up at each store call; beside
a thread busy with a heavy request it waits up to this long to get it back, each time.
At 1 ms another tenant's recall p99 beside a flood of large-material contexts is about
a third lower here, at no cost to the rest (see the README's serve benchmark)."""


@contextmanager
def _switch_interval(seconds: float) -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@contextmanager
def _stop_signals(server: uvicorn.Server) -> Iterator[None]:
    """SIGTERM and SIGINT stop the server gracefully while the block runs, the worker's
    drain included; a second signal stops at once. uvicorn handles them itself while
    it serves and raises them again when it is done: they land here, not in the
    default handler that would kill the process mid-drain."""

    def stop() -> None:
        server.should_exit = True

    with on_stop_signals(stop):
        yield


@contextmanager
def on_stop_signals(first: Callable[[], None]) -> Iterator[None]:
    """While the block runs, the first SIGTERM or SIGINT calls ``first`` and a second
    raises :class:`KeyboardInterrupt` (stop at once). Only in the main thread, where
    Python lets a handler be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen = 0

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal seen
        seen += 1
        if seen > 1:
            raise KeyboardInterrupt
        first()

    previous = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    for sig in _STOP_SIGNALS:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def _serve(server: uvicorn.Server, config: ServeConfig, announce: Callable[[str], None]) -> None:
    """Bind the address (a clear error if it is taken), run ``server`` on it and announce
    its URL once it listens (port 0 picks a free one)."""
    sock = _bind(config.host, config.port)
    port = sock.getsockname()[1]

    def tell_when_up() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        announce(f"http://{config.host}:{port}")

    threading.Thread(target=tell_when_up, name="memledger-announce", daemon=True).start()
    with sock:
        server.run(sockets=[sock])


def _bind(host: str, port: int, *, share_port: bool = False) -> socket.socket:
    """A socket bound to ``host:port``; ``share_port``: other sockets of this user may
    bind the same address (``SO_REUSEPORT``, where the platform has it), and the
    kernel spreads new connections over those that listen."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if share_port and hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} "
            "(another memledger serve? pass --port, or --port 0 for a free one)"
        ) from None
    sock.set_inheritable(True)
    return sock
