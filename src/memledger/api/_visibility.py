"""What a key sees of lists that are not kept per subject: the extraction jobs of the
tenant, each shown only where the key may read its event (a job of another agent's
private event is not listed, and its event id is not named)."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.domain.keys import Principal
from memledger.domain.records import Job
from memledger.ports import Store

__all__ = ["visible_jobs"]


def visible_jobs(store: Store, who: Principal, jobs: Sequence[Job]) -> list[Job]:
    """The ``jobs`` whose event the key may read, in their order (one read)."""
    if who.namespaces is None:
        return list(jobs)
    with store.read() as unit:
        return [
            job
            for job in jobs
            if unit.get_event(who.tenant, job.event_id, namespaces=who.namespaces) is not None
        ]
