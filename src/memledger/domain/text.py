"""Small pure text helpers: slugs, sentence and clause splitting, normalisation.

Everything here is deterministic and works on offsets into the original text,
so a caller can always quote the exact substring a result came from.

* :func:`slug` turns free text into a stable key usable inside an identifier
  (``item:<slug>``, ``plan:<slug>``): lowercase ascii words joined by ``-``,
  stop words dropped, optionally crudely stemmed so that inflections agree
  ("reviewing flashcards" and "review flashcard" both give ``review-flashcard``).
* :func:`sentences` and :func:`clauses` split text into :class:`Segment` spans.
* :func:`normalize` collapses whitespace and straightens typographic quotes.
* :func:`ends_asking` tells whether a turn ends with a question.
* :func:`value_text` reads the words of a structured value; :data:`ENGLISH_STOP_WORDS`
  are the common English words that matching and indexing leave out.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memledger.domain.records import JsonValue

__all__ = [
    "ENGLISH_STOP_WORDS",
    "STOP_WORDS",
    "Segment",
    "clauses",
    "ends_asking",
    "normalize",
    "sentences",
    "slug",
    "stem",
    "value_text",
]

STOP_WORDS: frozenset[str] = frozenset(
    """a an the my our your his her their its this that these those of to for with at in on
    by and or me i we us you some any""".split()
)
"""Words :func:`slug` drops (after folding to lowercase ascii)."""

ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)
"""Common English words, lowercase: what a query's terms and a text's content words
leave out."""

MAX_SLUG_WORDS = 8
MAX_SLUG_CHARS = 80

_TOKEN = re.compile(r"[^\W_]+")
_APOSTROPHE = re.compile(r"['’‘`]")
_VOWEL = re.compile(r"[aeiouy]")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})


def normalize(text: str) -> str:
    """``text`` with runs of whitespace collapsed to one space, typographic quotes
    straightened, and no leading or trailing whitespace."""
    return re.sub(r"\s+", " ", text.translate(_QUOTES)).strip()


def value_text(value: JsonValue) -> str:
    """The words of a structured value: its strings and numbers, nested ones included,
    joined by spaces (``None`` and booleans say nothing)."""
    if isinstance(value, dict):
        return " ".join(value_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(value_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)


def _fold(token: str) -> str:
    """A token as lowercase ascii letters and digits (``"Zürich"`` -> ``"zurich"``)."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return re.sub(r"[^a-z0-9]", "", decomposed.encode("ascii", "ignore").decode())


def stem(word: str) -> str:
    """A crude, symmetric stem of a lowercase ascii word.

    Not a linguistic stemmer: it only has to map the base form and the common
    inflections of one word to the same key. Plurals lose ``s``/``es``
    (``flashcards`` -> ``flashcard``); a final consonant-``y`` and ``ies`` become
    ``i`` (``study``, ``studies``, ``studying`` -> ``studi``); a gerund loses
    ``ing`` and a doubled final consonant (``running`` -> ``run``); a final
    ``e`` goes (``making`` and ``make`` -> ``mak``, ``using`` and ``use`` ->
    ``us``). ``ing`` stays when no vowel would be left (``bring``, ``thing``).
    """
    if not word.isalpha():
        return word
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "i"
    elif len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) >= 5 and word.endswith("ing") and _VOWEL.search(word[:-3]):
        word = word[:-3]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
            word = word[:-1]
    if len(word) >= 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    if len(word) > 2 and word.endswith("y") and word[-2] not in "aeiouy":
        word = word[:-1] + "i"
    return word


def _hash_token(token: str) -> str:
    digest = hashlib.sha256(unicodedata.normalize("NFC", token.casefold()).encode())
    return "u" + digest.hexdigest()[:8]


def _protected(token: str) -> bool:
    """Names, acronyms and tokens with digits (``Paris``, ``NeurIPS``, ``GPT4``) are not
    stemmed: "Paris" must not become "pari"."""
    return any(c.isupper() or c.isdigit() for c in token)


def slug(text: str, *, stem_words: bool = False, drop: Iterable[str] = ()) -> str:
    """A stable key for ``text``: lowercase ascii words joined by ``-``.

    Apostrophes vanish (``don't`` -> ``dont``), accents fold (``Zürich`` ->
    ``zurich``), :data:`STOP_WORDS` and the words in ``drop`` are left out. A
    word with no ascii letter or digit (``東京``) becomes ``u`` plus 8 hex
    digits of its hash, so different scripts never collide into one key. With
    ``stem_words``, every word without a capital letter or digit goes through
    :func:`stem` (``drop`` is checked before and after stemming). If every word
    is a stop word the stop words are kept (``"the"`` -> ``"the"``). At most
    :data:`MAX_SLUG_WORDS` words and :data:`MAX_SLUG_CHARS` characters.

    The result matches ``[a-z0-9-]*``; it is empty exactly when ``text`` has no
    letter or digit.
    """
    dropped = frozenset(_fold(word) for word in drop)
    kept: list[str] = []
    every: list[str] = []
    for raw in _TOKEN.findall(_APOSTROPHE.sub("", text)):
        word = _fold(raw)
        if not word:
            word = _hash_token(raw)
            every.append(word)
            kept.append(word)
            continue
        every.append(word)
        if word in STOP_WORDS or word in dropped:
            continue
        if stem_words and not _protected(raw):
            word = stem(word)
            if word in dropped:
                continue
        kept.append(word)
    words = (kept or every)[:MAX_SLUG_WORDS]
    joined = ""
    for word in words:
        candidate = f"{joined}-{word}" if joined else word
        if len(candidate) > MAX_SLUG_CHARS:
            return joined or word[:MAX_SLUG_CHARS]
        joined = candidate
    return joined


@dataclass(frozen=True, slots=True)
class Segment:
    """A span ``text[start:end]`` of some text, trimmed of surrounding whitespace."""

    start: int
    end: int
    text: str
    question: bool = False
    """Whether the sentence the span belongs to ends with a question mark."""


_ABBREVIATIONS = frozenset(
    """mr mrs ms dr st mt prof jr sr vs etc eg ie approx inc ltd co no jan feb mar apr jun
    jul aug sep sept oct nov dec""".split()
)
_LAST_WORD = re.compile(r"(?<![\w.])[\w.]+$")
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|[;\n]+")
_CLAUSE_BREAK = re.compile(
    r"""
    (?<!\s)                                       # one try per run of spaces: linear time
    (?:
      (?:\s*[,;]\s*|\s+)(?:and\s+)?then\s+         # ", then" / "and then" / " then "
    | (?:\s*,\s*|\s+)but\s+                        # ", but" / " but "
    | \s*,\s*(?:and|so|although|though|while|whereas|because|plus)\s+
    | \s+(?:because|although|though|whereas)\s+
    | \s+and\s+(?=(?:I|I['’](?:m|ve|d|ll)|my|we|we['’](?:re|ve))\b)
    | \s*,\s*(?=(?:I|I['’](?:m|ve|d|ll)|we|we['’](?:re|ve))\b)
    | \s+[–—]\s+
    )
    """,
    re.VERBOSE,
)
_TRIM = " \t\r\n,;:.!?-–—"


def _trimmed(text: str, start: int, end: int, *, question: bool) -> Segment | None:
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM:
        end -= 1
    if start >= end:
        return None
    return Segment(start, end, text[start:end], question)


def _is_abbreviation(text: str, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` ends an abbreviation or an initial, not a sentence."""
    match = _LAST_WORD.search(text, max(0, dot - 12), dot)
    if match is None:
        return False
    word = match.group().replace(".", "").casefold()
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentences(text: str) -> tuple[Segment, ...]:
    """The sentences of ``text``: split after ``.``, ``!`` or ``?`` followed by
    whitespace (not after abbreviations such as "Dr." or "Nov." or initials),
    at ``;`` and at line breaks. The terminator is not part of the segment."""
    found: list[Segment] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        mark = match.group()
        if (
            mark.startswith(".")
            and mark.rstrip("\"'”’)]") == "."
            and _is_abbreviation(text, match.start())
        ):
            continue
        segment = _trimmed(text, start, match.start(), question="?" in mark)
        if segment is not None:
            found.append(segment)
        start = match.end()
    tail = _trimmed(text, start, len(text), question=False)
    if tail is not None:
        found.append(tail)
    return tuple(found)


def clauses(text: str) -> tuple[Segment, ...]:
    """The clauses of ``text``: its :func:`sentences`, each split further at
    "then", "but", a comma before "and"/"so"/"because"/..., "because"/"although",
    "and" before a new first-person subject ("... and I work at X", "... and my
    sister ..."), a comma before "I"/"we" ("..., I work at X"),
    and dashes. The connecting words belong to no clause; every clause carries
    the ``question`` flag of its sentence."""
    found: list[Segment] = []
    for sentence in sentences(text):
        start = sentence.start
        for match in _CLAUSE_BREAK.finditer(text, sentence.start, sentence.end):
            segment = _trimmed(text, start, match.start(), question=sentence.question)
            if segment is not None:
                found.append(segment)
            start = match.end()
        segment = _trimmed(text, start, sentence.end, question=sentence.question)
        if segment is not None:
            found.append(segment)
    return tuple(found)


_CLOSERS = " \t\r\n\"'”’)"


def ends_asking(text: str) -> bool:
    """Whether ``text`` ends with a question ("Nice! Where was that?"), a trailing
    bracketed note such as an image caption ("... that? [a photo of a lake]") aside.
    A question earlier in the text ("Was it? No, it was Tuesday.") does not count."""
    end = text.rstrip(_CLOSERS)
    if end.endswith("]"):
        opening = end.rfind("[")
        if opening > 0:
            end = end[:opening].rstrip(_CLOSERS)
    return end.endswith("?")
