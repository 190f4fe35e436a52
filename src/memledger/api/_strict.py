"""What every JSON body of the API is held to, the source event's rules applied to
every other body: the base model :class:`StrictBody` and the datetime type
:data:`Moment`.

* Strict types: a number is not read from a string (``"10"``), a bool is not a
  number (``true`` is not ``1``), a string is not read from a number; unknown fields
  are refused.
* Text: every string in the body, a dict's keys included (live state, metadata), is
  text as :func:`memledger.domain.records.require_text` says: no lone surrogate (a
  ``"\\ud800"`` escape without its pair), no NUL. Checked before anything else of
  the body, so such a string reaches no encoder, store or hash.
* Depth: a JSON value in a body nests at most
  :data:`~memledger.domain.records.MAX_DEPTH` levels, as an event's metadata does.

A body that breaks any of these is an ``invalid_request`` problem (422) naming
the field, and nothing runs; a missing one names what the body needs
(:meth:`StrictBody.needs`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from memledger.domain.faults import names
from memledger.domain.records import MAX_DEPTH, require_text
from memledger.wire import required_fields

__all__ = ["Moment", "StrictBody", "require_body_text"]

_ENVELOPE = 3
"""Levels of a body above a JSON value in it: the body, a list in it, an item of
the list (``live[0].value``). A container counts one level, as in an event."""


def require_body_text(data: object) -> None:
    """Raise :class:`ValueError` naming the place of the first string of ``data`` (a
    parsed JSON body; dict keys included) that is not text, or of nesting deeper than
    a body may. Iterative."""
    stack: list[tuple[object, int, str]] = [(data, 1, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list) and depth > MAX_DEPTH + _ENVELOPE:
            raise ValueError(f"a JSON value in the body nests more than {MAX_DEPTH} levels deep")
        if isinstance(item, str):
            require_text(item, path or "the body", ValueError)
        elif isinstance(item, dict):
            for key, inner in item.items():
                require_text(key, f"a key of {path or 'the body'}", ValueError)
                stack.append((inner, depth + 1, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1, f"{path}[{n}]") for n, inner in enumerate(item))


def _iso_text(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError("a datetime is an ISO 8601 string with a time zone")
    return value


Moment = Annotated[AwareDatetime, Field(strict=False), BeforeValidator(_iso_text)]
"""A datetime as a body gives it: an ISO 8601 string with a time zone, nothing else
(not a number of seconds)."""


class StrictBody(BaseModel):
    """Every JSON body but the source event's (:mod:`memledger.wire` parses those by
    the same rules)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _text_only(cls, data: Any) -> Any:
        require_body_text(data)
        return data

    @classmethod
    def needs(cls) -> str:
        """What a body of this model must hold, as a problem about a missing body says
        it: ``a JSON object with `reason```."""
        required = required_fields(cls)
        if not required:
            return "a JSON object (`{}` takes every default)"
        return f"a JSON object with {names(required)}"
