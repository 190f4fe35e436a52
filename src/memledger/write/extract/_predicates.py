"""The predicates of open attributes, and the matcher that reads them.

A predicate is read from the start of what follows a subject, in the normalised
text (:func:`memledger.write.extract._attributes.normalise`): "am vegan", "has a
dog named Rex", "grew up in Porto", "play the cello". Where the value itself says
what it is (a diet, a sport, an instrument, a condition, a language) it must be in
the word lists of :mod:`memledger.write.extract._vocab`; where the pattern says it
("allergic to X", "my favourite book is X", "diagnosed with X") the value is open
and ends at the first connective, time word or punctuation.
"""

from __future__ import annotations

import re

from memledger.write.extract import _pastimes, _phrasings, _travel  # noqa: F401  (registers them)
from memledger.write.extract._attributes import (
    Found,
    Subject,
    normalise,
    proposal,
    reversed_,
    shown_name,
    subject,
)
from memledger.write.extract._clause import Clause, Proposal
from memledger.write.extract._facts import (
    _ANIMAL,
    _LANGUAGE,
    _PET_ADJ,
    _animal,
    _pets,
)
from memledger.write.extract._life import (
    _INSTRUMENT,
    _KIN,
    _MAKE,
    _PRACTICE,
    _SPORT,
    _VEHICLE,
)
from memledger.write.extract._reading import (
    _PREDICATES,
    _items,
    _take,
)
from memledger.write.extract._vocab import (
    CONDITION_ADJECTIVES,
    DIETS,
    PRACTICES,
    STATUSES,
)

# -- pieces ---------------------------------------------------------------------------------

_RETRACT_OTHERWISE = re.compile(
    rf"(?:(?:sold|got rid of|gave away|traded in|totaled|crashed|wrecked)\s+(?:my|our|the)\s+"
    rf"(?P<v>(?:{_MAKE})(?:\s+\w+)?|{_VEHICLE})"
    rf"|(?:lost|had to put down|said goodbye to|rehomed|gave away)\s+(?:my|our)\s+{_PET_ADJ}"
    rf"(?P<a>{_ANIMAL}))"
)
_PET_SUBJECT = re.compile(
    rf"(?:my|our)\s+{_PET_ADJ}(?P<a>{_ANIMAL})(?:\s*,?\s+(?P<n>[a-z][\w'-]*)\s*,?)?(?=\s|$)"
    r"(?P<rest>.*)"
)
_PET_GONE = re.compile(
    r"\s*(?:just\s+|sadly\s+|recently\s+)?(?:passed away|passed|died|was put down|ran away|is gone"
    r"|went missing|crossed the rainbow bridge)"
)
_PET_NAME_IS = re.compile(
    r"\s*(?:'s name is|is named|is called|named|called)\s+(?P<n>[a-z][\w'-]*)"
)
_NOT_A_NAME = re.compile(
    r"(?:is|was|has|had|and|just|loves|likes|hates|keeps|always|never|gets|got|went|died|passed"
    r"|ran|sleeps|eats|barks|chews|can|will|would|does|did|who|which|that|also|still|really"
    r"|is|the|a|an|to|of|in|on|at|for|with|from|sadly|recently|'s)$"
)


def _pet_subject(piece: str, original: str) -> list[Found] | None:
    """ "my dog Rex ...", "our cat's name is Luna", "my dog passed away"."""
    m = _PET_SUBJECT.match(piece)
    if m is None:
        return None
    kind = _animal(m.group("a"))
    if kind is None:
        return None
    name, rest = m.group("n"), m.group("rest")
    if name is not None and _NOT_A_NAME.match(name):
        rest, name = piece[m.start("n") - 1 :], None
    if name is not None and shown_name(name, original) is None:
        rest, name = piece[m.start("n") - 1 :], None
    if name is None:
        named = _PET_NAME_IS.match(rest)
        if named is not None:
            name = named.group("n")
    gone = _PET_GONE.match(rest) is not None
    if name is None and not gone:
        return (
            [Found("pet", kind)]
            if not re.match(r"\s*(?:'s|food|bed|vet|sitter|walker|toy)", rest)
            else None
        )
    return _pets(kind, name, original, retract=gone)


_COUNTED = re.compile(
    rf"(?:a|an|one|two|three|four|five|six|\d+|a couple of)\s+(?:[a-z'-]+\s+)?(?:{_ANIMAL}"
    rf"|{_KIN})\b"
)
_ANYWHERE = re.compile(
    r"\b(?=(?:studying|majoring in|allergic to|diagnosed with|grew up in|born and raised in"
    r"|was born in|fluent in|native speaker|first language|mother tongue|taken up|took up"
    r"|picked up|favorite \w+ (?:is|has)|my (?:first|native) language)\b)"
)
_OTHER_WORDS = re.compile(r"\b(?:my|our|his|her|their|your|he|she|they|you|it|who|which)\b")


def _forms(text: str, implied: bool, *, tail: bool = False) -> list[str]:
    """The readings of a piece: as it is, and, without a subject of its own, as the
    speaker's "am ...", "am a ..." or "have ..." ("Violinist.", "Two dogs.")."""
    forms = [text]
    if not implied:
        return forms
    first = text.split(" ", 1)[0]
    if not tail or first in _TAIL_ADJECTIVES or re.match(r"\d", first):
        forms.append("am " + text)
    if not tail:
        forms.append("am a " + text)
    if _COUNTED.match(text):
        forms.append("have " + text)
    return forms


_THIRD_PERSON = re.compile(
    r"(?:studies|plays|speaks|lives|works|loves|hates|has|is|does|drives|rides|suggests?|shows?"
    r"|says|seems|makes|goes|gets|takes)\b"
)
_TAIL_ADJECTIVES = frozenset(
    [*STATUSES, *DIETS, *CONDITION_ADJECTIVES, "allergic", "from", "originally", "based", "now"]
)


def read_piece(
    piece: str, who: Subject, original: str, *, implied: bool, tail: bool = False
) -> list[Found]:
    """What a piece's predicate says (``piece`` normalised, after its subject; ``implied``
    when the piece had no subject of its own; ``tail`` for what follows an "and" in it)."""
    tagged = Subject(who.relation, who.name, original, implied)
    turned = reversed_(piece)
    readings = [(t, True) for t in turned] or [(piece, False)]
    for text, retract in readings:
        starts = [0]
        if not tail:
            for head in _ANYWHERE.finditer(text, 1):
                before = text[: head.start()]
                if _OTHER_WORDS.search(before) is None:
                    starts.append(head.start())
        for at in starts:
            past = at > 0 and re.search(r"\b(?:was|were)\s+(?:\w+\s+)?$", text[:at])
            for form in _forms(text[at:], implied or at > 0, tail=tail):
                if implied and at == 0 and form == text and _THIRD_PERSON.match(form):
                    continue  # "Studies show ...": no first person in it
                for pattern, reader in _PREDICATES:
                    m = pattern.match(form)
                    if m is None:
                        continue
                    found = reader(m, form, tagged)
                    if found:
                        if retract or past:
                            found = [
                                Found(f.attribute, f.value, f.shown, retract=True) for f in found
                            ]
                        return found
    gone = _RETRACT_OTHERWISE.match(piece)
    if gone is not None:
        if gone.group("v"):
            vehicle = _take(gone.group("v"), words=4) or gone.group("v")
            return [Found("vehicle", vehicle, retract=True, timing="past")]
        kind = _animal(gone.group("a"))
        if kind is not None:
            return [Found("pet", kind, retract=True, timing="past")]
    return []


_JOINTS = re.compile(r"\s+(?:and|but|plus|with|&)\s+")
"""Where a piece may go on with another predicate of the same subject ("34 and married
with two kids")."""
_PIECES = re.compile(r"\s*(?:[,;]|\s-\s|\s–\s|\s—\s|\.\.\.|…)\s*")
_PRONOUN = re.compile(r"(?:he|she|they)\s+(?=\S)")
_PRONOUN_ANYWHERE = re.compile(r"\b(?:he|she|they)\s")
_WHO = re.compile(r"(?:who|which|that)\s+(?=\S)")
_LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|well|so|also|and|but|then|btw|yeah|yes|no(?=\s*,)|plus|anyway|honestly"
    r"|actually|correction|update|fyi|hey|hi|hello|ah|um|uh|hmm|oops|wait|sorry|fun fact"
    r"|for the record|just so you know|heads up|as you know|as i said|like i said"
    r"|these days|nowadays|lately|now|currently|at the moment|right now|since \w+"
    r"|for context|quick note|note|side note|random fact|in fact|as of \w+|funny enough"
    r"|big life news|good news|bad news|news|sadly|unfortunately|luckily|thankfully"
    r"|for what it's worth|apparently|turns out|it turns out|i guess|i think that)"
    r"(?![\w'-])[\s,:;.!-]*)+"
)


LOOK_BACK = 300
"""How many characters before a clause are read for the person a pronoun refers to
(bounded, so a long text costs time proportional to its length)."""


def _last_other(text: str) -> Subject | None:
    """The last other person a text names ("my sister"), for "she" to refer to."""
    last = None
    for m in re.finditer(r"\b(?:my|our)\s", text):
        opened = subject(text[m.start() :], "")
        if opened is not None and opened[0].relation is not None:
            last = opened[0]
    return last


_LISTS = frozenset({"speaks", "allergy", "instrument", "sport"})


def _continued(attribute: str, piece: str) -> list[Found]:
    """A piece that goes on with the previous one's list ("Allergic: sesame, kiwi")."""
    found = []
    for item in _items(piece, 3):
        item = re.sub(r"\s+(?:ok|okay|fluent|fluently|rusty|too|as well)$", "", item)
        if attribute == "speaks" and not re.fullmatch(_LANGUAGE, item):
            continue
        if attribute == "instrument" and not re.fullmatch(_INSTRUMENT, item):
            continue
        if attribute == "sport" and not re.fullmatch(f"{_SPORT}|{_PRACTICE}", item):
            continue
        found.append(Found(attribute, PRACTICES.get(item, item)))
    return found


def attributes(clause: Clause) -> list[Proposal] | None:
    """The open attributes a clause states (see
    :mod:`memledger.write.extract._attributes`); ``None`` when it states none."""
    original = clause.body
    text = normalise(original)
    proposals: list[Proposal] = []
    self_ = Subject(None, text=original)
    carried: Subject | None = None
    listing: str | None = None
    # whom "she" refers to: the last person named shortly before this clause
    before = clause.text[max(0, clause.start - LOOK_BACK) : clause.start]
    mentioned = _last_other(normalise(before)) if _PRONOUN_ANYWHERE.search(text) else None
    for raw in _PIECES.split(text):
        piece = _LEAD.sub("", raw).strip()
        if not piece:
            continue
        pets = _pet_subject(piece, original)
        if pets:
            proposals.extend(proposal(f, self_, clause) for f in pets)
            carried = self_
            continue
        implied = False
        pronoun = _PRONOUN.match(piece)
        who_ = _WHO.match(piece)
        opened = subject(piece, original)
        if pronoun is not None:
            if mentioned is None:
                carried = None
                continue
            who, rest = (
                Subject(mentioned.relation, mentioned.name, original),
                piece[pronoun.end() :],
            )
        elif who_ is not None:
            if carried is None or carried.relation is None:
                carried = None  # "who" is someone just named, not the speaker
                continue
            who, rest = carried, piece[who_.end() :]
        elif opened is None:
            who, rest, implied = carried or self_, piece, True
        else:
            who, rest = opened
        if who.relation is not None:
            mentioned = who
        carried = who
        found = read_piece(rest, who, original, implied=implied)
        longest = 8 if listing == "speaks" else 4  # languages are a closed list: safe further
        if not found and implied and listing is not None and len(rest.split()) <= longest:
            found = _continued(listing, rest)
        listing = (
            next((f.attribute for f in found if f.attribute in _LISTS), None) if found else None
        )
        if not found and opened is not None and who.relation is None:
            later = _last_other(rest)
            if later is not None:
                carried = later  # "... finding out my manager, who ... grew up in Nairobi"
        seen = {f.value for f in found}
        for joint in _JOINTS.finditer(rest):
            tail = _LEAD.sub("", rest[joint.end() :])
            if not found and _PRONOUN.match(tail) is None and subject(tail, original) is None:
                continue  # a list goes on only after something was found
            tail_who, own_subject = who, True
            named = _PRONOUN.match(tail)
            if named is not None:
                if mentioned is None:
                    break
                tail_who, tail = mentioned, tail[named.end() :]
            elif (opened_tail := subject(tail, original)) is not None:
                tail_who, tail = opened_tail
            else:
                own_subject = False
                if joint.group(0).strip() == "with":
                    tail = "have " + tail
            for more in read_piece(tail, tail_who, original, implied=not own_subject, tail=True):
                if more.value not in seen:
                    seen.add(more.value)
                    proposals.append(proposal(more, tail_who, clause))
        proposals.extend(proposal(f, who, clause) for f in found)
    return proposals or None
