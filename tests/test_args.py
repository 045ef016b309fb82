"""click's params become typed args at the command boundary; no option is dropped on the way."""

from __future__ import annotations

import json
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import make_rows
from pydantic import TypeAdapter

from reflex.cli.args import COMPARE_FIXED, CompareArgs, OptimizeArgs, checked_params
from reflex.cli.build import build_optimizer
from reflex.cli.check import CheckArgs, check_command
from reflex.cli.compare import compare_command
from reflex.cli.export import ExportArgs, export_command
from reflex.cli.optimize import make_optimize
from reflex.cli.options import optimize_params
from reflex.grid.compare import DEFAULT_SEEDS
from reflex.plugins import Registry


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def _params(command: click.Command) -> set[str]:
    return {str(p.name) for p in command.params}


def test_every_command_option_is_a_field_and_back() -> None:
    assert {str(p.name) for p in optimize_params()} == _names(OptimizeArgs)
    assert _params(check_command) == _names(CheckArgs)
    assert _params(export_command) == _names(ExportArgs)
    shared = _names(OptimizeArgs) - {*COMPARE_FIXED, "strategy"}
    assert _params(compare_command) == shared | {
        "strategies",
        "seeds",
        "out_dir",
        "executor",
        "ray_address",
        "datasets",
    }


def test_params_that_differ_from_the_fields_are_refused() -> None:
    with pytest.raises(TypeError, match=r"check: options without a field \['color'\]"):
        checked_params(CheckArgs, {**dict.fromkeys(_names(CheckArgs)), "color": 1}, "check")
    with pytest.raises(TypeError, match=r"fields without one \['verbose'\]"):
        ExportArgs.from_params(dict.fromkeys(_names(ExportArgs) - {"verbose"}))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "prompt": tmp_path / "prompt.md",
        "inputs": tmp_path / "inputs.jsonl",
        "pipeline": tmp_path / "pipe.py",
        "rubric": tmp_path / "rubric.txt",
        "template": tmp_path / "template.txt",
        "router": tmp_path / "router.yaml",
    }
    paths["router"].write_text(
        "model_list:\n  - model_name: tagger\n    litellm_params:\n      model: fake/task\n",
        encoding="utf-8",
    )
    paths["prompt"].write_text("Classify the sentiment.\n", encoding="utf-8")
    rows = [{"input": r["input"], "ideal": r["ideal"]} for r in make_rows()]
    paths["inputs"].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paths["pipeline"].write_text("def run(prompt, input, call):\n    return input\n", "utf-8")
    paths["rubric"].write_text("Is the answer one word?\n", encoding="utf-8")
    paths["template"].write_text("Improve: {prompt}\n", encoding="utf-8")
    return paths


def every_option(f: dict[str, Path], tmp_path: Path) -> list[str]:
    """optimize with every option set to a value other than its default."""
    return [
        *[str(f["prompt"]), "-m", "fake/task", "-m", "fake/task2", "--api-base", "http://h:1"],
        *["--temperature", "0.5", "--max-tokens", "64", "--tool-choice", "auto"],
        *["--input-field", "q"],
        *["--output-field", "a", "--pipeline-file", str(f["pipeline"])],
        *["--inputs-file", str(f["inputs"]), "--pipeline-timeout", "9.5"],
        *["--score-trace", "contains", "--metric", "exact_match:2", "--metric", "contains:0"],
        *["--judge", "fake/judge", "--judge-criteria", str(f["rubric"])],
        *["--guard", "contains:0.1", "--strict-leakage", "--slice-by", "topic"],
        *["--overfit-gap", "0.2", "--optimize-tool-descriptions", "--no-format-guard"],
        *["-s", "random", "--strategy-option", "num_candidates=3"],
        *["--reasoning-model", "fake/reasoner", "--reasoning-base-url", "http://r:2"],
        *["--source-model", "fake/old", "--reasoning-template", f"random.system={f['template']}"],
        *["--feedback-field", "critique"],
        *["--max-iterations", "7", "--threshold", "0.95", "--batch-size", "4"],
        *["--early-stopping-patience", "2", "--allow-degenerate-seed"],
        *["--train-split", "0.5", "--val-split", "0.25", "--group-key", "topic", "--seed", "3"],
        *["--max-workers", "3", "--client-processes", "2", "--local-workers", "2"],
        *["--local-batch", "4"],
        *["--max-calls", "500"],
        *["--max-reasoning-calls", "20", "--max-cost", "1.5", "--max-seconds", "60"],
        *["--max-total-calls", "900", "--price", "fake/task=0.2:0.6", "--retry-window", "30"],
        *["--max-response-mb", "32", "--budget", "medium", "--max-prompt-tokens", "900"],
        *["--prompt-token-cost", "0.05", "--no-race"],
        *["--accept", "margin:0.02"],
        *["--dry-run", "--json"],
        *["--cache-namespace", "other", "--run-dir", str(tmp_path / "runs"), "--resume"],
        *["--shared-run-dir", "--cache-url", "redis://127.0.0.1:6379/0"],
        *["--router-config", str(f["router"])],
        *["--resume-from", "abc", "-o", str(tmp_path / "best.md")],
        *["--results-json", str(tmp_path / "r.json"), "-v"],
    ]


def parse(argv: list[str]) -> OptimizeArgs:
    command = make_optimize(Registry())  # no plugin options: only optimize's own
    ctx = command.make_context("optimize", argv)
    return OptimizeArgs.from_params(ctx.params)


def test_every_option_arrives_typed(files: dict[str, Path], tmp_path: Path) -> None:
    args = parse(every_option(files, tmp_path))
    defaults = {
        str(p.name): p.get_default(click.Context(click.Command("x"))) for p in optimize_params()
    }
    hints = typing.get_type_hints(OptimizeArgs)
    for f in fields(OptimizeArgs):
        value = getattr(args, f.name)
        TypeAdapter(hints[f.name]).validate_python(value, strict=True)  # the exact type
        if f.name != "dataset":  # --inputs-file replaces DATASET
            assert value != defaults[f.name], f"{f.name} kept its default: not carried"
    assert args.dataset is None and args.prompt == files["prompt"]
    assert args.resume_target == "abc"


def test_every_setting_reaches_the_builder(files: dict[str, Path], tmp_path: Path) -> None:
    args = parse(every_option(files, tmp_path))
    config = build_optimizer(args).build_config()
    expected: dict[str, Any] = {
        "models": ["fake/task", "fake/task2"],
        "api_base": "http://h:1",
        "temperature": 0.5,
        "max_tokens": 64,
        "pipeline_timeout": 9.5,
        "trace_metrics": ["contains"],
        "metric_weights": {"exact_match": 2.0, "contains": 0.0, "llm_judge": 1.0},
        "guards": {"contains": 0.1},
        "strict_leakage": True,
        "optimize_tool_descriptions": True,
        "format_guard": False,
        "slice_by": ["topic"],
        "strategy": "random",
        "strategy_options": {"num_candidates": 3},
        "reasoning_model": "fake/reasoner",
        "reasoning_base_url": "http://r:2",
        "source_model": "fake/old",
        "feedback_field": "critique",
        "reasoning_templates": {"random.system": "Improve: {prompt}"},
        "max_iterations": 7,
        "score_threshold": 0.95,
        "batch_size": 4,
        "early_stopping_patience": 2,
        "allow_degenerate_seed": True,
        "train_split": 0.5,
        "val_split": 0.25,
        "group_key": "topic",
        "seed": 3,
        "max_workers": 3,
        "client_processes": 2,
        "local_workers": 2,
        "local_batch": 4,
        "retry_window": 30.0,
        "max_response_mb": 32.0,
        "cache_namespace": "other",
        "run_dir": str(tmp_path / "runs"),
        "shared_run_dir": True,
        "tool_choice": "auto",
        "cache_url": "redis://127.0.0.1:6379/0",
        "router_config": str(files["router"]),
        "max_prompt_tokens": 900,
        "prompt_token_cost": 0.05,
        "race": False,
    }
    assert {k: getattr(config, k) for k in expected} == expected
    assert config.pipeline == f"{files['pipeline']}:run"
    [judge] = config.metric_specs
    assert judge.options["model"] == "fake/judge"
    assert judge.options["criteria_list"][0]["description"] == "Is the answer one word?"
    budget = config.budget
    limits = (budget.max_calls, budget.max_reasoning_calls, budget.max_cost)
    assert limits == (500, 20, 1.5) and budget.max_seconds == 60.0
    assert budget.preset == "medium"


def test_dataset_and_its_fields_reach_the_builder(tmp_path: Path) -> None:
    data, prompt = tmp_path / "d.jsonl", tmp_path / "p.md"
    rows = [{"q": r["input"], "a": r["ideal"]} for r in make_rows()]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    prompt.write_text("Classify.\n", encoding="utf-8")
    argv = [str(data), str(prompt), "-m", "fake/task", "--input-field", "q", "--output-field", "a"]
    args = parse(argv)
    assert args.dataset == data and args.inputs_file is None
    config = build_optimizer(args).build_config()
    assert config.dataset_size == 30 and config.dataset_name == "d"


def test_compare_fixes_the_per_run_options(files: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    argv = [str(data), str(files["prompt"]), "-m", "fake/task", "--max-calls", "90"]
    ctx = compare_command.make_context("compare", [*argv, "--strategies", "fewshot, random,"])
    args = CompareArgs.from_params(ctx.params)
    assert args.strategies == ("fewshot", "random") and args.out_dir is None
    assert args.seeds == DEFAULT_SEEDS  # one home: the grid's, read by --seeds and compare()
    assert args.run.strategy == "fewshot" and args.run.max_calls == 90
    assert {k: getattr(args.run, k) for k in COMPARE_FIXED} == COMPARE_FIXED


def test_compare_executor_options(tmp_path: Path, files: dict[str, Path]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    argv = [str(data), str(files["prompt"]), "-m", "fake/task", "--strategies", "random"]
    plain = CompareArgs.from_params(compare_command.make_context("compare", [*argv]).params)
    assert (plain.executor, plain.ray_address) == ("local", None)
    ray = ["--executor", "ray", "--ray-address", "10.0.0.5:6379"]
    on_ray = CompareArgs.from_params(compare_command.make_context("compare", [*argv, *ray]).params)
    assert (on_ray.executor, on_ray.ray_address) == ("ray", "10.0.0.5:6379")
    alone = compare_command.make_context("compare", [*argv, "--ray-address", "h:1"]).params
    with pytest.raises(click.BadParameter, match="--executor ray"):
        CompareArgs.from_params(alone)


def test_compare_dataset_options(tmp_path: Path, files: dict[str, Path]) -> None:
    paths = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "c")]
    prompt, tail = str(files["prompt"]), ["-m", "fake/task", "--strategies", "random"]

    def parse(*argv: str) -> CompareArgs:
        return CompareArgs.from_params(compare_command.make_context("compare", [*argv]).params)

    plain = parse(str(paths[0]), prompt, *tail)  # existing usage: one DATASET, no grid axis
    assert plain.datasets == () and plain.run.dataset == paths[0]
    grid = parse(
        str(paths[0]), prompt, "--dataset", str(paths[1]), "--dataset", str(paths[2]), *tail
    )
    assert grid.datasets == tuple(paths) and grid.run.prompt == files["prompt"]
    only = parse("--dataset", str(paths[1]), "--dataset", str(paths[2]), prompt, *tail)
    assert only.datasets == (paths[1], paths[2]) and only.run.prompt == files["prompt"]
    twice = parse(str(paths[0]), prompt, "--dataset", str(paths[0]), *tail)
    assert twice.datasets == (paths[0],)
    with pytest.raises(click.BadParameter, match="--inputs-file"):
        parse("--inputs-file", str(files["inputs"]), prompt, "--dataset", str(paths[1]), *tail)
