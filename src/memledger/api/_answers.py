"""A read's JSON answer written once, in the thread that built it.

A route that returns a plain object leaves FastAPI to validate it against the route's
response model in a worker thread of its own and then to serialise it on the event
loop. The wire helpers (:mod:`memledger.wire`) already build that object in the
model's shape, so the hot reads (recall, context, a family's current values) hand back
:func:`answer` instead:
the bytes pydantic's serialiser would write (non-finite numbers as ``null``, as a
model's JSON has them), made where the read ran. The response model stays on the
route, so the OpenAPI document is unchanged; the tests hold the answers to it.
"""

from __future__ import annotations

from pydantic_core import to_json
from starlette.responses import Response

from memledger.domain.records import JsonValue

__all__ = ["answer"]


def answer(content: JsonValue) -> Response:
    """``content`` as an ``application/json`` response of status 200."""
    return Response(to_json(content, inf_nan_mode="null"), media_type="application/json")
