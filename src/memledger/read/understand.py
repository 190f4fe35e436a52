"""Understanding a recall question without an LLM: who it names, when it is about,
which families it touches, and, with a rewriter, how else it could be asked.

* **People**: the parts of the tenant's speaker and subject names
  (:class:`NameBook`), matched in any case, or by a capitalised prefix ("Mel"
  for Melanie).
* **Time**: :func:`memledger.read.when.question_time` ("in July 2023",
  "last May", "two weeks ago").
* **Families**: words that name a slot ("live" for ``home_city``), so recall
  can overlay the slot's current value.
* **Shape** (:class:`Shape`): whether the question spans sessions ("across
  our conversations", "how many times", "how has ... changed"), asks for an
  order ("in what order", "list in order"), asks what the assistant itself
  said ("what did you recommend"), gathers several things of one kind
  ("what activities ...", "where has she camped?"), or asks when something
  stated happened ("when did ...").
* **Without names**: the query with the people it names replaced by "they"
  (:attr:`Understood.unnamed`): what recall embeds, and what BM25 matches when
  it names one person.
* **Phrasings**: an optional :class:`~memledger.read.rewrite.QueryRewriter`;
  its failure becomes a note and the original query is used.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from memledger.domain.gates import content_words
from memledger.errors import MemledgerError
from memledger.index.lexical import STOP_WORDS, query_terms
from memledger.read.when import TimeFocus, question_time

if TYPE_CHECKING:
    from memledger.read.rewrite import QueryRewriter

FAMILY_WORDS: Mapping[str, tuple[str, ...]] = {
    "home_city": ("live", "lives", "living", "based", "city", "move", "moved", "home"),
    "employer": ("work", "works", "job", "employer", "company", "employed"),
    "role": ("role", "job", "title", "position"),
    "primary_framework": ("framework", "frameworks", "library", "pytorch", "jax"),
    "delivery_preference": ("digest", "deliver", "delivery", "newsletter", "send"),
    "language": ("language",),
    "timezone": ("timezone", "time zone"),
}
SHARED_PART = 3
_NAME_PART = re.compile(r"[^\W_]+")
_NAME_WORD = re.compile(r"([^\W_]+)(['\u2019]s\b)?")
_ROLE_WORDS = frozenset({"user", "assistant", "agent", "bot", "system", "tool", "customer"})


_SESSIONS = r"(?:conversations|sessions|chats|messages|discussions|talks|requests|questions)"
_ACROSS = re.compile(
    rf"\b(?:across|throughout|over|during|in|through(?:out)?)\s+(?:all\s+)?"
    rf"(?:(?:of\s+)?(?:our|my|the|these|those|different|multiple|several|various|all)\s+)+"
    rf"{_SESSIONS}\b"
    r"|\bhow\s+many\s+(?:times|different|total|separate)\b"
    r"|\b(?:every|each)\s+time\b|\bover\s+time\b|\bin\s+total\b"
    r"|\bhow\s+(?:has|have|did)\b[^?.]{0,80}\b(?:evolve[ds]?|change[ds]?|progress(?:ed)?|develop(?:ed)?)\b"
    r"|\bwhat\s+(?:has\s+)?changed\b|\bevolution\s+of\b",
    re.IGNORECASE,
)
_ORDER = re.compile(
    r"\b(?:in\s+(?:what|which)\s+order|the\s+order\s+(?:in\s+which|of)|in\s+order\b"
    r"|in\s+chronological|chronologically|sequence\s+of|in\s+sequence)",
    re.IGNORECASE,
)
_NOT_PLURAL = (
    "is|was|does|has|this|its|his|hers|ours|yours|theirs|always|us|yes|plus|less|unless"
    "|across|status|focus|process|business|progress|success|access|address|stress|news"
)
_GATHER = re.compile(
    # "What activities ...", "Which kinds of books ...": a plural asked for
    rf"^\s*(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?!(?:{_NOT_PLURAL})\b)"
    r"[a-z][a-z'\-]*[^s'\W]s\b"
    # present perfect ("What has she painted?", "Where have I camped?"), "both", "ways"
    r"|\b(?:what|where|which|who)\s+(?:has|have)\b|\bboth\b|\bwhat\s+ways\b"
    r"|\bwhat\s+are\s+some\b|\bhow\s+many\b",
    re.IGNORECASE,
)
_DATES = re.compile(
    r"^\s*when\b[^,]*\?\s*$"  # "When Jon lost his job?"; not "When I ask ..., what ...?"
    r"|^\s*when\s+(?:and\s+where\s+)?"
    r"(?:did|does|do|am|was|were|is|are|will|would|has|have|had|should|can)\b"
    r"|^\s*(?:in\s+|on\s+)?(?:what|which)\s+(?:year|month|day|date)\b",
    re.IGNORECASE,
)
_AGENT = re.compile(
    r"\b(?:did|have)\s+you\s+(?:\w+ly\s+)?"
    r"(?:recommend|suggest|say|tell|mention|propose|advise|explain|help|give|provide|share"
    r"|offer|outline|describe|walk|show|list|point|remind|note|warn|calculate|write)"
    r"|\byou\s+(?:recommended|suggested|said|told|mentioned|proposed|advised|explained"
    r"|helped|gave|provided|shared|offered|outlined|described|showed|listed|pointed|reminded"
    r"|noted|warned|calculated|wrote)\b"
    r"|\byour\s+(?:advice|suggestions?|recommendations?|answer|explanation|plan|tips?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """What kind of question this is, beyond its words."""

    across_sessions: bool = False
    """It gathers from several sessions ("across our conversations", "how many times",
    "how has ... changed"): recall spreads its top k over the sessions that match
    instead of one session's neighbours."""
    ordered: bool = False
    """It asks for an order ("in what order did I ..."): ``RecallResult.order`` is
    ``"time"`` and :meth:`RecallResult.chronological` gives the items by time."""
    to_agent: bool = False
    """It asks what the assistant itself said ("what did you recommend ..."): the
    assistant's turns are the evidence and keep their full weight."""
    gathers: bool = False
    """It gathers several things of one kind ("What activities does Melanie do?",
    "Where has she camped?", "What do they both like?", "In what ways ..."): each is
    stated in a turn of its own, so recall does not lend a matching turn's score to
    the replies around it (``RecallSettings.stated_context_weight``)."""
    dates: bool = False
    """It asks when something stated happened ("When did Melanie paint a sunrise?",
    "What year did he start surfing?"): the turn that states it is the evidence, and
    the replies around it add nothing its own time does not give
    (``RecallSettings.stated_context_weight``)."""
    words: frozenset[str] = frozenset()
    """The content words that only give the question its shape ("order", "across our
    conversations", "mentioned"): no memory is relevant for holding them."""


_REPORTING = frozenset(
    content_words(
        "mention mentioned mentions bring brought up say said tell told talk talked discuss"
        " discussed list order conversations sessions chats messages times"
    )
)
"""Words that say how a question gathers, not what it is about: when it has a shape,
they count for no memory's relevance."""


def question_shape(query: str) -> Shape:
    """The :class:`Shape` of ``query``, from its wording (an order question spans
    sessions too)."""
    cues = [m for p in (_ORDER, _ACROSS, _AGENT) if (m := p.search(query)) is not None]
    ordered = _ORDER.search(query) is not None
    return Shape(
        across_sessions=ordered or _ACROSS.search(query) is not None,
        ordered=ordered,
        to_agent=_AGENT.search(query) is not None,
        gathers=_GATHER.search(query) is not None,
        dates=_DATES.search(query) is not None,
        words=frozenset().union(*(content_words(m.group(0)) for m in cues), _REPORTING)
        if cues
        else frozenset(),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Understood:
    """What recall read in the query."""

    queries: tuple[str, ...]
    people: tuple[str, ...]
    time: TimeFocus | None
    notes: tuple[str, ...] = ()
    shape: Shape = Shape()
    unnamed: str | None = None
    """The query with the people it names replaced by "they" ("What instruments does
    they play?"), ``None`` when it names nobody: what recall embeds, so that the
    vectors match what is asked rather than every turn near a name (the person
    boost already prefers the person's own turns); ``None`` too when the names are
    all it asks ("Melanie?")."""


def families_named(query: str) -> list[str]:
    words = set(query_terms(query))
    return [family for family, cue in FAMILY_WORDS.items() if words & set(cue)]


class NameBook:
    """Who a query can name: the parts of the speaker and subject names of a tenant.

    A query names a person by a whole name part in any case ("caroline"), or by
    a capitalised word of three letters or more that starts one ("Mel" for
    Melanie; stop words such as "The" never count). Parts shared by more than
    :data:`SHARED_PART` names ("user" in user-1, user-2, ...) and numbers name
    nobody.
    """

    def __init__(self, names: frozenset[str]) -> None:
        owners: dict[str, set[str]] = {}
        for name in names:
            for part in _NAME_PART.findall(name):
                if len(part) > 1 and not part.isdigit():
                    owners.setdefault(part.casefold(), set()).add(name)
        self._owners = {p: frozenset(n) for p, n in owners.items() if len(n) <= SHARED_PART}
        self._parts = sorted(self._owners)

    def find(self, query: str) -> tuple[str, ...]:
        found: set[str] = set()
        for word in _NAME_PART.findall(query):
            found |= self._named(word)
        return tuple(sorted(found))

    def unnamed(self, query: str) -> str:
        """``query`` with every word that names someone replaced by "they" ("their" for
        a possessive): what it asks about them, without who."""

        def pronoun(match: re.Match[str]) -> str:
            word = match.group(1)
            if word.casefold() in _ROLE_WORDS or not self._named(word):
                return match.group(0)  # "the user" is a noun as well as user-9's name
            return "their" if match.group(2) else "they"

        return _NAME_WORD.sub(pronoun, query)

    def _named(self, word: str) -> frozenset[str]:
        """The names ``word`` is a part of, or a capitalised prefix of one of."""
        folded = word.casefold()
        found = set(self._owners.get(folded, frozenset()))
        if word[0].isupper() and len(word) >= 3 and folded not in STOP_WORDS:
            at = bisect_left(self._parts, folded)
            while at < len(self._parts) and self._parts[at].startswith(folded):
                found |= self._owners[self._parts[at]]
                at += 1
        return frozenset(found)


@lru_cache(maxsize=64)
def name_book(names: frozenset[str]) -> NameBook:
    """The :class:`NameBook` of a tenant's names (the index hands back the same set
    object until it changes, so this is a lookup)."""
    return NameBook(names)


def name_words(people: tuple[str, ...]) -> frozenset[str]:
    """The content words of these names (what relevance leaves aside)."""
    return frozenset(
        w for name in people for w in content_words(" ".join(_NAME_PART.findall(name)))
    )


def people_named(query: str, names: frozenset[str]) -> tuple[str, ...]:
    """The known ``names`` the query mentions (see :class:`NameBook`)."""
    return name_book(names).find(query)


def understand(
    query: str,
    *,
    names: frozenset[str],
    at: datetime,
    rewriter: QueryRewriter | None = None,
) -> Understood:
    """People, time and phrasings of ``query``; a rewriter's failure becomes a note."""
    queries: tuple[str, ...] = (query,)
    people = people_named(query, names)
    focus = question_time(query, at)
    notes: list[str] = []
    if rewriter is not None:
        try:
            rewrite = rewriter.rewrite(query, now=at)
        except MemledgerError as exc:
            notes.append(f"rewriter failed, original query used: {exc}")
        else:
            queries = tuple(dict.fromkeys((query, *rewrite.queries)))
            extra = people_named(" ".join(rewrite.names), names)
            people = tuple(dict.fromkeys((*people, *extra)))
            if focus is None and rewrite.after is not None and rewrite.before is not None:
                focus = TimeFocus(
                    start=rewrite.after, end=rewrite.before, phrase="(rewriter)", precision="day"
                )
    return Understood(
        queries=queries,
        people=people,
        time=focus,
        notes=tuple(notes),
        shape=question_shape(query),
        unnamed=_unnamed(query, names) if people else None,
    )


def _unnamed(query: str, names: frozenset[str]) -> str | None:
    """``query`` without the names it holds, ``None`` when nothing else is asked."""
    unnamed = name_book(names).unnamed(query)
    return unnamed if query_terms(unnamed) else None
