"""The embedded model's contexts (reflex.models.local_pool) and --local-workers end to end.

Unit tests use a stand-in context (any object with ``close``): the pool only hands contexts
out. The ``real_model`` test runs Qwen with K = 1 and K = 2 through every way an evaluation
calls it (plain answers, a named tool choice, a JSON-schema grammar, a whole run's evaluations)
and wants the same answers and scores.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import HANG_POLLS

from reflex.errors import ConfigurationError
from reflex.models import local, local_serving
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.local_pool import (
    INSTANCE_BYTES,
    ContextPool,
    affinity_key,
    aligned_llama,
    available_memory,
    default_workers,
    usable_cores,
)
from reflex.models.runner import LoopRunner

QUICKSTART = (
    Path(__file__).resolve().parents[1] / "examples/home_assistant_intents/quickstart.jsonl"
)


class Context:
    """A stand-in llama context: the pool only needs ``close``."""

    made = 0

    def __init__(self) -> None:
        Context.made += 1
        self.number = Context.made
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def _workers() -> Iterator[None]:
    Context.made = 0
    yield
    local_serving.set_workers(0)


def test_contexts_are_loaded_only_when_every_one_is_busy() -> None:
    pool = ContextPool(Context, size=2)
    with pool.use("a") as first:
        pass
    with pool.use("b") as again:
        assert again is first  # free: reused, not a second load
    with pool.use("a") as one, pool.use("a") as two:
        assert one is not two and {one.number, two.number} == {1, 2}
    assert pool.loaded == 2 and pool.take_peak() == 2 and Context.made == 2


def test_a_call_waits_for_a_free_context_when_all_k_are_busy() -> None:
    pool = ContextPool(Context, size=1)
    got: list[Context] = []
    with pool.use("x") as held:
        waiter = threading.Thread(target=lambda: got.append(pool.use("y").__enter__()))
        waiter.start()
        waiter.join(timeout=0.05)
        assert waiter.is_alive() and not got  # no second context: it waits
    waiter.join(timeout=HANG_POLLS / 100)
    assert got == [held] and Context.made == 1 and pool.take_peak() == 1


def test_a_call_goes_to_the_free_context_that_saw_its_prompt_s_beginning() -> None:
    pool = ContextPool(Context, size=2)
    sentiment = affinity_key([{"role": "system", "content": "Classify the sentiment."}])
    topic = affinity_key([{"role": "system", "content": "Name the topic."}])
    with pool.use(sentiment) as a, pool.use(topic) as b:
        pass
    for key, want in ((topic, b), (sentiment, a), (topic, b), (sentiment, a)):
        with pool.use(key) as context:
            assert context is want


def test_affinity_key_lays_out_the_system_turn_then_the_tools_then_the_rest() -> None:
    system = {"role": "system", "content": "Call the right function."}
    one = affinity_key([system, {"role": "user", "content": "area 3 4"}], [{"name": "area"}])
    two = affinity_key([system, {"role": "user", "content": "area 5 6"}], [{"name": "area"}])
    other = affinity_key([system, {"role": "user", "content": "area 3 4"}], [{"name": "sum"}])
    assert one.index("area 3 4") > one.index('"name": "area"') > one.index("Call the right")
    assert common(one, two) > common(one, other) > 0


def common(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def test_shrinking_closes_free_contexts_now_and_busy_ones_after_their_call() -> None:
    pool = ContextPool(Context, size=3)
    with pool.use("a") as a, pool.use("b") as b, pool.use("c") as c:
        pass
    with pool.use("a") as busy:
        pool.resize(1)
        assert busy is a and not a.closed and b.closed and c.closed
        assert pool.loaded == 1
    pool.resize(2)
    with pool.use("a") as one, pool.use("b") as two:
        assert one is a and two not in (a, b, c)
    pool.close()
    assert a.closed and two.closed and pool.loaded == 0


def test_a_failed_load_leaves_room_for_the_next_call() -> None:
    attempts = []

    def load() -> Context:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConfigurationError("no model")
        return Context()

    pool = ContextPool(load, size=1)
    with pytest.raises(ConfigurationError, match="no model"), pool.use("a"):
        pass
    with pool.use("a") as context:
        assert isinstance(context, Context)
    assert pool.loaded == 1


class _Ctx:
    def __init__(self) -> None:
        self.removed: list[int] = []

    def kv_cache_seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        self.removed.append(p0)
        return True


class _Llama:
    """A stand-in ``llama_cpp.Llama``: records where the prefix it would reuse stops."""

    def __init__(self) -> None:
        self.input_ids: list[int] = []
        self.n_tokens = 0
        self._ctx = _Ctx()
        self.kept: list[int] = []

    def generate(self, tokens: list[int]) -> list[int]:
        self.kept.append(self.n_tokens)
        self.input_ids, self.n_tokens = list(tokens), len(tokens)
        return tokens


def test_the_kept_prefix_is_whole_groups_of_four_computed_as_groups() -> None:
    llama = aligned_llama(SimpleNamespace(Llama=_Llama))()
    llama.generate(list(range(14)))  # its tokens 12 and 13 are the batch's odd rows
    llama.generate([*range(14), 99])  # shares 14: keeps 12, the whole groups
    llama.generate([*range(11), 98])  # shares 11: keeps 8
    llama.generate([*range(11), 98])  # the same prompt again: still recomputes its last group
    llama.generate([7, 8])  # shares nothing
    assert llama.kept == [0, 12, 8, 8, 0]
    assert llama._ctx.removed == [12, 8, 8, 0]


def test_default_workers_is_the_cores_capped_by_memory() -> None:
    assert default_workers(cores=8, memory=64 * INSTANCE_BYTES) == 8
    assert default_workers(cores=8, memory=3 * INSTANCE_BYTES + 1) == 3
    assert default_workers(cores=2, memory=INSTANCE_BYTES // 2) == 1  # never below one
    assert 1 <= default_workers() <= usable_cores()


def test_usable_cores_reads_affinity_and_a_cgroup_quota(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import reflex.models.local_pool as pool_module

    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(pool_module, "_CPU_MAX", quota)
    assert usable_cores() == 4  # no cgroup file
    quota.write_text("max 100000\n")
    assert usable_cores() == 4
    quota.write_text("150000 100000\n")
    assert usable_cores() == 1
    quota.write_text("300000 100000\n")
    assert usable_cores() == 3


def test_available_memory_is_meminfo_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import reflex.models.local_pool as pool_module

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    monkeypatch.setattr(pool_module, "_MEMINFO", meminfo)
    assert available_memory() == 2048 * 1024
    monkeypatch.setattr(pool_module, "_MEMINFO", tmp_path / "absent")
    assert available_memory() is None


def test_the_setting_reaches_the_run_config_and_a_resume_may_change_it() -> None:
    """(The CLI's --local-workers: tests/test_cli_args.py, with every option.)"""
    from reflex import PromptOptimizer
    from reflex.config import default
    from reflex.run.resume import MUTABLE_ON_RESUME

    assert default("local_workers") == 0 and "local_workers" in MUTABLE_ON_RESUME
    assert PromptOptimizer().set_local_workers(2)._config.local_workers == 2
    assert ClientSettings().local_workers == default("local_workers")


# --- the real model: K = 1 and K = 2 answer alike ---------------------------------------------

AREA = {
    "type": "function",
    "function": {
        "name": "calculate_triangle_area",
        "description": "Calculate the area of a triangle given its base and height.",
        "parameters": {
            "type": "object",
            "properties": {"base": {"type": "integer"}, "height": {"type": "integer"}},
            "required": ["base", "height"],
        },
    },
}
QUANTITIES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["value", "unit"],
    },
}
SENTIMENT = "Classify the sentiment of the review. Answer with one word: positive or negative."
ARITHMETIC = "Answer the arithmetic question with the number only."
PLAIN = [
    (SENTIMENT, "A wonderful film, I loved every minute of it."),
    (ARITHMETIC, "What is 17 plus 25?"),
    (SENTIMENT, "Dull, slow and far too long. I walked out."),
    (SENTIMENT, "The acting was superb and the story moving."),
    (ARITHMETIC, "What is 3 times 14?"),
    (SENTIMENT, "Terrible script, wooden actors, a waste of money."),
    (ARITHMETIC, "What is 100 minus 37?"),
    (SENTIMENT, "I have never been so bored in a cinema."),
]


def _calls() -> list[tuple[ModelSpec, list[dict[str, str]]]]:
    model = "local/qwen2.5-coder-0.5b"
    calls = [
        (ModelSpec(model, max_tokens=8), [{"role": "system", "content": s}, user(u)])
        for s, u in PLAIN
    ]
    named = {"type": "function", "function": {"name": "calculate_triangle_area"}}
    tool = ModelSpec(model, max_tokens=40, tools=(AREA,), tool_choice=named)
    fmt = {"type": "json_schema", "json_schema": {"name": "q", "schema": QUANTITIES}}
    schema = ModelSpec(model, max_tokens=40, response_format=fmt)
    for base, height in ((10, 5), (7, 3)):
        ask = f"Find the area of a triangle with a base of {base} and height of {height}."
        calls.append((tool, [{"role": "system", "content": "Call the right function."}, user(ask)]))
    for text in ("two meters of cotton for 2000 pounds", "three kilos of rice and 5 eggs"):
        calls.append((schema, [{"role": "system", "content": "List the quantities."}, user(text)]))
    return calls


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


@pytest.fixture
def qwen() -> ContextPool:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    try:
        path = local.qwen_model_path()
    except ConfigurationError as exc:
        pytest.skip(str(exc))
    local.register_local_provider()
    return local.model_pool(path)


def _answers(k: int, pool: ContextPool) -> tuple[list[str], int]:
    client = ProviderClient(ClientSettings(max_workers=4, local_workers=k), cache=None)

    async def every() -> list[str]:
        calls = [client.complete(spec, messages) for spec, messages in _calls()]
        return [c.text for c in await asyncio.gather(*calls)]

    pool.take_peak()
    return LoopRunner.shared().run(every()), pool.take_peak()


@pytest.mark.real_model
def test_k_contexts_give_the_answers_of_one(qwen: ContextPool) -> None:
    one, peak_one = _answers(1, qwen)
    two, peak_two = _answers(2, qwen)
    assert (peak_one, peak_two) == (1, 2)  # K = 2 really answered two calls at once
    assert two == one
    assert '"name": "calculate_triangle_area"' in one[len(PLAIN)]  # the named choice held
    assert all(isinstance(json.loads(a), list) for a in one[-2:])  # and the grammar


@pytest.mark.real_model
@pytest.mark.parametrize("strategy", ["instructions", "fewshot"])  # plain; demos as chat turns
def test_a_run_scores_the_same_with_one_or_two_contexts(
    qwen: ContextPool, tmp_path: Path, strategy: str
) -> None:
    from reflex import PromptOptimizer

    rows = [json.loads(line) for line in QUICKSTART.open(encoding="utf-8")][:12]

    def run(k: int) -> tuple[object, ...]:
        result = (
            PromptOptimizer()
            .set_dataset(rows, name="quickstart-12")
            .add_provider("local/qwen2.5-coder-0.5b")
            .add_metric("exact_match")
            .set_strategy(strategy)
            .configure(max_iterations=1, max_tokens=16, max_workers=4)
            .set_local_workers(k)
            .set_run_dir(tmp_path / f"k{k}")
            .run("Classify the intent.")
        )
        assert result.final is not None and result.baseline is not None
        answers = [s.output for s in (*result.baseline.samples, *result.final.samples)]
        return (
            result.best_prompt,
            result.best_score_val,
            result.baseline.mean_score,
            result.final.mean_score,
            answers,
            result.usage["task"]["calls"],
        )

    qwen.take_peak()
    one = run(1)
    assert qwen.take_peak() == 1
    assert run(2) == one
    assert qwen.take_peak() == 2


@pytest.mark.real_model
def test_a_context_answers_as_a_fresh_one_whatever_its_previous_call(qwen: ContextPool) -> None:
    """Found on the quick start: after some calls, not others, this was answered otherwise."""
    asked = [{"role": "system", "content": "Classify the intent."}, user("pause the shows")]
    spec = ModelSpec("local/qwen2.5-coder-0.5b", max_tokens=16)
    answers = set()
    for before in ("pause the music", "play the shows", "p", "what's the temp"):
        client = ProviderClient(ClientSettings(local_workers=1), cache=None)
        LoopRunner.shared().run(client.complete(spec, [asked[0], user(before)]))
        answers.add(LoopRunner.shared().run(client.complete(spec, asked)).text)
    assert len(answers) == 1
