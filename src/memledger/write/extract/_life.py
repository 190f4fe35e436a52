"""Predicates of how a person lives: vehicles and commute, family, sports, instruments,
hobbies, favourites, goals, events, someone else's home and work, and changes of value."""

from __future__ import annotations

import re

from memledger.write.extract._attributes import (
    Found,
    Subject,
    shown_case,
    shown_name,
)
from memledger.write.extract._clause import Timing
from memledger.write.extract._facts import (
    _DIET,
    who_original,
)
from memledger.write.extract._lexicon import (
    DOUBT_WORDS,
    LOOSE_END,
    canonical_framework,
    known_tool,
    role_head,
)
from memledger.write.extract._reading import (
    _B,
    _END,
    _STOP,
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
    _singular,
    _take,
)
from memledger.write.extract._vocab import (
    CHILD_WORDS,
    DIETS,
    EVENT_HEADS,
    FAVOURITES,
    INSTRUMENTS,
    KIN,
    MAKES,
    PLAYERS,
    PRACTICES,
    PRACTITIONERS,
    SPORTS,
    STATUSES,
    TRANSPORT,
    VEHICLE_WORDS,
)

# -- vehicles and commute -------------------------------------------------------------------

_MAKE = _alt(MAKES)
_VEHICLE = _alt([*VEHICLE_WORDS, *(v + "s" for v in VEHICLE_WORDS)])


@_predicate(
    rf"(?:drive|drives|am driving|is driving|ride|rides|{HAVE}|bought|just bought|leased"
    rf"|lease|leases|got|just got|traded in \w+ \w+ for)\s+(?:a|an|my|our|the)?\s*"
    r"(?:(?:new|used|old|brand new|secondhand|second-hand|\d{4}|red|blue|black|white|silver"
    r"|grey|gray|green|little|electric|beat-up|beat up|trusty|reliable|vintage|shiny)\s+)*"
    rf"(?P<v>(?:{_MAKE})(?:\s+[a-z0-9][\w-]*){{0,2}}|(?:electric\s+)?{_VEHICLE}){_B}"
)
def _vehicle(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    value = _take(m.group("v"), words=4)
    if value is None:
        return None
    if m.group(0).startswith(("ride", "rides")) and re.match(r"(?:bike|bicycle)s?$", value):
        pass
    if re.match(r"\s+(?:to|into)\s+(?:work|the office|school|campus|uni|class)\b", rest[m.end() :]):
        return _commute_value(value)
    if value in ("bike", "bikes") and m.group(0).startswith(("have", "has", "got", "own")):
        return None  # owning a bike is no vehicle anyone would ask about
    bought = re.match(r"(?:bought|just|leased|got|traded)", m.group(0))
    timing: Timing = "past" if bought else "clause"
    return _one("vehicle", value, shown_case(value, who_original(who)), timing=timing)


def _commute_value(word: str) -> list[Found] | None:
    value = TRANSPORT.get(word.split()[-1]) or TRANSPORT.get(word)
    return _one("commute", value or word)


_TRANSPORT = _alt(TRANSPORT)


@_predicate(
    rf"(?:{ADV}(?P<verb>bike|bikes|cycle|cycles|walk|walks|drive|drives|run|runs|ride my bike"
    r"|rides her bike|rides his bike|scooter|carpool|carpools)\s+(?:to|into)\s+(?:work|the office"
    r"|school|campus|uni|class|my office|my job)"
    r"|(?:take|takes|catch|catches|ride|rides|hop on)\s+(?:the\s+|a\s+)?(?P<t>train|bus|subway"
    r"|metro|tube|tram|ferry|light rail|commuter rail)\s+(?:to|into|in to)\s+(?:work|the office"
    r"|school|campus|uni|town|the city|my office|my job)"
    rf"|commute\s+(?:by|on|via|with)\s+(?:the\s+|a\s+)?(?P<c>{_TRANSPORT}))"
)
def _commute(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    word = m.group("verb") or m.group("t") or m.group("c")
    word = {
        "bikes": "bike",
        "cycles": "cycle",
        "walks": "walk",
        "drives": "drive",
        "runs": "run",
        "carpools": "carpool",
    }.get(word, word)
    if word.startswith("ride"):
        word = "bike"
    return _commute_value(word)


# -- relationship status and family ---------------------------------------------------------

_STATUS = _alt(STATUSES)


_lookup(rf"{BE}{ADV}(?P<s>{_STATUS}){_END}", "relationship_status", STATUSES, "s")


@_predicate(
    r"(?:just\s+|recently\s+|finally\s+)?(?:got|getting)\s+(?P<s>married|engaged|divorced|hitched)(?!\s+(?:to\s+)?(?:next|in|this|soon))"
)
def _got_married(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if m.group(0).startswith("getting"):
        return None
    status = {"hitched": "married"}.get(m.group("s"), m.group("s"))
    return _one("relationship_status", status, timing="past")


_COUNT = r"(?P<count>\d+|no|zero|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of)"
_KIN = _alt(KIN | CHILD_WORDS)


@_predicate(
    rf"(?:{HAVE}|(?:am|is)\s+(?:a\s+)?(?:mom|mother|dad|father|mum|parent|mama|papa)\s+(?:of|to)\s+)"
    rf"{ADV}{_COUNT}\s+(?:(?:little|young|grown|grown-up|adult|teenage|wonderful|amazing|beautiful"
    r"|small|older|younger|big|baby|twin|step|lovely|crazy|wild)\s+)*(?P<k>" + _KIN[3:-1] + r")"
    rf"(?:\s+(?:and\s+(?:a|an|one|two|\d+)\s+(?P<k2>{_KIN[3:-1]})))?{_B}"
)
def _kin(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    count = m.group("count")
    n = _number(count) if count not in ("a", "an") else 1
    if count.isdigit():
        n = int(count)
    kinds = [k for k in (m.group("k"), m.group("k2")) if k]
    found: list[Found] = []
    children = 0
    for k in kinds:
        base = _singular(k)
        if base in (
            "kid",
            "child",
            "boy",
            "girl",
            "little one",
            "toddler",
            "son",
            "daughter",
            "one",
        ):
            if k == m.group("k"):
                children += n or 0
            else:
                children += 1
        if base in ("kid", "child", "little one", "toddler", "boy", "girl", "one"):
            continue
        if n == 0:
            continue
        found.append(Found("family_member", base))
    if (
        any(
            _singular(k)
            in ("kid", "child", "boy", "girl", "little one", "toddler", "son", "daughter", "one")
            for k in kinds
        )
        and n is not None
        and (n != 1 or m.group("k") in CHILD_WORDS or len(kinds) > 1)
    ):
        found.append(Found("children", str(children)))
    return found or None


@_predicate(r"(?:do|does)\s+not\s+have\s+(?:any\s+)?(?:kids|children)(?!\s+(?:yet|any ?more))")
def _no_children(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _one("children", "0")


# -- sports, instruments, hobbies ----------------------------------------------------------

_SPORT = _alt(SPORTS)
_PRACTICE = _alt(PRACTICES)
_PRACTITIONER = _alt(PRACTITIONERS)
_INSTRUMENT = _alt(INSTRUMENTS)
_PLAYER = _alt(PLAYERS)
_PLAY = r"(?:play|plays|am playing|is playing|have been playing|has been playing|played|playing)"


@_predicate(
    rf"{ADV}{_PLAY}\s+(?:(?:a lot of|some|competitive|pickup|pick-up|amateur|club|league|rec"
    r"|recreational|social|weekend|casual|intramural|varsity|doubles|in a|on a)\s+)*"
    rf"(?P<s>{_SPORT}){_B}(?P<after>.*)"
)
def _play_sport(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if m.group(0).lstrip().startswith("played") and not re.search(
        r"\b(?:every|on|each|since|weekly|twice|regularly)\b", m.group("after")
    ):
        return None
    return _one("sport", m.group("s"))


@_predicate(
    rf"{ADV}{_PLAY}\s+(?:the\s+|a\s+|some\s+|bass\s+in\s+a\s+\w+\s+)?(?P<i>{_INSTRUMENT}){_B}"
)
def _play_instrument(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if m.group(0).lstrip().startswith("played"):
        return None
    instrument = {"uke": "ukulele", "sax": "saxophone", "drum": "drums", "keys": "keyboard"}
    return _one("instrument", instrument.get(m.group("i"), m.group("i")))


_lookup(
    rf"(?:{ADV}(?:do|does|practice|practise|practices|practises|train|trains|am doing|am into"
    r"|is doing|go|goes|love|loves|enjoy|enjoys|am learning|is learning|teach|teaches|compete in"
    rf"|competes in)\s+(?:a lot of\s+|some\s+|competitive\s+|hot\s+|in\s+)?(?P<p>{_PRACTICE}){_B})",
    "sport",
    PRACTICES,
    "p",
)


@_predicate(
    rf"{BE}{ADV}(?:a|an)\s+(?:(?:avid|keen|big|amateur|competitive|casual|long-distance"
    r"|marathon|serious|hobby|weekend|daily|passionate|enthusiastic|huge|occasional|trail"
    r"|rock|ultra|classical|jazz|self-taught|decent|mediocre|terrible|bad|good|great|fair"
    rf"|keen amateur|professional)\s+)*(?:(?P<p>{_PRACTITIONER})|(?P<i>{_PLAYER})){_B}"
)
def _practitioner(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if m.group("p"):
        return _one("sport", PRACTITIONERS[m.group("p")])
    return _one("instrument", PLAYERS[m.group("i")])


_GERUND = r"[a-z]+ing(?:\s+(?!and\b|but\b|with\b|in\b|on\b|at\b)[a-z]+){0,2}"


def _hobby_items(text: str) -> list[Found]:
    found = []
    for item in _items(text):
        if re.fullmatch(_PRACTICE, item):
            found.append(Found("sport", PRACTICES[item]))
        elif re.fullmatch(_SPORT, item):
            found.append(Found("sport", item))
        elif re.fullmatch(_INSTRUMENT, re.sub(r"^(?:playing\s+)?(?:the\s+)?", "", item)):
            found.append(Found("instrument", re.sub(r"^(?:playing\s+)?(?:the\s+)?", "", item)))
        else:
            found.append(Found("hobby", item))
    return found


@_predicate(
    r"(?:my\s+)?(?:main\s+|favorite\s+|big\s+|biggest\s+|new\s+|latest\s+|current\s+|weekend\s+)?"
    r"(?:hobby|hobbies|pastime|pastimes|passion|passions|thing)\s+(?:is|are|include|includes"
    r"|has to be|would be|these days is|right now is|lately is|'s)\s+(?P<x>.+)"
)
def _hobby_is(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if "thing" in m.group(0).split()[:3] and "favorite" not in m.group(0):
        return None
    return _hobby_items(m.group("x")) or None


@_predicate(
    rf"{BE}{ADV}(?:really\s+|very\s+|super\s+|big\s+|hugely\s+|totally\s+|deeply\s+|heavily\s+"
    r"|massively\s+|seriously\s+|obsessed with\s+|getting\s+|also\s+)?(?:into|obsessed\s+with"
    r"|hooked\s+on|addicted\s+to)\s+(?P<x>.+)"
)
def _into(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _hobby_items(m.group("x")) or None


@_predicate(
    r"(?:have\s+|has\s+|recently\s+|just\s+)?(?:took|taken|take|taking|picked|pick|picking"
    r"|started|start|am starting)\s+up\s+(?P<x>.+)"
)
def _took_up(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    x = m.group("x")
    if re.match(r"(?:some|a|an|the|my|his|her|our|their|it|them|this|that|where|on|from)\b", x):
        return None
    if "pick" in m.group(0) and not re.match(
        rf"(?:[a-z]+ing\b|{_PRACTICE}|{_SPORT}|(?:the\s+)?{_INSTRUMENT})", x
    ):
        return None
    found = _hobby_items(x)
    return [Found(f.attribute, f.value, timing="past") for f in found] or None


@_predicate(
    rf"{ADV}(?:love|loves|enjoy|enjoys|like|likes|adore|adores|am passionate about|spend my"
    r"\s+(?:free|spare)\s+time)\s+(?:(?:very\s+much|so\s+much|a\s+lot)\s+)?(?:to\s+(?P<verb>[a-z]+(?:\s+(?!and\b|but\b)[a-z]+)?)"
    rf"|(?P<g>{_GERUND}))(?P<after>.*)"
)
def _love_doing(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    activity = m.group("g") or m.group("verb")
    if activity is None:
        return None
    activity = _take(activity, words=3)
    if (
        activity is None
        or re.match(
            r"(?:think|know|see|hear|say|talk|ask|keep|get|make|be|have|go|do|help|try|use|feel"
            r"|thinking|knowing|seeing|being|having|getting|making|going|doing|trying|using"
            r"|feeling|hearing|saying|asking|keeping|helping|everything|anything|something"
            r"|nothing|morning|evening|thing|ceiling|king|spring|sing)\b",
            activity,
        )
    ) and not (activity and re.match(r"(?:go|going)\s+\w+ing", activity)):
        return None
    if re.search(r"\b(?:when|if)\b", m.group("after")[:12]):
        return None
    activity = re.sub(r"^(?:go|going)\s+", "", activity)
    return _hobby_items(activity) or None


@_predicate(
    r"(?:(?:in|during)\s+my\s+(?:free|spare|down)\s+time\s*,?\s*(?:i\s+)?(?:like\s+to\s+|love\s+to"
    r"\s+|enjoy\s+|usually\s+|mostly\s+|tend\s+to\s+)?|for\s+fun\s*,?\s*(?:i\s+)?)(?P<x>.+)"
)
def _free_time(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _hobby_items(m.group("x")) or None


# -- favourites -----------------------------------------------------------------------------

_THING = _alt(FAVOURITES)


@_predicate(
    rf"(?:my\s+)?(?:all[- ]time\s+|absolute\s+|current\s+|ultimate\s+|total\s+|number one\s+)?"
    rf"favorite\s+(?P<t>{_THING})(?:\s+of\s+all\s+time|\s+ever|\s+right now|\s+these days)?\s*"
    r"(?:is|are|has to be|would be|will always be|'s|:|=|-|at the moment is|right now is|ever is"
    r"|hands down is|by far is)\s+(?:probably\s+|definitely\s+|hands down\s+|still\s+)?(?P<x>.+)"
)
def _favourite(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    value = _take(
        m.group("x"),
        _STOP_NAME
        if m.group("t") in ("movie", "film", "book", "novel", "band", "artist")
        else _STOP,
        words=6,
    )
    if value is None:
        return None
    return _one(FAVOURITES[m.group("t")], value, shown_case(value, who_original(who)))


# -- goals and events -----------------------------------------------------------------------

_NOT_GOAL = re.compile(
    r"(?:know|ask|check|see|understand|find out|make sure|be sure|talk|tell|share|say|confirm"
    r"|order|book|cancel|change|update|add|remove|get help|be able|clarify|mention|note|vent"
    r"|complain|discuss|chat|get some|hear|try|figure|go over|start by|keep|stay|avoid|thank"
    r"|apologize|do this|do that|do it|cry|scream|sleep|die|quit this|give up)\b"
)
_GOAL_ENDS = "because|but|so that|so|since|which|and then|lol"
"""The words a goal ends before ("to run a marathon because ..."), besides punctuation."""


def _goal(text: str, *, ends: str = _GOAL_ENDS) -> list[Found] | None:
    """The goal at the start of ``text``: up to punctuation or one of the words ``ends``,
    eight words at most."""
    return _one("goal", _take(text, re.compile(rf"\s*(?:[,.;:!?]|$)|\s+(?:{ends})\b"), words=8))


@_predicate(
    r"(?:my\s+)?(?:main\s+|big\s+|biggest\s+|new\s+|current\s+|personal\s+|ultimate\s+"
    r"|long[- ]term\s+|short[- ]term\s+|fitness\s+|career\s+|one\s+|real\s+|next\s+|top\s+)?"
    r"(?:goal|aim|target|resolution|new year's resolution|objective|ambition|mission)"
    r"(?:\s+for\s+(?:this|next|the)\s+(?:year|month|summer|semester)|\s+this\s+year"
    r"|\s+right now|\s+for 20\d\d)?\s+(?:is|is to|'s|:)\s+(?:to\s+)?(?P<x>.+)"
)
def _goal_is(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _goal(m.group("x"))


@_predicate(
    rf"{BE}{ADV}(?:trying|aiming|hoping|working|determined|striving|training|saving|saving up"
    r"|planning)\s+(?:hard\s+|really hard\s+)?(?:to|for)\s+(?P<x>.+)"
)
def _trying_to(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if "planning" in m.group(0):
        return None  # a plan: the plan matcher's
    x = m.group("x")
    if _NOT_GOAL.match(x):
        return None
    return _goal(x, ends=f"{_GOAL_ENDS}|before")


@_predicate(r"(?:working|work)\s+(?:towards?|toward)\s+(?P<x>.+)")
def _working_towards(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return _goal(m.group("x"), ends="because|but|so|since|which")


_EVENT_HEAD = _alt([*EVENT_HEADS, *(e + "s" for e in EVENT_HEADS)])


@_predicate(
    r"(?:just\s+|recently\s+|finally\s+|also\s+)?(?P<verb>ran|completed|finished|did"
    r"|attended|went to"
    r"|was at|were at|took part in|participated in|competed in|volunteered at|performed at"
    r"|played at|spoke at|presented at|hosted|organized|organised|threw|walked in|marched in"
    r"|won|entered|graduated from|went on|have run|have completed|have attended|got back from"
    r"|came back from|returned from|cycled|swam|hiked|climbed)\s+(?P<x>.+)"
)
def _event(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    obj = _take(
        m.group("x"),
        re.compile(
            r"\s*(?:[,.;:!?]|$)|\s+(?:because|but|so|since|which|and|last|this|yesterday"
            r"|today|on|with|where|who|ago|a few|two|three|over)\b"
        ),
        words=6,
    )
    if obj is None:
        return None
    verb = m.group("verb")
    if verb.startswith("graduated"):
        return _one(
            "event",
            f"graduated from {obj}",
            f"graduated from {shown_case(obj, who_original(who))}",
            timing="past",
        )
    if not re.search(rf"\b{_EVENT_HEAD}\b", obj) and not re.match(
        r"(?:cycled|swam|hiked|climbed)", verb
    ):
        return None
    verb = verb.replace("have ", "").replace("run", "ran")
    return _one("event", f"{verb} {obj}", timing="past")


# -- someone else's home, work, role --------------------------------------------------------


def _place(
    attribute: str, text: str, who: Subject, *, timing: Timing = "clause"
) -> list[Found] | None:
    """The place or organisation named at the start of ``text`` ("Oslo", "Farfetch"), as
    ``attribute``; ``None`` when it is no name (a tool, a loose cut, lowercase words)."""
    place = _take(text, _STOP_NAME, words=4)
    if place is None or known_tool(place) or canonical_framework(place) is not None:
        return None  # "moved from TensorFlow to PyTorch" is no move
    if DOUBT_WORDS.search(place) or LOOSE_END.search(place):
        return None  # "Doha a" is the start of "a while ago": when unsure, no claim
    shown = shown_name(place, who_original(who))
    if shown is None:
        return None
    return [Found(attribute, place, shown, timing=timing)]


def _others(pattern: str, attribute: str, *, timing: Timing = "clause") -> None:
    """Register a predicate of where someone the speaker names lives or works, the place
    or organisation by name in group ``x`` ("my sister lives in Oslo"); the speaker's own
    home and work are their families' matchers'."""

    def read(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
        if who.relation is None:
            return None
        return _place(attribute, m.group("x"), who, timing=timing)

    _predicate(pattern)(read)


_others(
    r"(?:lives|live|is living|is based|resides|has lived)\s+(?:in|out of)\s+(?P<x>.+)",
    "home_city",
)
_others(
    r"(?:'s\s+|has\s+|have\s+|had\s+)?(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)"
    r"\s+(?:back\s+)?to\s+(?P<x>.+)",
    "home_city",
    timing="past",
)
_others(
    r"(?:works|work|is working|(?:just\s+|recently\s+)?(?:got|landed|started|took)\s+(?:a\s+)?"
    r"(?:new\s+)?(?:job|position|post|role))\s+(?:at|for|with)\s+(?P<x>.+)",
    "employer",
)


_ROLE_WORD = re.compile(
    r"(?:engineer|developer|programmer|scientist|researcher|designer|manager|director|founder"
    r"|teacher|professor|lecturer|nurse|doctor|physician|surgeon|lawyer|attorney|accountant"
    r"|writer|author|editor|journalist|chef|cook|baker|artist|musician|photographer|architect"
    r"|analyst|consultant|pharmacist|dentist|vet|veterinarian|electrician|plumber|carpenter"
    r"|mechanic|pilot|firefighter|officer|cop|paramedic|therapist|psychologist|counselor"
    r"|counsellor|librarian|farmer|driver|barista|waiter|waitress|bartender|cashier|realtor"
    r"|agent|student|intern|ceo|cto|entrepreneur|banker|broker|trader|actor|actress|dancer"
    r"|singer|coach|trainer|soldier|marine|student|principal|tutor|clerk|receptionist"
    r"|secretary|administrator|technician|midwife|surveyor|translator|interpreter|pastor"
    r"|priest|rabbi|housewife|homemaker|retiree|specialist|assistant|worker|scientist"
    r"|biologist|chemist|physicist|economist|programmer|nanny|caregiver|carer|paediatrician"
    r"|pediatrician|cleaner|seaman|sailor|fisherman|miner|builder|gardener|janitor)s?$"
)


@_predicate(
    r"(?:is|'s|works as|work as|is working as|works like|is working like|became|has become)\s+"
    r"(?:(?P<a>a|an)\s+)?(?P<x>.+)"  # the article may be missing: "my uncle is farmer"
)
def _other_role(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if who.relation is None:
        return None
    role = _take(m.group("x"), _STOP_NAME, words=4)
    if role is None or not (_ROLE_WORD.search(role) or role_head(role)):
        return None
    return [Found("role", role, timing="past" if "became" in m.group(0) else "clause")]


# -- changes: from one value to another -----------------------------------------------------


@_predicate(
    r"(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+(?:here\s+)?from\s+(?P<a>.+?)"
    r"\s+to\s+(?P<b>.+)"
)
def _moved_from(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    old = _place("home_city", m.group("a"), who)
    new = _place("home_city", m.group("b"), who, timing="past")
    if not new or (old is None and _take(m.group("a"), _STOP_NAME) is not None):
        return None
    gone = [Found(f.attribute, f.value, f.shown, retract=True, timing="past") for f in old or []]
    return new + gone


@_predicate(
    rf"(?:have\s+|has\s+)?(?:switched|went|gone|changed|transitioned|moved)\s+from\s+(?:being\s+)?"
    rf"(?:a\s+)?(?P<a>{_DIET})\s+to\s+(?:being\s+)?(?:a\s+)?(?P<b>{_DIET}){_B}"
)
def _diet_switch(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [
        Found("diet", DIETS[m.group("b")], timing="past"),
        Found("diet", DIETS[m.group("a")], retract=True, timing="past"),
    ]
