"""Each tenant's quotas as one process holds them (:mod:`memledger.domain.quotas` has
what they are): read from the store at most every :data:`QUOTA_SECONDS` seconds, so
that another process's change reaches this one within that time, and the buckets of
recalls per second this process's reads take from."""

from __future__ import annotations

import time

from memledger.domain.addresses import check_tenant
from memledger.domain.budget import Budget
from memledger.domain.quotas import Quotas, RateGate
from memledger.errors import InvalidInputError, QuotaExceededError
from memledger.ports import Clock, Store

__all__ = ["QUOTA_SECONDS", "TenantQuotas"]

QUOTA_SECONDS = 5.0
"""How long a process keeps a tenant's quotas before reading them again."""


class TenantQuotas:
    """The quotas of every tenant of ``store``, cached; ``rates`` is this process's
    recall buckets."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._held: dict[str, tuple[float, Quotas]] = {}
        self.rates = RateGate()

    def get(self, tenant: str) -> Quotas:
        """The tenant's quotas (read at most every :data:`QUOTA_SECONDS` seconds)."""
        check_tenant(tenant)
        held = self._held.get(tenant)
        if held is not None and time.monotonic() - held[0] < QUOTA_SECONDS:
            return held[1]
        with self._store.read() as unit:
            body = unit.quotas(tenant)
        found = Quotas() if body is None else Quotas.from_json(body)
        self._held[tenant] = (time.monotonic(), found)
        return found

    def set(self, tenant: str, quotas: Quotas | None) -> Quotas:
        """Store the tenant's quotas (``None``, or no limit at all: none) and read them
        back."""
        check_tenant(tenant)
        if quotas is not None and not isinstance(quotas, Quotas):
            raise InvalidInputError(f"quotas must be Quotas or None, got {type(quotas).__name__}")
        chosen = quotas if quotas is not None and not quotas.unlimited else None
        with self._store.write() as unit:
            unit.set_quotas(
                tenant, None if chosen is None else chosen.to_json(), at=self._clock.now()
            )
        self._held.pop(tenant, None)
        return self.get(tenant)

    def take_read(self, tenant: str) -> None:
        """A recall or packet of ``tenant``, within its ``recalls_per_second``."""
        rate = self.get(tenant).recalls_per_second
        if rate is not None and (wait := self.rates.take(tenant, rate)) > 0:
            raise QuotaExceededError(
                f"tenant {tenant!r} is past its quota of {rate:g} recalls per second;"
                f" retry in {wait:.2f} s",
                retry_after=wait,
            )

    def check_packet(self, tenant: str, budget: Budget) -> None:
        """A packet of ``budget`` tokens, within the tenant's ``packet_tokens``."""
        most = self.get(tenant).packet_tokens
        if most is not None and budget.total > most:
            raise QuotaExceededError(
                f"a packet of {budget.total:,} tokens is past tenant {tenant!r}'s quota of"
                f" {most:,} (packet_tokens); ask for a smaller budget"
            )
