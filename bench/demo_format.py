"""Demos in the system prompt vs as chat turns, on the embedded model (issue 17).

For one bench/quality.py task and seed: the same demos drawn from train (one per label when the
labels are at most 16, else four), scored by exact match on the first ``--rows`` test rows under
five prompts: the bare start prompt and the hand-written one, each with the demos as an
``Examples:`` section in the system prompt and as user/assistant turns, and the hand-written
prompt alone. Prints one line per prompt. ~2 minutes per task at 60 rows on one core.

    python bench/demo_format.py --task arithmetic --seed 0
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from quality import TASKS, stratified  # noqa: E402

from reflex.data.demos import render_chat_demos  # noqa: E402
from reflex.models import local  # noqa: E402
from reflex_strategies.fewshot import Demo, pick_demos, render_demos  # noqa: E402

Rows = list[dict[str, Any]]


def _score(model: str, prompt: str, rows: Rows, max_tokens: int) -> float:
    """Exact-match accuracy of ``prompt`` (chat-turn demos included) on ``rows``."""
    from reflex.data.demos import prompt_messages

    right = 0
    for row in rows:
        messages = prompt_messages(prompt, row["input"])
        params = {"temperature": 0, "max_tokens": max_tokens}
        sent: list[dict[str, object]] = [dict[str, object](m) for m in messages]
        result: Any = local._generate(model, sent, params)
        answer = str(result["choices"][0]["message"]["content"] or "").strip()
        right += answer == str(row["ideal"]).strip()
    return right / len(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="arithmetic", choices=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="a local/... model name")
    args = parser.parse_args(argv)
    task = TASKS[args.task]
    rows = stratified(task.rows(), task.sizes, args.seed)
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"][: args.rows]
    pool = [Demo(r["id"], r["input"], r["ideal"], False) for r in train]
    labels = len({r["ideal"] for r in train})
    demos = pick_demos(pool, labels if labels <= 16 else 4, random.Random(args.seed))
    turns = render_chat_demos([(d.input, d.output) for d in demos])
    hand = task.hand_written(task.rows())
    prompts = {
        "bare + demos in system": f"{task.start}\n\n{render_demos(demos)}",
        "bare + demos as turns": f"{task.start}\n\n{turns}",
        "hand-written + demos in system": f"{hand}\n\n{render_demos(demos)}",
        "hand-written + demos as turns": f"{hand}\n\n{turns}",
        "hand-written alone": hand,
    }
    for name, prompt in prompts.items():
        start = time.perf_counter()
        score = _score(args.model, prompt, test, task.max_tokens)
        took = time.perf_counter() - start
        print(
            f"{args.task} seed {args.seed} {name:32s} {score:.3f} "
            f"({len(test)} rows, {len(demos)} demos, {took:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
