"""The synthetic population ``memledger bench recall`` reads: per subject a chat stream
of six turns stating two or three facts each (home city, employer and role, likes,
tools, relatives, habits, plans, a digest preference, a later move) among everyday
turns, and the questions asked of it (:class:`Question`: four in five about a stated
fact, one in five about something never said)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memledger.domain.records import Actor, Grant, SourceEvent
from memledger.eval.synthetic import FAMILIES

MEASURED = "tenant-main"
OTHERS = ("tenant-b", "tenant-c", "tenant-d")
RECORDS_PER_SUBJECT = 50
WARMUP = 20
K = 10

CITIES = """Delhi Bangalore Berlin Lisbon Toronto Nairobi Osaka Lima Oslo Porto Krakow Hanoi
Quito Dakar Tunis Seville Dublin Montreal Denver Austin Valencia Bogota Santiago Manila Jakarta
Seoul Taipei Vienna Prague Budapest Helsinki Tallinn Riga Vilnius Zagreb Sofia Athens Cairo Accra
Kigali""".split()
ORGS = """Acme Globex Initech Umbrella Hooli Vandelay Wonka Tyrell Cyberdyne Soylent Wayne Oscorp
Monarch Gringotts Aperture Dunder Stark Wernham Nakatomi Gekko""".split()
ROLES = """nurse teacher chef pilot architect pharmacist electrician accountant librarian
surveyor translator paramedic carpenter florist economist""".split()
FOODS = """sushi ramen tacos pizza olives cilantro dumplings falafel paella risotto kimchi
pierogi tamales curry lasagne hummus pho gnocchi baklava churros mango durian oysters tofu
okra beetroot anchovies""".split()
TOOLS = """Figma Excel Notion Trello Slack Obsidian Blender Photoshop Jira Airtable Canva Miro
Zotero Asana Logseq""".split()
RELATIVES = ["sister", "brother", "wife", "husband", "friend", "cousin", "boss", "neighbour"]
NAMES = """Anna Ravi Mei Tom Priya Lucas Amara Kenji Sofia Omar Ines Mateo Leila Jonas Yara
Felix Nadia Tariq Elena Marco Zainab Hugo Chiara Kwame""".split()
HABITS = """meditate journal stretch swim cycle row sketch""".split()
PLANS = """Japan Iceland Peru Morocco Vietnam Norway Chile Kenya Portugal Canada""".split()
SKILLS = """pottery Portuguese sailing welding calligraphy salsa knitting archery fencing""".split()
DAYS = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"]

_FILL: dict[str, list[str]] = {
    "city": CITIES,
    "name": NAMES,
    "food": FOODS,
    "dish": "soup stew salad curry pie casserole stir-fry omelette".split(),
    "book": "Dune Middlemarch Beloved Rebecca Emma Ulysses Solaris Persuasion Kindred".split(),
    "film": "Alien Amelie Arrival Heat Parasite Vertigo Rashomon Paprika Coco Up".split(),
    "transport": "train bus ferry tram flight".split(),
    "topic": """solar panels interest rates coral reefs sleep research urban gardening
        electric cars ancient Rome jazz history deep sea mining chess openings""".split("\n"),
    "thing": "boiler roof gutter fence heater window lease insurance invoice".split(),
    "pro": "plumber landlord accountant mechanic electrician locksmith".split(),
    "sport": "football basketball cricket rugby tennis hockey volleyball".split(),
    "weather": "cold and rainy sunny and warm foggy windy and grey humid".split(" and "),
    "count": [str(n) for n in range(5, 95, 5)],
    "gift": "stamps postcards teapots minerals comics fountain pens".split(),
    "project": "mobile app billing dashboard search onboarding checkout".split(),
}
_CHAT = [
    "Can you suggest a recipe with {food} and {food} for tonight?",
    "The {transport} to {city} was delayed by {count} minutes this morning.",
    "Finished reading {book} last night, the ending surprised me.",
    "Our team shipped the {project} release after a long week.",
    "The {sport} game went to overtime yesterday, what a finish.",
    "Remind me to call the {pro} about the {thing} on Thursday.",
    "Drafting an email to {name} about the {thing} paperwork.",
    "The weather in {city} turned {weather} again.",
    "Watched {film} with {name}; the soundtrack was great.",
    "Need ideas for a birthday gift for {name}, who collects {gift}.",
    "Summarise this article about {topic} for me.",
    "How long should a {dish} with {food} simmer?",
    "{name} recommended a bakery near the old harbour in {city}.",
    "Spent the afternoon fixing the {thing} with {name}.",
    "What are good day trips from {city} by {transport}?",
    "The {project} demo went better than expected today.",
    "Explain {topic} like I'm twelve, please.",
    "Booked a table for {count} people at a {food} place downtown.",
    "The museum in {city} had a great exhibit on {topic}.",
    "Translate this note for {name} into Spanish: see you at the station.",
]
ABSENT = [
    ("What is my blood type?", "blood"),
    ("Do I own a saxophone?", "saxophone"),
    ("Who is my dentist?", "dentist"),
    ("What is my passport number?", "passport"),
    ("Have I ever been skydiving?", "skydiving"),
    ("What breed is my parrot?", "parrot"),
    ("Which vaccine did I receive?", "vaccine"),
    ("What is my shoe size?", "shoe"),
    ("What is my locker combination?", "locker"),
    ("What is my licence plate?", "licence"),
]
SLOT_FAMILIES = ("home_city", "employer", "role", "likes", "delivery_preference")


@dataclass(frozen=True, slots=True)
class Question:
    subject: str
    text: str
    family: str | None
    """The family of the fact asked about; ``None``: never said, recall should abstain."""
    keyword: str
    """A word of the expected record (or of the absent topic)."""


@dataclass(frozen=True, slots=True)
class Subject:
    subject: str
    turns: tuple[str, ...]
    questions: tuple[Question, ...]


def _fill(template: str, rng: random.Random) -> str:
    out = template
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        out = out[:start] + rng.choice(_FILL[out[start + 1 : end]]).strip() + out[end + 1 :]
    return out


def _profile(subject: str, records: int, rng: random.Random) -> Subject:
    """A subject whose turns leave about ``records`` open records: six turns of
    facts (two or three each), a third of them moving city later, and chat."""
    city, org, role = rng.choice(CITIES), rng.choice(ORGS), rng.choice(ROLES)
    f1, f2, f3, f4 = rng.sample(FOODS, 4)
    t1, t2 = rng.sample(TOOLS, 2)
    (r1, r2), (n1, n2), (h1, h2) = (
        rng.sample(RELATIVES, 2),
        rng.sample(NAMES, 2),
        rng.sample(HABITS, 2),
    )
    trip, skill, day = rng.choice(PLANS), rng.choice(SKILLS), rng.choice(DAYS)
    facts = [
        f"I live in {city} and I work at {org} as a {role}.",
        f"I love {f1}. I can't stand {f2}. I also enjoy {f3}.",
        f"I use {t1} for most of my work. My {r1} {n1} is visiting next week.",
        f"I {h1} every morning. I'm planning a trip to {trip}.",
        f"I like {f4}. I use {t2} at home. My {r2} {n2} is coming for dinner on Friday.",
        f"I usually {h2} on weekends. I'm planning to learn {skill}.",
    ]
    asked = [
        ("Which company do I work for?", "employer", org),
        ("What is my role at work?", "role", role),
        (f"Do I like {f1}?", "likes", f1),
        (f"How do I feel about {f2}?", "likes", f2),
        (f"Would I enjoy a plate of {f3}?", "likes", f3),
        (f"Is {f4} something I like?", "likes", f4),
        (f"How often do I use {t1}?", "tool", t1),
        (f"Do I still use {t2}?", "tool", t2),
        (f"Who is {n1}?", "relationship", n1),
        (f"What do I know about {n2}?", "relationship", n2),
        ("What do I do every morning?", "habit", h1),
        ("What do I do on weekends?", "habit", h2),
        (f"Am I still planning the {trip} trip?", "plan", trip),
        (f"Am I still planning to learn {skill}?", "plan", skill),
    ]
    count = 15 + len(facts)  # fifteen facts; each fact turn is also an episode
    if rng.random() < 0.5:
        facts[3] += f" Please send my digest on {day}."
        asked.append(("When should my digest arrive?", "delivery_preference", day[:-1]))
        count += 1
    moved = rng.random() < 1 / 3  # one more episode; the new city replaces the old one
    turns = [_fill(rng.choice(_CHAT), rng) for _ in range(max(0, records - count - moved))]
    for n, fact in enumerate(facts):  # in order, spread over the first turns
        turns.insert(min(len(turns), n * 2), fact)
    if moved:
        city = rng.choice([c for c in CITIES if c != city])
        turns.insert(rng.randint(len(turns) // 2, len(turns)), f"I moved to {city} last month.")
    asked.append(("Where do I live these days?", "home_city", city))
    questions = [Question(subject, text, family, word) for text, family, word in asked]
    questions += [Question(subject, text, None, word) for text, word in ABSENT]
    return Subject(subject, tuple(turns), tuple(questions))


def population(tenant: str, records: int, *, seed: int) -> list[Subject]:
    """The subjects of one tenant, about ``records`` open records in all."""
    rng = random.Random(f"{seed}:{tenant}")
    count = max(1, round(records / RECORDS_PER_SUBJECT))
    share, extra = divmod(records, count)
    return [_profile(f"u{n:06d}", share + (n < extra), rng) for n in range(count)]


def events(
    tenant: str,
    subjects: Sequence[Subject],
    *,
    start: datetime = datetime(2025, 1, 6, 9, tzinfo=UTC),
    span: timedelta = timedelta(days=300),
) -> Iterator[SourceEvent]:
    """The subjects' turns, one round of every subject after another, in time order."""
    grants = frozenset(Grant(family=f) for f in FAMILIES)
    rounds = max((len(s.turns) for s in subjects), default=0)
    slots = max(1, rounds * len(subjects))
    for r in range(rounds):
        for i, person in enumerate(subjects):
            if r >= len(person.turns):
                continue
            yield SourceEvent(
                tenant=tenant,
                event_id=f"{person.subject}-{r}",
                subject=person.subject,
                actor=Actor(id=person.subject, authenticated=True, grants=grants),
                channel="chat",
                occurred_at=start + span * ((r * len(subjects) + i) / slots),
                text=person.turns[r],
                sequence=r + 1,
                metadata={"session": f"{person.subject}-s{r // 10}"},
            )
