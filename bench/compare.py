"""`compare` across every registered strategy on one example, printing the table.

    python bench/compare.py --model P/M --reasoning-model P/M [--max-calls N] [--seeds K]
    python bench/compare.py --fake          # a smoke run on the scripted fake models

Each strategy x seed runs at the same metric-call budget in its own run directory (no shared
cache). Prints the markdown table (also saved as compare.md / compare.json). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex import PromptOptimizer
from reflex.grid.compare import compare
from reflex.plugins import get_registry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "home_assistant_intents"


def _install_fake() -> None:
    """Task: right on every row when the prompt names the output format, else on every third."""
    from reflex.data.dataset import load_dataset
    from reflex.testing import FakeModel, FakeRequest

    answers = {e.input: e.ideal or "" for e in load_dataset(EXAMPLE / "quickstart.jsonl")}
    keyword = "Answer with the intent name only."

    def respond(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            # Varies with the request, so strategies that ask for several prompts get several.
            n = len(request.user) % 5
            return "".join(
                f"<prompt>Classify the intent. Variant {n}.{k}.{' ' + keyword if k else ''}"
                "</prompt>"
                for k in range(2)
            )
        ideal = answers.get(request.user, "")
        return ideal if keyword in request.system or len(request.user) % 3 == 0 else "unsure"

    FakeModel(respond).install()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--reasoning-model", default=None)
    parser.add_argument("--strategies", default=None, help="comma list; default: all")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--max-calls", type=int, default=300)
    parser.add_argument("--max-iterations", type=int, default=10)
    parser.add_argument("--fake", action="store_true")
    args = parser.parse_args()
    model, reasoner = args.model, args.reasoning_model
    if args.fake:
        _install_fake()
        model, reasoner = "fake/task", "fake/reasoner"
    names = args.strategies.split(",") if args.strategies else sorted(get_registry().strategies)
    if reasoner is None:  # without a reasoning model only the reasoning-free ones can run
        registry = get_registry()
        names = [n for n in names if not registry.strategy(n).requires_reasoning_model]
    opt = (
        PromptOptimizer()
        .set_dataset(EXAMPLE / "quickstart.jsonl")
        .add_provider(model)
        .add_metric("exact_match")
        .configure(max_tokens=16, max_iterations=args.max_iterations)
        .set_run_dir(tempfile.mkdtemp(prefix="reflex-compare-"))
    )
    if reasoner:
        opt.set_reasoning_model(reasoner)
    started = time.perf_counter()
    result = compare(opt, EXAMPLE / "prompt.md", names, seeds=args.seeds, max_calls=args.max_calls)
    print(result.table())
    print(f"\n{len(result.runs)} runs in {time.perf_counter() - started:.1f} s; {result.directory}")


if __name__ == "__main__":
    main()
