"""Authentication and authorisation: who a request acts as, and whether it may.

``Authorization: Bearer mlk_...`` is checked by :meth:`Memory.authenticate`; the
:class:`~memledger.domain.keys.Principal` it gives is the request's tenant and actor,
whatever the body or the query says. A ``tenant`` named anywhere else (a body field,
a ``?tenant=`` parameter) must be the key's own, or the request is refused (403)
before anything is read or written. A query parameter the route does not read is
refused too (422).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memledger.api._services import Svc
from memledger.domain.keys import Principal
from memledger.errors import AuthenticationError, MemledgerError, PermissionDeniedError

__all__ = ["Admin", "Reader", "Writer", "bearer", "changeable", "readable", "same_tenant"]

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="An API key, `Authorization: Bearer mlk_<id>.<secret>` (`memledger keys "
    "create`, or `POST /v1/keys` with an admin key). The key decides the tenant and the "
    "actor of every request.",
)

MISSING = "This route needs an API key: send 'Authorization: Bearer mlk_<id>.<secret>'."


def same_tenant(principal: Principal, named: str | None) -> None:
    """Refuse a request naming another tenant than its key's (nothing is read or written)."""
    if named is not None and named != principal.tenant:
        raise PermissionDeniedError(
            f"API key {principal.key_id!r} acts for tenant {principal.tenant!r}; the request "
            "names another tenant. The tenant comes from the key: leave it out."
        )


def readable(principal: Principal, subject: str | None) -> None:
    """Refuse a read of another agent's private namespace (``agent:<id>...``) that the
    key does not name in its ``reads`` (:mod:`memledger.domain.keys`)."""
    principal.require_read(subject)


def changeable(principal: Principal, subject: str, missing: MemledgerError) -> None:
    """Refuse a change about ``subject``: ``missing`` (a not-found error) where the key
    may not even read it, so that another agent's private namespace answers exactly as
    a missing id; permission denied where it may read it but not write there."""
    if not principal.may_read(subject):
        raise missing
    principal.require_write_to(subject)


def principal(
    request: Request,
    svc: Svc,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    if credentials is None:
        raise AuthenticationError(MISSING)
    found = svc.memory.authenticate(credentials.credentials)
    for named in request.query_params.getlist("tenant"):
        same_tenant(found, named)
    unknown = sorted(set(request.query_params) - _declared(request.scope.get("route")))
    if unknown:
        raise RequestValidationError(
            [
                {"type": "extra_forbidden", "loc": ("query", name), "msg": "Unknown parameter"}
                for name in unknown[:20]
            ]
        )
    return found


def _declared(route: object) -> frozenset[str]:
    """The query parameters a route reads (and ``tenant``, checked above): any other is
    refused, so that a misspelt ``valid_at`` is not silently read as "now"."""
    names = {"tenant"}
    stack: list[Any] = [getattr(route, "dependant", None)]
    while stack:
        found = stack.pop()
        if found is not None:
            names.update(str(field.alias) for field in found.query_params)
            stack.extend(found.dependencies)
    return frozenset(names)


def writer(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if not who.may_write:
        raise PermissionDeniedError(f"API key {who.key_id!r} is read-only: it cannot write")
    return who


def admin(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if not who.may_admin:
        raise PermissionDeniedError(
            f"API key {who.key_id!r} has role {who.role!r}; this route needs an admin key"
        )
    return who


Reader = Annotated[Principal, Depends(principal)]
"""Any valid key of the tenant."""
Writer = Annotated[Principal, Depends(writer)]
"""A ``write`` or ``admin`` key."""
Admin = Annotated[Principal, Depends(admin)]
"""An ``admin`` key."""
