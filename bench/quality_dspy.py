"""DSPy's few-shot optimizers on one task split, for bench/quality.py (runs in a DSPy venv).

    <dspy-venv>/bin/python bench/quality_dspy.py --api-base URL --splits FILE --start TEXT
        --budget 450 --max-tokens 16 --out FILE

The model is served by bench/quality.py's endpoint (OpenAI-compatible, it counts requests at
``/stats``); this script imports only DSPy, never reflex. For each optimizer it records the
calls its search made (counted at the endpoint), the test score of the compiled program and
each test row's score (exact match of the answer field, stripped). ``LabeledFewShot`` (k=16)
makes no search call; ``BootstrapFewShotWithRandomSearch`` runs with DSPy's defaults except
``num_candidate_programs``: the val passes the budget pays for, less DSPy's three baseline
programs (its bootstrapping calls come on top, so its search calls are reported as counted).
``MIPROv2`` (issue 33: the anchor of ``-s mipro``) runs with ``auto=None``, 6 instruction and
6 demo-set candidates proposed by the same model (no stronger prompt model is given, as ours
gets none), minibatches of 8 val rows like ``-s mipro``'s, a full-val pass every 5 trials, and
as many trials as the budget pays for at that rate (bootstrapping and proposal calls on top,
reported as counted). ``QUALITY_DSPY_OPTIMIZERS=labeled,bfswrs,mipro`` picks which run (all by
default).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import urllib.request
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # after DSPY_CACHEDIR is set

DSPY_FORMAT_TOKENS = 48  # room for the answer field markers on top of the task cap
MIPRO_MINIBATCH = 8  # the val rows of one MIPROv2 trial, as -s mipro's minibatches
MIPRO_FULL_EVAL_STEPS = 5  # a full-val pass every 5 trials (DSPy's default, and ours)


def requests_so_far(api_base: str) -> int:
    with urllib.request.urlopen(api_base.rsplit("/v1", 1)[0] + "/stats") as response:
        return int(json.load(response)["requests"])


def exact(example: Any, prediction: Any, trace: Any = None) -> bool:
    return str(getattr(prediction, "answer", "")).strip() == example.answer.strip()


def test_scores(program: Any, rows: list[dict[str, str]]) -> dict[str, float]:
    scores = {}
    for row in rows:
        try:
            prediction = program(input=row["input"])
        except Exception:  # noqa: BLE001 (an unparseable answer scores 0, as in DSPy's Evaluate)
            prediction = None
        example = dspy.Example(input=row["input"], answer=row["ideal"])
        scores[row["id"]] = 1.0 if prediction is not None and exact(example, prediction) else 0.0
    return scores


def mipro(program: Any, train: list[Any], val: list[Any], budget: int, seed: int) -> Any:
    """MIPROv2 sized to ``budget``: each trial costs a minibatch, every fifth a full val pass."""
    per_round = MIPRO_FULL_EVAL_STEPS * MIPRO_MINIBATCH + len(val)
    trials = max(MIPRO_FULL_EVAL_STEPS, budget * MIPRO_FULL_EVAL_STEPS // per_round)
    optimizer = dspy.MIPROv2(
        metric=exact, auto=None, num_candidates=6, num_threads=1, seed=seed, verbose=False
    )
    return optimizer.compile(
        program,
        trainset=train,
        valset=val,
        num_trials=trials,
        minibatch_size=min(MIPRO_MINIBATCH, len(val)),
        minibatch_full_eval_steps=MIPRO_FULL_EVAL_STEPS,
    )


def compilers(
    splits: dict[str, list[dict[str, str]]], start: str, budget: int, seed: int
) -> dict[str, tuple[str, Callable[[], Any]]]:
    """Short name -> (table row, a function compiling the start program with that optimizer)."""

    def examples(name: str) -> list[Any]:
        return [
            dspy.Example(input=r["input"], answer=r["ideal"]).with_inputs("input")
            for r in splits[name]
        ]

    program = dspy.Predict(dspy.Signature("input -> answer", instructions=start))
    # Each candidate program (and DSPy's three baselines) is scored on all of val: size the
    # search to the budget, then report the calls it really made (bootstrapping comes on top).
    candidates = max(1, budget // max(1, len(splits["val"])) - 3)
    return {
        "labeled": (
            "DSPy LabeledFewShot",
            lambda: dspy.LabeledFewShot(k=16).compile(program, trainset=examples("train")),
        ),
        "bfswrs": (
            "DSPy BootstrapFewShotWithRandomSearch",
            lambda: dspy.BootstrapFewShotWithRandomSearch(
                metric=exact, num_candidate_programs=candidates, num_threads=1
            ).compile(program, trainset=examples("train"), valset=examples("val")),
        ),
        "mipro": (
            "DSPy MIPROv2",
            lambda: mipro(program, examples("train"), examples("val"), budget, seed),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--api-base", "--splits", "--start", "--out"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--budget", type=int, default=450)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lm = dspy.LM(
        "openai/local",
        api_base=args.api_base,
        api_key="none",
        temperature=0.0,
        # DSPy's chat format wraps the answer in "[[ ## answer ## ]] ... [[ ## completed ## ]]"
        # (~15 tokens more): with the task's own cap every answer was cut and failed to parse.
        max_tokens=args.max_tokens + DSPY_FORMAT_TOKENS,
        cache=False,
    )
    # An answer DSPy cannot parse scores 0 (as a wrong answer would); never abort the search.
    dspy.configure(lm=lm, max_errors=10**6)
    with open(args.splits, encoding="utf-8") as handle:
        splits: dict[str, list[dict[str, str]]] = json.load(handle)

    optimizers = compilers(splits, args.start, args.budget, args.seed)
    chosen = os.environ.get("QUALITY_DSPY_OPTIMIZERS", ",".join(optimizers)).split(",")
    out = []
    for method, compile_program in (optimizers[name.strip()] for name in chosen if name.strip()):
        before = requests_so_far(args.api_base)
        compiled = compile_program()
        calls = requests_so_far(args.api_base) - before
        scores = test_scores(compiled, splits["test"])
        out.append(
            {
                "method": method,
                "score": sum(scores.values()) / max(1, len(scores)),
                "calls": calls,
                "per_row": scores,
            }
        )
        # After each optimizer: a long search cut short still leaves the earlier results.
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(out, handle)


if __name__ == "__main__":
    main()
