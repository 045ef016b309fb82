"""The grid's executors (reflex/grid/executors.py), compare --executor ray: a 12-cell grid
(strategies x seeds x datasets) on a local Ray cluster gives the in-process results.

``services``: tests/services.py starts ``ray start --head`` on 127.0.0.1. The models are a local
endpoint with a deterministic responder, so both executors must agree cell for cell. The wall
time ratio is a bench figure (bench/scale.py --ray), not asserted here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import make_rows, reasoner_answer, task_answer
from loopback import LoopbackWatch
from services import RayCluster

from reflex import PromptOptimizer, load_dataset
from reflex.data.dataset import Dataset
from reflex.grid.compare import RunSummary, compare
from reflex.testing.endpoint import ChatRequest, serve

pytestmark = pytest.mark.services
STRATEGIES = ["iterative", "random"]
SEEDS = 2
DATASETS = 3  # 2 x 2 x 3 = 12 cells


def answer(request: ChatRequest) -> str:
    if request.model == "reasoner":
        return reasoner_answer(request)  # type: ignore[arg-type]  # same .user/.system
    return task_answer(request)  # type: ignore[arg-type]


def builder(url: str, run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(20))
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .set_run_dir(run_dir)
        .configure(max_iterations=1, max_workers=4)
    )


def datasets() -> list[Dataset]:
    rows = make_rows(60)
    return [load_dataset(rows[k * 20 : (k + 1) * 20], name=f"d{k}") for k in range(DATASETS)]


def _same(summary: RunSummary) -> tuple[object, ...]:
    return (
        summary.dataset,
        summary.strategy,
        summary.seed,
        summary.baseline,
        summary.final,
        summary.metric_calls,
        summary.tokens,
        summary.stop_reason,
        summary.per_example,
    )


def test_a_grid_on_ray_gives_the_in_process_results(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    with serve(responder=answer) as url:
        local = compare(
            builder(str(url), tmp_path / "local"),
            "Classify the sentiment.",
            STRATEGIES,
            seeds=SEEDS,
            max_calls=40,
            datasets=datasets(),
        )
        with LoopbackWatch([ray_cluster.session]) as watch:  # loopback only: the driver too
            remote = compare(
                builder(str(url), tmp_path / "ray"),
                "Classify the sentiment.",
                STRATEGIES,
                seeds=SEEDS,
                max_calls=40,
                executor="ray",
                ray_address=ray_cluster.address,
                datasets=datasets(),
            )
    assert watch.off_loopback == set(), sorted(watch.off_loopback)
    assert len(remote.runs) == 12 and remote.datasets == ["d0", "d1", "d2"]
    cells = {(r.dataset, r.strategy, r.seed) for r in remote.runs}
    assert len(cells) == 12
    assert [_same(r) for r in remote.runs] == [_same(r) for r in local.runs]
    summary = [
        (s.dataset, s.strategy, s.mean, s.sd, s.p_vs_best, s.is_best) for s in local.strategies
    ]
    assert [  # per dataset: its best, the means and the p-values within it
        (s.dataset, s.strategy, s.mean, s.sd, s.p_vs_best, s.is_best) for s in remote.strategies
    ] == summary
    pids = set()
    for run in remote.runs:  # each cell is a normal run with its own record, in a Ray worker
        assert run.run_dir is not None and str(tmp_path / "ray") in run.run_dir
        config = json.loads(next(Path(run.run_dir).rglob("config.json")).read_text("utf-8"))
        assert config["dataset_name"] == run.dataset
        meta = next(Path(run.run_dir).rglob("run.json"))
        pids.add(json.loads(meta.read_text(encoding="utf-8"))["pid"])
    assert os.getpid() not in pids
    saved = json.loads((Path(remote.directory) / "compare.json").read_text(encoding="utf-8"))
    assert len(saved["runs"]) == 12
