"""Every strategy at the same metric-call budget on one example: a comparison table.

    python bench/strategies.py [--model local/qwen2.5-coder-0.5b] [--reasoning-model P/M]
        [--strategies iterative,structural,pdo,...] [--max-calls 300] [--example DIR]
        [--max-iterations 6] [--fake]

For each strategy it prints the final test score, metric calls, tokens (task + reasoning) and
wall time. Strategies that need a reasoning model are skipped without ``--reasoning-model``.
``--fake`` runs against the deterministic fake models of ``reflex.testing`` (a smoke test of
the script itself; its numbers mean nothing). Asserts nothing: machines and models differ.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex import BudgetExhausted, PromptOptimizer
from reflex.plugins import get_registry

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "instructions,fewshot,iterative,structural,pdo,auto"


def _fake_models() -> tuple[str, str]:
    from reflex.testing import FakeModel, FakeRequest

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return "<edit>be terse</edit><prompt>Answer with only the label.</prompt>"
        right = "only the label" in request.system or int(request.user.split()[1]) % 3 == 0
        return request.user.split()[-1] if right else "unsure"

    FakeModel(answer).install()
    return "fake/task", "fake/reasoner"


def _fake_rows() -> list[dict[str, str]]:
    return [
        {"input": f"item {i} is {'red' if i % 2 else 'blue'}", "ideal": "red" if i % 2 else "blue"}
        for i in range(40)
    ]


def run_one(
    args: argparse.Namespace,
    strategy: str,
    data: Any,
    prompt: Any,
    model: str,
    reasoner: str | None,
) -> dict[str, Any]:
    opt = (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider(model)
        .add_metric("exact_match")
        .set_strategy(strategy)
        .set_budget(max_calls=args.max_calls)
        .set_run_dir(tempfile.mkdtemp(prefix=f"reflex-bench-{strategy}-"))
        .configure(max_iterations=args.max_iterations, max_tokens=32)
    )
    if reasoner:
        opt.set_reasoning_model(reasoner)
    started = time.perf_counter()
    try:
        result = opt.run(prompt)
    except BudgetExhausted as exc:
        if exc.partial is None:
            raise
        result = exc.partial
    usage = result.usage
    return {
        "strategy": strategy,
        "final": result.final.mean_score if result.final else None,
        "baseline": result.baseline.mean_score if result.baseline else None,
        "calls": usage.get("metric_calls", 0),
        "tokens": usage["task"]["tokens"] + usage["reasoning"]["tokens"],
        "wall": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--reasoning-model", default=None)
    parser.add_argument("--strategies", default=DEFAULT)
    parser.add_argument("--max-calls", type=int, default=300)
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument(
        "--example", type=Path, default=ROOT / "examples" / "home_assistant_intents"
    )
    parser.add_argument("--fake", action="store_true", help="smoke-test with fake models")
    args = parser.parse_args()
    model, reasoner = args.model, args.reasoning_model
    data: Any = args.example / "quickstart.jsonl"
    prompt: Any = args.example / "prompt.md"
    if args.fake:
        model, reasoner = _fake_models()
        data, prompt = _fake_rows(), "Name the colour."
    registry = get_registry()
    rows = []
    for name in [s.strip() for s in args.strategies.split(",") if s.strip()]:
        if registry.strategy(name).requires_reasoning_model and not reasoner:
            print(f"skip {name}: needs --reasoning-model", file=sys.stderr)
            continue
        rows.append(run_one(args, name, data, prompt, model, reasoner))
    print(f"{'strategy':<14}{'baseline':>9}{'final':>8}{'calls':>7}{'tokens':>10}{'wall s':>8}")
    for row in rows:
        base = "n/a" if row["baseline"] is None else f"{row['baseline']:.3f}"
        final = "n/a" if row["final"] is None else f"{row['final']:.3f}"
        print(
            f"{row['strategy']:<14}{base:>9}{final:>8}{row['calls']:>7}"
            f"{row['tokens']:>10,}{row['wall']:>8.1f}"
        )


if __name__ == "__main__":
    main()
