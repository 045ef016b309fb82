"""A LiteLLM Router across deployments (reflex.models.router): config, spreading, the ledger.

Three local endpoints (reflex.testing.endpoint), each limited to R requests/s with a 429 +
Retry-After above it, stand for three deployments of one model. Throughput is a bench figure
(bench/scale.py --router); here: nothing lost, nothing scored as a failure, every 429 retried,
every call's deployment in the ledger. The two-process Redis test is in test_scaling_services.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, task_answer

from reflex import PromptOptimizer
from reflex.errors import ConfigurationError
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.router import ModelRouter, load_router_config, redis_url_of
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel
from reflex.testing.endpoint import ChatRequest, Endpoint, serve
from reflex.testing.ratelimit import RateLimit

R = 10.0  # requests/s per deployment


def deployments(urls: list[str], name: str = "task") -> list[dict[str, Any]]:
    return [
        {
            "model_name": name,
            "litellm_params": {
                "model": "openai/served",
                "api_base": str(url),  # a plain str: the Router deep-copies its params
                "api_key": "sk-none",
                "rpm": int(R * 60),
            },
            "model_info": {"id": f"{name}-{i}"},
        }
        for i, url in enumerate(urls)
    ]


@pytest.fixture
def limited() -> Iterator[tuple[list[Endpoint], list[RateLimit]]]:
    limits = [RateLimit(R) for _ in range(3)]
    with ExitStack() as stack:

        def answer(request: ChatRequest) -> str:
            return task_answer(request)  # type: ignore[arg-type]  # same .user/.system

        urls = [stack.enter_context(serve(limit=lim, responder=answer)) for lim in limits]
        urls.append(stack.enter_context(serve(responder=answer)))  # not limited (other models)
        yield urls, limits


# --- the config -----------------------------------------------------------------------------


def test_yaml_config_is_read_with_env_values(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("DEPLOY_KEY", "sk-from-env")
    path = tmp_path / "litellm.yaml"
    path.write_text(
        "model_list:\n"
        "  - model_name: task\n"
        "    litellm_params: {model: openai/m, api_key: os.environ/DEPLOY_KEY, rpm: 600}\n"
        "router_settings:\n  redis_host: 127.0.0.1\n  redis_port: 7000\n",
        encoding="utf-8",
    )
    config = load_router_config(path)
    assert config["model_list"][0]["litellm_params"]["api_key"] == "sk-from-env"
    assert redis_url_of(config["router_settings"]) == "redis://127.0.0.1:7000/0"
    router = ModelRouter(path)
    assert router.group(ModelSpec("router/task")) == "task"
    assert router.group(ModelSpec("openai/other")) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model_list: []\n", "no model_list"),
        ("model_list:\n  - model_name: task\n", r"model_list\[0\] needs model_name"),
        ("model_list: [\n", "line 2: not valid YAML"),
        (
            "model_list:\n  - model_name: t\n    litellm_params: {model: m, api_key: "
            "os.environ/REFLEX_UNSET_VAR}\n",
            "REFLEX_UNSET_VAR is not set",
        ),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "litellm.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=message) as caught:
        load_router_config(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_unknown_router_model_names_the_known_ones() -> None:
    router = ModelRouter({"model_list": deployments(["http://127.0.0.1:9/v1"])})
    with pytest.raises(ConfigurationError, match=r"no model_name 'judge'.*known: task"):
        router.group(ModelSpec("router/judge"))


# --- calls through the Router -----------------------------------------------------------------


def test_three_limited_deployments_serve_every_call(
    limited: tuple[list[Endpoint], list[RateLimit]], runner: LoopRunner
) -> None:
    urls, limits = limited
    config = {"model_list": deployments(urls[:3]) + deployments(urls[3:], "team/judge")}
    client = ProviderClient(ClientSettings(max_workers=12), router=ModelRouter(config))
    rows = make_rows(60)
    task, judge = ModelSpec("router/task"), ModelSpec("team/judge")  # a model_name as is

    async def calls() -> list[Any]:
        import asyncio

        jobs = [client.complete(task, [{"role": "user", "content": r["input"]}]) for r in rows]
        jobs.append(
            client.complete(judge, [{"role": "user", "content": rows[0]["input"]}], "judge")
        )
        return await asyncio.gather(*jobs, return_exceptions=True)

    done = runner.run(calls())
    assert not [d for d in done if isinstance(d, BaseException)]  # 0 lost, 0 failures
    assert [d.text for d in done[:-1]] == [task_answer_of(r["input"]) for r in rows]
    served = client.ledger.to_dict()["deployments"]
    assert served == {
        "task:task-0": served["task:task-0"],
        "task:task-1": served["task:task-1"],
        "task:task-2": served["task:task-2"],
        "judge:team/judge-0": 1,
    }
    assert sum(v for k, v in served.items() if k.startswith("task:")) == 60
    assert min(served["task:task-0"], served["task:task-1"], served["task:task-2"]) > 0
    # Counted at the fakes: each paid call was admitted once; every 429 was retried.
    assert sum(lim.admitted for lim in limits) == 60
    assert client.ledger.total().retries == sum(lim.refused for lim in limits)


def task_answer_of(text: str) -> str:
    return task_answer(ChatRequest("m", ({"role": "user", "content": text},)))  # type: ignore[arg-type]


def test_optimize_runs_task_and_reasoning_through_the_router(
    limited: tuple[list[Endpoint], list[RateLimit]], fake_model: FakeModel, tmp_path: Path
) -> None:
    urls, limits = limited
    reasoner = {
        "model_name": "reasoner",
        "litellm_params": {"model": "fake/reasoner"},
        "model_info": {"id": "reasoner-0"},
    }
    path = tmp_path / "litellm.yaml"
    text = json.dumps({"model_list": [*deployments(urls[:3]), reasoner]})
    path.write_text(text, encoding="utf-8")
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("router/task")
        .add_metric("exact_match")
        .set_reasoning_model("router/reasoner")
        .set_router(path)
        .set_run_dir(tmp_path / "runs")
        .configure(max_iterations=2, max_workers=8)
        .run("Classify the sentiment.")
    )
    assert result.final is not None and result.final.mean_score == pytest.approx(1.0)
    served = result.usage["deployments"]
    assert {k for k in served if k.startswith("task:")} == {f"task:task-{i}" for i in range(3)}
    assert served["reasoning:reasoner-0"] == result.usage["reasoning"]["calls"] > 0
    assert (
        sum(v for k, v in served.items() if k.startswith("task:"))
        == (result.usage["task"]["calls"])
    )
    assert sum(lim.admitted for lim in limits) == result.usage["task"]["calls"]
    config = json.loads((Path(result.run_dir or "") / "config.json").read_text())
    assert config["router_config"] == str(path)


def test_cli_router_config_option(
    limited: tuple[list[Endpoint], list[RateLimit]],
    fake_model: FakeModel,
    tmp_path: Path,
    dataset_file: Path,
    prompt_file: Path,
) -> None:
    from reflex.cli import main

    urls, _ = limited
    path = tmp_path / "litellm.yaml"
    path.write_text(json.dumps({"model_list": deployments(urls[:3])}), encoding="utf-8")
    out = tmp_path / "result.json"
    args = ["optimize", str(dataset_file), str(prompt_file), "-m", "router/task"]
    args += ["--reasoning-model", "fake/reasoner", "--router-config", str(path)]
    args += ["--max-iterations", "1", "--run-dir", str(tmp_path / "r"), "--results-json", str(out)]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (0, None)
    usage = json.loads(out.read_text())["usage"]
    assert sum(usage["deployments"].values()) == usage["task"]["calls"] > 0


# --- the parts: the fake's limit, the pacing --------------------------------------------------


def test_a_router_leaves_no_false_zero_price_behind() -> None:
    """LiteLLM's Router registered each deployment's model with no price as $0: every later
    call of that model in the process (and the routed calls) was priced $0, not unpriced."""
    from reflex.models.providers import load_litellm

    litellm = load_litellm()
    free = deployments(["http://127.0.0.1:9/v1"], "free")
    free[0]["litellm_params"]["model"] = "openai/reflex-unpriced-model"
    paid = deployments(["http://127.0.0.1:9/v1"], "paid")
    paid[0]["litellm_params"]["model"] = "openai/reflex-priced-model"
    paid[0]["model_info"].update(input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    try:
        ModelRouter({"model_list": free + paid})._build(litellm)
        unpriced = [k for k in litellm.model_cost if "reflex-unpriced-model" in k]
        assert unpriced == [] and "free-0" not in litellm.model_cost
        assert litellm.model_cost["paid-0"]["input_cost_per_token"] == 1e-6  # the user's price
    finally:
        for key in [k for k in litellm.model_cost if "reflex-" in k or k in ("free-0", "paid-0")]:
            litellm.model_cost.pop(key, None)
