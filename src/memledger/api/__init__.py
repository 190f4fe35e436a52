"""The HTTP API: a thin edge over :class:`~memledger.memory.Memory` (parse, authorise,
call, translate errors), built with FastAPI. Needs the ``server`` extra.

::

    import uvicorn
    from memledger import Memory
    from memledger.api import create_app

    uvicorn.run(create_app(Memory.open("sqlite:///memledger.db")), port=8000)

The OpenAPI document is served at ``/openapi.json`` and the Swagger page at ``/docs``
(its files served by the app itself, so it works offline); the wire models the routes
answer are in :mod:`memledger.wire_models` (importable without FastAPI).
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
    import fastapi_offline  # noqa: F401
    import prometheus_client  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"memledger.api needs the 'server' extra ({exc.name} is missing): "
        "pip install 'memledger[server]'"
    ) from exc

from memledger.api._admission import ServiceLimits
from memledger.api._app import create_app
from memledger.api._problems import PROBLEM_MEDIA_TYPE, REQUEST_PROBLEMS
from memledger.wire_models import CONSISTENCY_HEADER

__all__ = [
    "CONSISTENCY_HEADER",
    "PROBLEM_MEDIA_TYPE",
    "REQUEST_PROBLEMS",
    "ServiceLimits",
    "create_app",
]
