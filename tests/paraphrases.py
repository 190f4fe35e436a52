"""The paraphrase set of the rule extractor: fresh sentences over every family it
supports, each with the claims it must give, or none.

A claim is ``(family, value, polarity)``. Values are compared after
:func:`normal`: case and spacing folded, a leading determiner left out. Values of
objects are written ``"item|sentiment"`` (likes), ``"name|relation"``
(relationship) and the plan's text (plan). Sentences that must give nothing are
questions, hypotheticals, negations, other people's facts and values too doubtful
to store.
"""

from __future__ import annotations

from typing import Literal

Polarity = Literal["assert", "retract"]
Expected = tuple[tuple[str, str, Polarity], ...]

A: Polarity = "assert"
R: Polarity = "retract"
NOTHING: Expected = ()


def home(city: str, polarity: Polarity = A) -> Expected:
    return (("home_city", city, polarity),)


def fw(name: str) -> Expected:
    return (("primary_framework", name, A),)


def tool(*names: str, polarity: Polarity = A) -> Expected:
    return tuple(("tool", name, polarity) for name in names)


def dropped(name: str) -> Expected:
    """A framework no longer used: a tool retraction, and the primary framework's."""
    return (("tool", name, R), ("primary_framework", name, R))


def job(org: str | None, role: str | None = None, polarity: Polarity = A) -> Expected:
    found: list[tuple[str, str, Polarity]] = []
    if org is not None:
        found.append(("employer", org, polarity))
    if role is not None:
        found.append(("role", role, polarity))
    return tuple(found)


def likes(*items: str, sentiment: str = "like", polarity: Polarity = A) -> Expected:
    return tuple(("likes", f"{item}|{sentiment}", polarity) for item in items)


def plan(text: str, polarity: Polarity = A) -> Expected:
    return (("plan", text, polarity),)


def work(what: str, polarity: Polarity = A) -> Expected:
    return (("activity", what, polarity),)


def habit(value: str, polarity: Polarity = A) -> Expected:
    return (("habit", value, polarity),)


def delivery(cadence: str) -> Expected:
    return (("delivery_preference", cadence, A),)


def attr(*values: str, polarity: Polarity = A) -> Expected:
    """Open attributes (family ``attribute``): a hobby, a diet, someone else's home."""
    return tuple(("attribute", value, polarity) for value in values)


def person(name: str, relation: str) -> Expected:
    return (("relationship", f"{name}|{relation}", A),)


TUNED: tuple[tuple[str, Expected], ...] = (
    # -- home_city: moves and residence, with time phrases around the value ------------
    ("I moved to Porto two weeks ago.", home("Porto")),
    ("We moved to Valencia over the weekend.", home("Valencia")),
    ("I relocated to Nairobi last month.", home("Nairobi")),
    ("These days I live in Kraków.", home("Kraków")),
    ("Nowadays I live in Montreal.", home("Montreal")),
    ("i live in hanoi these days", home("hanoi")),
    ("I've been living in Lisbon since March.", home("Lisbon")),
    ("I'm based in Cape Town at the moment.", home("Cape Town")),
    ("We've lived in Oslo for a few years now.", home("Oslo")),
    ("Moved to Santiago a couple of months ago.", home("Santiago")),
    ("I moved back to Accra yesterday.", home("Accra")),
    ("Honestly, I live in Tbilisi now.", home("Tbilisi")),
    ("My parents live in Goa and I live in Pune.", home("Pune")),
    ("I'm moving to Hamburg next month.", home("Hamburg")),
    ("I moved to Lyon a while ago.", home("Lyon")),
    ("We relocated to Austin earlier this year.", home("Austin")),
    ("I'm living in Seoul these days.", home("Seoul")),
    ("I live in Rio de Janeiro.", home("Rio de Janeiro")),
    ("Just moved to Kyoto last week!", home("Kyoto")),
    ("I moved to New York in 2021.", home("New York")),
    ("I have lived in Manila since 2019.", home("Manila")),
    ("i moved to chennai three weeks ago", home("chennai")),
    ("I'm currently based out of Singapore.", home("Singapore")),
    ("We just relocated to Edinburgh a few days ago.", home("Edinburgh")),
    ("I moved to Bogotá for work over the summer.", home("Bogotá")),
    ("These days we live in Ghent.", home("Ghent")),
    ("Since April I've been living in Bremen.", home("Bremen")),
    ("I moved to Tallinn in the spring.", home("Tallinn")),
    ("Two weeks ago I moved to Riga.", home("Riga")),
    ("A while back we moved to Utrecht.", home("Utrecht")),
    ("We moved to Bangalore over the long weekend.", home("Bangalore")),
    ("I moved to Jaipur a few months back", home("Jaipur")),
    ("im based in karachi now", home("karachi")),
    ("we've moved to brno", home("brno")),
    ("I moved to Dhaka last month, and honestly the food is amazing.", home("Dhaka")),
    ("After years in Sydney, I now live in Hobart.", home("Hobart")),
    ("I relocated to Leipzig about a year ago.", home("Leipzig")),
    ("Lately I've been living in Antwerp.", home("Antwerp")),
    ("I moved to Mombasa this past weekend.", home("Mombasa")),
    ("I've lived in Quebec City for ages.", home("Quebec City")),
    # -- home_city: retractions -----------------------------------------------------------
    ("I no longer live in Phoenix.", home("Phoenix", R)),
    ("I don't live in Leeds anymore.", home("Leeds", R)),
    ("We're not living in Quito anymore.", home("Quito", R)),
    # -- home_city: nothing ------------------------------------------------------------------
    ("My sister lives in Perth.", attr("perth")),
    ("I'm thinking about moving to Zurich.", NOTHING),
    ("Do you think I should move to Dublin?", NOTHING),
    ("If I moved to Seattle, I'd need a car.", NOTHING),
    ("I used to live in Madrid.", NOTHING),
    ("My best friend moved to Denver last year.", attr("denver")),
    ("I don't live in Berlin.", NOTHING),
    ("I moved to a new apartment last week.", NOTHING),
    ("I wish I lived in Barcelona.", NOTHING),
    ("What if we moved to Canada?", NOTHING),
    ("I never lived in Tokyo.", NOTHING),
    ("Not sure if I'll move to Lagos.", NOTHING),
    ("The weather in Paris was lovely last week.", NOTHING),
    ("We're not moving to Denver after all.", NOTHING),
    ("I moved the meeting to Friday.", NOTHING),
    ("I'm moving to a bigger flat next week.", NOTHING),
    ("Would you recommend moving to Toronto?", NOTHING),
    ("Is it true that I live in Milan?", NOTHING),
    ("My in-laws recently moved to Florida.", NOTHING),
    ("Our neighbours live in Cork.", NOTHING),
    # -- frameworks ------------------------------------------------------------------------------
    ("I switched to JAX a while ago.", fw("JAX")),
    ("These days I've switched to Flax.", fw("Flax")),
    ("Nowadays I use Keras.", fw("Keras")),
    ("We migrated to scikit-learn two months ago.", fw("scikit-learn")),
    ("I've been using PyTorch Lightning lately.", fw("PyTorch Lightning")),
    ("These days I mostly use FastAPI.", fw("FastAPI")),
    ("Lately I've been working with React.", fw("React")),
    ("I prefer PyTorch these days.", fw("PyTorch")),
    ("I've switched over to XGBoost since June.", fw("XGBoost")),
    ("I moved from TensorFlow to PyTorch last spring.", fw("PyTorch")),
    ("nowadays i use django", fw("Django")),
    ("We switched to Svelte over the holidays.", fw("Svelte")),
    ("I'm switching to LightGBM next week.", fw("LightGBM")),
    ("Honestly I've moved to Flutter for everything these days.", fw("Flutter")),
    ("I transitioned to LangChain a few weeks ago.", fw("LangChain")),
    # -- tools ---------------------------------------------------------------------------------
    ("I switched to Neovim over the weekend.", tool("Neovim")),
    ("I use Docker and Kubernetes at work.", tool("Docker", "Kubernetes")),
    ("i use vim", tool("vim")),
    ("I'm using Obsidian for notes now.", tool("Obsidian")),
    ("Nowadays I code in Rust.", tool("Rust")),
    ("I switched to Linear a month ago.", tool("Linear")),
    ("I switched to Polars a couple of weeks ago.", tool("Polars")),
    ("Switched to Cursor a few weeks back.", tool("Cursor")),
    ("Work has been busy, but I switched to Julia for the simulations.", tool("Julia")),
    ("These days I rely on Postgres for everything.", tool("Postgres")),
    ("I've been using Figma since January.", tool("Figma")),
    ("ive switched to emacs", tool("emacs")),
    # -- tools and frameworks: retractions ------------------------------------------------
    ("I stopped using TensorFlow.", dropped("TensorFlow")),
    ("No longer using Jupyter.", tool("Jupyter", polarity=R)),
    ("I don't use Slack anymore.", tool("Slack", polarity=R)),
    ("I quit using Emacs last year.", tool("Emacs", polarity=R)),
    ("I ditched Notion two weeks ago.", tool("Notion", polarity=R)),
    ("I gave up on Keras.", dropped("Keras")),
    ("I no longer work with Flask.", dropped("Flask")),
    ("These days I don't use Excel anymore.", tool("Excel", polarity=R)),
    # -- tools and frameworks: nothing ------------------------------------------------------
    ("Should I switch to Svelte?", NOTHING),
    ("If we moved to Angular, would it be faster?", NOTHING),
    ("My team uses Django.", NOTHING),
    ("I might switch to Vue next year.", NOTHING),
    ("I was using MXNet back then.", NOTHING),
    ("Do you use PyTorch?", NOTHING),
    ("I switched teams two weeks ago.", NOTHING),
    ("My girlfriend switched to Python recently.", NOTHING),
    ("I'm thinking of switching to Vim.", NOTHING),
    ("He said I should use Haskell.", NOTHING),
    ("Maybe I'll try Keras someday.", NOTHING),
    ("Our CTO prefers TensorFlow.", NOTHING),
    # -- employer and role -------------------------------------------------------------------
    ("I joined Shopify three months ago.", job("Shopify")),
    ("I work at Datadog these days.", job("Datadog")),
    ("Nowadays I work for Oxfam.", job("Oxfam")),
    ("I started at Canva last week.", job("Canva")),
    ("I'm a data engineer at Spotify.", job("Spotify", "data engineer")),
    ("I work as a nurse at Kaiser.", job("Kaiser", "nurse")),
    ("I'm a product designer.", job(None, "product designer")),
    ("i work at zapier", job("zapier")),
    ("I joined Airbnb as a recruiter two years ago.", job("Airbnb", "recruiter")),
    ("I'm a teacher.", job(None, "teacher")),
    ("I've been working at Siemens since 2020.", job("Siemens")),
    ("I work remotely for Automattic.", job("Automattic")),
    ("As of last week, I work at Figma.", job("Figma")),
    ("Since last year I've worked at Grab.", job("Grab")),
    ("I'm joining Stripe next month as a backend engineer.", job("Stripe", "backend engineer")),
    ("These days I work at Revolut as an analyst.", job("Revolut", "analyst")),
    # -- employer: retractions ----------------------------------------------------------------
    ("I quit my job at Uber.", job("Uber", polarity=R)),
    ("I left Deloitte in August.", job("Deloitte", polarity=R)),
    ("I no longer work at IBM.", job("IBM", polarity=R)),
    ("I'm not working at Oracle anymore.", job("Oracle", polarity=R)),
    ("I left Accenture two weeks ago.", job("Accenture", polarity=R)),
    # -- employer: nothing -----------------------------------------------------------------------
    ("My husband works at Google.", attr("google")),
    ("I'd love to work at NASA someday.", NOTHING),
    ("Have you ever worked at Meta?", NOTHING),
    ("Imagine if I worked at Apple.", NOTHING),
    ("Suppose I joined Microsoft, what then?", NOTHING),
    ("I applied to Netflix last week.", NOTHING),
    # -- likes ------------------------------------------------------------------------------------
    ("I really enjoy hiking these days.", attr("hiking")),
    ("Nowadays I love sourdough bread.", likes("sourdough bread")),
    ("I can't stand cilantro.", likes("cilantro", sentiment="dislike")),
    ("I hate traffic jams.", likes("traffic jams", sentiment="dislike")),
    ("I'm a huge fan of jazz.", likes("jazz")),
    ("My favorite fruit is mango.", likes("mango")),
    ("Sushi is my favourite.", likes("Sushi")),
    ("I don't like horror movies.", likes("horror movies", sentiment="dislike")),
    ("i like green tea", likes("green tea")),
    ("I love tacos and ramen.", likes("tacos", "ramen")),
    ("I enjoy board games on weekends.", likes("board games")),
    ("I'm not a fan of opera.", likes("opera", sentiment="dislike")),
    ("Lately I adore Korean dramas.", likes("Korean dramas")),
    # -- likes: retractions and nothing --------------------------------------------------------
    ("I no longer like coffee.", likes("coffee", polarity=R)),
    ("I don't enjoy running anymore.", attr("running", polarity=R)),
    ("My brother loves cricket.", NOTHING),
    ("Do you like chess?", NOTHING),
    ("I used to love skiing.", attr("skiing", polarity=R)),
    ("If I liked olives, I'd order the pizza.", NOTHING),
    # -- activity ------------------------------------------------------------------------------
    ("I'm building a budgeting app.", work("budgeting app")),
    ("These days I'm working on a compiler for Lua.", work("compiler")),
    ("I work on open-source robotics.", work("open-source robotics")),
    ("Lately I've been building a chess engine.", work("chess engine")),
    ("I'm no longer working on the mobile app.", work("mobile app", R)),
    ("I stopped building the game engine last month.", work("game engine", R)),
    ("My cofounder is building the backend.", NOTHING),
    # -- habit ---------------------------------------------------------------------------------
    ("I go swimming every morning.", attr("swimming") + habit("go swimming every morning")),
    ("I meditate daily.", habit("meditate daily")),
    ("Every evening I read for an hour.", habit("read for an hour every evening")),
    ("I usually cycle to work.", habit("usually cycle to work")),
    ("I jog on Sundays.", habit("jog on Sundays")),
    ("I practice piano twice a week.", habit("practice piano twice a week")),
    ("i stretch every night", habit("stretch every night")),
    ("I stopped journaling.", habit("journaling", R)),
    ("My dad walks every morning.", NOTHING),
    # -- plans ---------------------------------------------------------------------------------
    ("I'm planning a trip to Peru.", plan("trip to Peru")),
    ("We're going to Iceland in March.", plan("Iceland in March")),
    ("My plan is to learn Japanese.", plan("learn Japanese")),
    ("The Peru trip is off.", plan("Peru trip", R)),
    ("We cancelled the Iceland trip.", plan("Iceland trip", R)),
    ("The hackathon is cancelled.", plan("hackathon", R)),
    ("I'm no longer planning to run a marathon.", plan("run a marathon", R)),
    ("Maybe I'll plan a party.", NOTHING),
    ("Are we still going to Crete?", NOTHING),
    # -- delivery ------------------------------------------------------------------------------
    ("Send me the digest every Tuesday.", delivery("tuesday")),
    ("Please email my newsletter weekly.", delivery("weekly")),
    ("I'd like the summary daily.", delivery("daily")),
    ("Deliver my report monthly from December 1.", delivery("monthly")),
    ("Can you send the digest on Thursdays instead?", delivery("thursday")),
    ("my digest on saturdays please", delivery("saturday")),
    ("Don't send me the digest on Mondays.", NOTHING),
    # -- relationships -------------------------------------------------------------------------
    ("My wife Anika loves gardening.", person("Anika", "wife") + attr("gardening")),
    ("Tomás is my cousin.", person("Tomás", "cousin")),
    ("My manager, Priyanka, is on leave.", person("Priyanka", "manager")),
    ("My roommate's name is Dev.", person("Dev", "roommate")),
    ("I had lunch with my colleague Farid.", person("Farid", "colleague")),
)
"""Sentence -> the claims it must give (empty: none). The extractor was changed
while looking at these."""

HELD_OUT: tuple[tuple[str, Expected], ...] = (
    ("I moved to Berlin two and a half years ago.", home("Berlin")),
    ("we moved to Marseille a fortnight ago", home("Marseille")),
    ("I relocated to Da Nang back in 2022.", home("Da Nang")),
    ("I've been based in Nicosia for the past year.", home("Nicosia")),
    ("At the moment I live in Bilbao.", home("Bilbao")),
    ("I recently moved to Salt Lake City.", home("Salt Lake City")),
    ("I moved to Vienna with my partner last spring.", home("Vienna")),
    ("I live in a small town near Graz.", NOTHING),
    ("My cousin just moved to Lima.", attr("lima")),
    ("Could I live in Reykjavik on a student budget?", NOTHING),
    ("I moved to Ottawa yesterday, finally!", home("Ottawa")),
    ("I don't live in Bern any more.", home("Bern", R)),
    ("Last week I switched to Flask.", fw("Flask")),
    ("We've moved over to Next.js these days.", fw("Next.js")),
    ("I switched from Keras to JAX about three months ago.", fw("JAX")),
    ("Nowadays we use Spring Boot at work.", fw("Spring Boot")),
    ("I'm using Podman instead of Docker now.", tool("Podman")),
    ("Recently I switched to Zed.", tool("Zed")),
    ("I switched to GitLab a few days ago.", tool("GitLab")),
    ("I no longer use PyCharm these days.", tool("PyCharm", polarity=R)),
    ("I dropped Redis last week.", tool("Redis", polarity=R)),
    ("My boss switched to Linux last month.", NOTHING),
    ("Should we migrate to Kotlin next quarter?", NOTHING),
    ("I joined Mistral a couple of weeks ago.", job("Mistral")),
    ("Nowadays I'm a software engineer at Atlassian.", job("Atlassian", "software engineer")),
    ("I started working at Monzo over the summer.", job("Monzo")),
    ("I've worked for Unilever since 2018.", job("Unilever")),
    ("I quit my job at Boeing yesterday.", job("Boeing", polarity=R)),
    ("My wife joined Pfizer last year.", NOTHING),
    ("These days I really like matcha.", likes("matcha")),
    ("I've never liked mushrooms.", NOTHING),
    ("I can't stand reality shows these days.", likes("reality shows", sentiment="dislike")),
    ("I stopped enjoying podcasts a while ago.", likes("podcasts", polarity=R)),
    ("Nowadays I'm working on a podcast about birds.", work("podcast about birds")),
    ("I've been developing a CLI for backups lately.", work("CLI")),
    ("I walk the dog every evening.", habit("walk the dog every evening")),
    ("These days I usually run before work.", habit("usually run before work")),
    ("I stopped meditating last month.", habit("meditating", R)),
    ("We're planning a road trip to Utah.", plan("road trip to Utah")),
    ("The Utah road trip has been called off.", plan("Utah road trip", R)),
    ("Send my digest on Wednesdays from now on.", delivery("wednesday")),
    ("My sister Leila moved to Doha a while ago.", person("Leila", "sister")),
)
"""Sentences written after the extractor was changed, and scored before any further
change: the figure that says how well it generalises."""

UNSURE: tuple[tuple[str, Expected], ...] = (
    ("I moved to Valencia over Easter.", home("Valencia")),
    ("I switched to JAX the other week.", fw("JAX")),
    ("I moved to Leeds the day before yesterday.", home("Leeds")),
    ("We relocated to Porto in the middle of the night.", home("Porto")),
    ("I joined Klarna right after graduation.", job("Klarna")),
)
"""Time phrases the extractor does not know: the value it would cut is doubtful, so
it stores no claim (a miss, never a wrong value)."""

PARAPHRASES: tuple[tuple[str, Expected], ...] = TUNED + HELD_OUT + UNSURE
"""The whole set."""
