"""Synthetic but realistic conversation turns for write benchmarks.

Many tenants and subjects, each subject a chat stream with increasing
sequences and times; a mix of turns the rule extractor turns into claims
(places, employers, likes, tools, plans and their cancellation, people,
habits, digest preferences), corrections, and chatter the prefilter drops.
Deterministic for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from memledger.domain.records import Actor, Grant, SourceEvent

CITIES = ["Delhi", "Bangalore", "Berlin", "Lisbon", "Toronto", "Nairobi", "Osaka", "Lima"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"]
ROLES = ["data scientist", "nurse", "teacher", "product manager", "chef", "pilot"]
FOODS = ["sushi", "ramen", "tacos", "pizza", "olives", "cilantro", "dark chocolate"]
TOOLS = ["PyTorch", "JAX", "TensorFlow", "Figma", "Excel", "Notion"]
PLANS = ["the NeurIPS submission", "a trip to Japan", "the kitchen renovation", "a half marathon"]
PEOPLE = [("sister", "Anna"), ("brother", "Ravi"), ("wife", "Mei"), ("friend", "Tom")]
HABITS = ["review flashcards", "run 5k", "journal", "meditate"]
CHATTER = [
    "lol",
    "ok thanks!",
    "What do you think about that?",
    "Can you summarise the article for me?",
    "Let's pretend you're a pirate.",
    "Hmm, interesting point about the weather today.",
    "Could you draft a reply to my landlord?",
]

TENANTS = tuple(f"tenant-{n}" for n in range(4))

FAMILIES = (
    "home_city employer role likes tool primary_framework plan relationship habit "
    "delivery_preference activity conversation"
).split()


def turn_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:
        return rng.choice(CHATTER)
    templates: list[Callable[[], str]] = [
        lambda: f"I'm based in {rng.choice(CITIES)}.",
        lambda: f"I moved to {rng.choice(CITIES)} last month.",
        lambda: f"I work at {rng.choice(ORGS)} as a {rng.choice(ROLES)}.",
        lambda: f"I love {rng.choice(FOODS)}.",
        lambda: f"I can't stand {rng.choice(FOODS)}.",
        lambda: f"I use {rng.choice(TOOLS)} for most of my work.",
        lambda: f"I'm planning {rng.choice(PLANS)}.",
        lambda: f"{rng.choice(PLANS).capitalize()} plan is off.",
        lambda: "My {} {} is visiting next week.".format(*rng.choice(PEOPLE)),
        lambda: f"I {rng.choice(HABITS)} every morning.",
        lambda: "Please send my digest on Fridays.",
        lambda: "Actually, send the digest daily.",
    ]
    return rng.choice(templates)()


def events(
    count: int,
    *,
    tenants: int = 4,
    subjects: int = 200,
    seed: int = 7,
    start: datetime = datetime(2026, 1, 5, 9, tzinfo=UTC),
) -> Iterator[SourceEvent]:
    """``count`` turns spread over the tenants x ``subjects`` chat streams, in time order."""
    rng = random.Random(seed)
    sequences: dict[tuple[int, int], int] = {}
    grants = frozenset(Grant(family=f) for f in FAMILIES)
    for n in range(count):
        tenant, subject = rng.randrange(len(TENANTS)), rng.randrange(subjects)
        seq = sequences.get((tenant, subject), 0) + 1
        sequences[(tenant, subject)] = seq
        user = f"user-{subject}"
        yield SourceEvent(
            tenant=TENANTS[tenant],
            event_id=f"bench-{n}",
            subject=user,
            actor=Actor(id=user, authenticated=True, grants=grants),
            channel="chat",
            occurred_at=start + timedelta(seconds=37 * n),
            text=turn_text(rng),
            sequence=seq,
            metadata={"session": f"s-{subject}-{seq // 20}"},
        )
