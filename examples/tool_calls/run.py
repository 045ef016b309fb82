"""Optimize a tool-calling prompt on BFCL's simple Python functions (Berkeley Function Calling
Leaderboard), scored with the ``tool_call`` metric.

Each row offers its function(s) as ``tools`` and expects one call; ``metadata.ground_truth``
keeps BFCL's acceptable values and optional arguments (see ``convert_bfcl.py``, which wrote
``dataset.jsonl`` and ``multiple.jsonl`` from ``../shared/datasets/bfcl_*.jsonl``). Strings
compare the way BFCL's checker does (``strings="bfcl"``).

From the repository root (the local CPU model needs ``pip install '.[local]'``)::

    python examples/tool_calls/run.py
    python examples/tool_calls/run.py --dataset examples/tool_calls/multiple.jsonl \\
        -m openai/gpt-4o-mini --reasoning-model openai/gpt-4o

The same run from the CLI::

    aevyra-reflex optimize examples/tool_calls/dataset.jsonl examples/tool_calls/prompt.md \\
        -m local/qwen2.5-coder-0.5b -s auto --metric tool_call,strings=bfcl

tests/test_examples.py runs this file on the fake model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reflex import OptimizationResult, PromptOptimizer

HERE = Path(__file__).resolve().parent
DATASET = HERE / "dataset.jsonl"


def main(argv: list[str] | None = None) -> OptimizationResult:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-m", "--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("-s", "--strategy", default="auto")
    parser.add_argument("--reasoning-model", help="Enables the iterative phase of auto.")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--max-iterations", type=int, default=5)
    parser.add_argument("--run-dir", default=".reflex")
    args = parser.parse_args(argv)

    optimizer = (
        PromptOptimizer()
        .set_dataset(args.dataset)
        .add_provider(args.model)
        .add_metric("tool_call", strings="bfcl")
        .set_strategy(args.strategy)
        .configure(max_iterations=args.max_iterations, run_dir=args.run_dir)
    )
    if args.reasoning_model:
        optimizer.set_reasoning_model(args.reasoning_model)
    result = optimizer.run(HERE / "prompt.md")
    baseline = result.baseline.mean_score if result.baseline else float("nan")
    final = result.final.mean_score if result.final else float("nan")
    print(f"test score {baseline:.3f} -> {final:.3f} (p={result.p_value})")
    print(result.best_prompt)
    return result


if __name__ == "__main__":
    main()
