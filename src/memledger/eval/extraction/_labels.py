"""The labelled turns of the extraction benchmark, and how a claim is read against them.

Each line of a labelled file is one turn: ``{"id", "voice", "role", "text",
"claims", "optional", "note"?}``; a claim is ``{"about", "attribute", "values",
"polarity"?, "time"?}`` (``about`` is ``"self"`` or the relation the turn names;
``values`` the acceptable normalised values). ``claims`` is every fact of the
vocabulary the turn states and nothing else; ``optional`` are readings an
extractor may give without being credited or penalised. Two files ship with the
package: ``labelled-dev.jsonl`` (for finding ideas) and ``labelled-heldout.jsonl`` (a
third of the set, written apart from the other two thirds and never tuned on).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from memledger.domain.text import stem

__all__ = [
    "FREE_TEXT",
    "SPLITS",
    "VOCABULARY",
    "Label",
    "LabelledTurn",
    "LabelsFormatError",
    "load",
    "load_split",
    "normalise_value",
    "same_value",
]

SPLITS = ("dev", "heldout")

VOCABULARY = frozenset(
    """home_city hometown nationality employer role diet relationship_status age birthday
    studies school native_language vehicle commute children favourite_food favourite_color
    favourite_movie favourite_book favourite_music favourite_sport favourite_drink pet allergy
    health_condition speaks hobby sport instrument likes dislikes goal plan habit event
    family_member""".split()
)
"""The attributes the labels use."""

FREE_TEXT = frozenset(
    "goal plan habit event hobby likes dislikes school employer role studies pet vehicle".split()
)
"""Attributes whose values are phrases, matched by their content words."""


class LabelsFormatError(ValueError):
    """A labelled file that does not follow the format."""


@dataclass(frozen=True, slots=True)
class Label:
    about: str
    attribute: str
    values: tuple[str, ...]
    polarity: Literal["assert", "retract"] = "assert"
    time: str | None = None


@dataclass(frozen=True, slots=True)
class LabelledTurn:
    id: str
    voice: str
    role: str
    text: str
    claims: tuple[Label, ...]
    optional: tuple[Label, ...]
    split: str


def _label(raw: object, where: str) -> Label:
    if not isinstance(raw, dict):
        raise LabelsFormatError(f"{where}: a claim must be an object")
    attribute, about = raw.get("attribute"), raw.get("about", "self")
    values = raw.get("values", [])
    polarity = raw.get("polarity", "assert")
    if attribute not in VOCABULARY:
        raise LabelsFormatError(f"{where}: unknown attribute {attribute!r}")
    if not isinstance(about, str) or not about:
        raise LabelsFormatError(f"{where}: about must be a non-empty string")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise LabelsFormatError(f"{where}: values must be a list of strings")
    if polarity not in ("assert", "retract"):
        raise LabelsFormatError(f"{where}: polarity must be 'assert' or 'retract'")
    if polarity == "assert" and not values:
        raise LabelsFormatError(f"{where}: an asserted claim needs at least one value")
    time = raw.get("time")
    return Label(
        about=about.lower(),
        attribute=attribute,
        values=tuple(values),
        polarity=polarity,
        time=time if isinstance(time, str) and time else None,
    )


def load(path: Path | str, split: str) -> tuple[LabelledTurn, ...]:
    """The turns of one labelled file; :class:`LabelsFormatError` on a malformed line."""
    turns: list[LabelledTurn] = []
    seen: set[str] = set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelsFormatError(f"{where}: not JSON ({error})") from error
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            raise LabelsFormatError(f"{where}: a turn is an object with a text")
        turn_id = str(raw.get("id", number))
        if turn_id in seen:
            raise LabelsFormatError(f"{where}: id {turn_id!r} twice")
        seen.add(turn_id)
        turns.append(
            LabelledTurn(
                id=turn_id,
                voice=str(raw.get("voice", "")),
                role=str(raw.get("role", "user")),
                text=raw["text"],
                claims=tuple(_label(c, where) for c in raw.get("claims", [])),
                optional=tuple(_label(c, where) for c in raw.get("optional", [])),
                split=split,
            )
        )
    return tuple(turns)


def load_split(split: str) -> tuple[LabelledTurn, ...]:
    """The packaged labelled turns of ``split`` (``"dev"`` or ``"heldout"``)."""
    if split not in SPLITS:
        raise LabelsFormatError(f"unknown split {split!r}; expected one of {SPLITS}")
    here = resources.files("memledger.eval.extraction")
    with resources.as_file(here / f"labelled-{split}.jsonl") as path:
        return load(path, split)


_NUMBERS = {
    "zero": "0",
    "no": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_DROP = frozenset(
    "a an the my our his her their some to of and in at for on with named called".split()
)


def normalise_value(value: str) -> tuple[str, ...]:
    """The content words of a value, stemmed, numbers as digits ("two cats" -> 2 cat)."""
    words = re.findall(r"[a-z0-9]+", value.lower().replace("'", ""))
    return tuple(stem(_NUMBERS.get(w, w)) for w in words if w not in _DROP)


def same_value(found: str, label: str, *, free_text: bool) -> bool:
    """Whether an extracted value is a labelled one: the same content words; for a
    phrase, also the label's words with at most two more, or all but one of them."""
    a, b = normalise_value(found), normalise_value(label)
    if not a or not b:
        return False
    if a == b or set(a) == set(b):
        return True
    if not free_text:
        return False
    extra, missing = set(a) - set(b), set(b) - set(a)
    return (not missing and len(extra) <= 2) or (not extra and len(missing) == 1 and len(b) >= 3)
