"""Generated (output, reference) pairs for the text metrics' checks against their reference
implementations (rouge-score, sacrebleu)."""

from __future__ import annotations

import random

from reflex.types import Example

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "It's",
    "state-of-the-art",
    "snake_case",
    "42",
    "3.14",
    "U.S.A.",
    "e-mail",
    "(aside)",
    '"quoted"',
    "end.",
    "Yes!",
    "no?",
    "model's",
    "GPU",
    "x2",
]


def corpus(n: int = 400, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(0, 25))]
        hyp = [w if rng.random() < 0.6 else rng.choice(WORDS) for w in ref]
        hyp = hyp[: rng.randint(0, len(hyp))] + [
            rng.choice(WORDS) for _ in range(rng.randint(0, 5))
        ]
        pairs.append((" ".join(hyp), " ".join(ref)))
    return [*pairs, ("", ""), ("", "a b"), ("a b", ""), ("Same text.", "same TEXT")]


def row(ideal: str) -> Example:
    return Example("r", ({"role": "user", "content": "q"},), ideal=ideal)
