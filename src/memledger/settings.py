"""Configuration of the edges (CLI, and later the API and MCP servers).

Only the edges read it, and only when they start: the library itself takes
explicit arguments and nothing here touches the environment at import time.

==================  ==========================================================
variable            meaning
==================  ==========================================================
MEMLEDGER_URL       store URL (``sqlite:///path.db`` or a file path);
                    unset: ``./memledger.db``
MEMLEDGER_TENANT    tenant the CLI acts for when ``--tenant`` is not given;
                    unset: the tenant must be passed
MEMLEDGER_DEBUG     ``1``/``true``: let unexpected exceptions show a traceback
==================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memledger.errors import InvalidInputError

__all__ = ["Settings"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What an edge needs to know before it opens a :class:`~memledger.Memory`."""

    url: str | None = None
    """Store URL; ``None`` means ``./memledger.db``."""
    tenant: str | None = None
    """Default tenant; ``None`` means every call must name one."""
    debug: bool = False
    """Show tracebacks of unexpected (non-memledger) exceptions."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read ``MEMLEDGER_*`` variables from ``environ`` (pass ``os.environ``).

        Empty values count as unset.
        """
        return cls(
            url=environ.get("MEMLEDGER_URL") or None,
            tenant=environ.get("MEMLEDGER_TENANT") or None,
            debug=_flag(environ, "MEMLEDGER_DEBUG"),
        )


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
