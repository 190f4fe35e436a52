"""What :class:`~memledger.client.Client` and :class:`~memledger.client.AsyncClient` share:
their configuration, the consistency token they keep, and the two halves of every
request around the send: :meth:`Core.prepare` (a :class:`~memledger.client._calls.Call`
to the arguments of an httpx request) and :meth:`Core.finish` (an httpx response to the
call's wire model, or to the error the library would raise).

The token: every answer that carries a ``Memledger-Consistency`` header (a write's
receipt, a revocation, an event's status) is merged into the client's token, the higher
revision winning per (subject, family); every read sends the floors that concern it
(its subject's; its family's too for a family's views; for a read across the tenant the
most recently raised :data:`~memledger.wire_models.MAX_FLOORS`), so a read never answers
below a write this client has seen: read-your-corrections across calls, threads and
tasks. The token is bounded: past :data:`KEPT` floors the least recently raised go.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

import httpx

from memledger import __version__
from memledger.client import _errors
from memledger.client._requests import Call, Floors, encode
from memledger.errors import InvalidInputError
from memledger.wire_models import CONSISTENCY_HEADER, MAX_FLOORS, ConsistencyToken

__all__ = ["KEPT", "MAX_HEADER", "Core"]

T = TypeVar("T")

KEPT = 4096
"""Floors a client keeps; past it the least recently raised are dropped."""
MAX_HEADER = 16_000
"""Characters of the token a read sends (the API reads at most 16,384)."""


class Core:
    """Configuration and consistency state, shared by the clients made from it."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        trust_env: bool = True,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(api_key, str) or not api_key.strip():
            raise InvalidInputError("api_key must be an API key token, mlk_<id>.<secret>")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.trust_env = trust_env
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "User-Agent": f"memledger-client/{__version__}",
            "Accept": "application/json, application/problem+json",
            **(headers or {}),
        }
        self._lock = threading.Lock()
        self._floors: dict[tuple[str, str], int] = {}  # least recently raised first

    # -- the consistency token ---------------------------------------------------------------

    @property
    def token(self) -> ConsistencyToken:
        with self._lock:
            return ConsistencyToken(dict(self._floors))

    def merge(self, token: ConsistencyToken) -> None:
        with self._lock:
            for key, revision in sorted(token.floors.items()):
                if revision > self._floors.get(key, 0):
                    self._floors.pop(key, None)
                    self._floors[key] = revision
            while len(self._floors) > KEPT:
                del self._floors[next(iter(self._floors))]

    def reset(self, token: ConsistencyToken | None = None) -> None:
        with self._lock:
            self._floors = {}
        if token:
            self.merge(token)

    def _concerning(self, floors: Floors) -> str | None:
        with self._lock:
            found = [
                (key, revision)
                for key, revision in self._floors.items()
                if (floors.subject is None or key[0] == floors.subject)
                and (floors.family is None or key[1] == floors.family)
            ]
        kept: dict[tuple[str, str], int] = {}
        size = 0
        for key, revision in reversed(found):  # the most recently raised first
            size += len(str(ConsistencyToken({key: revision}))) + 1
            if len(kept) >= MAX_FLOORS or size > MAX_HEADER:
                break
            kept[key] = revision
        return str(ConsistencyToken(kept)) if kept else None

    def _token_for(self, call: Call[Any]) -> str | None:
        if call.floors is None:
            return None
        given = call.consistency
        if given is None:
            return self._concerning(call.floors)
        if isinstance(given, str):
            given = ConsistencyToken.parse(given)
        if not isinstance(given, ConsistencyToken):
            raise InvalidInputError(
                f"consistency must be a ConsistencyToken, its text or None, got {given!r}"
            )
        return str(given) if given else None

    # -- the halves around the send -------------------------------------------------------------

    def prepare(self, call: Call[Any]) -> dict[str, Any]:
        """The keyword arguments of ``httpx.Client.request`` for ``call``."""
        headers = dict(call.extra)
        token = self._token_for(call)
        if token is not None:
            headers[CONSISTENCY_HEADER] = token
        request: dict[str, Any] = {
            "method": call.method,
            "url": call.path,
            "params": list(call.params),
            "headers": headers,
        }
        if call.body is not None:
            request["content"] = encode(call.body)
            headers["Content-Type"] = "application/json"
        return request

    def finish(self, call: Call[T], response: httpx.Response) -> T:
        """The wire model of a successful answer (its token merged first), or the error an
        unsuccessful one stands for."""
        what = call.describe()
        if response.status_code >= 400:
            raise _errors.error_for(what, response)
        header = response.headers.get(CONSISTENCY_HEADER)
        if header:
            with _errors.reading(what):
                self.merge(ConsistencyToken.parse(header))
        with _errors.reading(what):
            return call.read(response.content if response.status_code != 204 else b"")
