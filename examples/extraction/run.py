"""Optimize an extraction prompt: every quantity in a sentence as JSON (quantulum3's test
sentences), scored field by field with the ``json_match`` metric against ``response_format.json``.

Each reference is ``{"quantities": [{"value": <number>, "unit": <unit name>}, ...]}``; list
elements match as a multiset, numbers by value, and an answer that breaks the schema loses half
its credit (``schema_penalty``). ``response_format.json`` is OpenAI's ``response_format``
(``json_schema``, strict): the same file can be sent with the requests (``--response-format``).

From the repository root (the local CPU model needs ``pip install '.[local]'``)::

    python examples/extraction/run.py
    python examples/extraction/run.py -m openai/gpt-4o-mini --reasoning-model openai/gpt-4o

The same run from the CLI::

    aevyra-reflex optimize examples/extraction/dataset.jsonl examples/extraction/prompt.md \\
        -m local/qwen2.5-coder-0.5b -s auto \\
        --metric json_match,schema=examples/extraction/response_format.json

tests/test_examples.py runs this file on the fake model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reflex import OptimizationResult, PromptOptimizer

HERE = Path(__file__).resolve().parent
DATASET = HERE / "dataset.jsonl"
RESPONSE_FORMAT = HERE / "response_format.json"


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
        .add_metric("json_match", schema=str(RESPONSE_FORMAT))
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
