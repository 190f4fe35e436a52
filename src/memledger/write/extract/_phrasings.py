"""Predicates for other ways of saying the same things: inverted favourites, native
languages, countries, birthdays, hobbyists, likes and dislikes said without a subject."""

from __future__ import annotations

import re

from memledger.write.extract._attributes import (
    Found,
    Subject,
    shown_case,
)
from memledger.write.extract._facts import (
    _DATE,
    _DEMONYM,
    _LANGUAGE,
    _MONTH,
    _MONTHS,
    _date,
    who_original,
)
from memledger.write.extract._life import (
    _THING,
    _hobby_items,
)
from memledger.write.extract._reading import (
    _ARTICLE,
    _B,
    _END,
    _NUMBER_WORD,
    ADV,
    BE,
    HAVE,
    _alt,
    _items,
    _lookup,
    _number,
    _one,
    _predicate,
)
from memledger.write.extract._vocab import (
    FAVOURITES,
)

# -- more ways to say it --------------------------------------------------------------------


@_predicate(
    rf"(?P<x>[a-z0-9][\w' .-]*?)\s+(?:is|are|remains|has been|'s|was always|will always be)\s+"
    rf"(?:still\s+|probably\s+|definitely\s+|always\s+|now\s+|officially\s+|easily\s+)?my\s+"
    rf"(?:new\s+|all[- ]time\s+|absolute\s+|current\s+|ultimate\s+)?favorite\s+(?P<t>{_THING}){_B}"
)
def _favourite_inverted(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    value = _ARTICLE.sub("", m.group("x").strip())
    if (
        not value
        or len(value.split()) > 5
        or re.search(r"\b(?:i|we|me|us|you|nothing|everything|had|was|were)\b", value)
        or re.match(r"(?:am|it|this|that|which|she|he|they|what|there|here|one|mine)\b", value)
    ):
        return None
    return _one(FAVOURITES[m.group("t")], value, shown_case(value, who_original(who)))


@_predicate(
    rf"(?:my\s+)?(?:first|native|mother|home)\s+(?:language|tongue)\s+(?:is|was|'s)\s+"
    rf"(?:probably\s+|of course\s+|obviously\s+)?(?P<l>{_LANGUAGE}){_B}"
    rf"|(?:am|is)\s+(?:a\s+)?native\s+speaker\s+of\s+(?P<l2>{_LANGUAGE}){_B}"
    rf"|(?:grew|grow)\s+up\s+speaking\s+(?P<l3>{_LANGUAGE}){_B}"
    rf"|(?:speak|speaks|spoke|have spoken)\s+(?P<l4>{_LANGUAGE})\s+(?:since\s+(?:i\s+was"
    rf"|birth|i\s+am)"
    r"|from\s+birth|at\s+home\s+growing\s+up|natively)"
)
def _native(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    lang = m.group("l") or m.group("l2") or m.group("l3") or m.group("l4")
    return _one("native_language", lang, shown_case(lang, who_original(who)))


@_predicate(
    rf"(?P<how>native|fluent|conversational|basic|decent|good|some|rusty)\s+(?P<l>{_LANGUAGE}){_END}"
)
def _terse_language(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    lang = m.group("l")
    attribute = "native_language" if m.group("how") == "native" else "speaks"
    return _one(attribute, lang, shown_case(lang, who_original(who)))


@_predicate(
    rf"(?P<l>{_LANGUAGE})\s+(?P<how>native|fluent|ok|okay|rusty|conversational|basic"
    rf"|intermediate|beginner|[abc][12]){_END}"
)
def _language_then_level(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    """ "German native, Dutch fluent, French rusty." """
    lang = m.group("l")
    attribute = "native_language" if m.group("how") == "native" else "speaks"
    return _one(attribute, lang, shown_case(lang, who_original(who)))


_COUNTRIES = {
    "portugal": "portuguese",
    "brazil": "brazilian",
    "spain": "spanish",
    "france": "french",
    "germany": "german",
    "italy": "italian",
    "mexico": "mexican",
    "canada": "canadian",
    "ireland": "irish",
    "scotland": "scottish",
    "wales": "welsh",
    "england": "english",
    "poland": "polish",
    "ukraine": "ukrainian",
    "russia": "russian",
    "india": "indian",
    "pakistan": "pakistani",
    "china": "chinese",
    "japan": "japanese",
    "korea": "korean",
    "south korea": "korean",
    "vietnam": "vietnamese",
    "thailand": "thai",
    "the philippines": "filipino",
    "philippines": "filipino",
    "indonesia": "indonesian",
    "nigeria": "nigerian",
    "ghana": "ghanaian",
    "kenya": "kenyan",
    "ethiopia": "ethiopian",
    "egypt": "egyptian",
    "morocco": "moroccan",
    "turkey": "turkish",
    "greece": "greek",
    "iran": "iranian",
    "iraq": "iraqi",
    "israel": "israeli",
    "lebanon": "lebanese",
    "syria": "syrian",
    "argentina": "argentinian",
    "chile": "chilean",
    "colombia": "colombian",
    "peru": "peruvian",
    "venezuela": "venezuelan",
    "cuba": "cuban",
    "sweden": "swedish",
    "norway": "norwegian",
    "denmark": "danish",
    "finland": "finnish",
    "netherlands": "dutch",
    "the netherlands": "dutch",
    "holland": "dutch",
    "belgium": "belgian",
    "switzerland": "swiss",
    "austria": "austrian",
    "romania": "romanian",
    "hungary": "hungarian",
    "czechia": "czech",
    "the czech republic": "czech",
    "serbia": "serbian",
    "croatia": "croatian",
    "australia": "australian",
    "new zealand": "new zealander",
    "south africa": "south african",
    "jamaica": "jamaican",
    "bangladesh": "bangladeshi",
    "sri lanka": "sri lankan",
    "nepal": "nepali",
    "the us": "american",
    "the usa": "american",
    "the states": "american",
    "the uk": "british",
    "america": "american",
    "taiwan": "taiwanese",
    "singapore": "singaporean",
    "malaysia": "malaysian",
}
_COUNTRY = _alt(_COUNTRIES)


@_predicate(rf"{BE}{ADV}(?:originally\s+)?from\s+(?P<c>{_COUNTRY}){_END}")
def _from_country(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    country = m.group("c")
    return [Found("nationality", country, shown_case(country, who_original(who)))]


@_predicate(
    rf"(?:{HAVE}|hold|holds)(?:a\s+|an\s+)?(?P<d>{_DEMONYM})\s+(?:citizenship|passport|nationality)"
    rf"|{BE}{ADV}(?:a\s+)?citizen\s+of\s+(?P<c>{_COUNTRY})"
)
def _citizenship(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    value = m.group("d") or m.group("c")
    return _one("nationality", value, shown_case(value, who_original(who)))


@_predicate(
    rf"(?:{HAVE}|am|is)\s*(?P<n>\d{{1,3}}|{_NUMBER_WORD})\s+years(?:\s+of\s+age|\s+old)?"
    r"(?=\s*(?:$|[,.;!]|and\b|but\b|so\b|now\b))"
)
def _have_years(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if who.implied and not re.search(r"\b(?:old|age)$", m.group(0)):
        return None  # "Firefighter. Twelve years.": how long, not how old
    n = _number(m.group("n"))
    return _one("age", str(n)) if n is not None and 5 <= n <= 110 else None


_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "thirteenth": 13,
    "fourteenth": 14,
    "fifteenth": 15,
    "sixteenth": 16,
    "seventeenth": 17,
    "eighteenth": 18,
    "nineteenth": 19,
    "twentieth": 20,
    "twenty-first": 21,
    "twenty-second": 22,
    "twenty-third": 23,
    "twenty-fourth": 24,
    "twenty-fifth": 25,
    "twenty-sixth": 26,
    "twenty-seventh": 27,
    "twenty-eighth": 28,
    "twenty-ninth": 29,
    "thirtieth": 30,
    "thirty-first": 31,
}
_ORDINAL = _alt(_ORDINALS)


@_predicate(
    rf"(?:my\s+)?(?:birthday|bday|b-day|birth day)\s*(?:'s|is|falls on|is on|="
    rf"|:)?\s*(?:on\s+|in\s+)?"
    rf"(?:(?:the\s+)?(?P<o>{_ORDINAL})\s+of\s+(?P<om>{_MONTH})|{_DATE})"
    rf"|(?:was|were)\s+born\s+on\s+the\s+(?P<o2>{_ORDINAL})\s+of\s+(?P<om2>{_MONTH})"
)
def _birthday(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    ordinal, month = m.group("o") or m.group("o2"), m.group("om") or m.group("om2")
    if ordinal and month:
        return _one("birthday", f"{_MONTHS[month[:3]]} {_ORDINALS[ordinal]}")
    return _one("birthday", _date(m))


@_predicate(
    r"(?:stopped|quit|gave up|have given up|cut out|have cut out|have stopped|no longer)\s+"
    r"(?:eating\s+)?(?:meat|red meat and poultry|eating animals)(?!\s+and\s+(?:dairy|fish))"
    r"|(?:stopped|quit|gave up|cut out|have given up"
    r"|have cut out)\s+(?:eating\s+)?(?:meat\s+and\s+dairy"
    r"|all\s+animal\s+products|animal\s+products|dairy\s+and\s+meat)"
)
def _gave_up_meat(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    diet = "vegan" if ("dairy" in m.group(0) or "animal products" in m.group(0)) else "vegetarian"
    return _one("diet", diet, timing="past")


_HOBBYISTS = {
    "astronomer": "astronomy",
    "photographer": "photography",
    "gardener": "gardening",
    "birdwatcher": "birdwatching",
    "birder": "birdwatching",
    "knitter": "knitting",
    "baker": "baking",
    "gamer": "gaming",
    "reader": "reading",
    "collector": "collecting",
    "hiker": "hiking",
    "painter": "painting",
    "cook": "cooking",
    "woodworker": "woodworking",
    "quilter": "quilting",
    "angler": "fishing",
    "fisherman": "fishing",
    "sailor": "sailing",
    "dancer": "dancing",
    "writer": "writing",
    "poet": "poetry",
    "chess player": "chess",
    "crafter": "crafting",
    "traveler": "travel",
    "traveller": "travel",
}
_HOBBYIST = _alt(_HOBBYISTS)


_lookup(
    rf"{BE}{ADV}(?:a|an)\s+(?:(?:keen|avid|amateur|hobby|weekend|home|big|huge|passionate|casual"
    rf"|enthusiastic|obsessive|dedicated|serious)\s+)+(?:amateur\s+)?(?P<h>{_HOBBYIST}){_B}",
    "hobby",
    _HOBBYISTS,
    "h",
)


@_predicate(
    r"(?:hate|hates|can not stand|can't stand|dislike|dislikes|despise|despises|loathe"
    r"|loathes|detest)\s+(?P<x>.+)"
)
def _dislike(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if who.relation is None and not who.implied:
        return None  # the speaker's own: the likes family's
    items = [
        i
        for i in _items(m.group("x"), 3)
        if not re.match(r"(?:it|that|this|when|how|being|having|people)\b", i)
    ]
    return [Found("dislikes", i) for i in items] or None


@_predicate(r"(?:love|loves|adore|adores)\s+(?P<x>[a-z][\w' -]*)")
def _love(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if who.relation is None and not who.implied:
        return None
    items = [
        i
        for i in _items(m.group("x"), 3)
        if not re.match(r"(?:it|that|this|you|when|how|him|her|them)\b", i)
    ]
    return (
        _hobby_items(" and ".join(items))
        if items and all(i.endswith("ing") for i in items)
        else ([Found("likes", i) for i in items] or None)
    )


@_predicate(
    r"(?:a\s+)?(?:huge\s+|big\s+|massive\s+|die-hard\s+"
    r"|lifelong\s+)?(?P<x>[a-z0-9][\w' -]{0,30}?)\s+"
    r"(?:fan|addict|lover|nut|fanatic|enthusiast|junkie|buff)(?=\s*(?:$|[,.;!]|here\b|and\b|but\b))"
)
def _fan(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if not who.implied and who.relation is None:
        return None
    value = re.sub(r"^(?:(?:am|is|are|was|were|a|an|the)\b\s*)+", "", m.group("x")).strip()
    if not value or len(value.split()) > 3 or value in ("big", "huge", "a", "an", "the"):
        return None  # "am a fan": a fan of nothing named
    return [Found("likes", value, shown_case(value, who_original(who)))]
