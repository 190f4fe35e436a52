"""The faults of a request that does not match its route's schema, as an
``invalid_request`` problem tells them: :func:`request_fault` makes one of FastAPI's
validation errors a :class:`~memledger.wire_models.ProblemError` and the line the
problem's ``detail`` names it with.

A body that is missing, not sent as JSON, or not a JSON object is one fault at
``["body"]`` saying which, and what the route's body needs
(:meth:`~memledger.api._strict.StrictBody.needs`: its required fields). Nothing of
what was sent is echoed but its JSON type and the ``Content-Type`` header.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from memledger.api._strict import StrictBody
from memledger.domain.faults import place
from memledger.wire_models import ProblemError

__all__ = ["request_fault"]

_MEDIA_SHOWN = 80
"""Characters of a ``Content-Type`` header a message repeats."""


def request_fault(request: Request, error: Any) -> tuple[ProblemError, str]:
    """One validation error of FastAPI (a mapping with ``type``, ``loc``, ``msg`` and
    ``input``) as a fault and its line."""
    loc = [part if isinstance(part, int) else str(part) for part in error.get("loc", ())]
    kind, msg, value = error.get("type"), str(error.get("msg", "")), error.get("input")
    if loc == ["body"] and (kind == "missing" or not isinstance(value, dict)):
        told = _body(request, kind, value)
        return ProblemError(loc=loc, msg=told), told[:1].lower() + told[1:]
    where = place(loc, empty="the request")
    if kind == "missing":
        line = f"{where} is required"
    elif kind == "extra_forbidden":
        line = f"{where} is not a known {'field' if loc[:1] == ['body'] else 'parameter'}"
    else:
        line = f"{where}: {msg}"
    return ProblemError(loc=loc, msg=msg), line


def _body(request: Request, kind: object, value: object) -> str:
    needs = _needs(request)
    if kind == "missing":
        return f"The body is missing; it needs {needs}"
    if isinstance(value, bytes):  # FastAPI reads a body as JSON only when it is marked so
        media = request.headers.get("content-type")
        sent = f"Content-Type {media[:_MEDIA_SHOWN]!r}" if media else "no Content-Type"
        return f"The body is not sent as JSON ({sent}); send {needs} as application/json"
    return f"The body is {_json_kind(value)}, not a JSON object; it needs {needs}"


def _needs(request: Request) -> str:
    """What the body of the request's route must hold."""
    field = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    if isinstance(model, type) and issubclass(model, StrictBody):
        return model.needs()
    return "a JSON object"


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list"
