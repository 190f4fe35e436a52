"""Where a request's context comes from: memory always, the shared corpus for a general
how-to or a named corpus entity, long context only for material supplied now
(:func:`route`, the first step of :func:`memledger.read.context.build`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memledger.domain.records import JsonValue
from memledger.read.when import question_time

__all__ = ["Routing", "route", "specificity"]


_HOWTO = re.compile(
    r"^\s*(?:how\s+(?:do|can|should|would|does)\s+(?:i|we|you|one|a|an|the)\b|how\s+to\b"
    r"|what(?:'s|\s+is|\s+are)\s+the\s+(?:best\s+)?(?:way|steps|process|procedure|policy|rules?"
    r"|requirements?)\b|steps\s+to\b|explain\b|what\s+does\s+.+\s+mean\b|is\s+there\s+a\s+way\b)",
    re.IGNORECASE,
)
_PERSONAL = re.compile(r"\b(?:i|me|my|mine|we|us|our|ours|you\s+told|you\s+said)\b", re.IGNORECASE)
_RECALLING = re.compile(
    r"\b(?:last\s+time|before|earlier|previous(?:ly)?|remember|decided|agreed|told|said"
    r"|mentioned|again|like\s+the\s+last|as\s+usual|we\s+discussed)\b",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"\b\d{3,}\b|\b[A-Z]{2,}[-_]?\d+\b|\b[a-z]+[-_]\d+\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Routing:
    """Where a request's context comes from, and why."""

    memory: bool
    corpus: bool
    long_context: bool
    specificity: float
    """0 (a general how-to anyone could ask) to 1 (about this user, their past, named ids)."""
    reasons: tuple[str, ...]
    entities: tuple[str, ...] = ()
    """The corpus entities the request or the live state named (also searched for)."""

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "memory": self.memory,
            "corpus": self.corpus,
            "long_context": self.long_context,
            "specificity": round(self.specificity, 3),
            "reasons": list(self.reasons),
            "entities": list(self.entities),
        }


def specificity(request: str, *, at: datetime, names: frozenset[str] = frozenset()) -> float:
    """How much ``request`` is about this user and their history rather than general
    knowledge: first person (0.35), a time it refers to (0.3), an identifier such as
    an order number (0.2), a reference to what was said or decided before (0.15), a
    person the tenant knows (0.2); capped at 1."""
    score = 0.0
    if _PERSONAL.search(request):
        score += 0.35
    if question_time(request, at) is not None:
        score += 0.3
    if _IDENTIFIER.search(request):
        score += 0.2
    if _RECALLING.search(request):
        score += 0.15
    words = {w.casefold() for w in re.findall(r"[^\W_]+", request)}
    if names and any(part in words for name in names for part in _parts(name)):
        score += 0.2
    return min(1.0, score)


def _parts(name: str) -> list[str]:
    return [p.casefold() for p in re.findall(r"[^\W_]+", name) if len(p) > 2 and not p.isdigit()]


def _words(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.casefold()))


def route(
    request: str,
    *,
    at: datetime,
    names: frozenset[str] = frozenset(),
    corpus_entities: frozenset[str] = frozenset(),
    has_corpus: bool = False,
    has_material: bool = False,
    howto_below: float = 0.5,
    live_words: str = "",
) -> Routing:
    """Memory always (what the user said before can matter to any request); the corpus
    for a general how-to (specificity below ``howto_below``) or when the request, or
    the live state (``live_words``: an order on ``CREDIT_HOLD`` brings the handbook's
    "Credit hold" section), names a known corpus entity (a document title or section
    heading); long context only when material is supplied now."""
    score = specificity(request, at=at, names=names)
    reasons = [f"specificity {score:.2f}"]
    howto = _HOWTO.search(request) is not None
    folded = f" {_words(f'{request} {live_words}')} "
    named = sorted(e for e in corpus_entities if len(e) > 3 and f" {_words(e)} " in folded)
    corpus = False
    if has_corpus:
        if howto and score < howto_below:
            corpus = True
            reasons.append("a general how-to: shared documents")
        if named:
            corpus = True
            reasons.append(f"names corpus entities: {', '.join(named[:3])}")
        if not corpus:
            reasons.append("specific to this user: memory only")
    else:
        reasons.append("no corpus given")
    if has_material:
        reasons.append("material supplied now: long context")
    return Routing(
        memory=True,
        corpus=corpus,
        long_context=has_material,
        specificity=score,
        reasons=tuple(reasons),
        entities=tuple(named),
    )
