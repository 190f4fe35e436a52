"""The default extractor: offline, deterministic, rule-based.

:class:`RuleExtractor` proposes claims about the event's own subject (the
speaker: "I", "my", "me", "we") from first-person statements. It splits the
text into clauses (:func:`memledger.domain.text.clauses`), skips questions
("Do I live in Paris?"), conditions and hypotheticals ("If I moved to ...",
"Maybe ..."), quoted text and what others are reported to say ("my friend said
she lives in Paris" gives only what "my friend NAME" says about the speaker),
and tries the matchers below in order, taking the first that applies. Every
claim is grounded in the exact clause it came from and has confidence 0.65.

Recognised (patterns are case-insensitive; "X" is the value as written):

=======================  =========  ===================  =====================================
family                   kind       scope                patterns
=======================  =========  ===================  =====================================
``plan``                 fact       ``plan:<slug>``      "I'm planning (to) X", "I plan to X",
                                                         "my plan is to X", "we're going to X",
                                                         "the X plan (is on)"; off: "X is off /
                                                         cancelled / called off / scrapped /
                                                         on hold", "I cancelled / called off /
                                                         scrapped / dropped X", "I'm no longer
                                                         planning X", "I stopped planning X"
(retractions)            as below   as below             "I no longer X", "I stopped / quit /
                                                         gave up X", "I don't X anymore", "I'm
                                                         not X-ing anymore", "I left X"
``delivery_preference``  preference ``global``           "send / deliver / email (me) my digest
                                                         / newsletter / it on Fridays / daily /
                                                         every Monday", "I'd like my digest
                                                         weekly", "Daily for the rest of
                                                         October please", "Friday again from
                                                         November 1"
``primary_framework``    preference ``global``           "I love / use / prefer / work with X",
                                                         "I switched / moved / migrated to X",
                                                         "X is my favorite" (X a known
                                                         framework, canonical name)
``tool``                 fact       ``tool:<slug>``      "I use / I'm using / Uses X" (not a
                                                         framework; a list gives one each), "I
                                                         switched / migrated to X"
``home_city``            fact       ``global``           "I live in X", "I'm based in X",
                                                         "Based in X", "I moved / relocated /
                                                         I've moved to X", "I've lived in X"
``employer``, ``role``   fact       ``global``           "I work at / for X (as a R)", "I
                                                         joined X", "I'm a / an R at X", "I'm a
                                                         R", "I work as a R (at X)"
``likes``                preference ``item:<slug>``      "I love / like / enjoy / adore X", "X
                                                         is my favorite", "my favorite Y is
                                                         X"; dislike: "I hate / dislike / can't
                                                         stand / don't like X"
``activity``             fact       ``work:<slug>``      "I build X", "I'm building X", "I work
                                                         on X", "I'm working on X", "Builds X"
``habit``                fact       ``habit:<slug>``     "I X every morning / day / week", "I X
                                                         daily", "I usually X", "Every morning
                                                         I X"
``relationship``         fact       ``person:<slug>``    "my wife / sister / friend / boss ...
                                                         NAME", "NAME is my sister", "NAME, my
                                                         boss", "my boss is NAME" (any clause)
``instruction``          procedure  ``rule:<slug>``      a user's turn (``role="user"`` only):
                         preference                      "Always / Never X (when I ask about
                                                         Y)", "From now on X", "I prefer X"
                                                         (:mod:`memledger.domain.standing`);
                                                         value ``{rule, when}``
=======================  =========  ===================  =====================================

"Actually, ..." and "Correction: ..." are read as the statement they introduce:
the commit turns a different value in the same slot into an UPDATE. A
retraction is a claim with ``polarity="retract"``, the value that stopped being
true and the same scope as what it retracts ("I no longer use TensorFlow":
tool ``TensorFlow``; a known framework is retracted as the primary framework
too, which the commit closes only where it holds that value); its statement
keeps a cue for readers ("No longer uses TensorFlow", "Plan is off: NeurIPS
submission"). A positive claim whose statement would read as a retraction
("Plan: quit my job") is dropped, with its reason.

**Paraphrases.** A clause may open with a time phrase or a discourse marker
("These days, ...", "Two weeks ago ...", "Honestly ..."); perfect and
progressive forms count ("I've been using X", "I've worked at X"). A value ends
before any time phrase, including phrases of the past and vague ones ("two
weeks ago", "over the weekend", "a while ago", "nowadays":
``find_all(..., past=True)``). A name that still looks wrongly cut (a
lowercase time or number word in it, a trailing function word, a lowercase
word in a capitalised place name) gives no claim: the worker still stores the
turn as an episode. ``tests/paraphrases.py`` measures this.

**Scopes.** ``<slug>`` is :func:`memledger.domain.text.slug` of the item:
lowercase ascii words joined by ``-``, stop words ("the", "my", "a", "to", ...)
left out. Tools and people are not stemmed (``tool:tensorflow``,
``person:priya``); items, plans, habits and work are, so inflections agree
(``habit:review-flashcard`` for "I review flashcards every morning" and "I
stopped reviewing flashcards"). Plans also drop "plan(ning)", "go(ing)",
"trip", "visit" and "travel": "I'm planning the NeurIPS submission" and "The
NeurIPS submission plan is off" both give ``plan:neurips-submission``; "I'm
planning a trip to Japan", "we're going to Japan" and "the Japan trip is off"
give ``plan:japan``. Words with a capital letter are never stemmed. A verb and
its noun do not agree: "submit to NeurIPS" is ``plan:submit-neurips``.

**Valid time.** Time phrases in the clause (:mod:`memledger.domain.timephrases`)
set ``valid_from``/``valid_until``: the first start and the first end found.
For a move, a join or a switch, a window ("next month") only sets the start,
and told in the past tense ("I joined X in March") a phrase starting after the
event is ignored; "I moved to X two weeks ago" starts two weeks before the
event, "a while ago" sets nothing.
Plans and relationships take no valid time (a plan's dates belong to the plan).

**Long turns.** Of a turn longer than :data:`LEAD_CHARS` characters (a pasted
document, log or source file) the rules read only its leading part, cut where a
paragraph, a line or a sentence ends (:func:`lead`): what the speaker says of
themself comes with the paste ("Here is my CV, I live in Lyon now: ..."), the rest
is material whose first-person sentences are not theirs, and the rules' cost stays
bounded however long the turn (the turn itself is still stored whole, as its
episode, and indexed as passages).

Clauses longer than :data:`MAX_CLAUSE_CHARS` are skipped. Within one event,
claims of one (family, scope) whose intervals overlap keep
only one: a positive claim over a retraction, else the later clause.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from memledger.domain.decide import has_invalidation_cue
from memledger.domain.records import Claim, ExtractorInfo, SourceEvent
from memledger.domain.standing import standing
from memledger.domain.text import Segment, clauses, sentences, slug
from memledger.ports import Extraction
from memledger.write.extract._changes import delivery, plans, relationships, retractions
from memledger.write.extract._clause import Clause, Dropped, Proposal, hedged, prepare
from memledger.write.extract._identity import activity, employment, habit, home_city, likes, tech
from memledger.write.extract._predicates import attributes

__all__ = ["CONFIDENCE", "LEAD_CHARS", "VERSION", "RuleExtractor", "instruction", "lead", "propose"]

VERSION = "5"
"""Version of the rules, recorded in lineage; bump it when what they propose changes."""

CONFIDENCE = 0.65
"""A first explicit mention (DESIGN, "Write path details")."""

Matcher = Callable[[Clause], "Sequence[Proposal | Dropped] | None"]

MATCHERS: tuple[Matcher, ...] = (
    plans,
    attributes,
    retractions,
    delivery,
    tech,
    home_city,
    employment,
    likes,
    activity,
    habit,
)
"""Tried in this order on each clause; the first that applies wins."""

MAX_CLAUSE_CHARS = 500
"""Longer clauses are prose, not statements about the speaker: they are skipped
(which also bounds the cost of the patterns on adversarial input)."""

LEAD_CHARS = 20_000
"""Characters of a turn the rules read claims from (see "Long turns" above)."""


def lead(text: str) -> str:
    """The part of ``text`` the rules read: all of it up to :data:`LEAD_CHARS`
    characters, else its first :data:`LEAD_CHARS` cut at the last paragraph, line or
    sentence end in their second half (at :data:`LEAD_CHARS` when there is none)."""
    if len(text) <= LEAD_CHARS:
        return text
    for mark in ("\n\n", "\n", ". ", "! ", "? "):
        end = text.rfind(mark, LEAD_CHARS // 2, LEAD_CHARS)
        if end >= 0:
            return text[: end + 1]
    return text[:LEAD_CHARS]


_QUOTES = {'"': '"', "“": "”", "‘": "’", "«": "»"}


def _quoted(text: str) -> list[tuple[int, int]]:
    """The quoted regions of ``text``: from an opening quote to its closing one."""
    regions: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        close = _QUOTES.get(text[i])
        if close is not None and (text[i] != "‘" or i == 0 or not text[i - 1].isalnum()):
            end = text.find(close, i + 1)
            if end < 0:
                break
            regions.append((i, end))
            i = end + 1
            continue
        i += 1
    return regions


def _window(proposal: Proposal, clause: Clause) -> tuple[datetime | None, datetime | None]:
    if proposal.timing == "none":
        return None, None
    phrases = proposal.times if proposal.timing == "own" else clause.times
    start: datetime | None = None
    end: datetime | None = None
    lasting = proposal.timing in ("change", "past")
    for phrase in phrases:
        if (
            proposal.timing == "past"
            and phrase.start is not None
            and phrase.start > clause.reference
        ):
            continue
        if start is None:
            start = phrase.start
        if end is None and not (lasting and phrase.form == "window"):
            end = phrase.end
    if start is not None and end is not None and end <= start:
        end = None
    return start, end


def _claim(proposal: Proposal, clause: Clause) -> Claim:
    start, end = _window(proposal, clause)
    return Claim(
        family=proposal.family,
        kind=proposal.kind,
        statement=proposal.statement,
        value=proposal.value,
        scope=proposal.scope,
        valid_from=start,
        valid_until=end,
        grounding=clause.segment.text,
        confidence=CONFIDENCE,
        polarity="retract" if proposal.retraction else "assert",
    )


def _overlap(a: Claim, b: Claim, reference: datetime) -> bool:
    a_start, b_start = a.valid_from or reference, b.valid_from or reference
    return (a.valid_until is None or b_start < a.valid_until) and (
        b.valid_until is None or a_start < b.valid_until
    )


def _settle(found: list[Claim], reference: datetime, dropped: list[str]) -> tuple[Claim, ...]:
    """One claim per (family, scope) and instant: a positive claim beats a retraction,
    else the later clause wins."""
    kept: list[Claim] = []
    for claim in found:
        rivals = [
            c
            for c in kept
            if (c.family, c.scope) == (claim.family, claim.scope) and _overlap(c, claim, reference)
        ]
        if claim.polarity == "retract" and any(r.polarity == "assert" for r in rivals):
            dropped.append(f"{claim.family}: {claim.statement!r} overlaps a positive claim")
            continue
        for rival in rivals:
            kept.remove(rival)
            dropped.append(f"{claim.family}: {rival.statement!r} superseded by a later clause")
        kept.append(claim)
    return tuple(kept)


def _inside(segment: Segment, regions: Sequence[tuple[int, int]]) -> bool:
    return any(start <= segment.start <= end for start, end in regions)


def propose(text: str, reference: datetime) -> Extraction:
    """The claims the rules propose for ``text`` said at ``reference`` (aware)."""
    regions = _quoted(text)
    hedges = [s for s in sentences(text) if hedged(s)]
    found: list[Claim] = []
    dropped: list[str] = []
    carried: Segment | None = None
    for segment in clauses(text):
        if (
            segment.end - segment.start > MAX_CLAUSE_CHARS
            or _inside(segment, regions)
            or any(h.start <= segment.start < h.end for h in hedges)
        ):
            carried = None
            continue
        if carried is not None:
            segment = Segment(
                carried.start, segment.end, text[carried.start : segment.end], segment.question
            )
            carried = None
        clause = prepare(segment, text, reference)
        if clause.start >= clause.end:
            # "From November 1, I'm based in Berlin": the phrase belongs to what follows.
            carried = segment if clause.times else None
            continue
        if segment.question and not clause.request:
            continue
        results: list[Proposal | Dropped] = []
        for matcher in (delivery,) if segment.question else MATCHERS:
            outcome = matcher(clause)
            if outcome is not None:
                results.extend(outcome)
                if matcher is attributes and not any(  # a commute is no habit besides
                    getattr(r, "scope", None) == "commute" for r in outcome
                ):  # "I go swimming every morning": a sport and a habit
                    results.extend(habit(clause) or [])
                break
        if not segment.question:
            results.extend(relationships(clause))
        for result in results:
            if isinstance(result, Dropped):
                dropped.append(result.reason)
            elif not result.retraction and has_invalidation_cue(result.statement):
                dropped.append(f"{result.family}: {result.statement!r} would read as a retraction")
            else:
                found.append(_claim(result, clause))
    return Extraction(claims=_settle(found, reference, dropped), dropped=tuple(dropped))


class RuleExtractor:
    """The default extractor (see the module docstring). Stateless and thread-safe."""

    _INFO = ExtractorInfo(kind="rules", name="rules", version=VERSION)

    @property
    def info(self) -> ExtractorInfo:
        return self._INFO

    def extract(self, event: SourceEvent) -> Extraction:
        """Propose claims from ``event.text``; time phrases resolve against
        ``event.occurred_at``; a user's turn also gives its standing instruction or
        preference (:func:`instruction`). Never raises on free text."""
        text = lead(event.text)
        found = propose(text, event.occurred_at)
        said = instruction(text) if event.role == "user" else None
        if said is None:
            return found
        claims, dropped = list(found.claims), list(found.dropped)
        if said.kind == "procedure":  # "Always use X" asks the assistant; it is no habit
            for claim in found.claims:
                if claim.grounding and said.grounding and claim.grounding in said.grounding:
                    claims.remove(claim)
                    dropped.append(f"{claim.family}: {claim.statement!r} is an instruction")
        return Extraction(claims=(*claims, said), dropped=tuple(dropped))


_RULE_NOISE = ("always", "never", "please", "not", "dont", "don", "make", "sure", "prefer")
"""Words left out of an instruction's scope slug: "Always use semicolons" and "Never use
semicolons" are one rule, the later replacing the earlier."""


def instruction(text: str) -> Claim | None:
    """The first standing instruction or stated preference of a user's turn, as a claim
    of family ``instruction``: kind ``procedure`` for an instruction ("Always ..."),
    ``preference`` for a preference ("I prefer ..."), scope ``rule:<slug>`` of what it
    asks, value ``{"rule", "when"}``; ``None`` when the turn states none. Only for
    turns the user said: between peers there is no assistant to instruct, and the
    assistant's own words instruct nobody."""
    said = standing(text)
    if said is None:
        return None
    key = slug(said.rule, stem_words=True, drop=_RULE_NOISE) or "rule"
    label = "Instruction" if said.kind == "instruction" else "Preference"
    statement = f"{label}: {said.rule}" + (f" (when asking about {said.when})" if said.when else "")
    return Claim(
        family="instruction",
        kind="procedure" if said.kind == "instruction" else "preference",
        statement=statement,
        value={"rule": said.rule, "when": said.when},
        scope=f"rule:{key}",
        grounding=text[said.start : said.end].strip(),
        confidence=CONFIDENCE,
    )
