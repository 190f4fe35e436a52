"""HTTP answers and transport failures, translated into memledger's error tree.

* A problem (``application/problem+json``) raises the class its ``code`` stands for
  (:func:`memledger.wire_models.error_class`: the API's own table, read backwards), with
  the problem's ``detail`` as the message, the problem itself as the error's ``problem``
  attribute (:func:`problem_of` reads it typed) and a note naming the request, status
  and code. So ``404 memory_not_found`` is :class:`~memledger.errors.MemoryNotFoundError`
  here exactly as in the library.
* A code of the HTTP layer itself, which no error class stands for (``invalid_request``,
  ``malformed_json``, ``no_route``, ``not_ready`` ...), and an error answer that is not a
  problem at all (a proxy's page), raise the class the status says (:data:`BY_STATUS`).
* A transport failure (connection refused, reset, timed out, a name that does not
  resolve) raises :class:`~memledger.errors.StoreError`: the service failed, not the
  caller. A write that timed out may or may not have been applied; the message says so,
  and that ingesting again is safe (events are idempotent by ``event_id``).
* A successful answer the client cannot read (another server version) raises
  :class:`~memledger.errors.StoreError` too.

No httpx or pydantic exception escapes; the original is chained as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx
from pydantic import ValidationError

from memledger import errors as e
from memledger.wire_models import Problem, error_class

__all__ = ["BY_STATUS", "error_for", "problem_of", "reading", "sending"]

BY_STATUS: Mapping[int, type[e.MemledgerError]] = {
    400: e.InvalidInputError,
    401: e.AuthenticationError,
    403: e.PermissionDeniedError,
    404: e.NotFoundError,
    405: e.InvalidInputError,
    409: e.ConflictError,
    413: e.LimitExceededError,
    422: e.InvalidInputError,
    503: e.StoreError,
}
"""The class of an error answer whose code names no class (or that is no problem)."""


def problem_of(error: BaseException) -> Problem | None:
    """The problem an error raised by the client was told as (``None``: it was not an
    answer of the API, e.g. a transport failure)."""
    found = vars(error).get("problem")
    return found if isinstance(found, Problem) else None


def _fallback(status: int) -> type[e.MemledgerError]:
    if status in BY_STATUS:
        return BY_STATUS[status]
    return e.StoreError if status >= 500 else e.MemledgerError


def _problem(response: httpx.Response) -> Problem | None:
    if "json" not in response.headers.get("content-type", ""):
        return None
    try:
        return Problem.model_validate_json(response.content)
    except ValidationError:
        return None


def error_for(what: str, response: httpx.Response) -> e.MemledgerError:
    """The error an answer of status 400 or more stands for."""
    problem = _problem(response)
    status = response.status_code
    if problem is None:
        text = " ".join(response.text.split())[:200]
        error = _fallback(status)(f"HTTP {status} from {what}: {text or response.reason_phrase}")
        error.add_note(f"memledger client: {what} answered {status}, not a problem document")
        return error
    cls = error_class(problem.code)
    if cls is e.MemledgerError and problem.code != "internal":
        cls = _fallback(status)
    error = cls(problem.detail)
    vars(error)["problem"] = problem
    note = f"memledger client: {what} answered {status} {problem.code}"
    retry = response.headers.get("retry-after")
    if retry:
        note += f" (Retry-After: {retry} s)"
    error.add_note(note)
    return error


@contextmanager
def sending(what: str, base_url: str) -> Iterator[None]:
    """Translate a transport failure of the request ``what`` into a :class:`StoreError`."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise e.StoreError(
            f"{what} to {base_url} timed out ({type(exc).__name__}); a write may or may "
            "not have been applied: ingesting the same event again is safe"
        ) from exc
    except httpx.InvalidURL as exc:
        raise e.InvalidInputError(f"{what}: invalid URL under {base_url!r}: {exc}") from exc
    except (httpx.HTTPError, httpx.StreamError) as exc:
        raise e.StoreError(
            f"{what} to {base_url} failed: {type(exc).__name__}: {exc or 'no answer'}"
        ) from exc


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Translate a successful answer the client cannot read into a :class:`StoreError`."""
    try:
        yield
    except (ValidationError, ValueError) as exc:
        raise e.StoreError(
            f"{what} answered a body this client cannot read (is the server another "
            f"version?): {str(exc).splitlines()[0]}"
        ) from exc
