"""Open attributes: what a person says about themself, or about someone they name,
that no other family holds (diet, allergies, pets, where they grew up, what they
study, play, drive, ...).

Every claim is of family ``attribute``. Its scope names the attribute
(:data:`ATTRIBUTES`): a single-valued one is keyed by its name alone (``diet``:
"I'm vegan now" replaces "I'm vegetarian"), an additive one by its name and the
item (``allergy:peanut``, ``pet:dog-rex``: a second allergy is another slot). A
claim about another person is keyed under that person, by the relation the turn
names: "my sister is a nurse" is ``person:sister/role``, never the speaker's
``role``. The value is normalised (lower case, no article; a diet or a sport by its
common name) and the statement is short and third-person ("Is vegetarian",
"Sister works as a nurse").

The text is read a clause at a time (the rule extractor's :class:`Clause`) and,
inside a clause, a piece at a time between commas ("im vegan btw, allergic to
peanuts"), the subject carried over to a piece that has none. A piece is its
subject ("I", "we", "my sister (Ana)", "Ana, my sister,") then a predicate
(:mod:`memledger.write.extract._predicates`); a turn that is only a predicate
("vegan btw", "allergic to cats") is the speaker's. Turned back on itself ("no
longer", "not ... any more", "used to", "stopped being", "quit"), a predicate
is a retraction: it closes the value from the time the clause gives; a change
("switched from X to Y", "moved from A to B") asserts the new value and retracts
the old. What comes after "if", "wish", "might", a question or a quote never gets
here (:func:`memledger.write.extract.rules.propose` skips it).

Home, work and role of the speaker are left to their own families' matchers; so
are plans and habits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from memledger.domain.gates import GateSettings, content_words, support
from memledger.domain.records import Kind
from memledger.domain.text import slug
from memledger.write.extract._clause import Clause, Proposal, Timing
from memledger.write.extract._lexicon import RELATIONS

FAMILY = "attribute"
"""The family every open attribute is a claim of."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute: whether several values hold at once, and how it reads."""

    additive: bool
    says: str
    """The statement, ``{v}`` the value as written ("Is allergic to {v}")."""
    kind: Kind = "fact"


ATTRIBUTES: dict[str, Attribute] = {
    "diet": Attribute(False, "Follows a {v} diet"),
    "hometown": Attribute(False, "Is from {v}"),
    "nationality": Attribute(False, "Is {v}"),
    "age": Attribute(False, "Is {v} years old"),
    "birthday": Attribute(False, "Has a birthday on {v}"),
    "studies": Attribute(False, "Studies {v}"),
    "school": Attribute(False, "Studies at {v}"),
    "native_language": Attribute(False, "Speaks {v} as a native language"),
    "vehicle": Attribute(False, "Drives a {v}"),
    "commute": Attribute(False, "Commutes by {v}"),
    "relationship_status": Attribute(False, "Is {v}"),
    "children": Attribute(False, "Has {v} children"),
    "home_city": Attribute(False, "Lives in {v}"),
    "employer": Attribute(False, "Works at {v}"),
    "role": Attribute(False, "Works as {v}"),
    "favourite_food": Attribute(False, "Favourite food is {v}", "preference"),
    "favourite_color": Attribute(False, "Favourite colour is {v}", "preference"),
    "favourite_movie": Attribute(False, "Favourite movie is {v}", "preference"),
    "favourite_book": Attribute(False, "Favourite book is {v}", "preference"),
    "favourite_music": Attribute(False, "Favourite music is {v}", "preference"),
    "favourite_sport": Attribute(False, "Favourite sport is {v}", "preference"),
    "favourite_drink": Attribute(False, "Favourite drink is {v}", "preference"),
    "pet": Attribute(True, "Has a {v}"),
    "allergy": Attribute(True, "Is allergic to {v}"),
    "health_condition": Attribute(True, "Has {v}"),
    "speaks": Attribute(True, "Speaks {v}"),
    "hobby": Attribute(True, "Enjoys {v}"),
    "sport": Attribute(True, "Does {v}"),
    "instrument": Attribute(True, "Plays the {v}"),
    "goal": Attribute(True, "Aims to {v}"),
    "event": Attribute(True, "{V}"),
    "family_member": Attribute(True, "Has a {v}"),
    "likes": Attribute(True, "Likes {v}", "preference"),
    "dislikes": Attribute(True, "Dislikes {v}", "preference"),
}
"""Every attribute the open matchers propose."""

_STATEMENT_BY_VALUE = {
    "diet": {
        v: "Is {v}" for v in ("vegetarian", "vegan", "pescatarian", "flexitarian", "raw vegan")
    },
    "sport": {
        v: "Plays {v}"
        for v in (
            "tennis soccer football basketball baseball volleyball badminton golf hockey rugby "
            "cricket squash pickleball padel chess"
        ).split()
    },
    "children": {"0": "Has no children", "1": "Has 1 child"},
}


@dataclass(frozen=True, slots=True)
class Found:
    """One value a predicate found: the attribute, the value as written and normalised."""

    attribute: str
    value: str
    shown: str | None = None
    """The value as the statement shows it (original case); ``value`` when ``None``."""
    retract: bool = False
    timing: Timing = "clause"


# -- normalising the text -------------------------------------------------------------------

_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), repl)
    for pattern, repl in (
        (r"[’‘`´]", "'"),
        (r"\bi'm\b|\bim\b(?=\s)", "i am"),
        (r"\bi've\b|\bive\b(?=\s+(?:got|been|had|a|an|two|three|\w+ed)\b)", "i have"),
        (r"\bi'd\b", "i would"),
        (r"\bi'll\b", "i will"),
        (r"\bwe're\b", "we are"),
        (r"\bwe've\b", "we have"),
        (r"\bthey're\b", "they are"),
        (
            r"\b(he|she|it)'s\s+(?=(?:just\s+|finally\s+|recently\s+|also\s+|now\s+)?(?:got|been|gone"
            r"|taken|had|done|become|started|moved|lived|worked|played|\w+ed)\b)",
            r"\1 has ",
        ),
        (r"\b(he|she)'s\b", r"\1 is"),
        (r"\bdon't\b|\bdont\b", "do not"),
        (r"\bdoesn't\b|\bdoesnt\b", "does not"),
        (r"\bdidn't\b|\bdidnt\b", "did not"),
        (r"\bisn't\b", "is not"),
        (r"\baren't\b", "are not"),
        (r"\bhaven't\b|\bhavent\b", "have not"),
        (r"\bhasn't\b", "has not"),
        (r"\bcan't\b|\bcant\b|\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"\bgonna\b", "going to"),
        (r"\bwanna\b", "want to"),
        (r"\bgotta\b", "got to"),
        (r"\bkinda\b|\bsorta\b", ""),
        (r"\bfav(?:ou?rite)?s?\b|\bfave\b|\bfavourite\b", "favorite"),
        (r"\b(?:rn|atm)\b", "right now"),
        (
            r"\b(?:tbh|tbf|ngl|imo|imho|btw|fyi|lol|lmao|lmfao|haha+|hehe|omg|smh|fr|ikr|jk|idk|obvs|def"
            r"|defo|deffo|srsly|legit|literally"
            r"|obv|tho|ig|lowkey|highkey|af|rly|ofc|tbqh|xd|xoxo|ugh|yay|rip)\b",
            "",
        ),
        (r"(?<=\w) n (?=\w)", " and "),
        (r"\bu\b", "you"),
        (r"\bw/", "with "),
        (r"\bb/c\b|\bbc\b|\bcuz\b|\bcause\b", "because"),
        (r"(?<=\d)\s*(?:yrs?|yo)\b(?:\s+old)?|\b(?:yrs?|yo)\s+old\b", " years old"),
        (r"\by/o\b", "years old"),
        (r"[^\x00-\u024f\u0370-\u1fff\u3000-\u9fff'\s]", " "),
    )
)


def normalise(text: str) -> str:
    """``text`` as the predicates read it: lower case, one apostrophe, contractions
    written out, chat abbreviations and emoji gone, single spaces."""
    out = text
    for pattern, repl in _SUBSTITUTIONS:
        out = pattern.sub(repl, out)
    return re.sub(r"\s+", " ", out).strip().lower()


# -- subjects -------------------------------------------------------------------------------

_SLANG = {
    "sis": "sister",
    "bro": "brother",
    "bf": "boyfriend",
    "gf": "girlfriend",
    "hubby": "husband",
    "wifey": "wife",
    "mum": "mother",
    "mam": "mother",
    "ma": "mother",
    "pa": "father",
    "stepmom": "stepmother",
    "stepdad": "stepfather",
    "brother-in-law": "brother-in-law",
    "sister-in-law": "sister-in-law",
    "father-in-law": "father-in-law",
    "mother-in-law": "mother-in-law",
    "niece": "niece",
    "nephew": "nephew",
    "teammate": "teammate",
    "classmate": "classmate",
    "landlord": "landlord",
    "landlady": "landlady",
    "mentor": "mentor",
    "grandson": "grandson",
    "granddaughter": "granddaughter",
    # people spoken of together: their attributes are theirs, never the speaker's
    "parents": "parents",
    "folks": "parents",
    "grandparents": "grandparents",
    "siblings": "siblings",
    "in-laws": "in-laws",
    "sisters": "sisters",
    "brothers": "brothers",
    "friends": "friends",
    "colleagues": "colleagues",
    "coworkers": "colleagues",
    "cousins": "cousins",
    "roommates": "roommates",
    "neighbors": "neighbors",
    "neighbours": "neighbors",
}
_RELATION_WORDS = "|".join(sorted([*RELATIONS, *_SLANG], key=len, reverse=True))
_SELF = re.compile(r"(?:i|we)(?=\s)")
_OTHER = re.compile(
    rf"(?:(?:my|our)\s+|(?=(?:{_RELATION_WORDS})(?:'s|\s+(?:is|was|has|works|lives)\b)))(?:(?:older|younger|little|big|baby|twin|eldest|oldest|youngest|new|old"
    rf"|best|step|late)\s+)?(?P<rel>{_RELATION_WORDS}|kid|kids|son|daughter|child|teenager)"
    rf"(?:\s*,?\s+(?P<name>[a-z][\w-]*)\s*,?)?(?:\s*,?\s*(?:who|which)\b)?(?=\s|'s|$)"
)
_NAMED_OTHER = re.compile(
    rf"(?P<name>[a-z][\w-]*)\s*,\s*(?:my|our)\s+(?:(?:older|younger|little|big)\s+)?"
    rf"(?P<rel>{_RELATION_WORDS})\s*,(?=\s)"
)
_VERBS_AFTER_NAME = re.compile(
    r"\s*(?:is|was|has|had|lives|works|just|recently|also|still|loves|plays|speaks|studies"
    r"|moved|got|goes|drives|can|does|takes|rides|ran|turned|became|went|started|quit|will"
    r"|'s|used|grew|adopted|and)\b"
)


@dataclass(frozen=True, slots=True)
class Subject:
    """Whom a piece is about: ``None`` for the speaker, else the relation named."""

    relation: str | None
    name: str | None = None
    text: str = field(default="", compare=False)
    """The clause as written, for the case of names found in it."""
    implied: bool = field(default=False, compare=False)
    """The piece named no subject of its own ("Hate cilantro.")."""


def subject(piece: str, original: str) -> tuple[Subject, str] | None:
    """The subject a piece opens with and the rest of it; ``None`` when it opens with
    none (a predicate alone). ``original`` is the text as written, for the case of a
    name ("my sister Ana" names Ana, "my sister is" names nobody)."""
    m = _SELF.match(piece)
    if m is not None:
        return Subject(None, text=original), piece[m.end() :].lstrip()
    for pattern in (_NAMED_OTHER, _OTHER):
        m = pattern.match(piece)
        if m is None:
            continue
        relation = RELATIONS.get(m.group("rel")) or _SLANG.get(m.group("rel"), m.group("rel"))
        relation = {"kid": "child", "kids": "child", "teenager": "child"}.get(relation, relation)
        name, rest = m.groupdict().get("name"), piece[m.end() :]
        if name is not None:
            shown = shown_case(name, original, word=True)
            if not shown[:1].isupper() or _VERBS_AFTER_NAME.match(" " + name):
                # "my sister is ...": the word after the relation is the verb, not a name
                if pattern is _OTHER:
                    rest = piece[m.start("name") :]
                name = None
            else:
                name = shown
        return Subject(relation, name, original), rest.lstrip()
    return None


# -- turning a predicate back on itself -----------------------------------------------------

_REVERSALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), repl)
    for pattern, repl in (
        (r"^(am|is|are) no longer (?:a |an )?", r"\1 "),
        (r"^not (?:a |an )?(.*?) ?(?:any ?more|any longer)$", r"am \1"),
        (r"^no longer (?:am |is |are )?", "am "),
        (r"^no longer ", ""),
        (r"^(?:do|does) not (\w+) (.*?) ?(?:any ?more|any longer|these days)$", r"\1 \2"),
        (r"^(am|is|are) not (.*?) ?(?:any ?more|any longer|these days)$", r"\1 \2"),
        (r"^(?:used|use) to be ", "am "),
        (r"^(?:used|use) to (\w+)", r"\1"),
        (r"^(?:stopped|quit|gave up|have stopped|have quit|have given up) being ", "am "),
        (r"^(?:stopped|quit|have stopped|have quit|gave up|have given up) (\w+ing)\b", r"\1"),
        (
            r"^(?:was|were) (?=(?:\w+ )?(?:allergic|vegan|vegetarian|pescatarian|keto|diabetic"
            r"|lactose)\b)",
            "am ",
        ),
        (r"^(?:am|is) (?:not|no) (?:longer )?(?:a |an )?(?=\w+ (?:any ?more|now)$)", "am "),
    )
)


def reversed_(rest: str) -> list[str]:
    """The predicates a retraction turns back ("am no longer vegan" -> "am vegan"), the
    likeliest first; empty when ``rest`` is no retraction."""
    out: list[str] = []
    for pattern, repl in _REVERSALS:
        if pattern.search(rest):
            text = re.sub(r"\s+", " ", pattern.sub(repl, rest, count=1)).strip()
            if text not in out:
                out.append(text)
    return out


# -- proposals ------------------------------------------------------------------------------


def scope_of(attribute: str, value: str, who: Subject) -> str:
    """The slot of a value: the attribute, with the item for an additive one, under the
    person for someone else's."""
    key = attribute
    if ATTRIBUTES[attribute].additive:
        key = f"{attribute}:{slug(value) or 'item'}"
    return key if who.relation is None else f"person:{slug(who.relation)}/{key}"


OWN_FAMILIES = frozenset({"home_city", "employer", "role"})
"""Attributes of the speaker that have a family of their own (scope ``global``)."""


def statement_of(found: Found, who: Subject) -> str:
    """ "Is vegetarian", "No longer has a dog", "Sister: works as a nurse"."""
    spec = ATTRIBUTES[found.attribute]
    shown = found.shown or found.value
    template = _STATEMENT_BY_VALUE.get(found.attribute, {}).get(found.value, spec.says)
    if not found.value:  # a retraction that names no value: "I eat fish again"
        said = f"{found.attribute.replace('_', ' ').capitalize()} changed: {found.shown or ''}"
    else:
        said = template.replace("{V}", shown[:1].upper() + shown[1:]).replace("{v}", shown)
        if found.retract:
            said = "No longer " + (
                said[3:] if said.startswith("Is ") else said[:1].lower() + said[1:]
            )
    if who.relation is None:
        return said
    person = who.relation.capitalize() + (f" {who.name}" if who.name else "")
    return f"{person}: {said[:1].lower()}{said[1:]}"


def grounded(statement: str, value: str, clause: Clause) -> str:
    """``statement``, with the words it was read from when neither it nor the value is
    supported by the clause as written ("Has 2 children" of "Two kids, all under ten"):
    the write policy drops a claim whose words the source does not hold."""
    body = clause.body
    by_value = support(value, body) if content_words(value) else 0.0
    if max(support(statement, body), by_value) >= MIN_SUPPORT:
        return statement
    words = body.split()
    quoted = " ".join(words[:QUOTED_WORDS]) + (" ..." if len(words) > QUOTED_WORDS else "")
    return f"{statement} ({quoted.strip(' .,;!')})"


QUOTED_WORDS = 12
MIN_SUPPORT = GateSettings().min_support


def proposal(found: Found, who: Subject, clause: Clause) -> Proposal:
    """The proposal of one found value: the speaker's home, employer and role go to
    their own families, every other attribute to :data:`FAMILY`."""
    proposed = _proposal(found, who)
    statement = grounded(proposed.statement, found.value, clause)
    return proposed if statement == proposed.statement else replace(proposed, statement=statement)


def _proposal(found: Found, who: Subject) -> Proposal:
    own = who.relation is None and found.attribute in OWN_FAMILIES
    if who.relation is None and found.attribute in ("likes", "dislikes"):
        sentiment = "like" if found.attribute == "likes" else "dislike"
        return Proposal(
            family="likes",
            kind="preference",
            statement=statement_of(found, who),
            value={"item": found.shown or found.value, "sentiment": sentiment},
            scope=f"item:{slug(found.value, stem_words=True) or 'item'}",
            timing=found.timing,
            retraction=found.retract,
        )
    return Proposal(
        family=found.attribute if own else FAMILY,
        kind=ATTRIBUTES[found.attribute].kind,
        statement=statement_of(found, who),
        value=(found.shown or found.value) if own else (found.value or None),
        scope="global" if own else scope_of(found.attribute, found.value, who),
        timing=found.timing,
        retraction=found.retract,
    )


def shown_case(value: str, original: str, *, word: bool = False) -> str:
    """``value`` as the writer cased it (where it first occurs in ``original``, as a
    whole word with ``word``); ``value`` when it does not occur there as written."""
    pattern = re.escape(value).replace("'", "['’]")
    if word:
        pattern = rf"(?<![\w'’-]){pattern}(?![\w'’-])"
    m = re.search(pattern, original, re.IGNORECASE)
    return original[m.start() : m.end()] if m is not None else value


def shown_name(value: str, original: str) -> str | None:
    """``value`` as the writer cased it, as a whole word (:func:`shown_case`), when it
    reads as a name; ``None`` when the writer uses capitals and it starts without one
    ("I'm from a small town" names no place, "my dog named after ..." no dog)."""
    shown = shown_case(value, original, word=True)
    if not shown[:1].isupper() and any(c.isupper() for c in original):
        return None
    return shown
