"""Word lists the open-attribute matchers read (lowercase): what counts as a diet, an
animal, a condition, a sport. Closed lists keep the matchers precise where the
value itself must say what attribute it is ("I'm vegan", "I play the cello"); where
the pattern says it ("I'm allergic to X", "my favourite book is X") the value is open.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from memledger.domain.timephrases import NUMBER_WORDS

DIETS: Mapping[str, str] = MappingProxyType(
    {
        "vegetarian": "vegetarian",
        "veggie": "vegetarian",
        "veg": "vegetarian",
        "lacto-vegetarian": "vegetarian",
        "lacto vegetarian": "vegetarian",
        "ovo-vegetarian": "vegetarian",
        "vegan": "vegan",
        "plant-based": "vegan",
        "plant based": "vegan",
        "fully plant-based": "vegan",
        "pescatarian": "pescatarian",
        "pescetarian": "pescatarian",
        "pescatarian-ish": "pescatarian",
        "flexitarian": "flexitarian",
        "keto": "keto",
        "ketogenic": "keto",
        "paleo": "paleo",
        "carnivore": "carnivore",
        "gluten-free": "gluten-free",
        "gluten free": "gluten-free",
        "dairy-free": "dairy-free",
        "dairy free": "dairy-free",
        "low-carb": "low-carb",
        "low carb": "low-carb",
        "halal": "halal",
        "kosher": "kosher",
        "raw vegan": "raw vegan",
        "whole30": "whole30",
        "mediterranean": "mediterranean",
        "intermittent fasting": "intermittent fasting",
    }
)
"""A diet as people name it -> the diet recorded."""

DIET_NEEDS_DIET_WORD = frozenset({"mediterranean", "intermittent fasting", "low-carb"})
"""Diets named only with the word "diet" after them ("I'm on a Mediterranean diet")."""

ANIMALS: Mapping[str, str] = MappingProxyType(
    {
        **{
            w: w
            for w in """dog cat hamster rabbit parrot bird goldfish fish turtle tortoise snake
            lizard gecko ferret chinchilla hedgehog budgie cockatiel iguana pony horse donkey
            goat chicken hen duck gerbil rat mouse canary axolotl frog tarantula pig""".split()
        },
        "guinea pig": "guinea pig",
        "bearded dragon": "bearded dragon",
        "puppy": "dog",
        "pup": "dog",
        "doggo": "dog",
        "pupper": "dog",
        "kitten": "cat",
        "kitty": "cat",
        "bunny": "rabbit",
        "parakeet": "parakeet",
        "hamsters": "hamster",
        **{
            breed: "dog"
            for breed in (
                "golden retriever",
                "retriever",
                "labrador",
                "lab",
                "beagle",
                "corgi",
                "husky",
                "poodle",
                "pug",
                "dachshund",
                "terrier",
                "bulldog",
                "french bulldog",
                "frenchie",
                "german shepherd",
                "shepherd",
                "border collie",
                "collie",
                "chihuahua",
                "greyhound",
                "spaniel",
                "rottweiler",
                "boxer",
                "shih tzu",
                "doodle",
                "goldendoodle",
                "labradoodle",
                "schnauzer",
                "mutt",
                "pit bull",
                "pitbull",
            )
        },
        **{breed: "cat" for breed in ("tabby", "siamese", "persian", "maine coon", "ragdoll")},
    }
)
"""An animal as people name it -> the kind of pet."""

CONDITIONS: frozenset[str] = frozenset(
    """asthma diabetes adhd add anxiety depression celiac coeliac arthritis hypertension ibs
    epilepsy eczema psoriasis insomnia lupus migraines migraine endometriosis pcos autism
    dyslexia tinnitus fibromyalgia scoliosis sciatica anemia anaemia gout vertigo ocd ptsd
    bipolar hypothyroidism hyperthyroidism glaucoma cataracts allergies hayfever covid
    cancer leukemia lymphoma dementia parkinsons parkinson's alzheimer's crohn's crohns
    colitis gerd reflux acne rosacea""".split()
) | frozenset(
    {
        "type 1 diabetes",
        "type 2 diabetes",
        "type one diabetes",
        "type two diabetes",
        "high blood pressure",
        "low blood pressure",
        "high cholesterol",
        "sleep apnea",
        "sleep apnoea",
        "long covid",
        "chronic pain",
        "back pain",
        "chronic fatigue",
        "chronic fatigue syndrome",
        "multiple sclerosis",
        "ms",
        "hay fever",
        "a bad back",
        "a bad knee",
        "bad knees",
        "lactose intolerance",
        "gluten intolerance",
        "celiac disease",
        "coeliac disease",
        "crohn's disease",
        "heart disease",
        "kidney disease",
        "a heart condition",
        "panic attacks",
        "panic disorder",
        "social anxiety",
        "seasonal affective disorder",
        "color blindness",
        "colour blindness",
        "an anxiety disorder",
        "a thyroid condition",
        "arthritis in my knees",
        "celiac's",
        "a gluten allergy",
    }
)
"""Conditions named after "I have ...", "I suffer from ..."; anything after "I was
diagnosed with ..." counts too, and words ending in -itis, "syndrome", "disorder",
"disease"."""

CONDITION_ADJECTIVES: Mapping[str, str] = MappingProxyType(
    {
        "diabetic": "diabetes",
        "type 1 diabetic": "type 1 diabetes",
        "type 2 diabetic": "type 2 diabetes",
        "asthmatic": "asthma",
        "epileptic": "epilepsy",
        "celiac": "celiac disease",
        "coeliac": "celiac disease",
        "autistic": "autism",
        "dyslexic": "dyslexia",
        "anemic": "anemia",
        "anaemic": "anemia",
        "lactose intolerant": "lactose intolerance",
        "lactose-intolerant": "lactose intolerance",
        "gluten intolerant": "gluten intolerance",
        "colorblind": "color blindness",
        "colour blind": "color blindness",
        "color blind": "color blindness",
        "deaf": "deafness",
        "hard of hearing": "hearing loss",
        "bipolar": "bipolar disorder",
        "insomniac": "insomnia",
        "hypertensive": "hypertension",
        "immunocompromised": "immunocompromised",
        "pregnant": "pregnancy",
    }
)
"""Condition adjectives ("I'm diabetic") -> the condition recorded."""

DEMONYMS: frozenset[str] = frozenset(
    """american british english scottish welsh irish canadian australian mexican brazilian
    argentinian argentine chilean colombian peruvian venezuelan cuban portuguese spanish
    french german italian dutch belgian swiss austrian polish czech slovak hungarian
    romanian bulgarian greek turkish russian ukrainian belarusian swedish norwegian danish
    finnish icelandic estonian latvian lithuanian serbian croatian bosnian slovenian
    albanian indian pakistani bangladeshi sri lankan nepali chinese japanese korean
    vietnamese thai filipino indonesian malaysian singaporean taiwanese iranian iraqi
    israeli lebanese syrian jordanian egyptian moroccan algerian tunisian nigerian
    ghanaian kenyan ethiopian somali south african zimbabwean ugandan tanzanian
    senegalese cameroonian jamaican trinidadian haitian dominican puerto rican
    ecuadorian bolivian uruguayan paraguayan new zealander saudi emirati qatari
    afghan kazakh uzbek armenian georgian mongolian""".split()
) | frozenset({"south african", "sri lankan", "puerto rican", "new zealander", "south korean"})
"""Nationalities as adjectives ("I'm Portuguese")."""

LANGUAGES: frozenset[str] = frozenset(
    """english spanish french german italian portuguese dutch russian ukrainian polish czech
    slovak hungarian romanian bulgarian greek turkish arabic hebrew persian farsi urdu hindi
    bengali punjabi gujarati marathi tamil telugu kannada malayalam nepali sinhala mandarin
    cantonese chinese japanese korean vietnamese thai indonesian malay tagalog filipino
    swahili amharic yoruba igbo hausa zulu xhosa afrikaans swedish norwegian danish finnish
    icelandic estonian latvian lithuanian serbian croatian bosnian slovenian albanian
    catalan basque galician welsh irish gaelic latin esperanto asl sign""".split()
) | frozenset({"sign language", "american sign language", "british sign language"})
"""Languages people speak."""

SPORTS: frozenset[str] = frozenset(
    """tennis soccer football basketball baseball volleyball badminton golf hockey rugby
    cricket squash handball softball lacrosse pickleball padel polo netball frisbee
    ultimate table-tennis ping-pong pool snooker darts bowling chess ringette curling footy
    futsal korfball hurling""".split()
) | frozenset({"table tennis", "ping pong", "ultimate frisbee", "ice hockey", "water polo"})
"""Sports one *plays* ("I play tennis")."""

PRACTICES: Mapping[str, str] = MappingProxyType(
    {
        "running": "running",
        "jogging": "running",
        "swimming": "swimming",
        "cycling": "cycling",
        "biking": "cycling",
        "climbing": "climbing",
        "bouldering": "bouldering",
        "rock climbing": "rock climbing",
        "skiing": "skiing",
        "snowboarding": "snowboarding",
        "surfing": "surfing",
        "rowing": "rowing",
        "boxing": "boxing",
        "kickboxing": "kickboxing",
        "karate": "karate",
        "judo": "judo",
        "jiu-jitsu": "jiu-jitsu",
        "jiu jitsu": "jiu-jitsu",
        "bjj": "jiu-jitsu",
        "taekwondo": "taekwondo",
        "kung fu": "kung fu",
        "fencing": "fencing",
        "yoga": "yoga",
        "pilates": "pilates",
        "crossfit": "crossfit",
        "weightlifting": "weightlifting",
        "powerlifting": "powerlifting",
        "triathlon": "triathlon",
        "triathlons": "triathlon",
        "marathons": "running",
        "skateboarding": "skateboarding",
        "kayaking": "kayaking",
        "sailing": "sailing",
        "martial arts": "martial arts",
        "mma": "mma",
        "gymnastics": "gymnastics",
        "dance": "dance",
        "ballet": "ballet",
        "archery": "archery",
        "wrestling": "wrestling",
        "diving": "diving",
        "scuba diving": "scuba diving",
        "horse riding": "horse riding",
        "horseback riding": "horse riding",
        "trail running": "trail running",
        "spinning": "spinning",
        "tai chi": "tai chi",
    }
)
"""Sports one *does* or *goes* to ("I do yoga", "I go climbing")."""

PRACTITIONERS: Mapping[str, str] = MappingProxyType(
    {
        "runner": "running",
        "jogger": "running",
        "swimmer": "swimming",
        "cyclist": "cycling",
        "climber": "climbing",
        "boulderer": "bouldering",
        "skier": "skiing",
        "snowboarder": "snowboarding",
        "surfer": "surfing",
        "rower": "rowing",
        "boxer": "boxing",
        "golfer": "golf",
        "triathlete": "triathlon",
        "marathoner": "running",
        "marathon runner": "running",
        "skater": "skating",
        "yogi": "yoga",
        "powerlifter": "powerlifting",
        "weightlifter": "weightlifting",
        "tennis player": "tennis",
        "chess player": "chess",
    }
)
"""Who does a sport ("I'm a runner") -> the sport."""

INSTRUMENTS: frozenset[str] = frozenset(
    """piano guitar violin viola cello bass drums drum flute clarinet saxophone sax trumpet
    trombone tuba harp ukulele uke banjo mandolin harmonica accordion keyboard keys organ
    oboe bassoon synth synthesizer""".split()
) | frozenset({"bass guitar", "electric guitar", "acoustic guitar", "double bass", "french horn"})
"""Instruments one plays."""

PLAYERS: Mapping[str, str] = MappingProxyType(
    {
        "pianist": "piano",
        "guitarist": "guitar",
        "violinist": "violin",
        "cellist": "cello",
        "drummer": "drums",
        "bassist": "bass",
        "flautist": "flute",
        "saxophonist": "saxophone",
        "trumpeter": "trumpet",
    }
)
"""Who plays an instrument ("I'm a cellist") -> the instrument."""

VEHICLE_WORDS: frozenset[str] = frozenset(
    """car truck van suv motorbike motorcycle scooter moped bike bicycle e-bike ebike pickup
    minivan hatchback sedan jeep camper rv""".split()
)
"""Vehicles as kinds."""

MAKES: frozenset[str] = frozenset(
    """toyota honda ford tesla bmw audi mercedes volkswagen vw subaru mazda nissan hyundai kia
    chevy chevrolet jeep volvo porsche fiat peugeot renault skoda seat lexus mini dodge ram
    gmc cadillac lincoln buick chrysler jaguar land rover rivian polestar ducati harley
    yamaha kawasaki suzuki vespa prius triumph""".split()
)
"""Vehicle makes: "I drive a Subaru", "I bought a Tesla"."""

TRANSPORT: Mapping[str, str] = MappingProxyType(
    {
        "bike": "bike",
        "cycle": "bike",
        "bicycle": "bike",
        "walk": "walking",
        "drive": "car",
        "car": "car",
        "train": "train",
        "bus": "bus",
        "subway": "subway",
        "metro": "metro",
        "tube": "tube",
        "tram": "tram",
        "ferry": "ferry",
        "scooter": "scooter",
        "carpool": "carpool",
        "run": "running",
        "motorbike": "motorbike",
        "motorcycle": "motorbike",
        "foot": "walking",
        "light rail": "light rail",
        "commuter rail": "train",
    }
)
"""How one gets to work -> the commute recorded."""

STATUSES: Mapping[str, str] = MappingProxyType(
    {
        "married": "married",
        "single": "single",
        "engaged": "engaged",
        "divorced": "divorced",
        "widowed": "widowed",
        "a widow": "widowed",
        "a widower": "widowed",
        "separated": "separated",
        "in a relationship": "in a relationship",
        "in a committed relationship": "in a relationship",
        "seeing someone": "in a relationship",
        "dating someone": "in a relationship",
        "newly married": "married",
        "happily married": "married",
        "recently married": "married",
        "recently divorced": "divorced",
        "a newlywed": "married",
        "newlywed": "married",
        "newlyweds": "married",
    }
)
"""Relationship statuses -> the status recorded."""

FAVOURITES: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(
            ("food", "dish", "meal", "cuisine", "snack", "dessert", "breakfast", "pizza"),
            "favourite_food",
        ),
        **dict.fromkeys(("color", "colour"), "favourite_color"),
        **dict.fromkeys(("movie", "film"), "favourite_movie"),
        **dict.fromkeys(("book", "novel", "read"), "favourite_book"),
        **dict.fromkeys(
            ("band", "artist", "singer", "music", "genre", "musician", "composer", "group"),
            "favourite_music",
        ),
        **dict.fromkeys(("sport", "sports team", "team"), "favourite_sport"),
        **dict.fromkeys(
            ("drink", "beverage", "cocktail", "beer", "wine", "coffee", "tea"), "favourite_drink"
        ),
    }
)
"""The thing in "my favourite X is ..." -> the attribute."""

KIN: frozenset[str] = frozenset(
    """sister brother sisters brothers son daughter sons daughters twin twins kid kids child
    children cousin cousins niece nephew nieces nephews stepson stepdaughter stepbrother
    stepsister half-brother half-sister grandson granddaughter grandchildren grandkids
    grandkid grandchild""".split()
)
"""Relatives one "has" ("I have a sister", "I have two kids")."""

CHILD_WORDS: frozenset[str] = frozenset(
    """kid kids child children childrens son sons daughter daughters boy boys girl girls ones
    toddler toddlers""".split()
)
"""What counts toward how many children one has."""

EVENT_HEADS: frozenset[str] = frozenset(
    """wedding concert conference festival marathon race 5k 10k half-marathon triathlon
    workshop meetup hackathon party game match tournament competition retreat ceremony
    funeral graduation parade exhibition fair camp bootcamp course class seminar summit
    convention expo recital play show gig reunion fundraiser charity marathon rally protest
    march vigil championship cup regatta trek pilgrimage cruise audition interview
    open-house barbecue bbq picnic""".split()
)
"""What one took part in ("I ran a 10k", "I went to a wedding")."""

NUMBERS: Mapping[str, int] = MappingProxyType(
    {**NUMBER_WORDS, "no": 0, "zero": 0, "a couple of": 2, "twin": 2}
)
"""Counted words -> numbers."""
