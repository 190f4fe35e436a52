"""``memledger eval scenarios``: randomized interleavings of the write and read paths,
with DESIGN.md's invariants checked after every step.

Each trial is a fresh SQLite store with its index and hot cache, two tenants of two
subjects each, and a program of random steps drawn with the trial's seed: events
with claims, events queued for the worker (worked in random batches and order),
corrections in and out of order, revocations, forgetting, erasure, undoing a recorded
change or a correction, merging near-duplicates, compacting old sessions into
summaries, replays, a write failing at a random write step, expiry, reindexing,
recalls and hot-cache reads.
After each step the checks below run; a broken one is counted as a violation of its
invariant, with the seed and step that broke it.

* ``idempotent`` (1): a replay of an event already held changes nothing;
* ``atomic`` (2): a write that fails at any of its write steps leaves the store as
  it was, and the same write retried then succeeds;
* ``no_overlap`` (4): a family's current windows of one scope never overlap;
* ``read_your_write`` (6): a value just committed as current is read back with its
  revision as the floor;
* ``no_resurrection`` (7): no read (current values, the hot cache, recall) returns a
  record that was revoked, forgotten or erased, and an erased event's replay is refused;
* ``isolation`` (8): no read returns another tenant's record, nor another subject's
  in a subject-scoped recall;
* ``recheck`` (read path): every record recall returns is active in the store now,
  and a session summary it returns covers only episodes still active (a summary of
  a turn revoked, forgotten or erased since is counted under ``no_resurrection``).

Crashes are modelled by a failing write step (the store raises and rolls back), not
by killing the process: the conformance suite kills processes at every write step
of each operation (``test_process_killed_at_every_step_of_every_write_transaction``).
"""

from __future__ import annotations

import itertools
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memledger.domain.records import Claim, SourceEvent
from memledger.errors import EventErasedError, MemledgerError, StoreError
from memledger.index.derived import DerivedIndex
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import FAMILY, actor, snapshot
from memledger.write.worker import WorkerSettings, episode_of

__all__ = ["INVARIANTS", "Report", "run"]

INVARIANTS = (
    "idempotent",
    "atomic",
    "no_overlap",
    "read_your_write",
    "no_resurrection",
    "isolation",
    "recheck",
)
TENANTS = ("acme", "globex")
SUBJECTS = ("ana", "ben")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
START = datetime(2026, 3, 2, 9, tzinfo=UTC)


@dataclass
class Report:
    trials: int = 0
    steps: int = 0
    violations: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    """Steps run, by kind."""
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "steps": self.steps,
            "seconds": round(self.seconds, 2),
            "violations": {name: self.violations.get(name, 0) for name in INVARIANTS},
            "steps_by_kind": dict(sorted(self.kinds.items())),
            "examples": self.examples[:20],
        }


class _Failpoint:
    """Raises at the armed write step (counted from 1 after arming), once."""

    def __init__(self) -> None:
        self.left: int | None = None

    def __call__(self, step: str) -> None:
        if self.left is None:
            return
        self.left -= 1
        if self.left == 0:
            self.left = None
            raise StoreError(f"injected failure before {step}")


def _said(text: str, *, expires_at: datetime | None = None) -> list[Claim]:
    return [
        Claim(
            family=FAMILY,
            kind="preference",
            statement=f"Delivery: {d}",
            value=d,
            expires_at=expires_at,
        )
        for d in DAYS
        if d in text.lower()
    ][:1]


class _Trial:
    def __init__(self, seed: int, folder: Path, steps: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.steps = steps
        self.clock = FrozenClock(START)
        self.fail = _Failpoint()
        self.memory = Memory(
            open_store(folder / "store.db", failpoint=self.fail),
            clock=self.clock,
            index=DerivedIndex(folder / "store.db.index", embedder=None),
        )
        self.events: list[tuple[SourceEvent, list[Claim] | None]] = []
        self.dead_records: dict[str, set[str]] = {t: set() for t in TENANTS}
        self.dead_events: dict[str, set[str]] = {t: set() for t in TENANTS}
        self.erased: dict[str, set[str]] = {t: set() for t in TENANTS}
        self.sequence = 0
        self.found: list[tuple[str, str]] = []
        self.kinds: Counter[str] = Counter()

    # -- steps ------------------------------------------------------------------------

    def _event(self, *, queued: bool) -> tuple[SourceEvent, list[Claim] | None]:
        tenant, subject = self.rng.choice(TENANTS), self.rng.choice(SUBJECTS)
        day = self.rng.choice(DAYS)
        late = self.rng.random() < 0.2  # told out of order: the timeline decides
        when = self.clock.now() - timedelta(days=self.rng.randint(1, 20) if late else 0)
        # 3-day sessions: old ones compact
        said = self._turn(tenant, subject, day=day, at=when, session=f"p{(when - START).days // 3}")
        ttl = None
        if self.rng.random() < 0.2:  # some claims expire within the trial
            ttl = max(when, self.clock.now()) + timedelta(hours=self.rng.randint(1, 30))
        if queued:
            return said, None
        claims = _said(said.text, expires_at=ttl)
        if self.rng.random() < 0.5:  # the turn kept as an episode too, as the worker does
            claims.append(episode_of(said))
        return said, claims

    def _turn(
        self, tenant: str, subject: str, *, day: str, at: datetime, session: str
    ) -> SourceEvent:
        """The next event: ``subject`` asking for delivery on ``day``, at ``at``."""
        self.sequence += 1
        return SourceEvent(
            tenant=tenant,
            event_id=f"e{self.sequence}",
            subject=subject,
            actor=actor(FAMILY, actor_id=subject),
            channel="chat",
            occurred_at=at,
            text=f"Please deliver it on {day.title()}s.",
            metadata={"session": session},
        )

    def step(self) -> None:
        self.clock.advance(timedelta(minutes=self.rng.randint(1, 600)))
        name, act = self.rng.choice(self._steps())
        act()
        self.kinds[name] += 1
        self.check(name)

    def _steps(self) -> list[tuple[str, Callable[[], None]]]:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("ingest", lambda: self._ingest(queued=False)),
            ("ingest", lambda: self._ingest(queued=False)),
            ("queue", lambda: self._ingest(queued=True)),
            ("work", self._work),
            ("failing_write", self._failing_write),
            ("recall", self._reads),
            ("hot", self._reads),
        ]
        if self.events:
            steps += [
                ("replay", self._replay),
                ("revoke", self._revoke),
                ("forget", self._forget),
                ("erase", self._erase),
                ("undo", self._undo),
            ]
        if self.rng.random() < 0.1:
            steps.append(("reindex", lambda: self._quiet(self.memory.reindex)))
        if self.rng.random() < 0.1:
            steps.append(("consolidate", self._consolidate))
        if self.rng.random() < 0.1:
            steps.append(("compact", self._compact))
        steps.append(("expire", self._expire))
        return steps

    def _quiet(self, act: Callable[[], object]) -> None:
        act()

    def _ingest(self, *, queued: bool) -> None:
        said, claims = self._event(queued=queued)
        receipt = self.memory.ingest(said, claims)
        self.events.append((said, claims))
        if claims and receipt.outcome == "committed":
            self._read_back(said, receipt.revision(FAMILY))

    def _read_back(self, said: SourceEvent, revision: int | None) -> None:
        """Invariant 6: what this event made current is read back at its revision."""
        if revision is None:
            return
        kept = self.memory.current(said.subject, FAMILY, tenant=said.tenant, min_revision=revision)
        written = {
            r.memory_id
            for r in self.memory.history(said.subject, FAMILY, tenant=said.tenant)
            if r.source_event_id == said.event_id and r.superseded_at is None and r.authorised
        }
        now_true = {
            m for m in written if self.memory.get(m, tenant=said.tenant).valid(self.clock.now())
        }
        if not now_true <= {r.memory_id for r in kept}:
            self.violation("read_your_write", f"{said.event_id} not read back at r{revision}")

    def _work(self) -> None:
        batch = self.rng.randint(1, 4)
        self.memory.process(
            extractor=FunctionExtractor(lambda e: _said(e.text)),
            settings=WorkerSettings(batch=batch),
            limit=self.rng.randint(1, 6),
        )

    def _failing_write(self) -> None:
        """Invariant 2: a write failing at a random step leaves everything as it was."""
        said, claims = self._event(queued=self.rng.random() < 0.3)
        subjects = list(SUBJECTS)
        before = snapshot(self.memory, tenant=said.tenant, subjects=subjects)
        self.fail.left = self.rng.randint(1, 12)
        try:
            self.memory.ingest(said, claims)
        except StoreError:
            after = snapshot(self.memory, tenant=said.tenant, subjects=subjects)
            if after != before:
                self.violation("atomic", f"{said.event_id} failed half-written")
        finally:
            self.fail.left = None
        receipt = self.memory.ingest(said, claims)  # the retry, or a duplicate
        self.events.append((said, claims))
        if claims and receipt.outcome == "committed" and not receipt.duplicate:
            self._read_back(said, receipt.revision(FAMILY))

    def _pick(self) -> tuple[SourceEvent, list[Claim] | None]:
        return self.rng.choice(self.events)

    def _replay(self) -> None:
        """Invariant 1 (and 7 for erased events)."""
        said, claims = self._pick()
        before = snapshot(self.memory, tenant=said.tenant, subjects=list(SUBJECTS))
        try:
            self.memory.ingest(said, claims)
        except EventErasedError:
            if said.event_id not in self.erased[said.tenant]:
                self.violation("idempotent", f"{said.event_id} refused as erased, never erased")
        else:
            if said.event_id in self.erased[said.tenant]:
                self.violation("no_resurrection", f"erased {said.event_id} accepted again")
        after = snapshot(self.memory, tenant=said.tenant, subjects=list(SUBJECTS))
        if after != before:
            self.violation("idempotent", f"replay of {said.event_id} changed the state")

    def _revoke(self) -> None:
        tenant, subject = self.rng.choice(TENANTS), self.rng.choice(SUBJECTS)
        held = self.memory.current(subject, FAMILY, tenant=tenant)
        if not held:
            return
        target = self.rng.choice(held)
        self.memory.revoke(target.memory_id, tenant=tenant)
        self.dead_records[tenant].add(target.memory_id)

    def _forget(self) -> None:
        said, _ = self._pick()
        if said.event_id in self.erased[said.tenant]:
            return
        self.memory.forget(said.event_id, tenant=said.tenant)
        self.dead_events[said.tenant].add(said.event_id)

    def _erase(self) -> None:
        said, _ = self._pick()
        if said.event_id in self.erased[said.tenant]:
            return
        receipt = self.memory.erase(tenant=said.tenant, event=said.event_id)
        self.erased[said.tenant].add(said.event_id)
        self.dead_events[said.tenant].add(said.event_id)
        self.dead_records[said.tenant].update(receipt.memory_ids)

    def _undo(self) -> None:
        """Undo a recorded change (a revocation, a forget, a merge) or an event's
        correction: what it closed may come back, but never what was erased since, nor
        what a change still standing revoked or forgot (those stay dead)."""
        tenant = self.rng.choice(TENANTS)
        open_changes = [
            c
            for c in self.memory.change_log(tenant=tenant, limit=50)
            if c.undone_by is None and c.kind != "undo"
        ]
        said, claims = self._pick()
        if open_changes and self.rng.random() < 0.7:
            change = self.rng.choice(open_changes)
            target, tenant = change.change_id, change.tenant
        elif claims and said.event_id not in self.erased[said.tenant]:
            change, target, tenant = None, said.event_id, said.tenant
        else:
            return
        try:
            self.memory.undo(target, tenant=tenant)
        except MemledgerError:  # refused: a later change stands, or nothing to undo
            return
        if change is not None and change.kind == "forget":
            for event_id in change.forgotten:
                if event_id not in self.erased[tenant]:
                    self.dead_events[tenant].discard(event_id)

    def _consolidate(self) -> None:
        self.memory.consolidate(tenant=self.rng.choice(TENANTS), threshold=0.5)

    def _compact(self) -> None:
        """A session of two or three turns two days back (so that there is one to
        compact), then compaction of the tenant's sessions older than 0-24 hours. Its
        turns join the events later steps revoke, forget, erase, replay and undo."""
        tenant, subject = self.rng.choice(TENANTS), self.rng.choice(SUBJECTS)
        session = f"old-{self.sequence}"
        for n in range(self.rng.randint(2, 3)):
            at = self.clock.now() - timedelta(days=2) + timedelta(minutes=n)
            said = self._turn(tenant, subject, day=self.rng.choice(DAYS), at=at, session=session)
            claims = [*_said(said.text), episode_of(said)]
            self.memory.ingest(said, claims)
            self.events.append((said, claims))
        hours = self.rng.randint(0, 24)
        self.memory.compact(tenant=tenant, older_than=timedelta(hours=hours))

    def _expire(self) -> None:
        for receipt in self.memory.expire():
            self.dead_records[receipt.tenant].update(receipt.memory_ids)
            self.erased[receipt.tenant].update(receipt.events)
            self.dead_events[receipt.tenant].update(receipt.events)

    def _reads(self) -> None:
        for tenant in TENANTS:
            for subject in SUBJECTS:
                self.memory.hot.current(self.memory.reading, tenant=tenant, subject=subject)

    # -- checks -------------------------------------------------------------------------

    def violation(self, invariant: str, what: str) -> None:
        self.found.append((invariant, f"seed {self.seed}: {what}"))

    def _dead(self, tenant: str, record: Any) -> bool:
        return (
            record.memory_id in self.dead_records[tenant]
            or record.source_event_id in self.dead_events[tenant]
        )

    def check(self, step: str) -> None:
        memory = self.memory
        now = self.clock.now()
        for tenant in TENANTS:
            for subject in SUBJECTS:
                held = memory.current(subject, FAMILY, tenant=tenant)
                for r in held:
                    if r.tenant != tenant or r.subject != subject:
                        self.violation("isolation", f"{step}: {r.memory_id} crossed over")
                    if self._dead(tenant, r):
                        self.violation("no_resurrection", f"{step}: {r.memory_id} current")
                windows = sorted(
                    (r.valid_from, r.valid_until or datetime.max.replace(tzinfo=UTC))
                    for r in memory.timeline(subject, FAMILY, tenant=tenant)
                )
                if any(a[1] > b[0] for a, b in itertools.pairwise(windows)):
                    self.violation("no_overlap", f"{step}: {tenant}/{subject} windows overlap")
                hot = memory.hot.current(memory.reading, tenant=tenant, subject=subject).values
                served = {r.memory_id for r in hot.get(FAMILY, ())}
                if served != {r.memory_id for r in held if r.valid(now)}:
                    self.violation("no_resurrection", f"{step}: hot cache disagrees")
                found = memory.recall(
                    f"delivery {self.rng.choice(DAYS)}", tenant=tenant, subject=subject
                )
                for item in found.items:
                    record = item.record
                    if record.tenant != tenant or record.subject != subject:
                        self.violation("isolation", f"{step}: recall crossed to {record.subject}")
                    if self._dead(tenant, record):
                        self.violation("no_resurrection", f"{step}: recall gave {record.memory_id}")
                    try:
                        stored = memory.get(record.memory_id, tenant=tenant)
                    except MemledgerError:
                        self.violation("recheck", f"{step}: recall gave a missing record")
                        continue
                    if stored.status != "active" or stored.superseded_at is not None:
                        self.violation("recheck", f"{step}: recall gave a closed record")
                    if stored.expired(now):
                        self.violation("recheck", f"{step}: recall gave an expired record")
                    if stored.summary_of is not None:
                        self._check_summary(step, tenant, stored)

    def _check_summary(self, step: str, tenant: str, summary: Any) -> None:
        """A summary recall returns covers only turns that are still active and alive."""
        covers = summary.value.get("covers", [])
        with self.memory.store.read() as unit:
            held = unit.get_records(tenant, covers)
        for memory_id in covers:
            record = held.get(memory_id)
            if record is None or self._dead(tenant, record):
                self.violation("no_resurrection", f"{step}: summary of a dead turn {memory_id}")
            elif record.superseded_at is not None:
                self.violation("recheck", f"{step}: summary of a closed turn {memory_id}")


def run(
    *, trials: int, seed: int, steps: int = 25, progress: Callable[[int], None] | None = None
) -> Report:
    """``trials`` trials of ``steps`` random steps, seeds ``seed``, ``seed + 1`` ..."""
    report = Report()
    started = time.perf_counter()
    for n in range(trials):
        with tempfile.TemporaryDirectory(prefix="memledger-scenario-") as folder:
            trial = _Trial(seed + n, Path(folder), steps)
            try:
                for _ in range(steps):
                    trial.step()
                    report.steps += 1
            finally:
                trial.memory.close()
        report.trials += 1
        report.kinds.update(trial.kinds)
        for invariant, what in trial.found:
            report.violations[invariant] += 1
            report.examples.append(f"{invariant}: {what}")
        if progress is not None:
            progress(n + 1)
    report.seconds = time.perf_counter() - started
    return report
