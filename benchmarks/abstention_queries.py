"""Queries with no answer in any dev workspace, for benchmarks/abstention.py.

Two kinds: ``nonsense`` (``zzzxqv`` and made-up words from one seeded ``random.Random``, which
share no word with any note and whose vectors still have nearest neighbours) and ``off-topic``
(questions from fields no dev workspace writes about: astronomy, chemistry, history, zoology; a
word of one may still occur in a note, as it would in a real workspace).
"""

from __future__ import annotations

import random

OFF_TOPIC = [
    "What is the half-life of carbon-14?",
    "How many moons does Neptune have?",
    "Which element has the atomic number 79?",
    "When did the Byzantine Empire fall to the Ottomans?",
    "What is the airspeed velocity of an unladen swallow?",
    "How do tectonic plates form volcanic island arcs?",
    "Who won the 1966 FIFA World Cup final?",
    "What is the derivative of the hyperbolic tangent function?",
    "How does photosynthesis fix carbon dioxide in C4 plants?",
    "Which Roman emperor built the wall across northern Britain?",
    "What language family does Basque belong to?",
    "How do I compile a Rust crate to WebAssembly?",
    "What is the chess opening called the Sicilian Dragon?",
    "How long is the gestation period of an African elephant?",
    "What causes the aurora borealis?",
    "Who wrote the novel One Hundred Years of Solitude?",
    "What is the tallest volcano in the solar system?",
    "How many hearts does a squid have?",
    "What is the speed of sound in seawater?",
    "Which dinosaur had the largest skull?",
    "What is the Riemann hypothesis about?",
    "How do octopuses change the colour of their skin?",
    "What year did the Berlin Wall fall?",
    "Who discovered penicillin?",
    "What is quantum entanglement?",
    "How does a nuclear submarine purify its air?",
    "What is the capital city of Kyrgyzstan?",
    "Which planet has the Great Red Spot?",
    "How are diamonds formed in the Earth's mantle?",
    "What does the Krebs cycle produce?",
    "Which pharaoh built the Great Pyramid of Giza?",
    "What is the Coriolis effect?",
    "How do glaciers carve fjords?",
    "Who first climbed Everest without supplemental oxygen?",
    "What is a neutron star made of?",
    "Who invented the printing press with movable type?",
    "How do bats navigate using echolocation?",
    "What is the offside rule in ice hockey?",
    "How many chromosomes does a potato have?",
    "What is the melting point of tungsten?",
]


def nonsense(count: int = 40, seed: int = 0) -> list[str]:
    """``zzzxqv`` and ``count - 1`` made-up words (one to three), the same for the same seed."""
    rng = random.Random(seed)
    letters = "bcdfghjklmnpqrstvwxzaeiouy"
    out = ["zzzxqv"]
    while len(out) < count:
        words = [
            "".join(rng.choice(letters) for _ in range(rng.randint(5, 9)))
            for _ in range(rng.randint(1, 3))
        ]
        out.append(" ".join(words))
    return out


def negatives() -> list[tuple[str, str]]:
    """``(kind, query)`` for every query with no answer."""
    return [("nonsense", q) for q in nonsense()] + [("off-topic", q) for q in OFF_TOPIC]
