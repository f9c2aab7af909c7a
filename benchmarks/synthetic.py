"""A deterministic synthetic workspace for search benchmarks, with planted facts of known answer.

``generate_workspace(root, n_notes, seed)`` writes Markdown notes in the reme layout (daily notes,
wiki and personal digests, resource notes) with frontmatter, headed sections of filler prose,
wikilinks (some dangling), and about one planted fact per 20 notes. Each fact sits in exactly one
active note; its query is a natural question that shares some but not all of the fact's words, and
for each fact a near-miss distractor (same template, another subject) lands in some other note, so
recall measures retrieval rather than luck.

Only the standard library is used, and all randomness comes from one seeded ``random.Random``:
the same seed and note count give byte-identical files.

CLI: ``python benchmarks/synthetic.py OUT_DIR --notes 1000 --seed 0`` also writes
``OUT_DIR/.planted.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

PLANTED_FILE = ".planted.json"
START_DATE = dt.date(2024, 1, 1)
DAYS = 365
ARCHIVED_RATE = 0.05
DANGLING_RATE = 0.08
NOTES_PER_FACT = 20
MIN_FACTS = 10


@dataclass(frozen=True)
class PlantedFact:
    """A question whose answer is stated in exactly one note."""

    query: str
    answer_path: str
    """Workspace-relative path of the note holding the fact."""
    answer_text: str
    """The fact's sentence exactly as written in that note."""
    answer: str = ""
    """The short answer inside ``answer_text`` (a code, a name, a date...)."""
    kind: str = ""
    """The template that produced it (``vault_code``, ``role``...)."""
    paraphrase: str = ""
    """The same question in other words: only the entity's name is shared with the fact, so
    keyword search has little to go on and meaning has to carry the match."""


# -- word lists ----------------------------------------------------------------------------------
# Filler vocabulary is lower-case common words; proper names used as fact subjects come from
# separate lists, so filler can never spell out a fact or its subject.


def _words(text: str) -> list[str]:
    return text.split()


TOPICS: dict[str, list[str]] = {
    "garden": _words(
        "compost seedling tomato trellis mulch greenhouse soil hedge orchard pruning irrigation "
        "raised-bed basil squash fertiliser harvest shovel rainwater lavender beetroot"
    ),
    "infra": _words(
        "server cluster deployment pipeline container replica latency backup certificate "
        "firewall database migration rollout dashboard alert queue cache node bucket gateway"
    ),
    "cooking": _words(
        "recipe sourdough broth skillet marinade oven spice dough pastry stew risotto "
        "flour butter garlic lemon braise simmer glaze pantry knife"
    ),
    "travel": _words(
        "itinerary train ferry hostel passport luggage airport trail village coastline "
        "museum ticket booking station harbour map guidebook route bridge market"
    ),
    "research": _words(
        "hypothesis dataset experiment baseline citation survey appendix benchmark metric "
        "sample estimate ablation reviewer draft figure protocol annotation corpus result method"
    ),
    "finance": _words(
        "budget invoice receipt ledger pension mortgage savings expense forecast account "
        "transfer tax refund allowance quote estimate balance payroll audit subscription"
    ),
    "health": _words(
        "appointment physio stretching sleep clinic prescription vitamin posture marathon "
        "hydration cardio recovery injury routine checkup dentist meditation walk diet knee"
    ),
    "music": _words(
        "rehearsal chord setlist amplifier rhythm melody tuning metronome recital score "
        "harmony tempo microphone studio drummer bassline lyric chorus bridge concert"
    ),
    "home": _words(
        "boiler roof insulation plumber paint shelf gutter radiator window carpet "
        "landlord garage ladder fuse curtain kettle drawer sofa cupboard doorbell"
    ),
}

NOUNS = _words(
    "plan note question idea issue task meeting week month team friend call email list draft "
    "change problem reason detail decision review summary update progress estimate goal risk "
    "option step version morning evening weekend window deadline handover workshop proposal "
    "feedback session thread report record schedule agenda outline checklist reminder"
)
ADJECTIVES = _words(
    "new old quick slow careful rough useful small large early late recent simple clear "
    "tricky urgent minor major open final shared quiet busy steady odd spare main second "
    "annual weekly manual careful obvious brief long short"
)
VERBS = _words(
    "checked moved fixed started finished reviewed updated postponed discussed drafted "
    "shared tested measured cleaned planned tracked noted compared replaced skipped "
    "revisited simplified booked cancelled confirmed sorted wrote read"
)
ADVERBS = _words(
    "again quickly finally mostly briefly carefully roughly already probably clearly "
    "quietly slowly eventually partly nearly"
)
PREPOSITIONS = _words("with for after before during about from into around near without")
CONNECTORS = _words("because although while since so but and until unless whereas")
SUBJECTS = ["We", "I", "The team", "Everyone", "Nobody", "Someone", "She", "He", "They"]
HEADINGS = [
    "Summary",
    "Background",
    "Open questions",
    "Decisions",
    "Next steps",
    "Log",
    "Notes",
    "Details",
    "Follow-ups",
    "Context",
    "Observations",
    "Ideas",
]
TYPE_TAGS = _words("meeting idea todo reference log decision question review")

# Proper names, only ever used in facts and distractors.
BIRDS = _words(
    "Kestrel Osprey Heron Plover Merlin Curlew Dunlin Siskin Wren Lapwing Avocet Bittern "
    "Shrike Petrel Harrier Godwit Redstart Bunting Linnet Nightjar Swift Tern Gannet Fulmar"
)
FIRST_NAMES = _words(
    "Mara Tobias Ingrid Rafael Selin Dmitri Amara Jonas Priya Emeka Hana Lucas Freya Omar "
    "Noor Mateo Greta Kofi Ines Anders Leila Viktor Yuki Ruben Zara Callum Elif Nikos Ada "
    "Bruno Sanne Tariq Maren Idris Lotte Felix Anouk Soren Chiara Bilal"
)
LAST_NAMES = _words(
    "Okafor Lindqvist Moreau Tanaka Castellano Brennan Haddad Novak Achterberg Osei Ferreira "
    "Kowalski Nakamura Delacroix Mbeki Halvorsen Quintero Petrov Whitlock Van-Doorn Sato "
    "Abernathy Rahimi Kessler Oyelaran Marchetti Lund Varga Ellison Duarte Brandt Keane "
    "Iqbal Ruiz Forsberg Adeyemi Hollis Stavros Mwangi Castell"
)
PROJECT_ADJ = _words(
    "Silver Amber Crimson Quiet Northern Hollow Iron Velvet Copper Misty Golden Frozen "
    "Scarlet Distant Patient Lucky Cobalt Marble Bright Hidden"
)
PROJECT_NOUN = _words(
    "Heron Lantern Harbor Meadow Compass Anchor Falcon Orchard Beacon Glacier Willow Ember "
    "Summit Ferry Quarry Juniper Atlas Cinder Pillar Thistle"
)
COMPANY_SUFFIX = _words("Freight Analytics Textiles Ceramics Robotics Insurance Brewing Optics")
PLACE_NAMES = _words(
    "Larkspur Ridgeway Fenwick Ashcombe Thornbury Mossgate Elderbank Brightwater Coldharbour "
    "Kingsmere Westholme Redcliffe Oakhollow Stonebridge Hartwell Millbrook Foxley Greyfield"
)
PLACE_KINDS = _words("cabin studio boathouse cottage workshop chalet")
STREETS = _words("Alder Quay Mercer Tanner Pilgrim Rowan Foundry Chapel Orchard Bell")
ROOMS = ["Lantern Room", "Garden Suite", "Map Room", "Blue Hall", "Library Annex", "Loft"]
ROLES = [
    "treasurer",
    "release manager",
    "tech lead",
    "product owner",
    "on-call coordinator",
    "design lead",
    "budget owner",
    "security champion",
]
MEETINGS = ["quarterly review", "contract renewal meeting", "onboarding workshop", "kickoff"]
MONTHS = _words(
    "January February March April May June July August September October November December"
)
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday")
PREFERENCES: dict[str, list[str]] = {
    "board game": ["Carcassonne", "Azul", "Wingspan", "Ticket to Ride", "Codenames", "Catan"],
    "tea": ["lapsang souchong", "genmaicha", "rooibos", "Earl Grey", "sencha", "masala chai"],
    "hiking trail": ["the Coastal Path", "the Ridge Loop", "the Old Mill Walk", "the Pine Trail"],
    "pizza topping": ["anchovies", "artichoke", "smoked mozzarella", "pineapple", "capers"],
    "novel": ["The Remains of the Day", "Middlemarch", "Solaris", "Stoner", "Piranesi"],
}
ALLERGENS = ["peanuts", "shellfish", "sesame", "kiwi", "celery", "mustard", "walnuts"]
HIDING_PLACES = [
    "under the blue planter by the back door",
    "in the tin box on the top shelf of the pantry",
    "behind the loose brick left of the porch light",
    "inside the birdhouse on the old pear tree",
    "taped under the lid of the garden bench",
]
PASSWORD_WORDS = _words("marble otter lantern cactus velvet pebble comet maple tundra falcon")


# -- fact templates --------------------------------------------------------------------------------


class _Names:
    """Hands out subject names never used before, widening a name when its pool runs dry."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def take(self, make: Callable[[random.Random], str]) -> str:
        for attempt in range(1000):
            name = make(self.rng)
            if attempt >= 30:  # the pool is nearly spent: widen it with a number
                name = f"{name} {self.rng.randint(2, 99)}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("could not find an unused name")  # unreachable in practice

    def person(self) -> str:
        return self.take(lambda r: f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}")

    def vault(self) -> str:
        return self.take(lambda r: f"{r.choice(BIRDS)}-{r.randint(100, 999)}")

    def project(self) -> str:
        return self.take(lambda r: f"{r.choice(PROJECT_ADJ)} {r.choice(PROJECT_NOUN)}")

    def company(self) -> str:
        return self.take(lambda r: f"{r.choice(LAST_NAMES)} {r.choice(COMPANY_SUFFIX)}")

    def place(self, kind: str) -> str:
        return self.take(lambda r: f"{r.choice(PLACE_NAMES)} {kind}")


@dataclass(frozen=True)
class _Fact:
    sentence: str
    query: str
    answer: str
    kind: str
    distractor: str
    paraphrase: str = ""


def _code(rng: random.Random) -> str:
    alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    return "".join(rng.choices(alnum, k=3)) + "-" + "".join(rng.choices(letters, k=2))


def _vault_code(rng: random.Random, names: _Names) -> _Fact:
    vault, other, code = names.vault(), names.vault(), _code(rng)
    sentence = rng.choice(
        [
            f"The access code for vault {vault} is {code}.",
            f"Vault {vault} opens with the access code {code}.",
        ]
    )
    query = rng.choice(
        [
            f"What is the access code for the {vault} vault?",
            f"Which code opens vault {vault}?",
        ]
    )
    distractor = f"Vault {other} was inspected this week and its access log looked normal."
    return _Fact(sentence, query, code, "vault_code", distractor, f"What unlocks the {vault} safe?")


def _role(rng: random.Random, names: _Names) -> _Fact:
    project, other, person = names.project(), names.project(), names.person()
    role, month = rng.choice(ROLES), rng.choice(MONTHS)
    sentence = rng.choice(
        [
            f"{person} was named {role} of the {project} project in {month}.",
            f"Since {month}, {person} has been the {role} for the {project} project.",
        ]
    )
    query = rng.choice(
        [
            f"Who is the {role} of the {project} project?",
            f"Who took on the {role} role for {project}?",
        ]
    )
    distractor = f"The {other} project is still looking for a {role}."
    return _Fact(
        sentence, query, person, "role", distractor, f"Whom did {project} appoint as its {role}?"
    )


def _meeting_place(rng: random.Random, names: _Names) -> _Fact:
    company, other = names.company(), names.company()
    meeting = rng.choice(MEETINGS)
    place = f"the {rng.choice(ROOMS)} on {rng.choice(STREETS)} Street"
    sentence = f"The {meeting} with {company} is always held in {place}."
    query = rng.choice(
        [
            f"Where do we meet {company} for the {meeting}?",
            f"Which room hosts the {meeting} with {company}?",
        ]
    )
    distractor = f"{other} asked to move the {meeting} to a video call."
    return _Fact(
        sentence,
        query,
        place,
        "meeting_place",
        distractor,
        f"What is the venue when {company} comes in for the {meeting}?",
    )


def _go_live_date(rng: random.Random, names: _Names) -> _Fact:
    system = names.project()
    other = names.project()
    when = f"{rng.choice(WEEKDAYS)}, {rng.choice(MONTHS)} {rng.randint(1, 28)}"
    sentence = f"The {system} migration is scheduled to go live on {when}."
    query = rng.choice(
        [f"When does the {system} migration go live?", f"What is the launch date for {system}?"]
    )
    distractor = f"The {other} migration slipped again because of the database freeze."
    return _Fact(
        sentence, query, when, "date", distractor, f"On what day will {system} be switched over?"
    )


def _preference(rng: random.Random, names: _Names) -> _Fact:
    person, other = names.person(), names.person()
    category = rng.choice(list(PREFERENCES))
    value = rng.choice(PREFERENCES[category])
    sentence = f"{person}'s favourite {category} is {value}, without any doubt."
    query = rng.choice(
        [f"Which {category} does {person} like best?", f"What {category} does {person} prefer?"]
    )
    distractor = f"{other} could never pick a favourite {category}."
    return _Fact(
        sentence, query, value, "preference", distractor, f"What {category} is {person} fondest of?"
    )


def _allergy(rng: random.Random, names: _Names) -> _Fact:
    person, other = names.person(), names.person()
    allergen = rng.choice(ALLERGENS)
    sentence = f"{person} is allergic to {allergen}, so keep it off the team lunch order."
    query = f"What food allergy does {person} have?"
    distractor = f"{other} ordered the team lunch and forgot the dessert."
    return _Fact(
        sentence, query, allergen, "allergy", distractor, f"Which foods must {person} avoid eating?"
    )


def _hiding_place(rng: random.Random, names: _Names) -> _Fact:
    kind = rng.choice(PLACE_KINDS)
    place, other = names.place(kind), names.place(kind)
    spot = rng.choice(HIDING_PLACES)
    sentence = f"The spare key for the {place} is kept {spot}."
    query = rng.choice(
        [f"Where is the spare key to the {place} hidden?", f"Where can I find the {place} key?"]
    )
    distractor = f"The lock on the {other} was replaced after the storm."
    return _Fact(
        sentence,
        query,
        spot,
        "hiding_place",
        distractor,
        f"Where is the extra key to the {place} stashed?",
    )


def _wifi(rng: random.Random, names: _Names) -> _Fact:
    kind = rng.choice(PLACE_KINDS)
    place, other = names.place(kind), names.place(kind)
    words = rng.sample(PASSWORD_WORDS, 2)
    password = f"{words[0]}-{words[1]}-{rng.randint(10, 99)}"
    sentence = f"The Wi-Fi password at the {place} is {password}."
    query = f"What's the Wi-Fi password for the {place}?"
    distractor = f"The router at the {other} keeps dropping the connection."
    return _Fact(
        sentence, query, password, "wifi", distractor, f"How do I get online at the {place}?"
    )


def _extension(rng: random.Random, names: _Names) -> _Fact:
    person, other = names.person(), names.person()
    ext = str(rng.randint(2000, 7999))
    sentence = f"{person} can be reached on phone extension {ext} during office hours."
    query = rng.choice([f"What is {person}'s extension number?", f"How do I phone {person}?"])
    distractor = f"{other} is out of the office and not answering the phone this week."
    return _Fact(
        sentence,
        query,
        ext,
        "extension",
        distractor,
        f"Which internal number rings {person}'s desk?",
    )


TEMPLATES: list[Callable[[random.Random, _Names], _Fact]] = [
    _vault_code,
    _role,
    _meeting_place,
    _go_live_date,
    _preference,
    _allergy,
    _hiding_place,
    _wifi,
    _extension,
]


# -- notes -----------------------------------------------------------------------------------------


@dataclass
class _Note:
    path: str
    slug: str
    title: str
    kind: str
    topic: str
    date: dt.date
    status: str
    tags: list[str]
    extra: list[str]
    """Sentences (facts, distractors) to place inside the body."""


# (folder kind, share of notes, (min words, max words))
KINDS: list[tuple[str, float, tuple[int, int]]] = [
    ("daily", 0.5, (200, 600)),
    ("wiki", 0.2, (300, 900)),
    ("personal", 0.1, (150, 450)),
    ("resource", 0.2, (400, 1100)),
]
WORD_RANGE = {kind: words for kind, _, words in KINDS}


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    """One plausible-looking sentence over ``vocab`` (topic nouns mixed with general ones)."""
    parts = [rng.choice(SUBJECTS)]
    if rng.random() < 0.3:
        parts.append(rng.choice(ADVERBS))
    parts += [rng.choice(VERBS), "the", rng.choice(ADJECTIVES), rng.choice(vocab)]
    if rng.random() < 0.7:
        parts += [rng.choice(PREPOSITIONS), "the", rng.choice(vocab)]
    if rng.random() < 0.45:
        subject = rng.choice(SUBJECTS)
        parts += [rng.choice(CONNECTORS), subject if subject == "I" else subject.lower()]
        parts.append(rng.choice(VERBS))
        parts += ["the", rng.choice(vocab)]
        if rng.random() < 0.5:
            parts += [rng.choice(PREPOSITIONS), "the", rng.choice(ADJECTIVES), rng.choice(vocab)]
    if rng.random() < 0.2:
        parts.append(rng.choice(ADVERBS))
    text = " ".join(parts)
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, vocab: list[str], n_sentences: int) -> list[str]:
    return [_sentence(rng, vocab) for _ in range(n_sentences)]


def _title(rng: random.Random, topic_words: list[str]) -> str:
    return f"{rng.choice(ADJECTIVES)} {rng.choice(topic_words)} {rng.choice(NOUNS)}".capitalize()


def _slugify(title: str) -> str:
    return "-".join(title.lower().split())


def _plan_notes(rng: random.Random, n_notes: int) -> list[_Note]:
    notes: list[_Note] = []
    used_slugs: set[str] = set()
    kinds = [k for k, _, _ in KINDS]
    weights = [w for _, w, _ in KINDS]
    topics = list(TOPICS)
    for _ in range(n_notes):
        kind = rng.choices(kinds, weights)[0]
        topic = rng.choice(topics)
        title = _title(rng, TOPICS[topic])
        slug = base = _slugify(title)
        n = 2
        while slug in used_slugs:  # basenames stay unique, so [[slug]] links resolve uniquely
            slug, n = f"{base}-{n}", n + 1
        used_slugs.add(slug)
        date = START_DATE + dt.timedelta(days=rng.randrange(DAYS))
        folder = {
            "daily": f"daily/{date.isoformat()}",
            "wiki": "digest/wiki",
            "personal": "digest/personal",
            "resource": "resource",
        }[kind]
        status = "archived" if rng.random() < ARCHIVED_RATE else "active"
        tags = [topic, *rng.sample(TYPE_TAGS, rng.randint(0, 2))]
        if rng.random() < 0.3:
            tags.append(f"project/{rng.choice(PROJECT_NOUN).lower()}")
        notes.append(_Note(f"{folder}/{slug}.md", slug, title, kind, topic, date, status, tags, []))
    return notes


def _plant(rng: random.Random, notes: list[_Note]) -> list[PlantedFact]:
    active = [i for i, note in enumerate(notes) if note.status == "active"]
    n_facts = min(len(active), max(MIN_FACTS, len(notes) // NOTES_PER_FACT))
    hosts = rng.sample(active, n_facts)
    names = _Names(rng)
    facts: list[PlantedFact] = []
    for k, host in enumerate(hosts):
        fact = TEMPLATES[k % len(TEMPLATES)](rng, names)
        notes[host].extra.append(fact.sentence)
        if len(notes) > 1:
            other = rng.randrange(len(notes) - 1)
            notes[other if other < host else other + 1].extra.append(fact.distractor)
        facts.append(
            PlantedFact(
                fact.query, notes[host].path, fact.sentence, fact.answer, fact.kind, fact.paraphrase
            )
        )
    return facts


def _link(rng: random.Random, notes: list[_Note], slugs: set[str], self_index: int) -> str:
    """A wikilink to another note in one of the forms people write, or (sometimes) to nothing."""
    if rng.random() < DANGLING_RATE:
        while True:
            slug = _slugify(_title(rng, rng.choice(list(TOPICS.values())))) + "-draft"
            if slug not in slugs:
                return f"[[{slug}]]"
    # Digest notes are the hubs that many notes point at.
    wiki_bias = rng.random() < 0.4
    for _ in range(5):
        target = notes[rng.randrange(len(notes))]
        if target is not notes[self_index] and (not wiki_bias or target.kind == "wiki"):
            break
    form = rng.random()
    if form < 0.55:
        return f"[[{target.slug}]]"
    if form < 0.75:
        return f"[[{target.path[:-3]}]]"
    if form < 0.9:
        return f"[[{target.slug}|{target.title.lower()}]]"
    return f"[[{target.slug}#{rng.choice(HEADINGS)}]]"


def _yaml_str(value: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar, and never misread as a bool or number.
    return json.dumps(value)


def _render(rng: random.Random, notes: list[_Note], index: int, slugs: set[str]) -> str:
    note = notes[index]
    vocab = TOPICS[note.topic] + NOUNS
    low, high = WORD_RANGE[note.kind]
    target_words = rng.randint(low, high)
    lines = [
        "---",
        f"name: {_yaml_str(note.title)}",
        f"description: {_yaml_str(_sentence(rng, vocab))}",
        f"tags: [{', '.join(note.tags)}]",
        f"status: {note.status}",
        f"date: {note.date.isoformat()}",
        "---",
        "",
        f"# {note.title}",
        "",
    ]
    sections: list[list[str]] = []  # each section: its paragraphs, one line each
    words = 0
    headings = rng.sample(HEADINGS, len(HEADINGS))
    while words < target_words:
        paragraphs: list[str] = []
        for _ in range(rng.randint(1, 4)):
            sentences = _paragraph(rng, vocab, rng.randint(2, 6))
            if rng.random() < 0.25 and len(notes) > 1:
                position = rng.randrange(len(sentences) + 1)
                sentences.insert(position, f"See {_link(rng, notes, slugs, index)} for more.")
            if rng.random() < 0.15:
                paragraphs.append("\n".join(f"- {s}" for s in sentences))
            else:
                paragraphs.append(" ".join(sentences))
            words += sum(s.count(" ") + 1 for s in sentences)
        sections.append(paragraphs)
    for sentence in note.extra:
        paragraphs = sections[rng.randrange(len(sections))]
        at = rng.randrange(len(paragraphs))
        # Its own line, so no chunker can split the fact across two chunks.
        paragraphs.insert(at + 1, sentence)
    for n, paragraphs in enumerate(sections):
        lines += [f"## {headings[n % len(headings)]}", ""]
        for paragraph in paragraphs:
            lines += [paragraph, ""]
    if len(notes) > 1 and rng.random() < 0.6:
        lines += ["## Related", ""]
        lines += [f"- {_link(rng, notes, slugs, index)}" for _ in range(rng.randint(1, 4))]
        lines.append("")
    return "\n".join(lines)


def generate_workspace(root: Path, n_notes: int, seed: int = 0) -> list[PlantedFact]:
    """Write ``n_notes`` notes under ``root`` (which must be empty or absent); return the facts."""
    if n_notes < 1:
        raise ValueError(f"n_notes must be at least 1, got {n_notes}")
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty; generate into a new folder")
    rng = random.Random(seed)
    notes = _plan_notes(rng, n_notes)
    facts = _plant(rng, notes)
    slugs = {note.slug for note in notes}
    made: set[Path] = set()
    for index, note in enumerate(notes):
        path = root / note.path
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_text(_render(rng, notes, index, slugs), encoding="utf-8", newline="\n")
    return facts


def write_planted(root: Path, facts: list[PlantedFact], n_notes: int, seed: int) -> Path:
    """Write ``root/.planted.json`` describing the run and its facts; return its path."""
    payload = {"seed": seed, "n_notes": n_notes, "facts": [asdict(f) for f in facts]}
    path = Path(root) / PLANTED_FILE
    text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def load_planted(path: Path) -> list[PlantedFact]:
    """Read the facts back from a ``.planted.json`` file (or the workspace folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / PLANTED_FILE
    payload = json.loads(path.read_text(encoding="utf-8"))
    return [PlantedFact(**fact) for fact in payload["facts"]]


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="folder to create (must be empty or absent)")
    parser.add_argument("--notes", type=int, default=1000, help="number of notes (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    try:
        facts = generate_workspace(args.out_dir, args.notes, args.seed)
    except (ValueError, FileExistsError) as exc:
        parser.error(str(exc))
    planted = write_planted(args.out_dir, facts, args.notes, args.seed)
    print(
        f"wrote {args.notes} notes and {len(facts)} planted facts to {args.out_dir}/{planted.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
