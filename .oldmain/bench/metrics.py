"""Per-pair cost of each built-in metric on 10,000 generated (output, reference) pairs.

Run: ``python bench/metrics.py [--pairs N] [--words N]``. Prints microseconds per pair; also
rouge-score's own cost for the same pairs (default tokenizer, no stemmer, three variants: the
``rouge`` metric is rouge-score with a Unicode tokenizer, so the gap is the tokenizer's), and
the judge's reply parser (the only CPU part of an LLM judge; the model call dominates).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from reflex.judging.parse import parse_grades
from reflex.plugins import get_registry
from reflex.types import Example

VOCAB = [
    *[
        "the",
        "a",
        "model",
        "answer",
        "prompt",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "data",
        "test",
        "score",
    ],
    *[
        "42",
        "3.14",
        "it's",
        "state-of-the-art",
        "results",
        "improve",
        "when",
        "users",
        "ask",
        "clear",
        "questions",
    ],
]
METRICS: list[tuple[str, dict[str, object]]] = [
    ("exact_match", {}),
    ("contains", {}),
    ("regex", {"pattern": r"\b(fox|dog)\b"}),
    ("numeric", {}),
    ("f1", {}),
    ("rouge", {}),
    ("bleu", {}),
    ("chrf", {}),
    ("length", {"max_words": 50}),
]


def make_pairs(n: int, words: int, seed: int = 0) -> list[tuple[str, Example]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        ref = [rng.choice(VOCAB) for _ in range(rng.randint(words // 2, words))]
        out = [w if rng.random() < 0.7 else rng.choice(VOCAB) for w in ref]
        example = Example(f"p{i}", ({"role": "user", "content": "q"},), ideal=" ".join(ref))
        pairs.append((" ".join(out), example))
    return pairs


def per_pair_us(func: Callable[[str, Example], object], pairs: list[tuple[str, Example]]) -> float:
    start = time.perf_counter()
    for output, example in pairs:
        func(output, example)
    return 1e6 * (time.perf_counter() - start) / len(pairs)


def extra_rows(pairs: list[tuple[str, Example]]) -> list[tuple[str, float]]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    rows = [
        (
            "rouge-score 0.1.2 (reference)",
            per_pair_us(lambda o, e: scorer.score(e.ideal or "", o), pairs),
        )
    ]
    reply = json.dumps({"criteria": {n: {"grade": 4, "reason": "fine"} for n in ("a", "b", "c")}})
    messy = "Here you go:\n```json\n" + reply.replace('"', "'") + ",\n```"
    rows.append(
        (
            "judge reply parse (clean JSON)",
            per_pair_us(lambda o, e: parse_grades(reply, ["a", "b", "c"], 1, 5), pairs),
        )
    )
    rows.append(
        (
            "judge reply parse (messy)",
            per_pair_us(lambda o, e: parse_grades(messy, ["a", "b", "c"], 1, 5), pairs),
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--words", type=int, default=60, help="max words per reference")
    args = parser.parse_args()
    pairs = make_pairs(args.pairs, args.words)
    registry = get_registry()
    print(f"{args.pairs} pairs, references of {args.words // 2}-{args.words} words")
    print(f"{'metric':<34}{'us/pair':>10}{'total s':>10}")
    rows = [
        (name, per_pair_us(registry.metric(name, **opts).score, pairs)) for name, opts in METRICS
    ]
    for name, cost in [*rows, *extra_rows(pairs)]:
        print(f"{name:<34}{cost:>10.1f}{cost * args.pairs / 1e6:>10.2f}")


if __name__ == "__main__":
    main()
