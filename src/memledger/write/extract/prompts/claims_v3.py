"""Prompt ``claims-v3``: ``claims-v2`` with open attributes of the people who speak.

Family ``attribute`` holds what a person says about themself, or about someone they
name, that no other family holds. ``claims-v3`` asks for it with the conventions
the rule extractor follows (:mod:`memledger.write.extract._attributes`), taken from
its table so the prompt follows the table:

* a single-valued attribute is scoped by its name alone (``diet``: a new value
  closes the old window), an additive one by its name and the item as a slug
  (``allergy:peanuts``, ``pet:dog-named-rex``: several hold at once);
* someone else's attribute is scoped under that person, by the relation the turn
  names (``person:sister/diet``), never as the speaker's;
* the value is normalised (lower case, no article), the statement short and in
  the third person ("Is vegetarian", "Has a dog named Rex", "Sister: is vegan");
* questions, hypotheticals, wishes, quotes, jokes and the assistant's own words
  give no claim about the user (the user message now says who spoke).

::

    {"family": "attribute", "kind": "fact", "statement": "Is vegetarian",
     "value": "vegetarian", "scope": "diet", "polarity": "assert", ...}

The answer schema has two claim shapes: one for ``attribute``, whose ``scope``
must match :func:`scope_pattern` and whose value is a string or ``null``, and
``claims-v2``'s for every other family.

**An off-convention scope is normalised, or dropped; it is never a
``schema_mismatch``.** :func:`attribute_scope` reads a scope through the rule
extractor's own functions (the table's names, :func:`~memledger.domain.text.slug`
for items and relations, the rule extractor's reading of a relation, so "dad" is
``father``): a difference of spelling only ("Diet", "pet: Dog named Rex",
"native-language", "person:Dad/diet", "diet:vegan") lands in the slot the rule
extractor would have used, because a second spelling of one slot would let two
values of a single-valued attribute be current at once. A scope whose shape is
not an attribute's (an attribute the table does not have, more segments, no
item for an additive one with no value to take it from) is refused: the claim
is dropped with its reason. Neither fails the batch: ``schema_mismatch`` fails
the whole answer and retries the job, and a model at temperature 0 answers the
same again, so one off-convention claim would cost every other claim of the
event. :func:`attribute_value` and :func:`attribute_kind` normalise the value
and the kind the same way.
"""

from __future__ import annotations

import copy
import re
import textwrap
from typing import Any

from memledger.domain.families import Schema
from memledger.domain.records import JsonValue, Kind, SourceEvent
from memledger.domain.text import slug
from memledger.write.extract._attributes import (
    ATTRIBUTES,
    FAMILY,
    OWN_FAMILIES,
    Found,
    Subject,
    statement_of,
    subject,
)
from memledger.write.extract.prompts import claims_v1, claims_v2
from memledger.write.extract.prompts.claims_v1 import ClaimsOut
from memledger.write.extract.prompts.claims_v2 import ClaimOut

__all__ = [
    "FAMILY",
    "RESPONSE_NAME",
    "VERSION",
    "ClaimOut",
    "ClaimsOut",
    "attribute_kind",
    "attribute_scope",
    "attribute_value",
    "attributes",
    "response_schema",
    "scope_pattern",
    "system_prompt",
    "user_prompt",
]

VERSION = "claims-v3"
"""Recorded as ``ExtractorInfo.prompt_version`` on every claim this prompt produced."""

RESPONSE_NAME = claims_v1.RESPONSE_NAME

ELSEWHERE = {**{name: name for name in sorted(OWN_FAMILIES)}, "likes": "likes", "dislikes": "likes"}
"""The speaker's own attributes that another family holds, and that family."""


def attributes(*, additive: bool, own: bool = False) -> tuple[str, ...]:
    """The single-valued (scope ``<attribute>``) or additive (``<attribute>:<item>``)
    attributes of the table, in its order; ``own``: only those of the speaker's that no
    other family holds. Read from the table on every call, so the prompt follows it."""
    return tuple(
        name
        for name, spec in ATTRIBUTES.items()
        if spec.additive is additive and not (own and name in ELSEWHERE)
    )


_SLUG = "[a-z0-9]+(?:-[a-z0-9]+)*"


def _alternatives(names: tuple[str, ...]) -> str:
    return "(?:" + "|".join(names) + ")"


def scope_pattern() -> str:
    """The regular expression an ``attribute`` scope matches, built from the table."""
    own_single, own_additive = (
        attributes(additive=False, own=True),
        attributes(additive=True, own=True),
    )
    own = f"{_alternatives(own_single)}|{_alternatives(own_additive)}:{_SLUG}"
    theirs = (
        f"{_alternatives(attributes(additive=False))}|{_alternatives(attributes(additive=True))}"
        f":{_SLUG}"
    )
    return f"^(?:{own}|person:{_SLUG}/(?:{theirs}))$"


# -- reading a proposed claim ---------------------------------------------------------------


def _relation(text: str) -> str | None:
    """The relation as the rule extractor keys it ("dad" -> "father"), or ``None``."""
    raw = " ".join(text.lower().split())
    for form in dict.fromkeys((raw, raw.replace("-", " "), raw.replace("_", " "))):
        read = subject(f"my {form} is here", f"my {form} is here")
        if read is not None and read[0].relation is not None:
            return slug(read[0].relation)
    return slug(raw) or None


def _attribute(text: str) -> str | None:
    name = re.sub(r"[\s_-]+", "_", text.strip().lower()).replace("favorite", "favourite")
    return name if name in ATTRIBUTES else None


def attribute_scope(scope: str, value: JsonValue) -> str:
    """``scope`` as the rule extractor writes it; ``ValueError`` saying why when its
    shape is no attribute's. ``value`` gives an additive attribute with no item its
    item, as the rule extractor's :func:`~memledger.write.extract._attributes.scope_of`
    does."""
    text = scope.strip()
    who = ""
    head, slash, rest = text.partition("/")
    if slash:
        kind, colon, relation = head.partition(":")
        if kind.strip().lower() != "person" or not colon or "/" in rest:
            raise ValueError(f"scope {scope!r} is not 'person:<relation>/<attribute>...'")
        name = _relation(relation)
        if name is None:
            raise ValueError(f"scope {scope!r} names no relation")
        who, text = f"person:{name}/", rest
    attribute, colon, item = text.partition(":")
    found = _attribute(attribute)
    if found is None:
        raise ValueError(
            f"scope {scope!r}: {attribute.strip()!r} is not an attribute; "
            f"expected one of {sorted(ATTRIBUTES)}"
        )
    if not who and found in ELSEWHERE:
        raise ValueError(
            f"scope {scope!r}: the speaker's {found} is family {ELSEWHERE[found]!r}, "
            "not 'attribute'"
        )
    if not ATTRIBUTES[found].additive:
        return who + found  # a stray item ("diet:vegan") would make the slot additive
    key = slug(item) if colon else ""
    if not key and isinstance(value, str):
        key = slug(value)
    if not key:
        raise ValueError(f"scope {scope!r}: {found!r} holds several values; name the item")
    return f"{who}{found}:{key}"


_ARTICLE = re.compile(r"^(?:a|an|the)\s+")


def attribute_value(value: JsonValue) -> str | None:
    """A normalised value: lower case, single spaces, no leading article; a whole
    number as its digits; ``None`` stays (a retraction naming no value).
    ``ValueError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if not isinstance(value, str):
        raise ValueError(f"an attribute's value is a string or null, not {value!r}")
    text = _ARTICLE.sub("", " ".join(value.split()).lower())
    return text or None


def attribute_kind(scope: str) -> Kind:
    """The kind the table gives the attribute of a normalised ``scope``."""
    key = scope.rpartition("/")[2].partition(":")[0]
    return ATTRIBUTES[key].kind


# -- the prompt -----------------------------------------------------------------------------


def _example(attribute: str, value: str, shown: str | None = None, *, of: str | None = None) -> str:
    """The statement the rule extractor writes for ``value``, the speaker's or ``of``'s."""
    return statement_of(Found(attribute, value, shown), Subject(of))


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, width=79, initial_indent=indent, subsequent_indent=indent)


def _attribute_rules() -> str:
    preference = [name for name, spec in ATTRIBUTES.items() if spec.kind == "preference"]
    own_single = ", ".join(attributes(additive=False, own=True))
    own_additive = ", ".join(attributes(additive=True, own=True))
    elsewhere = "; ".join(f"{name}: family {family!r}" for name, family in ELSEWHERE.items())
    statements = (
        f'"{_example("diet", "vegetarian")}", '
        f'"{_example("pet", "dog named rex", "dog named Rex")}", '
        f'"{_example("diet", "vegan", of="sister")}", '
        f'"{_example("role", "nurse", of="sister")}".'
    )
    return f"""\
12. Family "attribute" holds what a person says about themself, or about someone
   they name, that no other family holds. Its "scope" names the attribute:
   - single-valued (one value at a time; a new value replaces the old): scope
     is the attribute's name alone. These are:
{_wrap(own_single + ".", "       ")}
     "I'm vegetarian" is scope "diet", value "vegetarian".
   - additive (several hold at once): scope "<attribute>:<item>", the item
     being the value as lowercase words joined by hyphens. These are:
{_wrap(own_additive + ".", "       ")}
     "I have a dog named Rex" is scope "pet:dog-named-rex", value
     "dog named rex"; "I'm allergic to peanuts" is "allergy:peanuts".
   - someone else's: "person:<relation>/" before the attribute, the relation
     as the message names it, lowercase words joined by hyphens (sister,
     father, boss): "My sister is vegan" is scope "person:sister/diet", "My
     sister is a nurse" is "person:sister/role". Any attribute above may
     follow, and also these:
{_wrap(", ".join(sorted(ELSEWHERE)) + ".", "       ")}
     Never give someone else's attribute to the speaker.
   - the speaker's own attributes that another family holds, never
     "attribute":
{_wrap(elsewhere + ".", "       ")}
   Write attribute names exactly as listed, with their underscores.
   "value": the normalised value, lower case, no article, a number as digits
   ("34"); null for a retraction that names no value. "kind": "fact", except
   "preference" for these:
{_wrap(", ".join(preference) + ".", "       ")}
   "statement": short, third person, without the speaker's name:
{_wrap(statements, "   ")}
   A change of a single-valued attribute ("I switched from vegetarian to
   pescatarian last month") is one claim asserting the new value, with
   "valid_from" when the change happened if the message says. Something that
   stops being true ("I'm not vegan any more", "my dog died") is polarity
   "retract" in the same scope.
13. Only what the speaker plainly states makes a claim. Questions ("Should I go
   vegan?"), hypotheticals ("If I were vegan ..."), wishes ("I wish I had a
   dog"), maybes ("I might get a cat"), quotes ('She said "I am vegan"'), jokes,
   role-play and general statements ("Studies show vegetarians live longer")
   make none. When the speaker is the assistant, its words are no claim about
   the user.
"""


def _family_line(description: str) -> str:
    return f"- {FAMILY} (kinds: fact, preference; scope: see rule 12): {description}"


def system_prompt(schema: Schema) -> str:
    """The system message: ``claims-v2``'s, with rules 12 and 13 about open attributes
    when ``schema`` has family ``attribute``."""
    text = claims_v2.system_prompt(schema)
    family = schema.families.get(FAMILY)
    if family is None:
        return text
    v1_line = next(line for line in text.splitlines() if line.startswith(f"- {FAMILY} "))
    rules, marker, families = text.partition("\nFamilies:\n")
    assert marker  # claims-v1 is frozen: this holds for as long as it exists
    families = families.replace(v1_line, _family_line(family.description))
    return rules + _attribute_rules() + marker + families


def user_prompt(event: SourceEvent) -> str:
    """``claims-v1``'s user message with who spoke (the user, the assistant, a tool)."""
    speaker = event.role or "not said"
    head, marker, rest = claims_v1.user_prompt(event).partition("Message:\n")
    return f"{head}Speaker: {speaker}\n{marker}{rest}"


def response_schema(schema: Schema) -> dict[str, JsonValue]:
    """``claims-v2``'s answer schema; with family ``attribute`` in ``schema``, each
    claim is either an ``attribute`` claim (scope by :func:`scope_pattern`, value a
    string or ``null``) or ``claims-v2``'s claim of any other family."""
    answer: Any = claims_v2.response_schema(schema)  # nested JSON, navigated freely
    if FAMILY not in schema.families:
        result: dict[str, JsonValue] = answer
        return result
    other = answer["properties"]["claims"]["items"]
    attribute = copy.deepcopy(other)
    others = [name for name in other["properties"]["family"]["enum"] if name != FAMILY]
    other["properties"]["family"] = {"type": "string", "enum": others}
    attribute["properties"].update(
        family={"type": "string", "enum": [FAMILY]},
        kind={"type": "string", "enum": sorted({str(s.kind) for s in ATTRIBUTES.values()})},
        scope={
            "type": "string",
            "pattern": scope_pattern(),
            "description": '"<attribute>", "<attribute>:<item>" or '
            '"person:<relation>/<attribute>[:<item>]".',
        },
        value={"type": ["string", "null"], "description": "Lower case, no article; or null."},
    )
    answer["properties"]["claims"]["items"] = {"anyOf": [attribute, other]}
    result = answer
    return result
