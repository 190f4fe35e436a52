"""The service rows of a SQL unit of work: who may call, what they registered and what
waits for review.

:class:`ServiceRows` holds the API keys (``add_key``, ``get_key``, ``keys``,
``revoke_key``, ``touch_key``), the families a tenant registered
(``register_family``, ``registered_families``) and the review queue with its
decisions (``add_review``, ``reviews``, ``get_review``, ``resolve_review``). Mixed
into :class:`~memledger.store._sql_unit.SqlUnit`; see
:class:`memledger.ports.UnitOfWork` for what each method promises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.records import CALLER, ReviewItem, canonical_json, format_time, parse_time
from memledger.errors import ConflictError
from memledger.ports import StoredKey
from memledger.store import _rows as layout
from memledger.store import codec
from memledger.store._sql_base import SqlBase

_KEY_COLUMNS = (
    "key_id, tenant, actor_id, principal, role, grants, label, created_at, revoked_at,"
    " last_used_at, reads"
)
_REVIEW_COLUMNS = (
    "review_id, event_id, subject, reason, claims, created_at, resolved_at, resolution,"
    " resolved_by, resolution_reason, extractor, job_id, generations, revocation_mark"
)


def _key(row: Sequence[Any]) -> ApiKey:
    (key_id, tenant, actor_id, principal, role, grants, label, created, revoked, used, reads) = row
    return ApiKey(
        key_id=key_id,
        tenant=tenant,
        actor_id=actor_id,
        principal=principal,
        role=role,
        grants=layout.grants(grants),
        label=label,
        created_at=parse_time(created),
        revoked_at=layout.pt(revoked),
        last_used_at=layout.pt(used),
        reads=frozenset(codec.loads_json(reads)),  # type: ignore[arg-type]
    )


def _review(tenant: str, row: Sequence[Any]) -> ReviewItem:
    (
        review_id,
        event_id,
        subject,
        reason,
        claims,
        created_at,
        resolved_at,
        resolution,
        resolved_by,
        resolution_reason,
        extractor,
        job_id,
        generations,
        revocation_mark,
    ) = row
    return ReviewItem(
        tenant=tenant,
        review_id=review_id,
        event_id=event_id,
        subject=subject,
        reason=reason,
        claims=codec.claims_from_json(claims),
        created_at=parse_time(created_at),
        resolved_at=layout.pt(resolved_at),
        resolution=resolution,
        resolved_by=resolved_by,
        resolution_reason=resolution_reason,
        # rows from before schema 7 kept none of these: the caller, no job, "now"
        extractor=CALLER if extractor is None else codec.extractor_from_json(extractor),
        job_id=job_id,
        generations=None if generations is None else json.loads(generations),
        revocation_mark=revocation_mark,
    )


class ServiceRows(SqlBase):
    """Keys, registered families and review rows, on the unit's connection."""

    # -- API keys ---------------------------------------------------------------------

    def add_key(self, key: ApiKey, *, token_hash: str) -> None:
        try:
            self._write(
                "add_key",
                f"INSERT INTO api_keys ({_KEY_COLUMNS}, token_hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.key_id,
                    key.tenant,
                    key.actor_id,
                    key.principal,
                    key.role,
                    layout.grants_json(key.grants),
                    key.label,
                    format_time(key.created_at),
                    layout.t(key.revoked_at),
                    layout.t(key.last_used_at),
                    canonical_json(sorted(key.reads)),
                    token_hash,
                ),
            )
        except self._integrity_errors as exc:
            raise ConflictError(f"API key id {key.key_id!r} is already taken") from exc

    def get_key(self, key_id: str) -> StoredKey | None:
        row = self._one(
            f"SELECT {_KEY_COLUMNS}, token_hash FROM api_keys WHERE key_id = ?", (key_id,)
        )
        return None if row is None else StoredKey(key=_key(row[:-1]), token_hash=row[-1])

    def keys(self, tenant: str) -> Sequence[ApiKey]:
        rows = self.conn.execute(
            f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE tenant = ? ORDER BY created_at, key_id",
            (tenant,),
        )
        return [_key(row) for row in rows]

    def revoke_key(self, tenant: str, key_id: str, *, at: datetime) -> None:
        self._write(
            "revoke_key",
            "UPDATE api_keys SET revoked_at = ?"
            " WHERE tenant = ? AND key_id = ? AND revoked_at IS NULL",
            (format_time(at), tenant, key_id),
        )

    def touch_key(self, key_id: str, *, at: datetime) -> None:
        self._write(
            "touch_key",
            "UPDATE api_keys SET last_used_at = ? WHERE key_id = ?",
            (format_time(at), key_id),
        )

    # -- families registered per tenant -------------------------------------------------

    def register_family(self, tenant: str, family: Family, *, at: datetime) -> None:
        self._write(
            "register_family",
            "INSERT INTO tenant_families VALUES (?, ?, ?, ?, ?, ?)",
            (
                tenant,
                family.name,
                codec.dumps(sorted(family.kinds)),
                family.description,
                int(family.own_say),
                format_time(at),
            ),
        )

    def registered_families(self, tenant: str) -> Sequence[Family]:
        rows = self.conn.execute(
            "SELECT name, kinds, description, own_say FROM tenant_families"
            " WHERE tenant = ? ORDER BY name",
            (tenant,),
        )
        return [
            Family(
                name=name,
                kinds=frozenset(json.loads(kinds)),
                description=description,
                own_say=bool(own_say),
            )
            for name, kinds, description, own_say in rows
        ]

    # -- review queue -----------------------------------------------------------------

    def add_review(self, item: ReviewItem) -> None:
        self._write(
            "add_review",
            f"INSERT OR IGNORE INTO review_queue (tenant, {_REVIEW_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.tenant,
                item.review_id,
                item.event_id,
                item.subject,
                item.reason,
                codec.claims_to_json(item.claims),
                format_time(item.created_at),
                layout.t(item.resolved_at),
                item.resolution,
                item.resolved_by,
                item.resolution_reason,
                codec.extractor_to_json(item.extractor),
                item.job_id,
                None if item.generations is None else codec.dumps(dict(item.generations)),
                item.revocation_mark,
            ),
        )

    def reviews(self, tenant: str, *, open_only: bool) -> Sequence[ReviewItem]:
        sql = f"SELECT {_REVIEW_COLUMNS} FROM review_queue WHERE tenant = ?"
        if open_only:
            sql += " AND resolved_at IS NULL"
        sql += " ORDER BY created_at, review_id"
        return [_review(tenant, row) for row in self.conn.execute(sql, (tenant,)).fetchall()]

    def get_review(self, tenant: str, review_id: str) -> ReviewItem | None:
        row = self._one(
            f"SELECT {_REVIEW_COLUMNS} FROM review_queue WHERE tenant = ? AND review_id = ?",
            (tenant, review_id),
        )
        return None if row is None else _review(tenant, row)

    def resolve_review(
        self, tenant: str, review_id: str, *, resolution: str, by: str, reason: str, at: datetime
    ) -> None:
        self._write(
            "resolve_review",
            "UPDATE review_queue SET resolution = ?, resolved_by = ?, resolution_reason = ?,"
            " resolved_at = ? WHERE tenant = ? AND review_id = ? AND resolved_at IS NULL",
            (resolution, by, reason, format_time(at), tenant, review_id),
        )
