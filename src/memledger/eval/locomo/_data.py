"""Loading ``locomo-dev.json``: raw turns and questions, nothing generated.

Only ``conversation`` (speakers, ``session_N`` turns, ``session_N_date_time``)
and ``qa`` are read. The generated ``observation``, ``session_summary`` and
``event_summary`` fields are never touched: a retrieval benchmark over raw turns
must not see them, and :class:`Conversation` (what a retriever is given) holds
turns only, never the questions or their answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeGuard, cast, get_args

from memledger.errors import InvalidInputError

CategoryName = Literal["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
"""LoCoMo's question categories, by their number 1-5."""

CATEGORIES: tuple[CategoryName, ...] = get_args(CategoryName)
CATEGORY_BY_NUMBER: Mapping[int, CategoryName] = {n: name for n, name in enumerate(CATEGORIES, 1)}
ANSWERABLE: frozenset[CategoryName] = frozenset(CATEGORIES[:4])
"""Categories 1-4; ``adversarial`` (5) questions have no answer in the conversation."""

_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


class LocomoFormatError(InvalidInputError):
    """The file is not LoCoMo-shaped (a missing field, a date that does not parse)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One raw dialogue turn; ``event_id`` is LoCoMo's ``dia_id`` (``"D3:14"``)."""

    event_id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    session_at: datetime
    """When the session took place (aware, UTC); every turn of a session shares it."""

    def document(self) -> str:
        """``"speaker: text [caption]"``, the text the baselines index."""
        body = f"{self.speaker}: {self.text}"
        return f"{body} [{self.caption}]" if self.caption else body


@dataclass(frozen=True, slots=True)
class Conversation:
    """What a retriever is given: the turns of one conversation, in order."""

    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]

    @property
    def last_session_at(self) -> datetime:
        """The ``now`` of every question about this conversation."""
        return max(turn.session_at for turn in self.turns)


@dataclass(frozen=True, slots=True)
class Question:
    conversation: str
    """The ``sample_id`` of the conversation the question is about."""
    index: int
    """Position in the conversation's ``qa`` list."""
    text: str
    answer: str | None
    category: CategoryName
    evidence: tuple[str, ...]
    """Evidence event ids that are turns of the conversation, in file order, distinct."""
    dropped_evidence: tuple[str, ...]
    """Evidence ids that name no turn (malformed or dangling), kept for the record."""
    original: tuple[str, ...] = ()
    """A knowledge-update question's turns that stated the old value
    (``evidence_original``), where the file marks them."""
    updated: tuple[str, ...] = ()
    """... and the turns that changed it (``evidence_updated``)."""
    sides: tuple[tuple[str, ...], ...] = ()
    """A contradiction question's turns of each side (``evidence_sides``)."""

    @property
    def is_update(self) -> bool:
        """Whether the question marks an old value's turns and other turns that changed it."""
        return (
            bool(self.original)
            and bool(self.updated)
            and not set(self.original) & set(self.updated)
        )


@dataclass(frozen=True, slots=True)
class Dataset:
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]

    def conversation(self, sample_id: str) -> Conversation:
        for conversation in self.conversations:
            if conversation.sample_id == sample_id:
                return conversation
        raise LookupError(f"no conversation {sample_id!r}")

    def limit(self, conversations: int) -> Dataset:
        """The first ``conversations`` conversations and their questions."""
        kept = self.conversations[:conversations]
        ids = {c.sample_id for c in kept}
        return Dataset(
            conversations=kept,
            questions=tuple(q for q in self.questions if q.conversation in ids),
        )


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime (LoCoMo gives no zone)."""
    try:
        parsed = datetime.strptime(" ".join(text.split()), _DATE_FORMAT)
    except ValueError:
        raise LocomoFormatError(
            f"session date {text!r} is not like '1:56 pm on 8 May, 2023'"
        ) from None
    return parsed.replace(tzinfo=UTC)


def parse_evidence(raw: Sequence[object], *, turns: frozenset[str]) -> tuple[list[str], list[str]]:
    """Split each entry on ``;``; return (ids that are turns, ids that are not)."""
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for part in str(entry).split(";"):
            event_id = part.strip()
            if not event_id:
                continue
            if event_id in turns:
                if event_id not in kept:
                    kept.append(event_id)
            else:
                dropped.append(event_id)
    return kept, dropped


def load(path: str | Path) -> Dataset:
    """Read a LoCoMo-shaped JSON file (a list of samples)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{str(path)!r} is not JSON: {exc}") from None
    if not isinstance(raw, list):
        raise LocomoFormatError(f"{str(path)!r} must hold a JSON list of conversations")
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for position, sample in enumerate(raw):
        if not _is_mapping(sample):
            raise LocomoFormatError(f"conversation #{position} is not an object")
        conversation = _conversation(sample, position=position)
        conversations.append(conversation)
        questions.extend(_questions(sample, conversation))
    return Dataset(conversations=tuple(conversations), questions=tuple(questions))


def _is_mapping(value: object) -> TypeGuard[Mapping[str, object]]:
    return isinstance(value, Mapping)


def _conversation(sample: Mapping[str, object], *, position: int) -> Conversation:
    sample_id = str(sample.get("sample_id", f"conv-{position}"))
    body = sample.get("conversation")
    if not _is_mapping(body):
        raise LocomoFormatError(f"conversation {sample_id!r} has no 'conversation' object")
    sessions = sorted(
        int(match.group(1))
        for key in body
        if (match := _SESSION.fullmatch(key)) is not None and isinstance(body[key], list)
    )
    turns: list[Turn] = []
    for session in sessions:
        date = body.get(f"session_{session}_date_time")
        if not isinstance(date, str):
            raise LocomoFormatError(f"{sample_id!r} session {session} has no date_time")
        at = parse_session_date(date)
        for item in cast(list[object], body[f"session_{session}"]):
            if not _is_mapping(item):
                raise LocomoFormatError(f"{sample_id!r} session {session} holds a non-object")
            turns.append(_turn(item, session=session, at=at, sample_id=sample_id))
    if not turns:
        raise LocomoFormatError(f"conversation {sample_id!r} has no turns")
    speakers = (str(body.get("speaker_a", "")), str(body.get("speaker_b", "")))
    return Conversation(sample_id=sample_id, speakers=speakers, turns=tuple(turns))


def _turn(item: Mapping[str, object], *, session: int, at: datetime, sample_id: str) -> Turn:
    event_id = item.get("dia_id")
    text = item.get("text")
    if not isinstance(event_id, str) or _DIA_ID.fullmatch(event_id.strip()) is None:
        raise LocomoFormatError(f"{sample_id!r} has a turn with dia_id {event_id!r}")
    if not isinstance(text, str):
        raise LocomoFormatError(f"{sample_id!r} turn {event_id!r} has no text")
    caption = item.get("blip_caption")
    return Turn(
        event_id=event_id.strip(),
        speaker=str(item.get("speaker", "")),
        text=text,
        caption=caption if isinstance(caption, str) and caption.strip() else None,
        session=session,
        session_at=at,
    )


def _questions(sample: Mapping[str, object], conversation: Conversation) -> list[Question]:
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise LocomoFormatError(f"{conversation.sample_id!r} 'qa' is not a list")
    turns = frozenset(turn.event_id for turn in conversation.turns)
    out: list[Question] = []
    for index, item in enumerate(qa):
        if not _is_mapping(item):
            raise LocomoFormatError(f"{conversation.sample_id!r} question #{index} not an object")
        number = item.get("category")
        if not isinstance(number, int) or number not in CATEGORY_BY_NUMBER:
            raise LocomoFormatError(
                f"{conversation.sample_id!r} question #{index} has category {number!r} (1-5)"
            )
        evidence = item.get("evidence", [])
        kept, dropped = parse_evidence(evidence if isinstance(evidence, list) else [], turns=turns)
        answer = item.get("answer", item.get("adversarial_answer"))
        where = f"{conversation.sample_id!r} question #{index}"
        original = _marked(item, "evidence_original", turns=turns, where=where)
        updated = _marked(item, "evidence_updated", turns=turns, where=where)
        sides = item.get("evidence_sides", [])
        if not isinstance(sides, list) or not all(isinstance(side, list) for side in sides):
            raise LocomoFormatError(f"{where}: evidence_sides must be a list of lists of turn ids")
        out.append(
            Question(
                conversation=conversation.sample_id,
                index=index,
                text=str(item.get("question", "")),
                answer=None if answer is None else str(answer),
                category=CATEGORY_BY_NUMBER[number],
                evidence=tuple(kept),
                dropped_evidence=tuple(dropped),
                original=original,
                updated=updated,
                sides=tuple(
                    tuple(parse_evidence(cast(list[object], side), turns=turns)[0])
                    for side in sides
                ),
            )
        )
    return out


def _marked(
    item: Mapping[str, object], name: str, *, turns: frozenset[str], where: str
) -> tuple[str, ...]:
    """The turn ids of an optional annotation (a list of dia ids); ids naming no turn
    are dropped as in ``evidence``."""
    raw = item.get(name, [])
    if not isinstance(raw, list):
        raise LocomoFormatError(f"{where}: {name} must be a list of turn ids")
    return tuple(parse_evidence(raw, turns=turns)[0])
