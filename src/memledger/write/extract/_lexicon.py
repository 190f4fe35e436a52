"""Vocabularies and regular-expression building blocks of the rule extractor.

Closed word lists live here so the patterns in ``_identity``, ``_changes`` and
``rules`` read as sentences. Everything is data: no function here looks at an
event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

# -- regex atoms (compile with re.IGNORECASE) --------------------------------------------

AP = r"['’]"
I_ = r"I\s+"
I_AM = rf"(?:I\s+am|I{AP}m|Im)\s+"
I_HAVE = rf"(?:I\s+have|I{AP}ve|Ive)\s+"
I_WILL_BE = rf"(?:I\s+will\s+be|I{AP}ll\s+be)\s+"
WE = r"we\s+"
WE_ARE = rf"(?:we\s+are|we{AP}re)\s+"
WE_HAVE = rf"(?:we\s+have|we{AP}ve)\s+"
ADV = (
    r"(?:(?:now|currently|still|also|actually|really|just|recently|finally|mostly|mainly"
    r"|officially|already|definitely|absolutely|truly|totally|primarily|basically|personally"
    r"|honestly|literally|usually|always|normally|typically|generally|kinda|kind\s+of"
    r"|pretty\s+much|happily|proudly)\s+)*"
)
"""Adverbs allowed between a subject and its verb ("I now live in ...")."""

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"

FREQUENCY = (
    rf"(?:(?:every|each)\s+(?:single\s+)?(?:other\s+)?(?:morning|day|evening|night|afternoon"
    rf"|week|weekend|weekday|month|year|{WEEKDAY})|daily|nightly|weekly|monthly"
    r"|(?:once|twice|\d+\s+times|two\s+times|three\s+times)\s+(?:a|per|every)\s+(?:day|week|month)"
    rf"|on\s+(?:{WEEKDAY}s|weekends|weekdays)|in\s+the\s+(?:mornings?|evenings?|afternoons?)"
    r"|at\s+night|most\s+(?:days|mornings|evenings|nights|weekends))(?!\w)"
)
"""A habit's frequency: "every morning", "daily", "twice a week", "on Mondays"."""

HABITUAL = r"(?:usually|always|normally|typically|generally|regularly|often)"

# -- closed vocabularies ------------------------------------------------------------------

FRAMEWORKS: Mapping[str, str] = MappingProxyType(
    {
        alias: name
        for name, aliases in {
            "PyTorch": ("pytorch", "torch", "py torch"),
            "TensorFlow": ("tensorflow", "tf", "tensor flow", "tensorflow 2", "tf2"),
            "JAX": ("jax",),
            "Flax": ("flax",),
            "Keras": ("keras",),
            "scikit-learn": ("scikit-learn", "scikit learn", "sklearn", "scikit"),
            "XGBoost": ("xgboost",),
            "LightGBM": ("lightgbm",),
            "CatBoost": ("catboost",),
            "MXNet": ("mxnet",),
            "PyTorch Lightning": ("pytorch lightning", "pytorch-lightning"),
            "fastai": ("fastai", "fast.ai"),
            "Hugging Face Transformers": (
                "hugging face transformers",
                "huggingface transformers",
                "hf transformers",
            ),
            "LangChain": ("langchain",),
            "LlamaIndex": ("llamaindex", "llama index", "llama-index"),
            "spaCy": ("spacy",),
            "Django": ("django",),
            "Flask": ("flask",),
            "FastAPI": ("fastapi",),
            "Rails": ("rails", "ruby on rails"),
            "React": ("react", "reactjs", "react.js"),
            "Vue": ("vue", "vuejs", "vue.js"),
            "Angular": ("angular", "angularjs"),
            "Svelte": ("svelte",),
            "SvelteKit": ("sveltekit",),
            "Next.js": ("next.js", "nextjs"),
            "Nuxt": ("nuxt", "nuxt.js", "nuxtjs"),
            "Express": ("express.js", "expressjs"),
            "Spring Boot": ("spring boot",),
            "Laravel": ("laravel",),
            "Symfony": ("symfony",),
            "ASP.NET": ("asp.net", "asp.net core"),
            "Ember": ("ember.js", "emberjs"),
            "Flutter": ("flutter",),
            "SwiftUI": ("swiftui",),
            "Streamlit": ("streamlit",),
            "Gradio": ("gradio",),
        }.items()
        for alias in aliases
    }
)
"""Well-known ML and web frameworks: alias (lowercase) -> canonical name. Ambiguous
words ("spring", "lightning", "transformers", "express", "next") are left out."""

TOOLS: frozenset[str] = frozenset(
    """vim neovim nvim emacs vscode cursor pycharm intellij jupyter jupyterlab docker podman
    kubernetes k8s git github gitlab linux ubuntu debian fedora macos windows notion obsidian
    slack figma excel postgres postgresql mysql sqlite mongodb redis aws gcp azure python rust
    golang java typescript javascript kotlin swift julia haskell scala elixir zig""".split()
) | frozenset({"vs code", "visual studio code", "sublime text", "google sheets"})
"""Tools whose names "I moved to X" / "I switched to X" must not read as a city."""

RELATIONS: Mapping[str, str] = MappingProxyType(
    {
        "best friend": "best friend",
        "wife": "wife",
        "husband": "husband",
        "partner": "partner",
        "spouse": "spouse",
        "girlfriend": "girlfriend",
        "boyfriend": "boyfriend",
        "fiance": "fiance",
        "fiancé": "fiance",
        "fiancee": "fiancee",
        "fiancée": "fiancee",
        "sister": "sister",
        "brother": "brother",
        "mother": "mother",
        "mom": "mother",
        "mum": "mother",
        "father": "father",
        "dad": "father",
        "son": "son",
        "daughter": "daughter",
        "friend": "friend",
        "colleague": "colleague",
        "coworker": "colleague",
        "co-worker": "colleague",
        "boss": "boss",
        "manager": "manager",
        "cousin": "cousin",
        "aunt": "aunt",
        "uncle": "uncle",
        "grandmother": "grandmother",
        "grandma": "grandmother",
        "grandfather": "grandfather",
        "grandpa": "grandfather",
        "roommate": "roommate",
        "flatmate": "roommate",
        "housemate": "roommate",
        "neighbor": "neighbor",
        "neighbour": "neighbor",
    }
)
"""Relation words (lowercase) -> the relation recorded in the value."""

RELATION = "(?:" + "|".join(sorted(RELATIONS, key=len, reverse=True)).replace(" ", r"\s+") + ")"

ROLE_HEADS: frozenset[str] = frozenset(
    """engineer developer dev programmer scientist researcher designer manager director founder
    cofounder co-founder ceo cto cfo coo cio cpo vp president lead architect analyst consultant
    teacher professor lecturer student intern nurse doctor physician surgeon lawyer attorney
    accountant writer author editor journalist marketer recruiter administrator admin
    technician officer specialist postdoc chef artist photographer musician freelancer
    contractor entrepreneur owner partner pm sre tester mathematician statistician economist
    pharmacist dentist therapist pilot mechanic electrician plumber farmer librarian coach
    trainer instructor tutor associate executive advisor adviser head candidate firefighter
    paramedic paediatrician pediatrician veterinarian vet cleaner driver barista waiter waitress
    bartender cashier clerk receptionist translator interpreter carpenter builder cook
    baker""".split()
)
"""Last words of a job title: "I'm a ML engineer" is a role, "I'm a vegetarian" is not."""

NOT_NAMES: frozenset[str] = frozenset(
    """I I'm Im I've I'd A An The My Our And But Or So Then He She They We You It This That
    There Here Who What When Where Why How Is Was Said Says Told Thinks Today Tomorrow
    Yesterday Actually Also Just Now Still Please Yes No Ok Okay Hi Hey""".split()
    + [d.capitalize() for d in _WEEKDAYS]
    + """January February March April May June July August September October November
    December""".split()
)
"""Capitalised words that never start a person's name."""

PRONOUN_ITEMS: frozenset[str] = frozenset(
    """it this that these those them him her you everything nothing something anything
    everyone someone anyone one all""".split()
)
"""Objects that name nothing: "I love it" is not a like worth a slot."""

PLAN_NOISE: frozenset[str] = frozenset(
    """plan plans planned planning go goes going gonna trip trips visit visiting travel
    traveling travelling""".split()
)
"""Words left out of a plan's slug, so "I'm planning a trip to Japan", "we're going to
Japan" and "the Japan trip is off" all key ``plan:japan``."""

DOUBT_WORDS = re.compile(
    r"(?<![\w'’-])(?:ago|back|earlier|later|since|until|yesterday|today|tonight|tomorrow"
    r"|minutes?|hours?|days?|weeks?|weekends?|months?|years?|decades?|fortnight|while"
    r"|mornings?|evenings?|nights?|spring|summer|autumn|fall|winter|holidays?|recently|lately"
    r"|nowadays|now|currently|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|couple|few|several)(?![\w'’-])"
)
"""Lowercase words that do not belong in a name: a value holding one ("Bangalore two
weeks", "Lyon a while") was cut from a time phrase not recognised. Case-sensitive:
"Fall River" is a name."""

LOOSE_END = re.compile(
    r"\s(?:a|an|the|of|and|or|to|in|at|on|for|with|from|by|my|our|your|his|her|their|this"
    r"|that|over|about|last|next|some|just|very|so|right|straight|even|also|too|soon)$",
    re.IGNORECASE,
)
"""A name never ends with a function word ("JAX a" is the start of "a while ago")."""

NAME_JOINERS: frozenset[str] = frozenset(
    """de da do dos das del della di du la le les el al am an der den des van von y e of on
    upon sur en and the""".split()
)
"""Lowercase words a capitalised place name may hold ("Rio de Janeiro", "Stratford upon
Avon")."""

# -- value trimming -------------------------------------------------------------------------

_COMMON_STOPS = (
    r"because|but|since|so|though|although|while|whereas|where|which|who|whom|that|when|if"
    r"|unless|now|again|too|anymore|any\s*more|not|rather|than|instead|please|then|every|each"
    r"|daily|weekly|monthly|nightly|these\s+days|nowadays|lately|currently|at\s+the\s+moment"
    r"|right\s+now|for\s+now|last|ago|yesterday|today|tomorrow|recently|soon|lol|haha|btw"
    r"|until|till|from|after|before"
)


def stops(*extra: str) -> re.Pattern[str]:
    """A pattern that finds where a value ends: a connective word after the value's
    first word, a comma before a lowercase word, or a bracket or dash."""
    words = "|".join((_COMMON_STOPS, *extra))
    return re.compile(
        rf"(?<!\s)(?:\s+(?:{words})(?![\w'’-])|,\s*(?=(?-i:[a-z]))|\s*[(\[]|\s+[-–—]\s)"
        r"|[;:!?]",
        re.IGNORECASE,
    )


_NAME_ENDS = r"with|and|as|near|for|at|in|on|to|by|or|like"
"""The words a name (a place, an organisation, a job title) ends before."""
PLACE_STOPS = stops(_NAME_ENDS, "via")
ORG_STOPS = stops(_NAME_ENDS, "via")
ROLE_STOPS = stops(_NAME_ENDS, "of")
TITLE_STOPS = stops(_NAME_ENDS)
"""Where a role said after "as" ends: "head of procurement" keeps its "of"."""
ITEM_STOPS = stops(r"as|near|for|at|in|on|to|by|over|like|more|better|via")
ACTIVITY_STOPS = stops(r"with|as|near|for|at|in|on|by|using|via")
PLAN_STOPS = re.compile(
    r"(?<!\s)(?:\s+(?:because|but|so\s+that|although|though|unless|if|lol|haha|please"
    r"|anymore|any\s*more)(?![\w'’-])|\s*[(\[]|\s+[-–—]\s)|[;:!?]",
    re.IGNORECASE,
)
_FILLER_END = re.compile(
    r"(?<![\w'’-])(?:now|please|again|too|anymore|any\s*more|these\s+days|nowadays|lately"
    r"|instead|though|as\s+well|haha|lol|already|currently|at\s+the\s+moment|right\s+now"
    r"|for\s+now|thanks|thank\s+you|then|actually|either|still|here|there)$",
    re.IGNORECASE,
)
_TRAILING = " \t\r\n,.;:!?'\"“”‘’)]-"


def strip_fillers(value: str) -> str:
    """``value`` without trailing punctuation and filler words ("Bangalore now." ->
    "Bangalore"). A filler is only stripped after whitespace, never as the whole value."""
    while True:
        stripped = value.rstrip(_TRAILING)
        filler = _FILLER_END.search(stripped)
        if filler is not None and filler.start() > 0 and stripped[filler.start() - 1].isspace():
            stripped = stripped[: filler.start()]
        if stripped == value:
            return value
        value = stripped


LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|&|or)\s+", re.IGNORECASE)


def canonical_framework(text: str) -> str | None:
    """The canonical name if ``text`` is a known framework, optionally with a version
    ("PyTorch 2.1" -> "PyTorch"), else ``None``."""
    key = re.sub(r"\s+", " ", text.strip().casefold())
    key = re.sub(r"\s*(?:v?\d+(?:\.\d+)*(?:\.x)?)$", "", key).strip()
    return FRAMEWORKS.get(key)


def known_tool(text: str) -> bool:
    return re.sub(r"\s+", " ", text.strip().casefold()) in TOOLS


def role_head(role: str) -> bool:
    """Whether ``role`` ends with a job-title word ("ML engineer", "CTO", "PhD students")."""
    words = re.findall(r"[\w-]+", role.casefold())
    if not words or len(words) > 5:
        return False
    last = words[-1]
    return last in ROLE_HEADS or (last.endswith("s") and last[:-1] in ROLE_HEADS)
