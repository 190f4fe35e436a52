"""Configuration of the edges (CLI, and later the API and MCP servers).

Only the edges read it, and only when they start: the library itself takes
explicit arguments and nothing here touches the environment at import time.

======================  ======================================================
variable                meaning
======================  ======================================================
MEMLEDGER_URL           store URL (``sqlite:///path.db`` or a file path);
                        unset: ``./memledger.db``
MEMLEDGER_TENANT        tenant the CLI acts for when ``--tenant`` is not given;
                        unset: :data:`DEFAULT_TENANT` (commands over every
                        tenant, such as ``status``, do not read it)
MEMLEDGER_DEBUG         ``1``/``true``: let unexpected exceptions show a
                        traceback
MEMLEDGER_LLM_BASE_URL  API root of an OpenAI-compatible endpoint for the LLM
                        extractor (``http://127.0.0.1:8080/v1``)
MEMLEDGER_LLM_MODEL     model name sent to that endpoint
MEMLEDGER_LLM_API_KEY   bearer token for that endpoint; unset: no
                        ``Authorization`` header. Never shown in a ``repr``
======================  ======================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memledger.errors import InvalidInputError

if TYPE_CHECKING:
    from memledger.domain.families import Schema
    from memledger.read.rewrite import LLMQueryRewriter
    from memledger.write.extract.llm import LLMExtractor

__all__ = ["DEFAULT_TENANT", "Settings"]

DEFAULT_TENANT = "default"
"""The tenant an edge acts for when none is named: the CLI's commands over one tenant,
``memledger demo`` and the first admin key of ``memledger serve``."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What an edge needs to know before it opens a :class:`~memledger.Memory`."""

    url: str | None = None
    """Store URL; ``None`` means ``./memledger.db``."""
    tenant: str | None = None
    """Default tenant; ``None`` means :data:`DEFAULT_TENANT`."""
    debug: bool = False
    """Show tracebacks of unexpected (non-memledger) exceptions."""
    llm_base_url: str | None = None
    """API root of the LLM extractor's OpenAI-compatible endpoint."""
    llm_model: str | None = None
    """Model the LLM extractor asks for."""
    llm_api_key: str | None = field(default=None, repr=False)
    """Bearer token for the endpoint; kept out of ``repr``."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read ``MEMLEDGER_*`` variables from ``environ`` (pass ``os.environ``).

        Empty values count as unset.
        """
        return cls(
            url=environ.get("MEMLEDGER_URL") or None,
            tenant=environ.get("MEMLEDGER_TENANT") or None,
            debug=_flag(environ, "MEMLEDGER_DEBUG"),
            llm_base_url=environ.get("MEMLEDGER_LLM_BASE_URL") or None,
            llm_model=environ.get("MEMLEDGER_LLM_MODEL") or None,
            llm_api_key=environ.get("MEMLEDGER_LLM_API_KEY") or None,
        )

    def llm_extractor(self, *, schema: Schema | None = None, timeout: float = 20.0) -> LLMExtractor:
        """An :class:`~memledger.write.extract.llm.LLMExtractor` for the configured endpoint.

        Raises :class:`~memledger.errors.InvalidInputError` naming the variables
        that are missing, and ``ImportError`` if the ``llm`` extra is not installed.
        """
        base_url, model = self._endpoint("the LLM extractor")
        from memledger.write.extract.llm import LLMExtractor

        return LLMExtractor(
            base_url=base_url,
            model=model,
            api_key=self.llm_api_key,
            schema=schema,
            timeout=timeout,
        )

    def query_rewriter(self, *, timeout: float = 10.0) -> LLMQueryRewriter:
        """An :class:`~memledger.read.rewrite.LLMQueryRewriter` on the same endpoint as the
        extractor (``MEMLEDGER_LLM_*``); errors as :meth:`llm_extractor`."""
        base_url, model = self._endpoint("the LLM query rewriter")
        from memledger.read.rewrite import LLMQueryRewriter

        return LLMQueryRewriter(
            base_url=base_url, model=model, api_key=self.llm_api_key, timeout=timeout
        )

    def _endpoint(self, what: str) -> tuple[str, str]:
        base_url, model = self.llm_base_url, self.llm_model
        if base_url is None or model is None:
            missing = [
                name
                for name, value in (
                    ("MEMLEDGER_LLM_BASE_URL", base_url),
                    ("MEMLEDGER_LLM_MODEL", model),
                )
                if value is None
            ]
            raise InvalidInputError(
                f"{what} is not configured: set {' and '.join(missing)} "
                "(and MEMLEDGER_LLM_API_KEY if the endpoint needs one)"
            )
        return base_url, model


def _flag(environ: Mapping[str, str], name: str) -> bool:
    raw = environ.get(name, "")
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidInputError(
        f"{name}={raw!r} is not a boolean; use one of {sorted((_TRUE | _FALSE) - {''})}"
    )
