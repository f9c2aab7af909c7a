"""Synthetic facts about people, planted in notes about something else.

The shape the held-out synthetic set found hard: every person has a profile note *about* them
(``people/<slug>.md``: role, team, hobbies, their name many times), and one fact about them (a
birthday, a new city, a pet's name) sits in a single sentence of a meeting or daily note about an
unrelated topic. Asked "what day was Zara Fischer born", the meaning arm prefers the profile
(about Zara Fischer), while only the meeting note holds the answer. Each fact is asked by the
person's name with the fact's own words (``query``) and with other words (``paraphrase``: only
the name is shared), and a near-miss distractor (same template, another person) sits elsewhere.

Standard library only; one seeded ``random.Random`` makes the same files for the same seed.

    python benchmarks/synthetic_entities.py OUT_DIR --notes 1000 --seed 0
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import (  # noqa: E402
    FIRST_NAMES,
    HEADINGS,
    LAST_NAMES,
    MONTHS,
    ROLES,
    TOPICS,
    PlantedFact,
    _paragraph,
)

START_DATE = dt.date(2024, 1, 1)
PEOPLE = 60
NOTES_PER_FACT = 10
HOBBIES = ["climbing", "choir", "chess", "rowing", "pottery", "birdwatching", "cycling", "baking"]
TEAMS = ["platform", "billing", "research", "support", "design", "data", "mobile", "security"]
PETS = ["Biscuit", "Pepper", "Juniper", "Mochi", "Waffles", "Clementine", "Pickle", "Nutmeg"]
CITIES = ["Porto", "Ghent", "Tallinn", "Bergen", "Lyon", "Trieste", "Cork", "Aarhus", "Graz"]
DISHES = ["shakshuka", "bibimbap", "pierogi", "ramen", "moussaka", "laksa", "paella"]
INSTRUMENTS = ["cello", "banjo", "trumpet", "harp", "accordion", "clarinet"]
CARS = ["a green Volvo estate", "a red Fiat 500", "a silver Skoda", "a blue Renault Zoe"]
LANGUAGES = ["Portuguese", "Finnish", "Swahili", "Korean", "Hungarian", "Icelandic"]


@dataclass(frozen=True)
class _Template:
    """One kind of fact: the sentence, the question in its words, the question in others."""

    kind: str
    values: list[str]
    sentence: Callable[[str, str], str]
    query: Callable[[str], str]
    paraphrase: Callable[[str], str]


def _birthday(rng: random.Random) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1965, 2001)}"


TEMPLATES = [
    _Template(
        "birthday",
        [],
        lambda who, v: f"Side note: {who} was born on {v}, so we should plan cake.",
        lambda who: f"What day was {who} born?",
        lambda who: f"When does {who} celebrate getting a year older?",
    ),
    _Template(
        "moved",
        CITIES,
        lambda who, v: f"{who} mentioned moving to {v} last spring and commutes from there.",
        lambda who: f"Which city did {who} move to?",
        lambda who: f"Where is {who} living these days?",
    ),
    _Template(
        "pet",
        PETS,
        lambda who, v: f"{who} brought a dog called {v} to the office today.",
        lambda who: f"What is the name of the dog {who} brought?",
        lambda who: f"What does {who} call their pet?",
    ),
    _Template(
        "dish",
        DISHES,
        lambda who, v: f"For the team lunch {who} cooked {v}, which everyone loved.",
        lambda who: f"What did {who} cook for the team lunch?",
        lambda who: f"Which meal did {who} prepare for colleagues?",
    ),
    _Template(
        "instrument",
        INSTRUMENTS,
        lambda who, v: f"Turns out {who} plays the {v} in an amateur orchestra.",
        lambda who: f"Which instrument does {who} play in the orchestra?",
        lambda who: f"What music does {who} make in their spare time?",
    ),
    _Template(
        "car",
        CARS,
        lambda who, v: f"{who} parked {v} in the visitor bay again.",
        lambda who: f"What car did {who} park in the visitor bay?",
        lambda who: f"What does {who} drive?",
    ),
    _Template(
        "language",
        LANGUAGES,
        lambda who, v: f"{who} has been learning {v} on the train every morning.",
        lambda who: f"Which language has {who} been learning?",
        lambda who: f"What is {who} studying during the commute?",
    ),
]


def _slug(text: str) -> str:
    return "-".join(text.lower().split())


def _profile(rng: random.Random, who: str, role: str, team: str, hobby: str) -> str:
    first = who.split()[0]
    vocab = TOPICS[rng.choice(sorted(TOPICS))]
    lines = [
        "---",
        f"name: {who}",
        f"description: {who}, {role} on the {team} team",
        "type: person",
        "---",
        f"# {who}",
        "",
        f"{who} is the {role} on the {team} team. {first} joined in "
        f"{rng.choice(MONTHS)} {rng.randint(2015, 2023)} and enjoys {hobby}.",
        "",
        f"## Working with {first}",
        "",
        f"{first} prefers short written updates. Ask {who} about {team} decisions.",
        *_paragraph(rng, vocab, 3),
        "",
    ]
    return "\n".join(lines)


def _other_note(
    rng: random.Random, day: dt.date, topic: str, people: list[str], planted: list[str]
) -> str:
    vocab = TOPICS[topic]
    heading = rng.choice(HEADINGS)
    body = _paragraph(rng, vocab, rng.randint(3, 6))
    # People are mentioned in passing, so a name alone does not point at the fact's note.
    body.insert(rng.randint(0, len(body)), f"{rng.choice(people)} joined for part of it.")
    for sentence in planted:
        body.insert(rng.randint(0, len(body)), sentence)
    title = f"{topic.title()} {rng.choice(['sync', 'notes', 'catch-up', 'planning'])}"
    lines = ["---", f"date: {day.isoformat()}", f"tags: [{topic}]", "---", f"# {title}", ""]
    return "\n".join([*lines, f"## {heading}", "", *body, ""])


def generate(root: Path, n_notes: int, seed: int = 0) -> list[PlantedFact]:
    """Write the workspace under ``root``; return the planted facts (answer = note path)."""
    rng = random.Random(seed)
    names: list[str] = []
    while len(names) < PEOPLE:
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if name not in names:
            names.append(name)
    for who in names:
        path = root / "digest" / "people" / f"{_slug(who)}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _profile(rng, who, rng.choice(ROLES), rng.choice(TEAMS), rng.choice(HOBBIES))
        path.write_text(text, "utf-8")
    others = max(1, n_notes - PEOPLE)
    n_facts = max(10, others // NOTES_PER_FACT)
    slots: dict[int, list[str]] = {}
    facts: list[PlantedFact] = []
    used: set[tuple[str, str]] = set()
    paths = [_note_path(i) for i in range(others)]
    for _ in range(n_facts):
        template = rng.choice(TEMPLATES)
        who, other = rng.sample(names, 2)
        if (who, template.kind) in used:
            continue
        used.add((who, template.kind))
        value, decoy = (
            (_birthday(rng), _birthday(rng))
            if template.kind == "birthday"
            else rng.sample(template.values, 2)
        )
        answer, elsewhere = rng.sample(range(others), 2)
        slots.setdefault(answer, []).append(template.sentence(who, value))
        slots.setdefault(elsewhere, []).append(template.sentence(other, decoy))
        facts.append(
            PlantedFact(
                query=template.query(who),
                answer_path=paths[answer],
                answer_text=template.sentence(who, value),
                answer=value,
                kind=f"entity_{template.kind}",
                paraphrase=template.paraphrase(who),
            )
        )
    for index, relative in enumerate(paths):
        day = START_DATE + dt.timedelta(days=index % 365)
        topic = sorted(TOPICS)[index % len(TOPICS)]
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_other_note(rng, day, topic, names, slots.get(index, [])), "utf-8")
    return facts


def _note_path(index: int) -> str:
    day = START_DATE + dt.timedelta(days=index % 365)
    return f"daily/{day.isoformat()}/note-{index:04d}.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    facts = generate(args.out, args.notes, args.seed)
    (args.out / ".planted.json").write_text(
        json.dumps([asdict(f) for f in facts], indent=1), "utf-8"
    )
    print(f"{len(facts)} facts about {PEOPLE} people in {args.notes} notes under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
