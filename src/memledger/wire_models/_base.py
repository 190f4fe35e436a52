"""The base of every wire model (:class:`WireModel`): exact and immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["WireModel"]


class WireModel(BaseModel):
    """Every wire model: exact (unknown fields refused) and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)
