"""BEAM chats as a LoCoMo-shaped file: what ``memledger bench beam-convert`` writes.

BEAM (Tavakoli et al., "Beyond a Million Tokens", arXiv 2510.27246; GitHub
mohammadtavakoli78/BEAM) keeps each chat of a tier in ``chats/<tier>/<n>/``: the
dialogue (``chat.json``, or ``chat_trunecated.json`` where the chat has one: BEAM asks
its probing questions on that prefix of ``chat.json``) and
``probing_questions/probing_questions.json``. :func:`convert_tier` turns every chat
of a tier folder into one LoCoMo sample (see :mod:`memledger.eval.locomo`):

* sample ``beam-<tier>-<n>`` (tier in lower case), speakers ``user`` and ``assistant``;
* one BEAM batch = one session, dated by the time anchor of its first user message
  (``March-15-2024``) at a placeholder ``12:00 pm``: BEAM gives dates only;
* one message = one turn ``D<batch>:<i>`` (``i`` from 1 within the batch), the message
  id kept as ``beam_id``, the text the content minus its trailing plan marker
  (``... ->-> 1,3``), right-stripped, nothing else changed;
* a question's evidence is its ``source_chat_ids`` (a list, possibly nested, or a dict
  of lists) flattened in order, de-duplicated and mapped to turn ids; a knowledge
  update also gets ``evidence_original`` / ``evidence_updated``, a contradiction
  ``evidence_sides``;
* ``abstention`` and ``summarization`` questions, and questions without source ids,
  are left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memledger.errors import InvalidInputError

CATEGORY: Mapping[str, int] = {
    "multi_session_reasoning": 1,
    "temporal_reasoning": 2,
    "event_ordering": 2,
    "knowledge_update": 3,
    "contradiction_resolution": 3,
    "information_extraction": 4,
    "preference_following": 4,
    "instruction_following": 4,
}
"""BEAM question type -> LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, as the harness prints them); types not here are left out."""

ANSWER_FIELDS = ("answer", "ideal_answer", "expected_compliance")
"""Where a question keeps its answer, by type: the first one present."""

SIDES: Mapping[str, tuple[str, str]] = {
    "knowledge_update": ("original_info", "updated_info"),
    "contradiction_resolution": ("first_statement", "second_statement"),
}

_MARKER = re.compile(r"->->(?:(?!->->).)*\Z", re.DOTALL)
"""BEAM's plan marker: ``->->`` and whatever follows it to the end of the message."""

_CHAT_FILES = ("chat_trunecated.json", "chat.json")


class BeamFormatError(InvalidInputError):
    """The folder is not a BEAM tier (a missing file, a field of the wrong shape, an
    evidence id naming no message)."""


def convert_tier(
    folder: str | Path, *, tier: str, only: Collection[int] | None = None
) -> list[dict[str, Any]]:
    """Every chat of a BEAM tier folder (``chats/500K``: subfolders named by number),
    or those numbered in ``only``, in numeric order, as LoCoMo samples."""
    root = Path(folder)
    if not root.is_dir():
        raise BeamFormatError(f"no BEAM tier folder at {str(root)!r}")
    chats = sorted(
        (int(child.name), child)
        for child in root.iterdir()
        if child.is_dir() and child.name.isdigit()
    )
    if not chats:
        raise BeamFormatError(f"{str(root)!r} holds no numbered chat folders")
    if only is not None:
        missing = sorted(set(only) - {number for number, _ in chats})
        if missing:
            raise BeamFormatError(f"{str(root)!r} has no chat numbered {missing}")
        chats = [(number, path) for number, path in chats if number in only]
    return [convert_chat(path, tier=tier, number=number) for number, path in chats]


def convert_chat(folder: Path, *, tier: str, number: int) -> dict[str, Any]:
    """One BEAM chat folder as one LoCoMo sample."""
    chat_file = next((folder / name for name in _CHAT_FILES if (folder / name).is_file()), None)
    if chat_file is None:
        raise BeamFormatError(f"{str(folder)!r} has neither {' nor '.join(_CHAT_FILES)}")
    where = f"chat {number}"
    batches = _read(chat_file)
    if not isinstance(batches, list) or not batches:
        raise BeamFormatError(f"{str(chat_file)!r} must hold a non-empty list of batches")
    conversation: dict[str, Any] = {"speaker_a": "user", "speaker_b": "assistant"}
    dia_ids: dict[int, str] = {}
    for session, batch in enumerate(batches, start=1):
        messages = list(_messages(batch, where=f"{where} batch {session}"))
        anchor = next((m.get("time_anchor") for m in messages if m.get("role") == "user"), None)
        conversation[f"session_{session}_date_time"] = _session_date(
            anchor, where=f"{where} batch {session}"
        )
        turns: list[dict[str, Any]] = []
        for i, message in enumerate(messages, start=1):
            turn = _turn(message, session=session, i=i, where=where)
            if turn["beam_id"] in dia_ids:
                raise BeamFormatError(f"{where}: message id {turn['beam_id']} appears twice")
            dia_ids[turn["beam_id"]] = turn["dia_id"]
            turns.append(turn)
        conversation[f"session_{session}"] = turns
    questions = _read(folder / "probing_questions" / "probing_questions.json")
    if not isinstance(questions, dict):
        raise BeamFormatError(f"{where}: probing_questions.json must hold an object of types")
    qa: list[dict[str, Any]] = []
    for kind, items in questions.items():
        if kind not in CATEGORY:
            continue
        if not isinstance(items, list):
            raise BeamFormatError(f"{where}: questions of type {kind!r} are not a list")
        for index, item in enumerate(items):
            question = _question(item, kind=kind, index=index, dia_ids=dia_ids, where=where)
            if question is not None:
                qa.append(question)
    return {
        "sample_id": f"beam-{tier.lower()}-{number}",
        "conversation": conversation,
        "qa": qa,
        "beam_source": {
            "tier": tier,
            "chat": number,
            "file": f"chats/{tier}/{number}/{chat_file.name}",
        },
    }


def strip_marker(content: str) -> str:
    """A message's text without BEAM's trailing plan marker, right-stripped."""
    return _MARKER.sub("", content).rstrip()


def _read(path: Path) -> Any:
    if not path.is_file():
        raise BeamFormatError(f"no {path.name} at {str(path)!r}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BeamFormatError(f"{str(path)!r} is not JSON: {exc}") from None


def _messages(batch: object, *, where: str) -> Iterator[Mapping[str, Any]]:
    """A batch's messages in order (``turns`` is a list of lists of messages)."""
    if not isinstance(batch, Mapping) or not isinstance(batch.get("turns"), list):
        raise BeamFormatError(f"{where} is not an object with a 'turns' list")
    for group in batch["turns"]:
        for message in group if isinstance(group, list) else [group]:
            if not isinstance(message, Mapping):
                raise BeamFormatError(f"{where} holds a message that is not an object")
            yield message


def _session_date(anchor: object, *, where: str) -> str:
    """``March-15-2024`` as ``12:00 pm on 15 March, 2024``."""
    try:
        day = datetime.strptime(str(anchor), "%B-%d-%Y")
    except ValueError:
        raise BeamFormatError(
            f"{where}: time anchor {anchor!r} of its first user message is not like 'March-15-2024'"
        ) from None
    return f"12:00 pm on {day.day} {day:%B}, {day.year}"


def _turn(message: Mapping[str, Any], *, session: int, i: int, where: str) -> dict[str, Any]:
    role, beam_id, content = message.get("role"), message.get("id"), message.get("content")
    if role not in ("user", "assistant") or not isinstance(beam_id, int):
        raise BeamFormatError(f"{where}: a message has role {role!r} and id {beam_id!r}")
    if not isinstance(content, str):
        raise BeamFormatError(f"{where}: message {beam_id} has no text content")
    return {
        "speaker": role,
        "dia_id": f"D{session}:{i}",
        "text": strip_marker(content),
        "beam_id": beam_id,
    }


def _flatten(ids: object) -> Iterator[object]:
    """The ids of a list, a nested list or a dict of lists, in order."""
    if isinstance(ids, Mapping | list):
        for value in ids.values() if isinstance(ids, Mapping) else ids:
            yield from _flatten(value)
    elif ids is not None:
        yield ids


def _dia(ids: object, *, dia_ids: Mapping[int, str], where: str) -> list[str]:
    out: list[str] = []
    for beam_id in _flatten(ids):
        if not isinstance(beam_id, int) or beam_id not in dia_ids:
            raise BeamFormatError(f"{where}: evidence id {beam_id!r} names no message")
        if dia_ids[beam_id] not in out:
            out.append(dia_ids[beam_id])
    return out


def _question(
    item: object, *, kind: str, index: int, dia_ids: Mapping[int, str], where: str
) -> dict[str, Any] | None:
    here = f"{where} {kind} #{index}"
    if not isinstance(item, Mapping):
        raise BeamFormatError(f"{here} is not an object")
    source = item.get("source_chat_ids")
    evidence = _dia(source, dia_ids=dia_ids, where=here)
    if not evidence:
        return None
    answer = next((item[name] for name in ANSWER_FIELDS if name in item), None)
    question: dict[str, Any] = {
        "question": item.get("question"),
        "answer": answer,
        "evidence": evidence,
    }
    if kind in SIDES and isinstance(source, Mapping):
        first, second = (
            _dia(source.get(name), dia_ids=dia_ids, where=here) for name in SIDES[kind]
        )
        if kind == "knowledge_update":
            question["evidence_original"], question["evidence_updated"] = first, second
        else:
            question["evidence_sides"] = [first, second]
    question.update(
        category=CATEGORY[kind],
        beam_type=kind,
        beam_difficulty=item.get("difficulty"),
        beam_source_chat_ids=source,
        beam_index=index,
    )
    return question


def write(samples: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """The samples as a LoCoMo-shaped JSON file (one-space indent, UTF-8 as it is)."""
    Path(path).write_text(json.dumps(list(samples), indent=1, ensure_ascii=False) + "\n")
