"""Matchers for plans, retractions, delivery preferences and relationships.

Like ``_identity``: each matcher takes a :class:`Clause` and returns proposals,
or ``None`` when it does not apply. A retraction is a proposal with
``retraction=True``: its claim has ``polarity="retract"`` and the value that
stopped being true ("No longer uses TensorFlow": tool ``TensorFlow``); the
commit closes the matched record. The statement keeps its cue for readers.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal

from memledger.domain.text import slug
from memledger.domain.timephrases import find_all
from memledger.write.extract._clause import Clause, Dropped, Proposal
from memledger.write.extract._identity import (
    doubtful,
    framework,
    habit_scope,
    items,
    like,
    named,
    tool,
    usable,
)
from memledger.write.extract._lexicon import (
    ACTIVITY_STOPS,
    ADV,
    AP,
    FREQUENCY,
    I_,
    I_AM,
    I_HAVE,
    ITEM_STOPS,
    NOT_NAMES,
    ORG_STOPS,
    PLACE_STOPS,
    PLAN_NOISE,
    PLAN_STOPS,
    RELATION,
    RELATIONS,
    WE,
    WE_ARE,
    WE_HAVE,
    WEEKDAY,
    canonical_framework,
    known_tool,
)

Cadence = Literal[
    "daily",
    "weekly",
    "monthly",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
]
"""The values of ``delivery_preference``."""

PlanCue = Literal["off", "cancelled", "no longer", "stopped"]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# -- plans ----------------------------------------------------------------------------------

_PLAN_PREFIX = _rx(r"(?:(?:the|my|our|a|an)\s+)?(?:plans?\s+(?:to|for|of)\s+)?(?:(?:the|a|an)\s+)?")
_PLAN_SUFFIX = _rx(r"\s+plans?$")
_STRONG_OFF = ("cancel", "called", "scrapped", "abandoned", "shelved")
_OFF_STATE = _rx(
    rf"(?P<x>.+?)(?:\s+(?:is|are|was|has\s+been|have\s+been)|{AP}s)\s+"
    r"(?:now\s+|officially\s+|definitely\s+|totally\s+|completely\s+)*"
    r"(?P<cue>off|cancell?ed|called\s+off|scrapped|dropped|abandoned|shelved|on\s+hold|dead)"
    r"(?!\w)"
)
_OFF_ACT = _rx(
    rf"(?:{I_}|{WE}|{I_HAVE}|{WE_HAVE})?{ADV}"
    r"(?P<cue>cancell?ed|called\s+off|scrapped|shelved|abandoned|dropped)\s+(?P<x>.+)"
)
_OFF_ASK = _rx(rf"(?:let{AP}s\s+)?(?P<cue>cancel|call\s+off|scrap|shelve|drop)\s+(?P<x>.+)")
"""An imperative: "(please) cancel my gym membership", "let's call off the trip"."""
_PLAN_ON = (
    _rx(rf"(?:{I_AM}|{WE_ARE}){ADV}planning\s+(?:on\s+|to\s+)?(?P<x>.+)"),
    _rx(rf"(?:{I_}|{WE}){ADV}(?:plan|intend)\s+(?:on\s+|to\s+)(?P<x>.+)"),
    _rx(r"(?:my|our)\s+plan\s+(?:is|was)\s+(?:to\s+)?(?P<x>.+)"),
    _rx(rf"{WE_ARE}{ADV}(?:going\s+to|gonna)\s+(?P<x>.+)"),
    _rx(
        r"(?:the|my|our)\s+(?P<x>.+?\s+plans?)(?:\s+(?:is|are)\s+(?:still\s+|back\s+|now\s+)?"
        r"(?:on|a\s+go|happening|confirmed|on\s+track)\b.*)?$"
    ),
)
_SUBJECTS = _rx(r"(?:I|I['’]m|it|it['’]s|that|this|everything|all|we|you|he|she|they)\b")


def plan_text(text: str) -> str:
    """A plan as its value keeps it: without "the/my/our", "plan to", a trailing "plan"."""
    core = _PLAN_SUFFIX.sub("", _PLAN_PREFIX.sub("", text.strip(), count=1))
    return core or text.strip()


def plan_scope(text: str) -> str:
    """``plan:<slug>``: stemmed, stop words and :data:`PLAN_NOISE` left out, so "the
    NeurIPS submission", "NeurIPS submission plan" and "planning the NeurIPS
    submission" agree (``plan:neurips-submission``)."""
    return f"plan:{slug(text, stem_words=True, drop=PLAN_NOISE)}"


_PLAN_STATEMENT: dict[PlanCue, str] = {
    "off": "Plan is off",
    "cancelled": "Plan cancelled",
    "no longer": "No longer planning",
    "stopped": "Stopped planning",
}


def plan(text: str, cue: PlanCue | None, *, key: str | None = None) -> Proposal:
    """A plan claim; ``key`` (default ``text``) is what the scope is made from, when
    the value keeps more (its dates: "trip to Japan next month")."""
    core = plan_text(text)
    statement = f"Plan: {core}" if cue is None else f"{_PLAN_STATEMENT[cue]}: {core}"
    return Proposal(
        family="plan",
        kind="fact",
        statement=statement,
        value={"plan": core, "status": "on" if cue is None else "off"},
        scope=plan_scope(plan_text(key or text)),
        timing="none",
        retraction=cue is not None,
    )


def _off_cue(word: str) -> PlanCue:
    return "cancelled" if word.casefold().startswith(_STRONG_OFF) else "off"


def plans(clause: Clause) -> list[Proposal] | None:
    """On: "I'm planning (to) X", "I plan to X", "my plan is to X", "we're going to X",
    "the X plan (is on)". Off: "X is off/cancelled/called off/scrapped/on hold", "I
    cancelled/called off/scrapped X" ("I dropped X" too, unless X is a tool), and as a
    request "(please) cancel / call off / scrap X"."""
    m = clause.match(_OFF_STATE)
    if m is not None:
        span = clause.cut(m, "x")
        if span is not None:
            x = clause.text[span[0] : span[1]]
            strong = m.group("cue").casefold().startswith(_STRONG_OFF)
            is_plan = bool(re.search(r"\bplans?$", x, re.IGNORECASE))
            looks_named = any(c.isupper() for c in x[1:]) or (clause.lowercase and is_plan)
            if not _SUBJECTS.fullmatch(x) and usable(x) and (strong or is_plan or looks_named):
                return [plan(x, _off_cue(m.group("cue")))]
    m = clause.match(_OFF_ACT) or clause.match(_OFF_ASK)
    if m is not None:
        what = clause.value(m, "x", PLAN_STOPS)
        if what is None or not usable(what) or _SUBJECTS.fullmatch(what):
            return None
        if m.group("cue").casefold() in ("dropped", "drop"):
            name = canonical_framework(what)
            if name is not None or known_tool(what):
                return retracted_tech(name or what)
        return [plan(what, _off_cue(m.group("cue")))]
    for pattern in _PLAN_ON:
        m = clause.match(pattern)
        if m is not None:
            full = clause.value(m, "x", PLAN_STOPS, keep_times=True)
            key = clause.value(m, "x", PLAN_STOPS)
            if full is not None and key is not None and usable(full, max_words=12):
                return [plan(full, None, key=key)]
            return None
    return None


# -- retractions ----------------------------------------------------------------------------

_NO_LONGER = _rx(rf"(?:{I_}|{WE}|{I_AM}|{WE_ARE})?{ADV}no\s+longer\s+(?P<rest>.+)")
_STOPPED = _rx(
    rf"(?:{I_}|{I_HAVE}|{WE}|{WE_HAVE})?{ADV}"
    r"(?P<cue>stopped|quit|gave\s+up(?:\s+on)?|left|ditched)\s+(?P<rest>.+)"
)
_NOT_ANYMORE = _rx(
    rf"(?:(?:{I_}|{WE}){ADV}(?:don{AP}?t|do\s+not)|(?:{I_AM}|{WE_ARE}){ADV}not)\s+"
    r"(?P<rest>.+?)\s+any\s*more\W*$"
)
_R_USE = _rx(r"(?:us(?:e|es|ing)|work(?:ing)?\s+with|rel(?:y|ying)\s+on)\s+(?P<x>.+)")
_R_EMPLOYER = _rx(
    r"(?:work(?:s|ing)?\s+(?:at|for)|employed\s+(?:at|by)|(?:my\s+)?job\s+(?:at|with))\s+"
    r"(?P<x>.+)"
)
_R_AT = _rx(r"(?:with|at)\s+(?P<x>.+)")
""""No longer at the Guardian": an organisation by name (checked strictly)."""
_R_HOME = _rx(r"(?:liv(?:e|es|ing)|resid(?:e|es|ing)|based|located)\s+in\s+(?P<x>.+)")
_R_LIKE = _rx(r"(?:lik(?:e|es|ing)|lov(?:e|es|ing)|enjoy(?:s|ing)?|(?:a\s+)?fan\s+of)\s+(?P<x>.+)")
_R_PLAN = _rx(r"(?:plan(?:s|ning)?|going|gonna)\s+(?:to\s+|on\s+)?(?P<x>.+)")
_R_WORK = _rx(r"(?:work(?:s|ing)?\s+on|build(?:s|ing)?|develop(?:s|ing)?)\s+(?P<x>.+)")
_R_ANY = _rx(r"(?P<x>.+)")
_FREQ_TAIL = _rx(rf"\s+{FREQUENCY}.*$")
_NOT_DOING = _rx(
    r"(?:by|at|in|on|to|for|from|with|the|a|an|my|our|here|there|now|early|late|it|that|this"
    r"|them|him|her)\b"
)


def retracted_tool(name: str) -> Proposal:
    return replace(tool(name), statement=f"No longer uses {name}", retraction=True)


def retracted_tech(name: str) -> list[Proposal]:
    """A tool no longer used; a known framework also stops being the primary framework
    (the commit closes that only where it holds this very value)."""
    found = [retracted_tool(name)]
    if canonical_framework(name) == name:
        found.append(
            replace(
                framework(name),
                statement=f"No longer uses {name} as primary framework",
                retraction=True,
            )
        )
    return found


def _retracted(family: str, statement: str, value: str, scope: str = "global") -> Proposal:
    return Proposal(
        family=family,
        kind="preference" if family == "likes" else "fact",
        statement=statement,
        value=value,
        scope=scope,
        retraction=True,
    )


def _left_employer(clause: Clause, r: re.Match[str]) -> list[Proposal] | None:
    """ "I left Amazon", "no longer at the Guardian": an employer only by name."""
    org = clause.value(r, "x", ORG_STOPS)
    if org and named(org, clause, strict=True) and usable(org) and not doubtful(org, clause):
        return [_retracted("employer", f"No longer works at {org}", org)]
    return None


def retractions(clause: Clause) -> list[Proposal] | None:
    """Retractions: "I no longer X", "I'm no longer X", "I stopped / quit / gave up
    X(-ing)", "I don't X anymore", "I'm not X-ing anymore", "I left X" (an employer).
    What X is decides the family: use X -> tool; work at X / my job at X ->
    employer; live in X -> home_city; like / love X -> likes; plan(ning) X -> plan;
    work on / build X -> activity; a framework or tool name -> tool; anything else
    -> habit."""
    cue = "no longer"
    m = clause.match(_NO_LONGER) or clause.match(_NOT_ANYMORE)
    if m is None:
        m = clause.match(_STOPPED)
        if m is None:
            return None
        cue = m.group("cue").casefold()
    rest = m.start("rest")
    if (r := clause.match(_R_USE, rest)) is not None:
        found = [retracted_tech(canonical_framework(x) or x) for x in items(clause, r, "x")]
        return [proposal for each in found for proposal in each] or None
    if (r := clause.match(_R_EMPLOYER, rest)) is not None:
        org = clause.value(r, "x", ORG_STOPS)
        if org is None or doubtful(org, clause):
            return None
        return [_retracted("employer", f"No longer works at {org}", org)]
    if cue == "no longer" and (r := clause.match(_R_AT, rest)) is not None:
        return _left_employer(clause, r)
    if (r := clause.match(_R_HOME, rest)) is not None:
        place = clause.value(r, "x", PLACE_STOPS)
        if place is None or doubtful(place, clause, place=True):
            return None
        return [_retracted("home_city", f"No longer lives in {place}", place)]
    if (r := clause.match(_R_LIKE, rest)) is not None:
        return [
            replace(like(x, "like"), statement=f"No longer likes {x}", retraction=True)
            for x in items(clause, r, "x")
        ] or None
    if (r := clause.match(_R_PLAN, rest)) is not None:
        x = clause.value(r, "x", PLAN_STOPS)
        plan_cue: PlanCue = "no longer" if cue == "no longer" else "stopped"
        return [plan(x, plan_cue)] if x else None
    if (r := clause.match(_R_WORK, rest)) is not None:
        what = clause.value(r, "x", ACTIVITY_STOPS)
        scope = f"work:{slug(what or '', stem_words=True)}"
        return [_retracted("activity", f"No longer works on {what}", what, scope)] if what else None
    r = clause.match(_R_ANY, rest)
    x = None if r is None else clause.value(r, "x", ITEM_STOPS)
    if r is None or x is None or not usable(x):
        return None
    name = canonical_framework(x)
    if name is not None or known_tool(x):
        return retracted_tech(name or x)
    if cue == "left":
        return _left_employer(clause, r)
    doing = clause.value(r, "x", PLAN_STOPS) or x
    if _NOT_DOING.match(doing):
        return None
    core = _FREQ_TAIL.sub("", doing) or doing
    return [_retracted("habit", f"No longer: {doing}", doing, habit_scope(core))]


# -- delivery preference --------------------------------------------------------------------

_CADENCE = _rx(
    r"(?<!\w)(?:(?P<neg>instead\s+of|rather\s+than|not|no\s+more|no\s+longer)\s+)?"
    r"(?:(?P<daily>daily|every\s*day|each\s+day|every\s+(?:single\s+)?(?:morning|evening|night))"
    r"|(?P<weekly>weekly|every\s+week|each\s+week|once\s+a\s+week)"
    r"|(?P<monthly>monthly|every\s+month|each\s+month|once\s+a\s+month)"
    rf"|(?:(?P<lead>on|every|each)\s+)?(?P<wd>{WEEKDAY})(?P<plural>s)?)(?!\w)"
)
_NOUN = (
    r"(?:digests?|newsletters?|briefings?|summar(?:y|ies)|reports?|updates|deliver(?:y|ies)"
    r"|e-?mails?|news|recaps?|roundups?)"
)
_OBJECT = rf"(?:{_NOUN}|updates?|it|them|everything|stuff)"
_ASK = (
    rf"(?:(?:I{AP}d|I\s+would)\s+(?:like|prefer|love)\s+(?:you\s+)?(?:to\s+)?"
    rf"|I\s+{ADV}(?:want|prefer|need)\s+(?:you\s+)?(?:to\s+)?)"
)
_DELIVERY = (
    _rx(
        rf"{_ASK}?(?:send|deliver|email|e-mail|mail|get|receive|switch|change|move|make|set"
        rf"|schedule|put)\b.*?\b{_OBJECT}\b"
    ),
    _rx(
        rf"(?:(?:I{AP}d|I\s+would)\s+(?:like|prefer)|I\s+{ADV}(?:want|prefer|need|like))\s+"
        rf"(?:(?:my|the|our|your)\s+)?(?:[\w-]+\s+)?{_OBJECT}\b"
    ),
    _rx(rf"(?:(?:my|the|our)\s+)?(?:[\w-]+\s+)?{_NOUN}\b"),
)
_NEGATED = _rx(rf"\b(?:don{AP}?t|do\s+not|never|stop|stopped|cancel)\b")
_FILLER = _rx(
    r"(?:please|pls|plz|again|instead|then|only|thanks|thank\s+you|ok|okay|is\s+fine|works"
    r"|is\s+better|would\s+be\s+better|is\s+best|going\s+forward|as\s+usual|actually|and|just"
    r"|[\s,.!;:-])*"
)


_WEEKDAYS: dict[str, Cadence] = {
    "monday": "monday",
    "tuesday": "tuesday",
    "wednesday": "wednesday",
    "thursday": "thursday",
    "friday": "friday",
    "saturday": "saturday",
    "sunday": "sunday",
}


def _cadence(m: re.Match[str]) -> Cadence:
    if m.group("daily"):
        return "daily"
    if m.group("weekly"):
        return "weekly"
    if m.group("monthly"):
        return "monthly"
    return _WEEKDAYS[m.group("wd").casefold()]


_LABEL = {"daily": "daily", "weekly": "weekly", "monthly": "monthly"}


def delivery(clause: Clause) -> list[Proposal | Dropped] | None:
    """A cadence (daily, weekly, monthly, a weekday: "on Fridays", "every Monday",
    "Friday") in a delivery request: "send/deliver/email (me) my digest/newsletter/it
    ...", "I'd like / I want my digest ...", "my newsletter ...", or a clause that
    is only a cadence, time phrases and fillers ("Daily for the rest of October
    please", "Friday again from November 1"; a lone singular weekday needs a time
    phrase or "again/instead/please"). Cadences after "instead of", "rather than",
    "not", or inside a time phrase ("until Friday") are ignored; two different
    cadences in one clause are ambiguous (no claim). Valid time: the clause's time
    phrases, found with the cadence masked out."""
    if _NEGATED.search(clause.body):
        return None
    bounds = [t.span for t in clause.times if t.form != "window"]
    found = [
        m
        for m in _CADENCE.finditer(clause.text, clause.start, clause.end)
        if not any(a <= m.start() < b for a, b in bounds)
    ]
    wanted = [m for m in found if not m.group("neg")]
    if not wanted:
        return None
    seg = clause.segment
    masked = list(seg.text)
    for m in found:
        for i in range(m.start() - seg.start, m.end() - seg.start):
            masked[i] = " "
    times = tuple(
        replace(p, span=(p.span[0] + seg.start, p.span[1] + seg.start))
        for p in find_all("".join(masked), clause.reference)
    )
    if not any(clause.match(p) for p in _DELIVERY):
        rest = list(clause.body)
        for span in [m.span() for m in found] + [t.span for t in times]:
            for i in range(max(span[0], clause.start), min(span[1], clause.end)):
                rest[i - clause.start] = " "
        if not _FILLER.fullmatch("".join(rest)):
            return None
        lone = len(wanted) == 1 and wanted[0].group("wd") and not wanted[0].group("plural")
        if (
            lone
            and not wanted[0].group("lead")
            and not times
            and not re.search(r"\b(?:again|instead|please)\b", clause.body, re.IGNORECASE)
        ):
            return None
    values = sorted({_cadence(m) for m in wanted})
    if len(values) != 1:
        return [Dropped(f"delivery_preference: several cadences {values} in {clause.body!r}")]
    value = values[0]
    label = _LABEL.get(value, f"on {value.capitalize()}s")
    return [
        Proposal(
            family="delivery_preference",
            kind="preference",
            statement=f"Wants deliveries {label}",
            value=value,
            timing="own",
            times=times,
        )
    ]


# -- relationships ----------------------------------------------------------------------------

_NAME = r"(?P<name>[A-ZÀ-ÖØ-Þ][\w'’-]*(?:\s+[A-ZÀ-ÖØ-Þ][\w'’-]*)?)"
_ADJ = r"(?:(?i:dear|lovely|older|younger|big|little|twin|new|old|late|baby|eldest|youngest)\s+)*"
_REL = rf"(?P<rel>(?i:{RELATION}))"
_RELATIONSHIPS = (
    re.compile(rf"\b(?i:my)\s+{_ADJ}{_REL}{AP}s\s+name\s+is\s+{_NAME}"),
    re.compile(rf"\b(?i:my)\s+{_ADJ}{_REL}\s+is\s+(?:called\s+|named\s+)?{_NAME}"),
    re.compile(rf"\b(?i:my)\s+{_ADJ}{_REL}\s*,?\s+{_NAME}"),
    re.compile(rf"(?<![\w'’]){_NAME}\s*,?\s+(?:is|was)\s+my\s+{_ADJ}{_REL}\b"),
    re.compile(rf"(?<![\w'’]){_NAME},\s+my\s+{_ADJ}{_REL}\b"),
)


def _person(name: str) -> str | None:
    words = name.split()
    if not words or words[0] in NOT_NAMES:
        return None
    if len(words) > 1 and words[1] in NOT_NAMES:
        words = words[:1]
    return " ".join(words)


def relationships(clause: Clause) -> list[Proposal]:
    """Relationships: "my wife / husband / partner / sister / brother / mother /
    father / friend / colleague / boss / ... NAME", "NAME is my sister", "NAME, my
    boss", "my boss is (called) NAME", "my sister's name is NAME". NAME must be
    capitalised. Scope ``person:<slug of name>``, no valid time."""
    found: dict[str, Proposal] = {}
    for pattern in _RELATIONSHIPS:
        for m in pattern.finditer(clause.text, clause.start, clause.end):
            name = _person(m.group("name"))
            if name is None:
                continue
            relation = RELATIONS[re.sub(r"\s+", " ", m.group("rel").casefold())]
            scope = f"person:{slug(name)}"
            found.setdefault(
                scope,
                Proposal(
                    family="relationship",
                    kind="fact",
                    statement=f"{name} is their {relation}",
                    value={"name": name, "relation": relation},
                    scope=scope,
                    timing="none",
                ),
            )
    return list(found.values())
