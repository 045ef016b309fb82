"""Target 7: what the prefix-friendly prompt layout saves on the embedded local model.

    python bench/prefix.py [--calls 12] [--rounds 2] [--rows FILE]

llama.cpp keeps the previous call's evaluated tokens and re-evaluates only from the first token
that differs. The engine sends the fixed instruction first (system message) and the variable
input last (user message), so consecutive calls of one evaluation share the whole instruction.
This benchmark sends the same tokens both ways -- instruction first, or review first -- through
``ProviderClient`` (cache off, one thread), ``--calls`` different reviews per block, blocks
alternating ``--rounds`` times so machine drift hits both layouts alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("REFLEX_LOCAL_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _common import Row, emit
from local_model import REVIEWS

from reflex.models import local
from reflex.models.client import ModelSpec, ProviderClient, load_litellm
from reflex.models.runner import LoopRunner

MODEL = "local/qwen2.5-coder-0.5b"
# A realistic instruction (~170 tokens): the part every call of an evaluation shares.
INSTRUCTION = (
    "You are a careful film critic's assistant. Classify the sentiment of the movie review "
    "that you are given. Read the whole review before deciding: reviews often open with praise "
    "and end with a complaint, or the other way round, and the overall verdict is what counts. "
    "Sarcasm counts as negative. A review that praises the acting but says the film is not worth "
    "watching is negative. A review that lists small flaws but recommends the film is positive. "
    "Ignore remarks about the cinema, the price of tickets or the audience. Do not explain your "
    "answer and do not repeat the review. Answer with exactly one word, in lower case, with no "
    "punctuation: positive or negative."
)


def layouts(review: str) -> dict[str, list[dict[str, str]]]:
    return {
        "instruction first": [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": review},
        ],
        "input first": [
            {"role": "user", "content": f"Review: {review}\n\n{INSTRUCTION}"},
        ],
    }


def block(client: ProviderClient, layout: str, reviews: list[str]) -> list[float]:
    spec = ModelSpec(MODEL, max_tokens=4)
    times = []
    for review in reviews:
        messages = layouts(review)[layout]
        started = time.perf_counter()
        LoopRunner.shared().run(client.complete(spec, messages))
        times.append(time.perf_counter() - started)
    return times[1:]  # the first call of a block pays for the previous block's other layout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    local.register_local_provider()
    load_litellm()
    local.model_pool(local.qwen_model_path()).warm()
    client = ProviderClient(cache=None)
    reviews = [f"{REVIEWS[i % len(REVIEWS)]} (#{i})" for i in range(args.calls)]
    times: dict[str, list[float]] = {"instruction first": [], "input first": []}
    for _ in range(args.rounds):
        for layout in times:
            times[layout] += block(client, layout, reviews)
    first, last = (statistics.median(times[k]) for k in times)
    saving = 1 - first / last
    for layout, values in times.items():
        print(f"{layout:<18} median {statistics.median(values):.3f}s per call over {len(values)}")
    emit(
        [
            Row(
                "7",
                "local call, instruction first vs input first (median)",
                f"{first:.2f}s vs {last:.2f}s (-{saving:.0%})",
            )
        ],
        args.rows,
    )


if __name__ == "__main__":
    main()
