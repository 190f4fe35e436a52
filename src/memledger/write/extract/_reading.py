"""What the open-attribute predicates share: how a value is cut from the text, lists,
numbers, and the table the predicates register in (tried in the order registered)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping

from memledger.write.extract._attributes import (
    Found,
    Subject,
)
from memledger.write.extract._clause import Timing
from memledger.write.extract._vocab import (
    NUMBERS,
)


def _alt(words: Iterable[str]) -> str:
    return "(?:" + "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)) + ")"


_B = r"(?![\w'-])"
"""The end of a word."""
_END = r"(?=\s*(?:$|[,.;:!?)]|and\b|but\b|so\b|because\b|since\b|now\b|too\b|though\b|as well"
_END += r"|right now|these days|at the moment|for\s|for$|from\b|in\s|in$|ever since|again\b"
_END += r"|if\b|when\b|which\b|who\b|until\b|after\b|before\b|and\s|with\b|plus\b))"
"""Where a closed value must end: nothing, or a connective or time word."""

BE = r"(?:am|is|are|'s|'re|'m|(?:have|has|'ve) been(?!\s+\w+ing\b))\s+"
"""A state said now, or said to have held until now ("I've been vegetarian for six
years"); not "have been" before an activity ("I've been trying to read more")."""
HAVE = r"(?:have got|has got|have|has|got|'ve got|own|owns)\s+"
ADV = (
    r"(?:(?:now|currently|still|also|actually|really|just|recently|finally|mostly|mainly"
    r"|officially|already|definitely|totally|basically|pretty much|happily|proudly|very"
    r"|super|quite|so|strictly|fully|technically|sort of|kind of|pretty|like|literally"
    r"|honestly|even|always|both|originally|born|100%|completely|entirely|mostly|more"
    r"|or less|kind|sort|100 percent|a bit|a little)\s+)*"
)
ART = r"(?:(?:a|an|the|my|our|one)\s+)?"

_STOP = re.compile(
    r"\s*(?:[,.;:!?()\[\]\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|although|which|who"
    r"|that|when|whenever|if|now|too|any ?more|again|these days|right now|at the moment"
    r"|for now|lately|nowadays|recently|as well|ago|last|next|this|every|each|in|on|at|for"
    r"|from|with|by|until|till|after|before|during|about|like|or|plus|though|though|haha"
    r"|which|whom|whose|where|while|as|than|to|of|since|mostly|mainly|especially|too"
    r"|already|yet|also|either|anyway|honestly|seriously|lately|is|are|was|were|has|have"
    r"|had|i|we|you|he|she|they|it|my|our|their)(?![\w'-])"
)
_STOP_NAME = re.compile(
    r"\s*(?:[,.;:!?()\[\]\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|although|which|who"
    r"|that|when|if|now|too|any ?more|again|these days|right now|at the moment|for now"
    r"|lately|nowadays|recently|as well|ago|last|next|this|every|in|on|at|for|from|with"
    r"|by|until|after|before|during|about|like|or|as|than|to|while|where|is|are|was|were"
    r"|has|have|had|i|we|you|he|she|they|it|my|our|their)(?![\w'-])"
)
_ARTICLE = re.compile(r"^(?:a|an|the|my|our|some|this|that|his|her|their|your)\s+")
_LIST = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|&|or|plus|as well as)\s+")


def _take(text: str, stop: re.Pattern[str] = _STOP, *, words: int = 6) -> str | None:
    """The value at the start of ``text``: up to the first stop, without an article;
    ``None`` if empty or longer than ``words`` words."""
    m = stop.search(text, 1)
    value = (text[: m.start()] if m is not None else text).strip(" '\"-")
    value = _ARTICLE.sub("", value).strip()
    if not value or not re.search(r"[a-z0-9]", value) or len(value.split()) > words:
        return None
    return value


def _items(text: str, words: int = 4) -> list[str]:
    """A list at the start of ``text`` ("peanuts, shellfish and dust"), each item short."""
    m = re.compile(
        r"\s*(?:[.;:!?()\[\]\"]|\s-\s|$)|\s+(?:but|because|since|so|though|which|who|that|when"
        r"|if|now|too|any ?more|again|these days|right now|lately|as well|ago|last|every|in"
        r"|on|at|for|from|with|by|until|after|before|during|like|especially|mostly|is|are|was"
        r"|has|have|i|we|it|my|whole|all|back|since|growing|ever|which|so|as|when)(?![\w'-])"
    ).search(text, 1)
    head = text[: m.start()] if m is not None else text
    out: list[str] = []
    for item in _LIST.split(head):
        item = _ARTICLE.sub("", item.strip(" '\"-")).strip()
        item = re.sub(
            r"^(?:(?:a )?(?:little )?bit(?: of)?|a little|some|basic|conversational|fluent"
            r"|decent|both"
            r"|also|a lot of|lots of)\s+",
            "",
            item,
        )
        if item and len(item.split()) <= words and re.search(r"[a-z]", item):
            out.append(item)
    return out


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_TEENS = {
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_NUMBER_WORD = (
    r"(?:(?:" + "|".join(_TENS) + r")(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
    r"|" + "|".join(_TEENS) + r"|one|two|three|four|five|six|seven|eight|nine)"
)


def _number(text: str) -> int | None:
    """``"34"``, ``"thirty-four"``, ``"two"`` -> the number; ``None`` otherwise."""
    if text.isdigit():
        return int(text)
    parts = re.split(r"[- ]", text)
    if parts[0] in _TENS:
        ones = NUMBERS.get(parts[1], 0) if len(parts) > 1 else 0
        return _TENS[parts[0]] + ones
    if text in _TEENS:
        return _TEENS[text]
    value = NUMBERS.get(text)
    return value


Reader = Callable[[re.Match[str], str, Subject], "list[Found] | None"]
_PREDICATES: list[tuple[re.Pattern[str], Reader]] = []
"""Every predicate, in the order they are tried: by rank, then as registered."""
_RANKS: list[int] = []


def _predicate(pattern: str, *, rank: int = 1) -> Callable[[Reader], Reader]:
    """Register a predicate; a lower ``rank`` is tried before every higher one (the
    first predicate that reads a piece wins)."""

    def register(reader: Reader) -> Reader:
        _add(re.compile(pattern), reader, rank)
        return reader

    return register


def _add(pattern: re.Pattern[str], reader: Reader, rank: int) -> None:
    at = bisect.bisect_right(_RANKS, rank)
    _RANKS.insert(at, rank)
    _PREDICATES.insert(at, (pattern, reader))


def _one(
    attribute: str, value: str | None, shown: str | None = None, *, timing: Timing = "clause"
) -> list[Found] | None:
    return None if not value else [Found(attribute, value, shown, timing=timing)]


def _lookup(pattern: str, attribute: str, words: Mapping[str, str], group: str) -> None:
    """Register a predicate whose matched word says the value ("am diabetic" ->
    health_condition: diabetes): ``words`` maps the word to the value recorded."""

    def read(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
        return _one(attribute, words[m.group(group)])

    _add(re.compile(pattern), read, 1)
