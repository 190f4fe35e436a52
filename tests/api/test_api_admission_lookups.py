"""How admission learns a request's tenant: the first requests of one token, arriving
together, share one look-up (a burst from a new key is not refused for it), a wrong
secret for a known key id is another token, never counted under that key's tenant, and
a key sent as ``Token`` (mem0's clients) counts as one sent as ``Bearer``."""

from __future__ import annotations

import asyncio
import threading
import time

from memledger.api._admission import ANONYMOUS, Admission

KEY_ID = "mlk_0123456789ab"
RIGHT = f"{KEY_ID}.{'a' * 43}"
WRONG = f"{KEY_ID}.{'b' * 43}"


def _scope(token: str, scheme: str = "Bearer") -> dict[str, object]:
    return {"type": "http", "headers": [(b"authorization", f"{scheme} {token}".encode())]}


class SlowLookups:
    """A tenant look-up that takes a while (as authenticating against the store may):
    only ``RIGHT`` authenticates."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, token: str) -> str | None:
        with self._lock:
            self.calls.append(token)
        time.sleep(0.2)
        return "acme" if token == RIGHT else None


def test_a_burst_of_first_requests_from_one_key_shares_one_look_up() -> None:
    lookups = SlowLookups()
    admission = Admission(max_in_flight=16, tenant_in_flight=4, tenant_of=lookups)

    async def burst() -> list[str]:
        return await asyncio.gather(*(admission.bucket(_scope(RIGHT)) for _ in range(8)))

    assert asyncio.run(burst()) == ["tenant:acme"] * 8
    assert lookups.calls == [RIGHT]
    assert admission.in_flight == 0  # the look-up's place was given back


def test_a_wrong_secret_for_a_known_key_id_is_not_counted_under_its_tenant() -> None:
    lookups = SlowLookups()
    admission = Admission(max_in_flight=16, tenant_in_flight=4, tenant_of=lookups)

    async def both() -> tuple[str, str, str]:
        right = await admission.bucket(_scope(RIGHT))
        wrong = await admission.bucket(_scope(WRONG))
        again = await admission.bucket(_scope(WRONG))
        return right, wrong, again

    assert asyncio.run(both()) == ("tenant:acme", ANONYMOUS, ANONYMOUS)
    assert lookups.calls == [RIGHT, WRONG, WRONG]  # an unknown token is looked up each time


def test_a_key_sent_as_mem0_sends_it_counts_under_its_tenant() -> None:
    lookups = SlowLookups()
    admission = Admission(max_in_flight=16, tenant_in_flight=4, tenant_of=lookups)

    async def schemes() -> list[str]:
        return [await admission.bucket(_scope(RIGHT, s)) for s in ("Token", "token", "Basic")]

    assert asyncio.run(schemes()) == ["tenant:acme", "tenant:acme", ANONYMOUS]
