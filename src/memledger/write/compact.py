"""Episodic compaction: the old episodes of a session compressed into
one session summary record that names the episodes it covers.

Every turn is kept as an episode; months of them fill the index with small talk that
competes with what matters. Compaction takes the sessions of a subject whose every
turn is older than ``before`` (a session still going on is left alone) and that
have at least ``min_turns`` turns not yet covered, and for each:

* writes a **summary record**: an episode of the ``conversation`` family whose text is
  a summary of the turns (the :class:`~memledger.session.ExtractiveSummarizer` by
  default, one line per turn, its first sentence after its speaker, at most
  ``max_tokens``; any :class:`~memledger.session.Summarizer` plugs in), whose value
  names the session (``summary_of``), the episodes it covers (``covers``) and their
  time span, and whose window starts at the first turn. Its source is a *compaction
  event* appended to the ledger (channel ``system``, actor ``memledger``, text: what
  was compacted, no words of the turns), so that revoking, forgetting or erasing the
  summary touches no turn. Its trust is the lowest of its turns', its confidence
  their highest; it expires under the tenant's retention of episodes, counted from
  when it was written;
* takes the covered episodes **out of the derived index** (an outbox ``delete`` each)
  and records them as covered; they **stay in the store**, open and unchanged, so
  history, timelines, ``get`` and audits still show them, until retention erases
  them. History gains a ``compacted`` entry for each.

The whole run is one recorded change (kind ``compaction``, :mod:`memledger.write.undo`):
``Memory.undo`` closes the summaries and returns the episodes to the index.

A summary holds its turns' words, so it never outlives what they are allowed to be
(the store enforces this, for every path that changes a record):

* closing a covered episode (a revocation, a forget, a redaction, a rollback)
  **dissolves** the summary: it closes (``superseded``), and the other open episodes
  go back to the index; compacting again summarises what is left;
* closing the summary itself (revoking it, undoing the compaction) returns its
  episodes to the index the same way;
* **erasing** a covered episode's event, or its subject, erases the summary too;
* **expiry** is the exception, on purpose: when the tenant's retention erases the
  covered episodes, the summary stays until its own expiry. That is what compaction
  is for: the compressed session outlives its raw turns, for at most the retention
  of episodes after it was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memledger.domain.addresses import check_moment, check_tenant
from memledger.domain.changes import ChangePart
from memledger.domain.limits import check_reason
from memledger.domain.records import (
    Actor,
    ExtractorInfo,
    JsonValue,
    MemoryRecord,
    SourceEvent,
    format_time,
)
from memledger.errors import InvalidInputError
from memledger.ports import FamilySlot, UnitOfWork, all_subjects
from memledger.session import ExtractiveSummarizer, ItemRole, SessionItem, Summarizer
from memledger.write.batch import stable_id
from memledger.write.commit import append_to_ledger
from memledger.write.history import FamilyStep, family_time, record_parts
from memledger.write.ports import WritePorts

FAMILY = "conversation"
COMPACTOR = ExtractorInfo(kind="caller", name="memledger-compaction", version="1")
"""The lineage of every summary: ``rollback --extractor memledger-compaction@1`` takes
them all back (their episodes return to the index)."""
ACTOR = Actor(id="memledger", authenticated=True)
MIN_TURNS = 2
MAX_TOKENS = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class Compacted:
    """One session compacted (or, in a dry run, that would be)."""

    subject: str
    session: str
    summary: str | None
    """The summary's memory id; ``None`` in a dry run."""
    covers: tuple[str, ...]
    """The memory ids of the episodes it covers, in the order they were said."""
    start: datetime
    end: datetime
    """When the first and the last of them were said."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionReceipt:
    tenant: str
    change_id: str | None
    """The recorded change (``None``: nothing compacted, or a dry run)."""
    sessions: tuple[Compacted, ...]
    before: datetime
    dry_run: bool
    at: datetime


def session_of(record: MemoryRecord) -> str | None:
    """The session of an episode that compaction may cover (open, not a summary)."""
    if record.status != "active" or record.summary_of is not None:
        return None
    return record.session


def due_sessions(
    records: Sequence[MemoryRecord],
    *,
    covered: set[str] | frozenset[str],
    before: datetime,
    min_turns: int,
) -> list[tuple[str, list[MemoryRecord]]]:
    """The sessions among one subject's ``records`` whose every turn was said before
    ``before`` and that have at least ``min_turns`` turns not ``covered`` yet, each with
    those turns in the order they were said."""
    by_session: dict[str, list[MemoryRecord]] = {}
    for record in records:
        session = session_of(record)
        if session is not None:
            by_session.setdefault(session, []).append(record)
    due: list[tuple[str, list[MemoryRecord]]] = []
    for session in sorted(by_session):
        turns = by_session[session]
        if max(t.valid_from for t in turns) >= before:
            continue  # still going on
        fresh = sorted(
            (t for t in turns if t.memory_id not in covered),
            key=lambda t: (t.valid_from, t.recorded_at, t.memory_id),
        )
        if len(fresh) >= min_turns:
            due.append((session, fresh))
    return due


def compact(
    unit: UnitOfWork,
    tenant: str,
    subjects: Sequence[str],
    *,
    before: datetime,
    now: datetime,
    reason: str,
    min_turns: int = MIN_TURNS,
    max_tokens: int = MAX_TOKENS,
    summarizer: Summarizer | None = None,
    dry_run: bool = False,
) -> CompactionReceipt:
    """Compact the due sessions of each of ``subjects`` (see the module docstring), as
    one recorded change; nothing is written with ``dry_run``."""
    # the families' revisions make the id new after an undo made at the same instant
    revisions = [unit.get_family(tenant, s, FAMILY) for s in subjects]
    marks = [f"{s}@{r.revision if r else 0}" for s, r in zip(subjects, revisions, strict=True)]
    change_id = stable_id("chg", tenant, "compaction", format_time(before),
                          format_time(now), *marks)  # fmt: skip
    summarizer = summarizer or ExtractiveSummarizer()
    done: list[Compacted] = []
    parts: list[ChangePart] = []
    latest = now
    for subject in subjects:
        due = _due(unit, tenant, subject, before=before, min_turns=min_turns)
        if not due:
            continue
        if dry_run:
            done.extend(_compacted(subject, session, None, turns) for session, turns in due)
            continue
        slot = unit.lock_family(tenant, subject, FAMILY)
        # read again under the family's lock: a turn closed meanwhile is not summarised
        due = _due(unit, tenant, subject, before=before, min_turns=min_turns)
        at = family_time(slot, now)
        latest = max(latest, at)
        writer = _Compactor(unit, slot, change_id=change_id, reason=reason, at=at)
        opened: list[str] = []
        for session, turns in due:
            text = summarizer.summarize(None, _items(tenant, session, turns), max_tokens=max_tokens)
            if not text.strip():
                continue
            summary = writer.summarize(session, turns, text)
            opened.append(summary.memory_id)
            done.append(_compacted(subject, session, summary.memory_id, turns))
        if opened:
            unit.put_family(replace(slot, revision=writer.revision, updated_at=at))
            parts.append(
                ChangePart(subject=subject, family=FAMILY, closed=(), opened=tuple(opened))
            )
    recorded = record_parts(
        unit,
        tenant,
        change_id=change_id,
        kind="compaction",
        at=latest,
        reason=reason,
        parts=parts,
    )
    return CompactionReceipt(
        tenant=tenant,
        change_id=recorded,
        sessions=tuple(done),
        before=before,
        dry_run=dry_run,
        at=latest,
    )


def _due(
    unit: UnitOfWork, tenant: str, subject: str, *, before: datetime, min_turns: int
) -> list[tuple[str, list[MemoryRecord]]]:
    live = unit.family_records(tenant, subject, FAMILY, open_only=True)
    covered = set(unit.covered_by(tenant, [r.memory_id for r in live if session_of(r)]))
    return due_sessions(live, covered=covered, before=before, min_turns=min_turns)


def _compacted(
    subject: str, session: str, summary: str | None, turns: Sequence[MemoryRecord]
) -> Compacted:
    return Compacted(
        subject=subject,
        session=session,
        summary=summary,
        covers=tuple(t.memory_id for t in turns),
        start=turns[0].valid_from,
        end=turns[-1].valid_from,
    )


def _items(tenant: str, session: str, turns: Sequence[MemoryRecord]) -> list[SessionItem]:
    """The turns as the session summarizer reads them: the role when the turn has one,
    else ``user``, followed between peers by the speaker's name (``user caroline``)."""
    items: list[SessionItem] = []
    for n, turn in enumerate(turns, start=1):
        value = turn.value if isinstance(turn.value, dict) else {}
        role = value.get("role")
        speaker = value.get("speaker")
        text = value.get("text")
        said: ItemRole = (
            "assistant" if role == "assistant" else "tool" if role == "tool" else "user"
        )
        items.append(
            SessionItem(
                tenant=tenant,
                session=session,
                seq=n,
                role=said,
                text=text if isinstance(text, str) else turn.claim,
                tokens=0,
                at=turn.valid_from,
                name=speaker  # between peers, who spoke (the subject's own: just "user")
                if role is None and isinstance(speaker, str) and speaker != turn.subject
                else None,
            )
        )
    return items


class _Compactor(FamilyStep):
    def __init__(
        self, unit: UnitOfWork, slot: FamilySlot, *, change_id: str, reason: str, at: datetime
    ) -> None:
        super().__init__(unit, slot, cause=f"{change_id}: {reason}", at=at)
        self.change_id = change_id
        days = unit.retention(slot.tenant).get("episode")
        self.expires_at = None if days is None else at + timedelta(days=days)

    def summarize(self, session: str, turns: Sequence[MemoryRecord], text: str) -> MemoryRecord:
        first, last = turns[0], turns[-1]
        tenant = first.tenant
        event = SourceEvent(
            tenant=tenant,
            event_id=stable_id("cmp", tenant, self.change_id, first.subject, session),
            subject=first.subject,
            actor=ACTOR,
            channel="system",
            occurred_at=self.at,
            text=(
                f"memledger compacted {len(turns)} turns of a session of {first.subject},"
                f" {format_time(first.valid_from)} to {format_time(last.valid_from)}"
            ),
            metadata={"compaction": self.change_id},
        )
        append_to_ledger(self.unit, event, now=self.at, validate=lambda: None)
        value: dict[str, JsonValue] = {
            "text": text,
            "summary_of": session,
            "covers": [t.memory_id for t in turns],
            "from": format_time(first.valid_from),
            "until": format_time(last.valid_from),
        }
        summary = replace(
            first,
            memory_id=stable_id("mem", tenant, event.event_id, "summary"),
            kind="episode",
            proposed_kind="episode",
            claim=text,
            value=value,
            scope=f"summary:{event.event_id}",
            status="active",
            source_event_id=event.event_id,
            source_actor_id=ACTOR.id,
            source_channel="system",
            source_identity_authenticated=True,
            scope_authorized=True,
            claim_faithful_to_source=True,
            operational_setting_confirmed=False,
            recorded_at=self.at,
            superseded_at=None,
            closed_by=None,
            valid_from=first.valid_from,
            valid_until=None,
            revision=self.revision,
            generation=self.slot.generation,
            confidence=max(t.confidence for t in turns),
            grounding=None,
            extractor=COMPACTOR,
            supersedes=None,
            exclusion=None,
            mentions=1,
            trust=min(t.trust for t in turns),
            expires_at=self.expires_at,
        )
        self.unit.insert_record(summary)
        self._history(summary, "recorded")
        self.unit.add_outbox(summary, op="upsert", at=self.at)
        self.unit.add_compaction(tenant, summary.memory_id, [t.memory_id for t in turns])
        for turn in turns:  # out of the index, still in the store
            self._history(turn, "compacted", f"{self.cause}: into {summary.memory_id}")
            self.unit.add_outbox(replace(turn, revision=self.revision), op="delete", at=self.at)
        return summary


def run(
    ports: WritePorts,
    *,
    tenant: str,
    subject: str | None = None,
    older_than: timedelta | None = None,
    before: datetime | None = None,
    min_turns: int = MIN_TURNS,
    max_tokens: int = MAX_TOKENS,
    summarizer: Summarizer | None = None,
    dry_run: bool = False,
    reason: str = "compacted",
) -> CompactionReceipt:
    """Compress the old sessions of one ``subject`` (or of every subject of the
    tenant) into session summary records (:mod:`memledger.write.compact`): a session
    whose every turn is older than ``before`` (default: ``older_than``, 30 days,
    before now) and that has at least ``min_turns`` turns not yet covered gets one
    summary of at most ``max_tokens`` tokens; its episodes leave the index and stay
    in the store. One recorded change: :meth:`undo` takes it back. ``dry_run``
    reports the sessions and writes nothing."""
    check_tenant(tenant, subject)
    now = ports.clock.now()
    if before is not None and older_than is not None:
        raise InvalidInputError("give before or older_than, not both")
    if before is None:
        age = timedelta(days=30) if older_than is None else older_than
        if not isinstance(age, timedelta) or age < timedelta(0):
            raise InvalidInputError(f"older_than must be a timedelta >= 0, got {age!r}")
        before = now - age
    else:
        before = check_moment(before, "before")
        assert before is not None
    for name, count, least in (("min_turns", min_turns, 2), ("max_tokens", max_tokens, 20)):
        if isinstance(count, bool) or not isinstance(count, int) or not least <= count <= 100_000:
            raise InvalidInputError(
                f"{name} must be a whole number from {least} to 100,000, got {count!r}"
            )
    check_reason(reason, ports.limits)
    with ports.store.read() as unit:
        subjects = [subject] if subject is not None else all_subjects(unit, tenant)
    with ports.store.read() if dry_run else ports.store.write() as unit:  # a dry run reads
        return compact(
            unit,
            tenant,
            subjects,
            before=before,
            now=now,
            reason=reason,
            min_turns=min_turns,
            max_tokens=max_tokens,
            summarizer=summarizer,
            dry_run=dry_run,
        )
