"""What every route reaches through the app: the :class:`Memory` and the options the
app was made with (kept on ``app.state``, so the routers themselves hold nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from memledger.api._admission import Admission, ServiceLimits
from memledger.api._extra import Shelf
from memledger.memory import Memory
from memledger.ports import Extractor

__all__ = ["Services", "Svc", "services"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    memory: Memory
    extractor: Extractor | None
    """What ``POST /v1/process`` extracts with (``None``: the offline rule extractor)."""
    shelf: Shelf
    max_batch: int
    max_process: int
    limits: ServiceLimits
    admission: Admission


async def services(request: Request) -> Services:
    found = getattr(request.app.state, "memledger", None)
    if not isinstance(found, Services):  # pragma: no cover - create_app sets it
        raise RuntimeError("this app was not made by memledger.api.create_app")
    return found


Svc = Annotated[Services, Depends(services)]
