"""Opening a run (reflex.run.opening): the cache URL refused before anything is made, the
reasoning model's spec, and the run's record and session, new or reopened, read back from disk."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows

from reflex.config import RunConfig
from reflex.data.dataset import load_dataset
from reflex.data.splits import Split, split_dataset
from reflex.errors import ConfigurationError
from reflex.models.retry import RetryPolicy
from reflex.plugins import get_registry
from reflex.run.opening import RunPlan, check_cache_file, reasoning_spec
from reflex.run.resume import ResumePoint
from reflex.run.session import Session
from reflex.testing.endpoint import FaultPlan, serve

PROMPT = "Classify the sentiment."


def config_for(run_dir: Path, **fields: Any) -> RunConfig:
    return RunConfig.model_validate({"models": ["fake/task"], "run_dir": str(run_dir), **fields})


def plan_for(config: RunConfig, resume: ResumePoint | None = None) -> RunPlan:
    dataset = load_dataset(make_rows(20), name="reviews")
    split = split_dataset(dataset, train=0.5, val=0.25, seed=config.seed)
    if resume is not None:
        split = Split.from_ids(dataset, resume.split_ids)
    metrics = [get_registry().metric("exact_match")]
    return RunPlan(config, dataset, split, metrics, "iterative", resume=resume)


def read(run: Path, name: str) -> Any:
    return json.loads((run / name).read_text(encoding="utf-8"))


def events(run: Path) -> list[dict[str, Any]]:
    lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_no_cache_url_and_a_new_sqlite_file_pass(tmp_path: Path) -> None:
    check_cache_file(None)
    check_cache_file(f"sqlite:///{tmp_path / 'cache.sqlite'}")
    assert list(tmp_path.iterdir()) == []  # nothing is made by the check


def test_a_cache_url_naming_a_directory_or_a_fifo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"is a directory; name a regular file"):
        check_cache_file(f"sqlite:///{tmp_path}")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigurationError, match=rf"--cache-url sqlite:///{fifo}: the sqlite"):
        check_cache_file(f"sqlite:///{fifo}")


def test_a_cache_url_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="ftp"):
        check_cache_file("ftp://127.0.0.1/cache")


def test_the_reasoning_spec_follows_the_config(tmp_path: Path) -> None:
    assert reasoning_spec(config_for(tmp_path)) is None  # a reasoning-free run
    config = config_for(
        tmp_path,
        reasoning_model="fake/reasoner",
        reasoning_base_url="http://127.0.0.1:9/v1",
        reasoning_temperature=0.7,
        seed=11,
    )
    spec = reasoning_spec(config)
    assert spec is not None and spec.model == "fake/reasoner"
    assert (spec.api_base, spec.temperature, spec.seed) == ("http://127.0.0.1:9/v1", 0.7, 11)


def test_a_new_run_writes_its_record_and_opens_its_session(tmp_path: Path) -> None:
    plan = plan_for(config_for(tmp_path / "rd", max_iterations=5))
    session = plan.open_session(PROMPT, max_iterations=2)
    try:
        run = session.store.path
        assert isinstance(session, Session) and run.parent == tmp_path / "rd" / "runs"
        assert read(run, "config.json")["max_iterations"] == 5  # as the user set it
        assert session.config.max_iterations == 2 and session.config.run_id == run.name
        assert read(run, "splits.json") == plan.split.ids()
        meta = read(run, "run.json")
        assert meta["run_id"] == run.name and meta["strategy"] == "iterative"
        assert meta["dataset_name"] == "reviews" and "resumed_at" not in meta
        assert (run / "prompts").is_dir() and session.reasoning is None
        assert session.budget.baseline_rows == len(plan.split.test) == 5
        assert session.split_of["r000"] in {"train", "val", "test"}
        assert (tmp_path / "rd" / "cache.sqlite").is_file()
    finally:
        session.close()


def test_a_retry_is_logged_as_an_event_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with serve(faults=FaultPlan(script=["500"])) as url:
        config = config_for(tmp_path / "rd", models=["openai/task"], api_base=url)
        session = plan_for(config).open_session(PROMPT, max_iterations=1)
        session.client.retry = RetryPolicy(max_retries=2, base_delay=0.001)
        spec = session.evaluator.models[0]
        try:
            messages = [{"role": "user", "content": "hi"}]
            answer = session.runner.run(session.client.complete(spec, messages))
        finally:
            session.close()
    assert answer.text == "hi" and answer.attempts == 2
    [retry] = [e for e in events(session.store.path) if e["type"] == "retry"]
    assert (retry["model"], retry["role"], retry["attempt"]) == ("openai/task", "task", 1)
    assert retry["error"].startswith("InternalServerError")


def test_a_resumed_run_reopens_its_record_with_its_clock_and_retries(tmp_path: Path) -> None:
    first = plan_for(config_for(tmp_path / "rd")).open_session(PROMPT, max_iterations=2)
    first.event("retry", model="fake/task", role="task", attempt=1, delay=0.0, error="x")
    first.close()
    run = first.store.path
    point = ResumePoint(run.name, read(run, "splits.json"), {"elapsed_s": 12.5})
    again = plan_for(config_for(tmp_path / "rd"), resume=point).open_session(PROMPT, 2)
    try:
        assert again.store.path == run and again.config.resumed
        assert "resumed_at" in read(run, "run.json")
        assert again.budget.elapsed_before == 12.5
        assert again.client.ledger.by_role["task"].retries == 1  # from events.jsonl
    finally:
        again.close()
