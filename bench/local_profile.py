"""Benchmark the ``local`` provider: load time, per-call latency and tokens/s at 1 thread.

Run: ``python bench/local_profile.py`` (needs ``aevyra-reflex[local]``; SmolLM2 if installed).
Ten short classification calls per model, through ProviderClient and LiteLLM, cache disabled.
Each call uses a different review so the prefix cache helps only with the fixed instruction,
as in a real evaluation. Finishes in well under two minutes on 2 CPU cores.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("REFLEX_LOCAL_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex.errors import ConfigurationError
from reflex.models import local
from reflex.models.client import ModelSpec, ProviderClient, load_litellm
from reflex.models.runner import LoopRunner

INSTRUCTION = (
    "Classify the sentiment of the movie review. Answer with exactly one word: "
    "positive or negative."
)
REVIEWS = [
    "A wonderful film, I loved every minute of it.",
    "Dull, slow and far too long. I walked out.",
    "The acting was superb and the story moving.",
    "Terrible script, wooden actors, a waste of money.",
    "A delightful surprise; funny and warm.",
    "I have never been so bored in a cinema.",
    "Beautifully shot, with a score that stays with you.",
    "The plot made no sense and the ending was worse.",
    "An instant classic that I will watch again.",
    "Awful. Just awful. Avoid it.",
]
MODELS = {
    "local/qwen2.5-coder-0.5b": local.qwen_model_path,
    "local/smollm2-135m": local.smollm2_model_path,
}


def bench(model: str) -> None:
    started = time.perf_counter()
    path = MODELS[model]()
    prepared = time.perf_counter() - started
    started = time.perf_counter()
    local.model_pool(path).warm()
    loaded = time.perf_counter() - started
    client = ProviderClient(cache=None)
    spec = ModelSpec(model, max_tokens=8)
    latencies, correct = [], 0
    for index, review in enumerate(REVIEWS):
        messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": review}]
        started = time.perf_counter()
        result = LoopRunner.shared().run(client.complete(spec, messages))
        latencies.append(time.perf_counter() - started)
        want = "positive" if index % 2 == 0 else "negative"
        correct += result.text.strip().lower().rstrip(".") == want
    usage = client.ledger.by_role["task"]
    ordered = sorted(latencies)
    total = sum(latencies)
    print(f"{model}  ({path.name}, {path.stat().st_size / 1e6:.0f} MB)")
    print(f"  locate+verify {prepared:.2f}s  load {loaded:.2f}s  threads {local._threads()}")
    print(
        f"  latency mean {statistics.mean(latencies):.3f}s  p50 {statistics.median(latencies):.3f}s"
        f"  p90 {ordered[int(0.9 * (len(ordered) - 1))]:.3f}s  over {len(latencies)} calls"
    )
    print(
        f"  tokens: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion; "
        f"{(usage.prompt_tokens + usage.completion_tokens) / total:.0f} tok/s overall, "
        f"{usage.completion_tokens / total:.1f} completion tok/s"
    )
    print(f"  exact-match accuracy {correct}/{len(REVIEWS)}")
    print(
        f"  generation {generation_rate(client, model):.1f} tok/s (64-token answer, short prompt)"
    )


def generation_rate(client: ProviderClient, model: str) -> float:
    """Completion tokens/s on a tiny prompt and a long answer: decoding speed, not prefill."""
    messages = [{"role": "user", "content": "Count from 1 to 100, separated by spaces."}]
    started = time.perf_counter()
    result = LoopRunner.shared().run(client.complete(ModelSpec(model, max_tokens=64), messages))
    return result.completion_tokens / (time.perf_counter() - started)


def main() -> None:
    local.register_local_provider()
    started = time.perf_counter()
    load_litellm()
    print(f"import litellm {time.perf_counter() - started:.1f}s")
    for model in MODELS:
        try:
            bench(model)
        except ConfigurationError as exc:
            print(f"{model}: skipped: {exc}")


if __name__ == "__main__":
    main()
