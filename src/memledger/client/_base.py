"""What :class:`~memledger.client.Client` and :class:`~memledger.client.AsyncClient`
have in common beyond their methods: :class:`Base`, with the constructor (a
:class:`~memledger.client._core.Core`, and the httpx client a subclass opens over it
in ``_open`` with the options of :meth:`Base._options`), :meth:`Base._sharing` (a
client over another's core), ``base_url`` and the ``consistency`` token. Each client
adds its sending (``send``, ``run``), closing and context manager; the methods come
from :class:`~memledger.client._methods.Methods`."""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar

from memledger import wire_models as wm
from memledger.client._core import Core
from memledger.client._methods import Methods

__all__ = ["Base"]

Transport = TypeVar("Transport")
"""The transport the client's httpx client takes (sync or async)."""
Http = TypeVar("Http")
"""The client's httpx client."""


class Base(Methods, Generic[Transport, Http]):
    """A client of the API over a :class:`Core`, sending with an ``Http`` client."""

    _core: Core
    _http: Http

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: Transport | None = None,
        trust_env: bool = True,
    ) -> None:
        self._core = Core(base_url, api_key, timeout=timeout, trust_env=trust_env)
        self._http = self._open(transport)

    def _open(self, transport: Transport | None) -> Http:
        """The httpx client over ``self._core`` (``transport``: httpx's default)."""
        raise NotImplementedError

    def _options(self, transport: Transport | None) -> dict[str, Any]:
        """The keyword arguments of the httpx client ``_open`` makes."""
        options: dict[str, Any] = {
            "base_url": self._core.base_url,
            "headers": self._core.headers,
            "timeout": self._core.timeout,
            "trust_env": self._core.trust_env,
            "follow_redirects": False,
        }
        if transport is not None:
            options["transport"] = transport
        return options

    @classmethod
    def _sharing(cls, core: Core) -> Self:
        """A client over ``core``: the same key, settings and consistency token."""
        made = cls.__new__(cls)
        made._core = core
        made._http = made._open(None)
        return made

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def consistency(self) -> wm.ConsistencyToken:
        """The floors of every write this client has seen (highest revision per family)."""
        return self._core.token

    @consistency.setter
    def consistency(self, token: wm.ConsistencyToken | None) -> None:
        self._core.reset(token)
