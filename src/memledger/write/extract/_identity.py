"""Matchers for who the speaker is and what they use, like and do.

Each matcher takes a :class:`Clause` and returns proposals, or ``None`` when
its patterns do not apply (the extractor then tries the next one). Patterns
are anchored at the start of the clause body: "I live in X" is the speaker's
claim, "my friend lives in X" is not.
"""

from __future__ import annotations

import re

from memledger.domain.text import slug
from memledger.write.extract._clause import Clause, Proposal, Timing
from memledger.write.extract._lexicon import (
    ACTIVITY_STOPS,
    ADV,
    DOUBT_WORDS,
    FREQUENCY,
    HABITUAL,
    I_,
    I_AM,
    I_HAVE,
    I_WILL_BE,
    ITEM_STOPS,
    LIST_SPLIT,
    LOOSE_END,
    NAME_JOINERS,
    ORG_STOPS,
    PLACE_STOPS,
    PLAN_STOPS,
    PRONOUN_ITEMS,
    RELATION,
    ROLE_STOPS,
    TITLE_STOPS,
    WE,
    WE_ARE,
    WE_HAVE,
    canonical_framework,
    known_tool,
    role_head,
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_DETERMINER = re.compile(
    r"(?:a|an|the|my|our|your|his|her|their|some|this|that|one)\s", re.IGNORECASE
)


def named(value: str, clause: Clause, *, strict: bool = False) -> bool:
    """Whether ``value`` looks like a name: it has a capital letter, a digit or a letter
    of a script without case ("東京"); or, unless ``strict``, the writer capitalises
    nothing ("i live in delhi") and it does not start with a determiner ("a startup")."""
    if any(c.isupper() or c.isdigit() or (c.isalpha() and c.lower() == c.upper()) for c in value):
        return True
    return not strict and clause.lowercase and _DETERMINER.match(value) is None


def doubtful(value: str, clause: Clause, *, place: bool = False) -> bool:
    """Whether a name (a city, an organisation, a tool) looks wrongly cut: it holds a
    lowercase time or number word ("Bangalore two weeks"), ends with a function word
    ("JAX a"), or, for a ``place`` from a writer who capitalises, holds a lowercase
    word that is not a joiner ("Valencia over"). When unsure, no claim: the
    worker still stores the turn as an episode."""
    if DOUBT_WORDS.search(value) or LOOSE_END.search(value):
        return True
    if place and not clause.lowercase:
        return any(
            word[:1].islower() and word.casefold() not in NAME_JOINERS for word in value.split()[1:]
        )
    return False


def usable(value: str | None, *, max_words: int = 8) -> bool:
    if value is None or not re.search(r"[^\W_]", value):
        return False
    words = value.split()
    return len(words) <= max_words and value.casefold() not in PRONOUN_ITEMS


# -- home_city ----------------------------------------------------------------------------

_HOME: tuple[tuple[re.Pattern[str], Timing, bool], ...] = (
    (_rx(rf"(?:{I_}|{WE}){ADV}(?:live|reside)\s+in\s+(?P<x>.+)"), "clause", False),
    (
        _rx(
            rf"(?:{I_AM}|{WE_ARE}|{I_WILL_BE}|{I_HAVE}been\s+|{WE_HAVE}been\s+)?{ADV}"
            r"(?:based|living|located|residing)\s+(?:in|out\s+of)\s+(?P<x>.+)"
        ),
        "clause",
        False,
    ),
    (_rx(rf"(?:{I_HAVE}|{WE_HAVE}){ADV}lived\s+in\s+(?P<x>.+)"), "clause", False),
    (  # "I've been in Milan for twelve years": a stay counted in years is a home
        _rx(
            rf"(?:{I_HAVE}|{WE_HAVE}){ADV}been\s+in\s+(?P<x>.+?)\s+(?:for|since)\s+"
            r"(?:(?:\w+|\d+|a|almost|nearly|over|about|around|the\s+(?:last|past))\s+)*"
            r"(?:years?|decades?|months|\d{4})\b.*"
        ),
        "clause",
        False,
    ),
    (
        _rx(
            rf"(?:{I_AM}|{WE_ARE}){ADV}(?:now\s+)?renting\s+(?:(?:a|an|our|my)\s+"
            r"(?:\w+\s+)?(?:flat|apartment|place|house|room|studio)\s+)?in\s+(?P<x>.+)"
        ),
        "clause",
        False,
    ),
    (  # "now I have my own flat in Gdańsk"
        _rx(
            rf"(?:{I_HAVE}|{WE_HAVE}|{I_}(?:have|got|bought)\s+|{WE}(?:have|got|bought)\s+)"
            rf"{ADV}(?:got\s+)?(?:my\s+own|our\s+own|my|our|a|an)\s+(?:new\s+|own\s+|little\s+)?"
            r"(?:flat|apartment|place|house|home|condo)\s+in\s+(?P<x>.+)"
        ),
        "clause",
        False,
    ),
    (_rx(rf"{ADV}(?:lives|resides)\s+in\s+(?P<x>.+)"), "clause", False),
    (
        _rx(
            rf"(?:{I_}|{WE}|{I_HAVE}|{WE_HAVE})?{ADV}(?:moved|relocated)\s+(?:back\s+)?"
            r"(?:over\s+)?to\s+(?P<x>.+)"
        ),
        "past",
        False,
    ),
    (
        _rx(rf"(?:{I_AM}|{WE_ARE}){ADV}(?:moving|relocating)\s+(?:back\s+)?to\s+(?P<x>.+)"),
        "change",
        True,
    ),
)


def home_city(clause: Clause) -> list[Proposal] | None:
    """Home city: "I live in X", "I'm based in X", "Based in X", "I moved to
    X", "I've moved to X", "I relocated to X", "I've lived in X since ...", "I'm
    moving to X" (only with a date saying when). The value is the place as written."""
    for pattern, timing, needs_date in _HOME:
        m = clause.match(pattern)
        if m is None:
            continue
        if needs_date and not any(t.start is not None for t in clause.times):
            return None
        place = clause.value(m, "x", PLACE_STOPS)
        if (
            place is None
            or not usable(place, max_words=5)
            or not named(place, clause)
            or doubtful(place, clause, place=True)
        ):
            return None
        return [
            Proposal(
                family="home_city",
                kind="fact",
                statement=f"Lives in {place}",
                value=place,
                timing=timing,
            )
        ]
    return None


# -- employer and role ---------------------------------------------------------------------

_WORK_AT = _rx(
    rf"(?:(?:{I_}|{WE}){ADV}work|(?:{I_AM}|{WE_ARE}){ADV}working|{ADV}works"
    rf"|(?:{I_HAVE}|{WE_HAVE}){ADV}(?:worked|been\s+working))"
    r"(?:\s+(?:remotely|full[-\s]time|part[-\s]time|freelance))?\s+(?:at|for)\s+"
    r"(?P<org>.+?)(?:\s+as\s+(?:an?\s+)?(?P<role>.+))?$"
)
_JOINED = _rx(
    rf"(?:(?:{I_}|{I_HAVE}){ADV}(?:joined|started\s+(?:a\s+new\s+job\s+|working\s+)?at)"
    rf"|{ADV}joined)\s+(?P<org>.+?)(?:\s+as\s+(?:an?\s+)?(?P<role>.+))?$"
)
_JOINING = _rx(
    rf"{I_AM}{ADV}(?:joining|starting\s+(?:a\s+new\s+job\s+|work\s+)?at)"
    r"\s+(?P<org>.+?)(?:\s+as\s+(?:an?\s+)?(?P<role>.+))?$"
)
_GOT_JOB = _rx(
    rf"(?:{I_}|{I_HAVE}|{WE}|{WE_HAVE})?{ADV}(?:got|landed|took(?:\s+up)?|taken(?:\s+up)?"
    r"|accepted|started|begun|began)\s+(?:a|an|my|the)\s+(?:new\s+|first\s+|dream\s+"
    r"|full[-\s]time\s+|part[-\s]time\s+|permanent\s+|senior\s+)?(?:job|position|post|role"
    r"|gig|internship)(?:\s+as\s+(?:an?\s+)?(?P<role>.+?))?\s+(?:at|with)\s+(?P<org>.+)"
)
_STARTING = _rx(
    rf"(?:{I_WILL_BE}|{I_}will\s+be\s+|{I_AM})?{ADV}(?:starting|start)\s+(?:a\s+new\s+job\s+"
    r"|my\s+new\s+job\s+|work\s+)?at\s+(?P<org>(?!\d)\S.*)"
)
_TITLE_ONLY = _rx(r"(?P<role>[^\W\d][\w-]*)\W*$")
"""A job title alone, first in a turn: "Nurse. Night shifts, mostly."."""
_FRAGMENT = _rx(r"(?P<role>[^\W\d][\w -]{0,40}?)\s+(?:at|for|with)\s+(?P<org>.+)")
"""A note of a job with nothing around it: "Engineer at Airbus."."""
_ROLE_AT = _rx(rf"{I_AM}{ADV}(?:(?:an?|the)\s+)?(?P<role>.+?)\s+(?:at|for|with|of)\s+(?P<org>.+)")
_ROLE = _rx(rf"{I_AM}{ADV}(?:(?:an?|the)\s+)?(?P<role>.+)")
_WORK_AS = _rx(
    rf"(?:{I_}{ADV}(?:work|serve)|{I_AM}{ADV}(?:working|serving))\s+(?:as|like)\s+(?:an?\s+)?"
    r"(?P<role>.+?)(?:\s+(?:at|for)\s+(?P<org>.+))?$"
)


def _org(clause: Clause, m: re.Match[str]) -> str | None:
    org = clause.value(m, "org", ORG_STOPS)
    if org is None or not usable(org) or not named(org, clause) or doubtful(org, clause):
        return None
    if org.casefold() in ("home", "myself", "me", "the moment", "night"):
        return None
    return org


def _role(clause: Clause, m: re.Match[str], *, anchored: bool) -> str | None:
    role = clause.value(m, "role", TITLE_STOPS if anchored else ROLE_STOPS)
    if role is None or not usable(role, max_words=5):
        return None
    return role if anchored or role_head(role) else None


def _job(org: str | None, role: str | None, timing: Timing) -> list[Proposal] | None:
    found: list[Proposal] = []
    if org is not None:
        found.append(
            Proposal(
                family="employer",
                kind="fact",
                statement=f"Works at {org}",
                value=org,
                timing=timing,
            )
        )
    if role is not None:
        found.append(
            Proposal(
                family="role", kind="fact", statement=f"Works as {role}", value=role, timing=timing
            )
        )
    return found or None


def employment(clause: Clause) -> list[Proposal] | None:
    """Employer and role: "I work at/for X (as a ROLE)", "I joined X", "I started at
    X", "I'm a/an ROLE at X", "I'm a ROLE" (ROLE ending in a job-title word), "I work
    as a ROLE (at X)". An organisation must look like a name (see :func:`named`)."""
    jobs: tuple[tuple[re.Pattern[str], Timing], ...] = (
        (_WORK_AT, "clause"),
        (_JOINED, "past"),
        (_JOINING, "change"),
    )
    for pattern, timing in jobs:
        m = clause.match(pattern)
        if m is not None:
            org = _org(clause, m)
            if org is None:
                return None
            return _job(org, _role(clause, m, anchored=True), timing)
    m = clause.match(_GOT_JOB)
    if m is not None:
        org = _org(clause, m)
        role = _role(clause, m, anchored=True) if m.group("role") else None
        return None if org is None else _job(org, role, "past")
    m = clause.match(_STARTING)
    if m is not None:
        org = _org(clause, m)
        return None if org is None or not named(org, clause) else _job(org, None, "change")
    m = clause.match(_WORK_AS)
    if m is not None:
        return _job(_org(clause, m), _role(clause, m, anchored=True), "clause")
    m = clause.match(_TITLE_ONLY)
    if m is not None and clause.start == 0 and role_head(m.group("role")):
        return _job(None, _role(clause, m, anchored=False), "clause")
    m = clause.match(_FRAGMENT)
    if m is not None and clause.start == 0 and role_head(m.group("role")):
        org = _org(clause, m)
        role = _role(clause, m, anchored=False)
        if org is not None and role is not None and named(org, clause, strict=True):
            return _job(org, role, "clause")
    m = clause.match(_ROLE_AT)
    if m is not None:
        role = _role(clause, m, anchored=False)
        org = _org(clause, m)
        if role is not None and org is not None:
            return _job(org, role, "clause")
    m = clause.match(_ROLE)
    if m is not None:
        role = _role(clause, m, anchored=False)
        if role is not None:
            return _job(None, role, "clause")
    return None


# -- frameworks and tools ------------------------------------------------------------------

_USE = _rx(
    rf"(?:(?:{I_}|{I_AM}|{WE}|{WE_ARE}|(?:{I_HAVE}|{WE_HAVE}){ADV}been\s+){ADV}(?:use|using|work\s+with|working\s+with"
    r"|code\s+in|coding\s+in|program\s+in|programming\s+in|build\s+with|building\s+with"
    r"|rely\s+on|relying\s+on)"
    rf"|{ADV}(?:uses|using|works\s+with|working\s+with))\s+(?P<x>.+)"
)
_FAVOUR = _rx(
    rf"(?:{I_}{ADV}(?:love|like|prefer|enjoy|adore)|{ADV}(?:loves|likes|prefers|enjoys))"
    r"\s+(?:using\s+|working\s+with\s+|to\s+use\s+|coding\s+in\s+)?(?P<x>.+)"
)
_SWITCH = _rx(
    rf"(?:{I_}|{I_HAVE}|{WE}|{WE_HAVE}|{I_AM}|{WE_ARE})?{ADV}"
    r"(?P<verb>switched|switching|moved|moving|migrated|migrating|changed|transitioned|shifted"
    r"|went)\s+(?:over\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<x>.+)"
)


_NOT_AN_ITEM = re.compile(
    rf"(?:my\s+{RELATION}\b|(?:when|whenever|how|what|that|if|because|where|why|who|it['’]s"
    r"|there|being)\b)",
    re.IGNORECASE,
)


def items(clause: Clause, m: re.Match[str], group: str) -> list[str]:
    """A matched list "A, B and C" as its items (each trimmed; pronouns, "my wife ...",
    and clauses such as "when that happens" left out)."""
    value = clause.value(m, group, ITEM_STOPS)
    if value is None:
        return []
    found: list[str] = []
    for raw in LIST_SPLIT.split(value):
        item = re.sub(r"^(?:to|the\s+idea\s+of)\s+", "", raw.strip(), flags=re.IGNORECASE)
        item = item.strip(" \"“”'‘’")
        if usable(item) and not _NOT_AN_ITEM.match(item):
            found.append(item)
    return found


def framework(name: str, timing: Timing = "clause") -> Proposal:
    return Proposal(
        family="primary_framework",
        kind="preference",
        statement=f"Primary framework: {name}",
        value=name,
        timing=timing,
    )


def tool(name: str, timing: Timing = "clause") -> Proposal:
    return Proposal(
        family="tool",
        kind="fact",
        statement=f"Uses {name}",
        value=name,
        scope=f"tool:{slug(name)}",
        timing=timing,
    )


def tech(clause: Clause) -> list[Proposal] | None:
    """Frameworks and tools: "I use / I'm using / I work with / Uses X": one known
    framework is the primary framework, anything else a tool (a list gives one tool
    each; "I use it" gives nothing, and no later matcher runs). "I love / like /
    prefer / enjoy X" with X one known framework: the primary framework. "I switched
    / moved / migrated to X": a framework or a known tool; "switched/migrated to"
    any named X is a tool ("moved to" an unknown X is left to ``home_city``)."""
    m = clause.match(_SWITCH)
    if m is not None:
        target = clause.value(m, "x", ITEM_STOPS)
        if target is None or doubtful(target, clause):
            return None
        timing: Timing = "change" if m.group("verb").casefold().endswith("ing") else "past"
        name = canonical_framework(target)
        if name is not None:
            return [framework(name, timing)]
        if known_tool(target) or (
            m.group("verb").casefold() not in ("moved", "moving", "went")
            and named(target, clause)
            and usable(target, max_words=4)
        ):
            return [tool(target, timing)]
        return None
    m = clause.match(_USE)
    if m is not None:
        found = items(clause, m, "x")
        if len(found) == 1 and (name := canonical_framework(found[0])) is not None:
            return [framework(name)]
        return [tool(canonical_framework(item) or item) for item in found]
    m = clause.match(_FAVOUR)
    if m is not None:
        found = items(clause, m, "x")
        if len(found) == 1 and (name := canonical_framework(found[0])) is not None:
            return [framework(name)]
    return None


# -- likes ----------------------------------------------------------------------------------

_LIKE = _rx(
    rf"(?:{I_}{ADV}(?:really\s+|absolutely\s+|totally\s+|do\s+)?(?:love|like|enjoy|adore"
    rf"|prefer)|{ADV}(?:loves|likes|enjoys|adores|prefers))\s+(?P<x>.+)"
)
_DISLIKE = _rx(
    rf"(?:{I_}{ADV}(?:really\s+)?(?:hate|dislike|detest|despise|loathe|can['’]?t\s+stand"
    r"|cannot\s+stand|don['’]?t\s+(?:really\s+)?(?:like|enjoy|love)|do\s+not\s+(?:like|enjoy"
    rf"|love))|{ADV}(?:hates|dislikes|detests|despises|loathes))\s+(?P<x>.+)"
)
_FAN = _rx(
    rf"{I_AM}{ADV}(?P<neg>not\s+)?(?:an?\s+|much\s+of\s+an?\s+)?(?:(?:big|huge)\s+)?"
    r"fan\s+of\s+(?P<x>.+)"
)
_FAVOURITE_IS = _rx(
    r"(?P<x>.+?)\s+(?:is|are)\s+(?:definitely\s+|really\s+|still\s+)?my\s+"
    r"(?:all[-\s]time\s+|absolute\s+)?(?:favou?rite|fave)\b.*"
)
_MY_FAVOURITE = _rx(
    r"my\s+(?:all[-\s]time\s+|absolute\s+)?(?:favou?rite|fave)\s+(?P<what>[\w\s-]+?)\s+"
    r"(?:is|are)\s+(?P<x>.+)"
)


_ITEM_NOT_A_CLAUSE = _rx(r"\b(?:I|we|me|us|you|nothing|everything|had|was|were|did)\b|^more\b")
"""Words that make "X is my favourite" a sentence about something else ("For me nothing
is better than ...", "We had a quiet dinner at ..."), or a comparison ("I prefer more
the ..."): no item then."""


def like(item: str, sentiment: str) -> Proposal:
    verb = "Likes" if sentiment == "like" else "Dislikes"
    return Proposal(
        family="likes",
        kind="preference",
        statement=f"{verb} {item}",
        value={"item": item, "sentiment": sentiment},
        scope=f"item:{slug(item, stem_words=True)}",
    )


def likes(clause: Clause) -> list[Proposal] | None:
    """Likes: "I love / like / enjoy / adore / prefer X", "X is my favorite", "my
    favorite Y is X", "I'm a (big) fan of X" -> like; "I hate / dislike / can't
    stand / don't like X", "I'm not a fan of X" -> dislike. A list gives one claim
    per item; one known framework named as a favourite is the primary framework."""
    found: list[str] = []
    sentiment = "like"
    if (m := clause.match(_DISLIKE)) is not None:
        found, sentiment = items(clause, m, "x"), "dislike"
    elif (m := clause.match(_FAN)) is not None:
        found = items(clause, m, "x")
        sentiment = "dislike" if m.group("neg") else "like"
    elif (m := clause.match(_LIKE)) is not None:
        found = [x for x in items(clause, m, "x") if _ITEM_NOT_A_CLAUSE.search(x) is None]
    elif (m := clause.match(_MY_FAVOURITE)) is not None or (
        m := clause.match(_FAVOURITE_IS)
    ) is not None:
        found = [x for x in items(clause, m, "x") if _ITEM_NOT_A_CLAUSE.search(x) is None]
        if len(found) == 1 and (name := canonical_framework(found[0])) is not None:
            return [framework(name)]
    if not found:
        return None
    return [like(item, sentiment) for item in found]


# -- activity and habit ---------------------------------------------------------------------

_ACTIVITY = _rx(
    rf"(?:(?:{I_}|{WE}){ADV}(?P<v1>build|work\s+on|develop|maintain)"
    rf"|(?:{I_AM}|{WE_ARE}|(?:{I_HAVE}|{WE_HAVE}){ADV}been\s+){ADV}"
    r"(?P<v2>building|working\s+on|developing|maintaining)"
    r"|(?P<v3>builds|works\s+on|working\s+on|building|develops|maintains))\s+(?P<x>.+)"
)


def activity(clause: Clause) -> list[Proposal] | None:
    """Activity: "I build X", "I'm building X", "I work on X", "I'm working on X",
    and notes "Builds X", "Working on X". Scope ``work:<stemmed slug of X>``."""
    m = clause.match(_ACTIVITY)
    if m is None:
        return None
    what = clause.value(m, "x", ACTIVITY_STOPS)
    if what is None or not usable(what):
        return None
    verb = (m.group("v1") or m.group("v2") or m.group("v3")).casefold()
    statement = f"Works on {what}" if "work" in verb else f"Builds {what}"
    return [
        Proposal(
            family="activity",
            kind="fact",
            statement=statement,
            value=what,
            scope=f"work:{slug(what, stem_words=True)}",
        )
    ]


_NOT_HABIT = re.compile(
    r"(?:am|was|were|is|will|would|could|should|can|can['’]?t|cannot|don['’]?t|do|did"
    r"|didn['’]?t|never|might|may|must|have\s+to|need\s+to|want\s+to|hope|wish|feel|get"
    r"|got|love|like|hate)\b",
    re.IGNORECASE,
)
_HABIT_FREQ = _rx(rf"{I_}{ADV}(?P<x>.+?)\s+(?P<freq>{FREQUENCY})")
_HABIT_USUAL = _rx(rf"(?:{I_})?{ADV}(?P<adv>{HABITUAL})\s+(?P<x>.+)")
_HABIT_LEAD = _rx(rf"(?P<freq>{FREQUENCY}),?\s+I\s+{ADV}(?P<x>.+)")
_FREQ_ANYWHERE = _rx(rf"\s+{FREQUENCY}")


def habit_scope(text: str) -> str:
    return f"habit:{slug(text, stem_words=True)}"


def habit(clause: Clause) -> list[Proposal] | None:
    """Habits: "I X every morning/day/evening/week", "I X daily/weekly", "I X on
    Mondays", "I usually/always/often X", "Every morning I X". The value is the habit
    as written with its frequency; the scope ``habit:<stemmed slug of X>`` leaves the
    frequency out, so "I stopped reviewing flashcards" finds the same slot."""
    for pattern in (_HABIT_FREQ, _HABIT_LEAD, _HABIT_USUAL):
        m = clause.match(pattern)
        if m is None:
            continue
        core = clause.cut(m, "x", PLAN_STOPS)
        if core is None:
            return None
        start, end = core
        if pattern is _HABIT_USUAL and (tail := _FREQ_ANYWHERE.search(clause.text, start, end)):
            end = tail.start()
        doing = clause.text[start:end]
        if not usable(doing) or _NOT_HABIT.match(doing):
            return None
        if pattern is _HABIT_FREQ:
            value = clause.text[start : m.end("freq")]
        elif pattern is _HABIT_LEAD:
            freq = m.group("freq")
            value = f"{doing} {freq[0].lower()}{freq[1:]}"
        else:
            value = f"{m.group('adv')} {clause.text[start : core[1]]}"
        return [
            Proposal(
                family="habit",
                kind="fact",
                statement=f"Habit: {value}",
                value=value,
                scope=habit_scope(doing),
            )
        ]
    return None
