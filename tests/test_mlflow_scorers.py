"""Metrics both ways: a reflex metric as a scorer inside a real ``mlflow.genai.evaluate`` call,
and ``--metric mlflow:<scorer>`` in a run (a deterministic built-in, a custom ``@scorer`` by
import path, and MLflow's ``Correctness`` judge answered by the local endpoint, its calls
counted in the run's ledger)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mlflow
import pytest
from click.testing import CliRunner
from conftest import LABELS, make_rows

from reflex import load_dataset
from reflex.api import Example
from reflex.cli import build_cli
from reflex.plugins import get_registry
from reflex.testing import FakeModel
from reflex.testing.endpoint import serve
from reflex_metrics.exact_match import ExactMatch
from reflex_mlflow.scorers import as_scorer, load_scorer, scorer_metric


def test_a_reflex_metric_scores_inside_mlflow_genai_evaluate(
    uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task model is the local endpoint (it echoes the review's last word); exact_match,
    wrapped, scores each row against its expected_response; the metric's feedback is the
    rationale."""
    import litellm

    rows = make_rows(6)
    data = [
        {"inputs": {"input": r["input"]}, "expectations": {"expected_response": r["ideal"]}}
        for r in rows
    ]

    def answer(text: str) -> str:
        return "positive" if any(w in text for w in ("great", "fine", "lovely")) else "x"

    def last_word(request: Any) -> str:
        return answer(request.user)

    mlflow.set_tracking_uri(uri)
    with serve(responder=last_word) as url:

        def predict(input: str) -> str:
            answer = litellm.completion(
                model="openai/task",
                api_base=url,
                api_key="sk-none",
                messages=[{"role": "user", "content": input}],
            )
            return str(answer.choices[0].message.content)

        result = mlflow.genai.evaluate(
            data=data, predict_fn=predict, scorers=[as_scorer(ExactMatch())]
        )
    expected = [1.0 if answer(r["input"]) == r["ideal"] else 0.0 for r in rows]
    assert result.metrics["exact_match/mean"] == pytest.approx(sum(expected) / len(expected))
    traces = mlflow.search_traces(run_id=result.run_id, return_type="list")
    assert isinstance(traces, list) and len(traces) == len(rows)
    verdicts = [a for t in traces for a in t.info.assessments if a.name == "exact_match"]
    assert sorted(float(a.value) for a in verdicts) == sorted(expected)
    wrong = [a for a in verdicts if not a.value]
    assert wrong and all("differs" in (a.rationale or "") for a in wrong)


def test_the_wrapper_reports_a_row_it_cannot_score() -> None:
    scorer = as_scorer(ExactMatch())
    feedback = scorer(inputs={"input": "x"}, outputs="positive", expectations={})
    assert feedback.value is None and feedback.error is not None
    assert "expected_response" in str(feedback.error.error_message)


def test_scorer_values_become_scores() -> None:
    metric = get_registry().metric("mlflow", target="RegexMatch", pattern="^pos")
    row = Example("a", ({"role": "user", "content": "x"},), ideal="positive")
    assert metric.name == "regex_match" and metric.score("positive", row).value == 1.0
    assert metric.score("negative", row).value == 0.0
    assert metric.to_config() == {  # type: ignore[attr-defined]
        "name": "mlflow",
        "options": {"target": "RegexMatch", "pattern": "^pos"},
    }
    with pytest.raises(Exception, match="no such scorer"):
        load_scorer("NoSuchScorer")
    with pytest.raises(Exception, match=r"not an mlflow\.genai scorer"):
        scorer_metric(object())


SCORERS = """
from mlflow.genai.scorers import scorer


@scorer
def says_positive(outputs, expectations):
    return outputs.strip() == expectations["expected_response"] == "positive"
"""


def optimize(tmp_path: Path, data: Path, prompt: Path, *metric: str) -> dict[str, Any]:
    args = ["optimize", str(data), str(prompt), "-m", "fake/task", "--reasoning-model"]
    args += ["fake/reasoner", "--run-dir", str(tmp_path / "rd"), "--max-iterations", "2"]
    for item in metric:
        args += ["--metric", item]
    out = tmp_path / "best.md"
    done = CliRunner().invoke(build_cli(), [*args, "-o", str(out)])
    assert done.exit_code == 0, done.output
    (run,) = (tmp_path / "rd" / "runs").iterdir()
    return dict(json.loads((run / "result.json").read_text()))


def test_metric_mlflow_runs_a_builtin_and_a_custom_scorer(
    fake_model: FakeModel,
    tmp_path: Path,
    dataset_file: Path,
    prompt_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "my_scorers.py").write_text(SCORERS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_scorers", raising=False)
    result = optimize(
        tmp_path,
        dataset_file,
        prompt_file,
        f"mlflow:RegexMatch,pattern=^{LABELS[0]}$",
        "mlflow:my_scorers.says_positive",
    )
    final = result["final"]
    assert set(final["scores_by_metric"]) == {"regex_match", "says_positive"}
    rows = {r["id"]: r for r in make_rows()}
    for sample in final["samples"]:
        said = sample["output"].strip() == LABELS[0]
        assert sample["scores"]["regex_match"] == float(said)
        wanted = said and rows[sample["example_id"]]["ideal"] == LABELS[0]
        assert sample["scores"]["says_positive"] == float(wanted)
    config = json.loads(
        next((tmp_path / "rd" / "runs").iterdir()).joinpath("config.json").read_text()
    )
    assert {"name": "mlflow", "options": {"target": "RegexMatch", "pattern": f"^{LABELS[0]}$"}} in (
        config["metric_specs"]
    )


def test_an_mlflow_judge_is_a_metric_and_its_calls_are_counted(
    fake_model: FakeModel,
    tmp_path: Path,
    dataset_file: Path,
    prompt_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MLflow's Correctness judge calls the local endpoint through MLflow's LiteLLM adapter;
    each verdict's tokens, as MLflow reports them, land in the run's ledger as judge calls."""
    asked: list[Any] = []

    def verdict(request: Any) -> str:
        asked.append(request)
        return json.dumps({"result": "yes", "rationale": "the response states the fact"})

    with serve(responder=verdict, usage=(40, 9)) as url:
        monkeypatch.setenv("OPENAI_API_BASE", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
        result = optimize(
            tmp_path,
            dataset_file,
            prompt_file,
            "exact_match",
            "mlflow:Correctness,model=openai:/judge",
        )
    judge = result["usage"]["judge"]
    assert asked and judge["calls"] == len(asked)
    assert judge["prompt_tokens"] == 40 * len(asked) and judge["completion_tokens"] == 9 * len(
        asked
    )
    assert result["final"]["scores_by_metric"]["correctness"] == 1.0
    assert load_dataset(str(dataset_file)) is not None
