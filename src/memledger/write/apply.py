"""What one event does to one family, inside the event's transaction.

Candidates that may change the current view are decided against the family's
open records (``memledger.domain.decide``): DELETEs first (each closes the
matched window as ``retracted`` from the claim's start, keeping what came
before; a retraction that matches nothing writes nothing and reports a NOOP
without a record), then the rest per scope. A scope whose candidates are all NOOPs only
raises mention counts; otherwise the event installs all of its intervals for
that scope at once, closing what they overlap and reinstating the remnants.
Observations and historical claims are recorded beside the timeline.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from memledger.domain.decide import (
    Candidate,
    Decision,
    Delete,
    Existing,
    Noop,
    Unmatched,
    decide,
)
from memledger.domain.intervals import Interval, Window, reconcile
from memledger.domain.policy import Ordering, Position, WritePolicy
from memledger.domain.records import (
    Claim,
    ClaimResult,
    DecisionKind,
    Disposition,
    ExclusionReason,
    FamilyRevision,
    HistoryEntry,
    MemoryRecord,
    RecordStatus,
    format_time,
)
from memledger.domain.scoring import confidence
from memledger.ports import FamilySlot, UnitOfWork
from memledger.write.batch import Batch, interval_of, stable_id
from memledger.write.history import family_time


@dataclass(slots=True)
class FamilyPlan:
    """The candidates of one event for one family, sorted by what may happen to them."""

    slot: FamilySlot
    ordering: Ordering
    current: list[tuple[int, Claim]] = field(default_factory=list)
    other: list[tuple[int, Claim, Disposition, ExclusionReason | None]] = field(
        default_factory=list
    )
    behind: bool = False
    """The event is late for the family (some of its claims apply only because nothing
    newer holds their scope): the family's position stays where it is."""


def apply_family(
    unit: UnitOfWork,
    batch: Batch,
    plan: FamilyPlan,
    results: dict[int, ClaimResult],
    *,
    now: datetime,
    policy: WritePolicy,
) -> FamilyRevision:
    """Write what ``plan`` decides, at the family's next revision; return its token."""
    event, slot = batch.event, plan.slot
    revision = slot.revision + 1
    at = family_time(slot, now)
    writer = _Writer(unit, batch, slot, revision=revision, at=at, policy=policy)
    if any(claim.kind != "episode" for _, claim in plan.current):
        live = {
            r.memory_id: r
            for r in unit.family_records(slot.tenant, slot.subject, slot.family, open_only=True)
            if r.authorised and r.status == "active"
        }
        _decide_and_write(writer, plan.current, live, results, policy=policy)
    else:  # a turn is its own scope and commits once: nothing to decide, nothing to load
        for index, claim in plan.current:
            record = writer.claim(index, claim, "current", None)
            results[index] = _result(claim, "current", record.memory_id, decision="add")
    for index, claim, disposition, reason in plan.other:
        record = writer.claim(index, claim, disposition, reason)
        results[index] = _result(claim, disposition, record.memory_id, reason=reason)

    moved = not plan.behind and any(claim.kind != "episode" for _, claim in plan.current)
    position = Position.of(event) if moved else slot.position
    unit.put_family(replace(slot, revision=revision, position=position, updated_at=at))
    return FamilyRevision(
        subject=slot.subject, family=slot.family, revision=revision, generation=slot.generation
    )


def _result(
    claim: Claim,
    disposition: Disposition,
    memory_id: str | None,
    *,
    reason: ExclusionReason | None = None,
    decision: DecisionKind | None = None,
) -> ClaimResult:
    return ClaimResult(
        family=claim.family,
        scope=claim.scope,
        disposition=disposition,
        memory_id=memory_id,
        reason=reason,
        decision=decision,
    )


def _existing(live: dict[str, MemoryRecord]) -> list[Existing]:
    return [
        Existing(
            memory_id=r.memory_id,
            statement=r.claim,
            value=r.value,
            scope=r.scope,
            interval=Interval(r.valid_from, r.valid_until),
        )
        for r in live.values()
    ]


def _candidate(writer: _Writer, claim: Claim) -> Candidate:
    return Candidate(
        statement=claim.statement,
        value=claim.value,
        scope=claim.scope,
        interval=interval_of(writer.batch.event, claim),
        polarity=claim.polarity,
    )


def _decide_and_write(
    writer: _Writer,
    current: list[tuple[int, Claim]],
    live: dict[str, MemoryRecord],
    results: dict[int, ClaimResult],
    *,
    policy: WritePolicy,
) -> None:
    installs: dict[str, list[tuple[int, Claim]]] = defaultdict(list)
    decided: dict[int, Decision] = {}
    changed = False  # once the family changed, later decisions are taken again
    for index, claim in current:
        if claim.kind == "episode":  # every turn is its own record, never merged
            installs[claim.scope].append((index, claim))
            continue
        decision = decide(
            _candidate(writer, claim),
            _existing(live),
            policy.thresholds,
            similar=policy.similarity,
        )
        if isinstance(decision, Delete):
            _retract(writer, claim, live[decision.target], live)
            results[index] = _result(claim, "current", decision.target, decision="delete")
            changed = True
        elif isinstance(decision, Unmatched):  # a retraction of nothing: nothing changes
            results[index] = _result(claim, "current", None, decision="noop")
        else:
            installs[claim.scope].append((index, claim))
            decided[index] = decision
    for scope, claims in sorted(installs.items()):
        decisions = [
            None
            if claim.kind == "episode"
            else decided[index]
            if not changed
            else decide(
                _candidate(writer, claim),
                _existing(live),
                policy.thresholds,
                similar=policy.similarity,
            )
            for index, claim in claims
        ]
        if all(isinstance(d, Noop) for d in decisions):
            for (index, claim), noop in zip(claims, decisions, strict=True):
                assert isinstance(noop, Noop)
                writer.mention(live[noop.target])
                results[index] = _result(claim, "current", noop.target, decision="noop")
            continue
        _install(writer, scope, claims, live, results)
        changed = True


def _windows(live: dict[str, MemoryRecord], scope: str) -> list[Window]:
    return [
        Window(r.memory_id, Interval(r.valid_from, r.valid_until))
        for r in live.values()
        if r.scope == scope
    ]


def _retract(
    writer: _Writer, claim: Claim, target: MemoryRecord, live: dict[str, MemoryRecord]
) -> None:
    """Close the target's scope from the claim's start on, as retracted; keep what came before."""
    tombstone = interval_of(writer.batch.event, claim)
    if not Interval(target.valid_from, target.valid_until).overlaps(tombstone):
        tombstone = Interval(target.valid_from, tombstone.end)  # retracting it as a whole
    plan = reconcile(_windows(live, target.scope), [tombstone])
    for key in plan.closed:
        writer.close(live.pop(key), status="retracted")
    for remnant in plan.remnants:
        record = writer.remnant(writer.closed[remnant.source], remnant.interval)
        live[record.memory_id] = record


def _install(
    writer: _Writer,
    scope: str,
    claims: list[tuple[int, Claim]],
    live: dict[str, MemoryRecord],
    results: dict[int, ClaimResult],
) -> None:
    windows = _windows(live, scope)
    intervals = [interval_of(writer.batch.event, c) for _, c in claims]
    plan = reconcile(windows, intervals)
    for key in plan.closed:
        writer.close(live.pop(key), status="superseded")
    for remnant in plan.remnants:
        record = writer.remnant(writer.closed[remnant.source], remnant.interval)
        live[record.memory_id] = record
    for (index, claim), interval in zip(claims, intervals, strict=True):
        record = writer.claim(index, claim, "current", None)
        live[record.memory_id] = record
        replaced = any(w.interval.overlaps(interval) for w in windows)
        results[index] = _result(
            claim, "current", record.memory_id, decision="update" if replaced else "add"
        )


class _Writer:
    """Writes records of one family at one revision, each with its history and outbox rows."""

    def __init__(
        self,
        unit: UnitOfWork,
        batch: Batch,
        slot: FamilySlot,
        *,
        revision: int,
        at: datetime,
        policy: WritePolicy,
    ) -> None:
        self.unit, self.batch, self.slot = unit, batch, slot
        self.revision, self.at, self.policy = revision, at, policy
        self.closed: dict[str, MemoryRecord] = {}

    def _history(self, record: MemoryRecord, action: str) -> None:
        self.unit.add_history(
            HistoryEntry(
                seq=0,
                tenant=record.tenant,
                subject=record.subject,
                family=record.family,
                revision=self.revision,
                generation=self.slot.generation,
                action="closed"
                if action == "closed"
                else "mentioned"
                if action == "mentioned"
                else "recorded",
                memory_id=record.memory_id,
                status=record.status,
                at=self.at,
                cause=self.batch.event.event_id,
            )
        )

    def close(self, record: MemoryRecord, *, status: RecordStatus) -> None:
        cause = self.batch.event.event_id
        self.unit.close_record(
            record.tenant, record.memory_id, status=status, at=self.at, closed_by=cause
        )
        closed = replace(record, status=status, superseded_at=self.at, closed_by=cause)
        self.closed[record.memory_id] = closed
        self._history(closed, "closed")
        self.unit.add_outbox(replace(closed, revision=self.revision), op="delete", at=self.at)

    def _insert(self, record: MemoryRecord) -> MemoryRecord:
        self.unit.insert_record(record)
        self._history(record, "recorded")
        self.unit.add_outbox(record, op="upsert", at=self.at)
        return record

    def remnant(self, source: MemoryRecord, interval: Interval) -> MemoryRecord:
        """The part of a closed record that stays true, as a new record of the same claim."""
        return self._insert(
            replace(
                source,
                memory_id=stable_id(
                    "mem",
                    source.tenant,
                    source.memory_id,
                    str(self.revision),
                    format_time(interval.start),
                ),
                valid_from=interval.start,
                valid_until=interval.end,
                recorded_at=self.at,
                superseded_at=None,
                closed_by=None,
                status="active",
                revision=self.revision,
                generation=self.slot.generation,
                supersedes=source.memory_id,
            )
        )

    def mention(self, record: MemoryRecord) -> None:
        """A NOOP: another independent statement of ``record`` raises its mentions."""
        event = self.batch.event
        if not self.unit.add_mention(
            record.tenant, record.memory_id, event_id=event.event_id, at=self.at
        ):
            return
        mentions = record.mentions + 1
        updated = replace(
            record,
            mentions=mentions,
            confidence=max(record.confidence, confidence(mentions)),
            revision=self.revision,
        )
        self.unit.set_mentions(
            record.tenant,
            record.memory_id,
            mentions=mentions,
            confidence=updated.confidence,
            revision=self.revision,
        )
        self._history(updated, "mentioned")
        self.unit.add_outbox(updated, op="upsert", at=self.at)

    def claim(
        self, index: int, claim: Claim, disposition: Disposition, reason: ExclusionReason | None
    ) -> MemoryRecord:
        event, batch = self.batch.event, self.batch
        interval = interval_of(event, claim)
        authorised = disposition != "observation"
        return self._insert(
            MemoryRecord(
                tenant=event.tenant,
                memory_id=stable_id(
                    "mem",
                    event.tenant,
                    event.event_id,
                    str(index),
                    claim.family,
                    claim.scope,
                    *(() if batch.derivation is None else (batch.derivation,)),
                ),
                subject=self.slot.subject,
                family=claim.family,
                kind=claim.kind if authorised else "observation",
                proposed_kind=claim.kind,
                claim=claim.statement,
                value=claim.value,
                scope=claim.scope,
                status="historical" if disposition == "historical" else "active",
                source_event_id=event.event_id,
                source_actor_id=event.actor.id,
                source_channel=event.channel,
                source_identity_authenticated=event.actor.authenticated,
                scope_authorized=authorised,
                claim_faithful_to_source=claim.grounding is not None,
                operational_setting_confirmed=(
                    disposition == "current"
                    and claim.kind not in ("episode", "working")
                    and event.channel in self.policy.setting_channels
                ),
                recorded_at=self.at,
                superseded_at=None,
                closed_by=None,
                valid_from=interval.start,
                valid_until=interval.end,
                revision=self.revision,
                generation=self.slot.generation,
                confidence=float(claim.confidence),
                grounding=claim.grounding,
                extractor=batch.extractor,
                supersedes=None,
                exclusion=reason,
                trust=self.policy.trust(event),
                expires_at=self._expiry(claim),
            )
        )

    def _expiry(self, claim: Claim) -> datetime | None:
        """The claim's own expiry, or the tenant's retention of its kind if that comes
        first (counted from when the record is written)."""
        days = self.unit.retention(self.batch.event.tenant).get(claim.kind)
        kept = None if days is None else self.at + timedelta(days=days)
        return min((t for t in (claim.expires_at, kept) if t is not None), default=None)
