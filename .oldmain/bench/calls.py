"""Target 4: no wasted calls. An optimization pays each (prompt, row) pair once; re-running it
against the same run directory pays nothing.

    python bench/calls.py [--iterations 4] [--rows FILE]

A cacheless optimizer re-evaluates unchanged prompts (the incumbent on the same rows, the seed on
val, the winner on test): those are our cache hits, so ``paid + hits`` is what it would pay.
Counts come from the endpoint itself, so hidden SDK retries would show.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile

from _common import Row, emit

from reflex import PromptOptimizer
from reflex.testing.endpoint import ChatRequest, serve

os.environ.setdefault("OPENAI_API_KEY", "sk-none")
GOOD = "Answer with the label only."


def responder(request: ChatRequest) -> str:
    if request.model == "reasoner":  # a new candidate each time, sometimes the good one
        tag = hashlib.sha256(request.user.encode()).hexdigest()[:6]
        prompt = GOOD if tag[0] in "01234567" else f"Try harder {tag}."
        return f"<diagnosis>too wordy</diagnosis><edit>shorter</edit><prompt>{prompt}</prompt>"
    label = request.user.split()[-1]
    row = int(request.user.split()[1])
    return label if GOOD in request.system or row % 4 == 0 else f"The answer is {label}"


def optimize(url: str, run_dir: str, iterations: int) -> object:
    records = [
        {"id": f"r{i}", "input": f"row {i} label{i % 3}", "ideal": f"label{i % 3}"}
        for i in range(60)
    ]
    return (
        PromptOptimizer()
        .set_dataset(records)
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_strategy("iterative")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .configure(max_iterations=iterations, early_stopping_patience=None, run_dir=run_dir)
        .run("Answer the question.")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    run_dir = tempfile.mkdtemp(prefix="reflex-calls-")
    with serve(responder=responder) as url:
        result = optimize(url, run_dir, args.iterations)
        first = url.stats().requests
        task = result.usage["task"]  # type: ignore[attr-defined]
        again = optimize(url, run_dir, args.iterations)
        second = url.stats().requests - first
    paid, hits = task["calls"], task["cache_hits"]
    naive = paid + hits
    saving = hits / naive if naive else 0.0
    print(
        f"optimization ({args.iterations} iterations): {first} requests at the endpoint; task "
        f"calls {paid} paid + {hits} served from cache -> a re-evaluating optimizer pays "
        f"{naive} ({saving:.0%} saved)"
    )
    print(
        f"same run again in the same run dir: {second} requests "
        f"(final {again.final.mean_score:.2f})"
    )  # type: ignore[attr-defined]
    emit(
        [
            Row(
                "4",
                f"task calls, iterative x{args.iterations}: paid vs paid + cache hits",
                f"{paid} vs {naive}",
                "(calls_peer.py: vs 0.2.0)",
            ),
            Row(
                "4",
                "requests when the same optimization is repeated",
                str(second),
                "0",
                second == 0,
            ),
        ],
        args.rows,
    )


if __name__ == "__main__":
    main()
