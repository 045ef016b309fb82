"""Target 4, like for like: model calls of one optimization through aevyra-reflex 0.2.0 and us.

    python bench/calls_peer.py [--peer /tmp/peer-venv/bin/aevyra-reflex] [--iterations 4]
                               [--strategies iterative structural auto]

Both run the same strategy for the same number of iterations (0.2.0: threshold out of reach and
early stopping off; us: patience off) on the same 60 rows with the same split fractions (45%
train / 20% val / 35% test), against the same deterministic endpoint: a task model that gets a
row right when the row number is a multiple of 3, or of 2 once the prompt says the good words,
and a reasoning model whose 2nd answer is the good prompt and every other answer a new,
no-better one. The endpoint counts the requests each tool sent, by model. The split rows differ
(each tool draws its own), the workload does not. The strategies share names, not internals:
the reasoning-call counts printed beside the task calls show how much proposing each did.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from _common import Row, emit, write_jsonl

from reflex import PromptOptimizer
from reflex.testing.endpoint import ChatRequest, serve

os.environ.setdefault("OPENAI_API_KEY", "sk-none")
GOOD = "Answer with the label only."
SEED = "Answer the question."


class Script:
    """The endpoint's answers, and a count of the requests per model."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> str:
        with self._lock:
            self.counts[request.model] += 1
            number = self.counts[request.model]
        if request.model == "reasoner":
            prompt = GOOD if number == 2 else f"Answer the question (variant {number})."
            return (
                f"<diagnosis>too wordy</diagnosis><edit>shorter</edit><prompt>{prompt}</prompt>\n"
                f"## Summary of change\nshorter\n## Revised prompt\n{prompt}"
            )
        words = request.user.split()
        row, label = int(words[1]), words[-1]
        right = row % 3 == 0 or (GOOD in request.system and row % 2 == 0)
        return label if right else f"The answer is {label}"


def records() -> list[dict[str, str]]:
    return [{"input": f"row {i} label{i % 3}", "ideal": f"label{i % 3}"} for i in range(60)]


def run_peer(peer: str, url: str, iterations: int, work: Path, strategy: str) -> None:
    data = write_jsonl(records(), work / "data.jsonl")
    (work / "prompt.md").write_text(SEED + "\n")
    command = [
        peer, "optimize", str(data), str(work / "prompt.md"), "-m", "openai/task",
        "--input-field", "input", "--output-field", "ideal", "--metric", "exact",
        "--strategy", strategy, "--max-iterations", str(iterations), "--threshold", "1.0",
        "--early-stopping-patience", "0", "--train-split", "0.65", "--val-split", "0.20",
        "--max-workers", "8", "--reasoning-model", "openai/reasoner",
        "--reasoning-base-url", url, "--reasoning-api-key", "sk-none",
        "--run-dir", str(work / ".reflex"),
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-none"}
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"aevyra-reflex 0.2.0 failed: {done.stderr[-2000:]}")


def run_ours(url: str, iterations: int, work: Path, strategy: str) -> Any:
    return (
        PromptOptimizer()
        .set_dataset(records())
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_strategy(strategy)
        .set_reasoning_model("openai/reasoner", base_url=url)
        .configure(
            max_iterations=iterations,
            early_stopping_patience=None,
            train_split=0.45,
            val_split=0.20,
            max_workers=8,
            run_dir=str(work / ".reflex"),
        )
        .run(SEED)
    )


def measure(peer: str, iterations: int, strategy: str) -> Row:
    counts = {}
    for name in ("0.2.0", "ours"):
        script = Script()
        with serve(responder=script) as url, tempfile.TemporaryDirectory() as tmp:
            if name == "0.2.0":
                run_peer(peer, url, iterations, Path(tmp), strategy)
            else:
                run_ours(url, iterations, Path(tmp), strategy)
        counts[name] = script.counts
    theirs, ours = counts["0.2.0"], counts["ours"]
    saving = 1 - ours["task"] / theirs["task"] if theirs["task"] else 0.0
    print(
        f"{strategy} x{iterations}: 0.2.0 task {theirs['task']} + reasoning "
        f"{theirs['reasoner']} requests; ours task {ours['task']} + reasoning {ours['reasoner']}",
        flush=True,
    )
    return Row(
        "4",
        f"task calls, {strategy} x{iterations}: ours vs 0.2.0",
        f"{ours['task']} vs {theirs['task']} (-{saving:.0%})",
        ">= 30% fewer",
        saving >= 0.30,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer", default="/tmp/peer-venv/bin/aevyra-reflex")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--strategies", nargs="+", default=["iterative", "structural", "auto"])
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    if not Path(args.peer).exists():
        print(f"peer not installed at {args.peer}: skipped (see bench/peer.py's docstring)")
        emit([Row("4", "calls vs aevyra-reflex 0.2.0", "skipped", "", None)], args.rows)
        return
    emit([measure(args.peer, args.iterations, name) for name in args.strategies], args.rows)


if __name__ == "__main__":
    main()
