"""Predicates of who a person is: diet, health, pets, origin, age, studies, languages."""

from __future__ import annotations

import re

from memledger.write.extract._attributes import (
    Found,
    Subject,
    shown_case,
    shown_name,
)
from memledger.write.extract._clause import Timing
from memledger.write.extract._reading import (
    _B,
    _END,
    _NUMBER_WORD,
    _STOP_NAME,
    ADV,
    BE,
    HAVE,
    _alt,
    _items,
    _lookup,
    _number,
    _one,
    _predicate,
    _take,
)
from memledger.write.extract._vocab import (
    ANIMALS,
    CONDITION_ADJECTIVES,
    CONDITIONS,
    DEMONYMS,
    DIET_NEEDS_DIET_WORD,
    DIETS,
    LANGUAGES,
)

# -- diet -----------------------------------------------------------------------------------

_DIET = _alt(DIETS)
_PLAIN_DIET = _alt(d for d in DIETS if DIETS[d] not in DIET_NEEDS_DIET_WORD)
_DIET_NOUN_AFTER = re.compile(
    r"\s+(?:food|foods|restaurant|restaurants|recipe|recipes|option|options|friendly|place"
    r"|places|meal|meals|dish|dishes|cook|cooking|version|menu|alternative|alternatives|burger"
    r"|cheese|friend|friends|blog|bakery|cafe|products?|cookbook|community)\b"
)


def _diet(pattern: str, *, timing: Timing = "clause") -> None:
    """Register a predicate whose group ``d`` is the diet ("am vegan", "went keto"), unless
    a noun follows it ("vegan restaurants")."""

    def read(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
        if _DIET_NOUN_AFTER.match(rest, m.end("d")):
            return None
        return _one("diet", DIETS[m.group("d")], timing=timing)

    _predicate(pattern)(read)


_diet(
    rf"{BE}{ADV}(?:a\s+)?(?:strict\s+|lifelong\s+|committed\s+"
    rf"|full[- ]time\s+)?(?P<d>{_PLAIN_DIET}){_B}(?!\s+diet)"
)
_diet(
    rf"(?:(?:{BE})?(?:on|eat|eats|eating|follow|follows|following|do|does|doing|stick to"
    rf"|sticks to|keep|keeps|live on)\s+{ADV}(?:a\s+|an\s+)?(?:(?:strict|strictly|mostly|mainly"
    r"|largely|completely|fully|totally)\s+)?"
    rf"(?P<d>{_DIET})(?:\s+diet|\s+lifestyle)?{_B})"
)
_diet(
    rf"(?:have\s+|has\s+)?(?:went|gone|go|goes|going|turned|become|became|switched\s+to"
    rf"|converted\s+to|decided\s+to\s+go|started\s+(?:being|eating)|transitioned\s+to)\s+"
    rf"{ADV}(?:a\s+)?(?:full\s+|fully\s+|completely\s+)?(?P<d>{_DIET})(?:\s+diet)?{_B}",
    timing="past",
)


@_predicate(r"(?:do|does) not eat (?:any\s+)?(?:meat|animal products)(?P<x>.*)")
def _diet_no_meat(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if re.search(r"\b(?:any ?more|these days|now|again|anymore)\b", m.group("x")):
        return None
    return _one("diet", "vegan" if "animal" in m.group(0) else "vegetarian")


@_predicate(
    r"(?:eat|eats|am eating|is eating|started eating|have started eating|went back to eating"
    r"|am back to eating|back to eating|have been eating)\s+(?:meat|fish|chicken|seafood|beef"
    r"|pork|dairy|eggs|cheese|animal products|burgers|steak)(?:\s+\w+)*?\s+"
    r"(?:now|again|these days|nowadays)"
)
def _diet_lapsed(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [Found("diet", "", m.group(0), retract=True)]


# -- allergies and health -------------------------------------------------------------------


@_predicate(
    rf"(?:{BE})?{ADV}(?:severely\s+|very\s+|deathly\s+|mildly\s+|slightly\s+|highly\s+"
    r"|seriously\s+|super\s+|extremely\s+|a bit\s+|a little\s+)?(?:allergic\s+to"
    r"|allergic\s*:|allergies\s*:)"
    r"\s*(?P<x>.+)"
)
def _allergic(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [Found("allergy", i) for i in _items(m.group("x"))] or None


@_predicate(
    rf"{HAVE}{ADV}(?:an?\s+)?(?:(?:severe|bad|mild|serious|slight|nasty|terrible|major|small"
    r"|life-threatening|deadly|horrible|really bad)\s+)*(?P<x>[a-z][\w -]{0,30}?)\s+"
    r"(?:allergy|allergies|intolerance)"
)
def _allergy_noun(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    what = m.group("x")
    if "intoleran" in m.group(0):
        return _one("health_condition", f"{what} intolerance")
    return [Found("allergy", i) for i in _items(what)] or None


_CONDITION = _alt(CONDITIONS)
_CONDITION_ADJ = _alt(CONDITION_ADJECTIVES)


_lookup(
    rf"{BE}{ADV}(?:a\s+)?(?:(?:lifelong|life-long|chronic|severe|mild)\s+)?(?P<c>{_CONDITION_ADJ}){_END}",
    "health_condition",
    CONDITION_ADJECTIVES,
    "c",
)


@_predicate(
    r"(?:(?:was|were|have been|has been|got|just got|am|is|recently got)\s+)?diagnosed\s+with\s+"
    r"(?P<x>.+)"
)
def _diagnosed(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [Found("health_condition", i, timing="past") for i in _items(m.group("x"))] or None


@_predicate(
    rf"(?:(?:have\s+|has\s+)?suffered\s+from\s+|{HAVE}|suffer\s+from\s+|suffers\s+from\s+"
    r"|live\s+with\s+|lives\s+with\s+"
    r"|struggle\s+with\s+|struggles\s+with\s+|deal\s+with\s+|deals\s+with\s+|manage\s+"
    r"|manages\s+|battle\s+|battles\s+|am\s+living\s+with\s+|is\s+living\s+with\s+"
    r"|am\s+dealing\s+with\s+|have\s+had\s+|has\s+had\s+|am\s+managing\s+)"
    rf"{ADV}(?:(?:mild|severe|chronic|bad|really bad|terrible|some|a bit of|a touch of"
    r"|moderate|pretty bad|occasional|frequent|seasonal)\s+)*(?P<x>.+)"
)
def _has_condition(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    found = []
    for item in _items(m.group("x")):
        if re.fullmatch(_CONDITION, item) or re.search(
            r"(?:itis|osis|syndrome|disorder|disease|\w\s+pain)$", item
        ):
            found.append(Found("health_condition", item))
    return found or None


@_predicate(
    rf"my\s+(?P<c>{_CONDITION})\s+(?:is|has been|'s|flares|flared|gets|got|acts|acted|kicks"
    r"|kicked|was)\b"
)
def _my_condition(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    """ "my asthma is acting up": whose condition it is says that they have it."""
    # (a flare "today" dates the flare, not the condition)
    return _one("health_condition", m.group("c"), timing="none") if who.implied else None


# -- pets -----------------------------------------------------------------------------------

_ANIMAL = _alt([*ANIMALS, *(a + "s" for a in ANIMALS), "puppies", "kitties", "bunnies"])
_PET_ADJ = (
    r"(?:(?:little|old|new|rescue|rescued|big|sweet|senior|black|white|orange|grey|gray"
    r"|brown|ginger|tabby|baby|young|tiny|fat|lazy|adopted|adorable|cute|crazy|beautiful"
    r"|\d+[- ]year[- ]old|\w+[- ]year[- ]old|elderly|fluffy|golden)\s+)*"
)
_NAME = r"(?P<n>[a-z][\w'-]*(?:\s+and\s+[a-z][\w'-]*)?)"


def _animal(word: str) -> str | None:
    word = word.strip()
    if word in ANIMALS:
        return ANIMALS[word]
    single = {"puppies": "puppy", "kitties": "kitty", "bunnies": "bunny"}.get(word, word[:-1])
    return ANIMALS.get(single)


def _pets(
    kind: str, names: str | None, original: str, *, retract: bool = False, timing: str = "clause"
) -> list[Found]:
    if not names:
        return [Found("pet", kind, retract=retract, timing=timing)]  # type: ignore[arg-type]
    found = []
    for name in re.split(r"\s+and\s+", names):
        shown = shown_name(name, original)
        if shown is None:
            continue  # "named after ..." / a lowercase word: not a name
        found.append(
            Found(
                "pet",
                f"{kind} named {name}",
                f"{kind} named {shown}",
                retract=retract,
                timing=timing,  # type: ignore[arg-type]
            )
        )
    return found or [Found("pet", kind, retract=retract, timing=timing)]  # type: ignore[arg-type]


@_predicate(
    rf"(?:{HAVE}|adopted\s+|got\s+|rescued\s+|brought\s+home\s+|bought\s+|just\s+got\s+"
    rf"|have\s+adopted\s+|have\s+a\s+new\s+|fostering\s+)(?P<count>(?:a|an|one|two|three|four"
    rf"|\d+|a couple of|some)\s+)?{_PET_ADJ}(?P<a>{_ANIMAL}){_B}"
    rf"(?:\s*,?\s*(?:named|called)\s+{_NAME})?"
)
def _have_pet(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    kind = _animal(m.group("a"))
    if kind is None or re.match(
        r"\s+(?:food|bed|sitter|walker|allergy|allergies|hair)\b", rest[m.end("a") :]
    ):
        return None
    timing = (
        "past" if re.match(r"(?:adopted|rescued|brought|bought|just)", m.group(0)) else "clause"
    )
    names = m.group("n")
    if names is None:  # "I have a dog, Rex" / "two cats, Milo and Luna"
        after = re.match(rf"\s*,\s*{_NAME}(?=\s*(?:$|[,.!]))", rest[m.end() :])
        names = after.group("n") if after else None
    return _pets(kind, names, who_original(who), timing=timing)


def who_original(who: Subject) -> str:
    return who.text


# -- origin, nationality, age, birthday -----------------------------------------------------


@_predicate(
    rf"(?:{BE}{ADV}(?:originally\s+)?from\s+|(?:grew|grow)\s+up\s+in\s+|(?:was|were)\s+"
    r"(?:born\s+and\s+raised|born|raised|brought up)\s+in\s+|born\s+and\s+raised\s+in\s+"
    r"|hail\s+from\s+|hails\s+from\s+|come\s+from\s+|comes\s+from\s+)(?P<x>.+)"
)
def _hometown(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    place = _take(m.group("x"), _STOP_NAME, words=4)
    if place is None or place in ("here", "there", "work", "home", "abroad", "overseas"):
        return None
    shown = shown_name(place, who_original(who))
    if shown is None:
        return None  # "I'm from a small town" is no place name
    return [Found("hometown", place, shown)]


_DEMONYM = _alt(DEMONYMS)


@_predicate(
    rf"{BE}{ADV}(?:a\s+|an\s+)?(?:proud\s+|full\s+|born\s+)?(?P<d>{_DEMONYM})"
    r"(?:\s+(?:citizen|national|native|by birth))?(?=\s*(?:$|[,.;!]|and\b|but\b|so\b|by\b|too\b"
    r"|myself\b|though\b|originally\b|haha))"
)
def _nationality(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if who.implied and re.fullmatch(_LANGUAGE, m.group("d")):
        return None  # "English, Japanese ok": languages, not where one is from
    return _one("nationality", m.group("d"), shown_case(m.group("d"), who_original(who)))


@_predicate(
    rf"(?:{BE}{ADV}|turned\s+|just\s+turned\s+|will\s+be\s+turning\s+no)"
    rf"(?P<n>\d{{1,3}}|{_NUMBER_WORD})(?:\s+years?\s+old|\s+years?\s+young)?"
    r"(?=\s*(?:$|[,.;!]|and\b|but\b|so\b|now\b|this\b|last\b|next\b|today\b|btw\b))"
)
def _age(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    n = _number(m.group("n"))
    if n is None or not 5 <= n <= 110:
        return None
    spelled = not re.fullmatch(r"\d+", m.group("n"))
    if spelled and "years" not in m.group(0) and not m.group(0).startswith(("turned", "just")):
        return None  # "I'm two" is too loose to be an age; "I'm 34" is one
    timing: Timing = "past" if "turned" in m.group(0) else "clause"
    return _one("age", str(n), timing=timing)


@_predicate(rf"{BE}{ADV}(?:a\s+)?(?P<n>\d{{1,3}}|{_NUMBER_WORD})[- ]years?[- ]old\s+\w+")
def _aged_noun(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    n = _number(m.group("n"))
    return _one("age", str(n)) if n is not None and 5 <= n <= 110 else None


_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
)
_MONTHS = {
    m[:3]: m
    for m in (
        "january february march april may june july august september october november december"
    ).split()
}
_DATE = (
    rf"(?:(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?|(?:the\s+)?(?P<d2>\d{{1,2}})"
    rf"(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>{_MONTH})|(?P<m3>{_MONTH}))(?![a-z])"
)


def _date(m: re.Match[str]) -> str:
    month = _MONTHS[(m.group("m1") or m.group("m2") or m.group("m3"))[:3]]
    day = m.group("d1") or m.group("d2")
    return f"{month} {int(day)}" if day else month


@_predicate(rf"(?:was|were)\s+born\s+(?:on\s+|in\s+)?{_DATE}")
def _born_on(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _one("birthday", _date(m))


# -- studies and school ---------------------------------------------------------------------

_NOT_FIELD = re.compile(
    r"^(?:for|at|in|to|with|abroad|hard|a lot|late|online|part[- ]time|full[- ]time|tonight"
    r"|today|now|again|all|up|on|the|my|our|this|that|it|them|something|some|everything)\b"
)
_SCHOOL_WORD = re.compile(
    r"\b(?:university|college|school|uni|institute|academy|polytechnic|conservatory|state)\b"
)


@_predicate(
    r"(?:study|studies|am studying|is studying|are studying|have been studying|major in"
    r"|majoring in|am majoring in|is majoring in|majored in|minor in|am minoring in|read)\s+"
    r"(?P<x>.+)"
)
def _study(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    x = m.group("x")
    at = re.match(r"at\s+(?P<s>.+)", x)
    if at is not None:
        return _school(at.group("s"), who)
    if _NOT_FIELD.match(x) or m.group(0).startswith("read"):
        return None
    field = _take(x, words=4)
    if field is None:
        return None
    found = [Found("studies", field)]
    school = re.search(r"\s+at\s+(?P<s>.+)", x)
    if school is not None:
        found.extend(_school(school.group("s"), who) or [])
    return found


def _school(text: str, who: Subject) -> list[Found] | None:
    name = _take(text, _STOP_NAME, words=6)
    if name is None:
        return None
    original = who_original(who)
    shown = shown_case(name, original, word=True)
    if not (shown[:1].isupper() or _SCHOOL_WORD.search(name)) or name in ("home", "work"):
        return None
    return [Found("school", name, shown)]


@_predicate(
    rf"(?:go to|goes to|attend|attends|am attending|is attending|{BE}{ADV}enrolled (?:at|in)"
    rf"|{BE}{ADV}(?:a |an )?(?:student|freshman|sophomore|junior|senior|undergrad|grad student"
    r"|phd student|first[- ]year|second[- ]year|third[- ]year"
    r"|final[- ]year)(?: student)? (?:at|in))"
    r"\s+(?P<x>.+)"
)
def _attend(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _school(m.group("x"), who)


@_predicate(
    rf"{BE}{ADV}(?:a\s+|an\s+)?(?:(?:first|second|third|fourth|final|last)[- ]year\s+)?"
    r"(?P<x>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2})\s+(?:student|major|undergrad|undergraduate"
    r"|grad student|graduate student|phd student|phd candidate|postgrad|masters student"
    r"|master's student)(?P<after>.*)"
)
def _field_student(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    field = m.group("x")
    if re.fullmatch(
        r"(?:grad|graduate|phd|college|university|high school|full-time|part-time|exchange"
        r"|international|mature|medical|law|good|bad|poor|broke|new|former|transfer|returning"
        r"|uni|art|school|online|student|first|second|third|final|the|a|an|proud|busy|tired)",
        field,
    ):
        found: list[Found] = []
        if field in ("medical", "law", "art"):
            found.append(Found("studies", {"medical": "medicine"}.get(field, field)))
    else:
        found = [Found("studies", field)]
    school = re.match(r"\s+(?:at|in)\s+(?P<s>.+)", m.group("after"))
    if school is not None:
        found.extend(_school(school.group("s"), who) or [])
    return found or None


@_predicate(
    r"(?:doing|pursuing|getting|working on|do|finishing|completing|studying for|am doing"
    r"|am pursuing|am getting|am working on|am finishing|am completing|is doing|is getting"
    r"|is pursuing|have|has|hold|holds|got|earned|finished)\s+(?:a|an|my|her|his)\s+"
    r"(?:(?:undergraduate|graduate|postgraduate|bachelor's|bachelors|master's|masters|phd|ph\.d\."
    r"|doctorate|ba|bsc|msc|ma|mba|mfa|diploma|certificate|associate's|associates|law|medical)"
    r"\s*(?:degree)?|degree)\s+in\s+(?P<x>.+)"
)
def _degree(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    field = _take(m.group("x"), words=4)
    return _one("studies", field)


# -- languages ------------------------------------------------------------------------------

_LANGUAGE = _alt(LANGUAGES)


_LANGUAGE_LEAD = re.compile(
    r"^(?:and\s+|but\s+)?(?:also\s+)?(?:(?:a\s+)?little(?:\s+bit)?(?:\s+of)?\s+|a\s+bit\s+of\s+"
    r"|some\s+|basic\s+|broken\s+|decent\s+|fluent\s+|good\s+|conversational\s+"
    r"|(?:conversational|fluent|basic|decent|good|ok|okay|competent|proficient)\s+in\s+)*"
)
"""How well, said before a language in a list ("a little bit Catalan", "conversational in
Spanish"): stepped over."""
_LANGUAGE_TAIL = (
    r"natively|fluently|well|too|as well|ok|okay|a bit|a little|from|since|at|for|when|with"
    r"|because|thanks|through|in\s+(?:school|college|uni|university)"
)
"""What may follow a language in a list ("German from my job", "Arabic since I am born");
anything else ("French colleagues") makes the word no language spoken."""


@_predicate(
    r"(?:speak|speaks|can speak|am fluent in|is fluent in|speak fluent|speaks fluent"
    r"|am bilingual in|is bilingual in|am conversational in|know|get by in|can get by in"
    r"|also speak|am trilingual in)\s+(?P<x>.+)"
)
def _speak(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    items = _items(m.group("x"))
    native = re.search(
        r"\bnatively\b|\bas (?:my|a) (?:first|native|mother) (?:language|tongue)", m.group("x")
    )
    found = []
    for item in items:
        item = _LANGUAGE_LEAD.sub("", item)
        lang = re.match(rf"(?P<l>{_LANGUAGE})(?:\s+(?:{_LANGUAGE_TAIL})\b.*)?$", item)
        if lang is not None:
            item = lang.group("l")
            found.append(
                Found(
                    "native_language" if native else "speaks",
                    item,
                    shown_case(item, who_original(who)),
                )
            )
    return found or None


@_predicate(rf"{BE}{ADV}(?:a\s+)?native\s+(?P<l>{_LANGUAGE})\s+speaker")
def _native_speaker(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    lang = m.group("l")
    return _one("native_language", lang, shown_case(lang, who_original(who)))
