"""``mlflow.genai.optimize_prompts(..., optimizer=ReflexPromptOptimizer(builder))`` end to end.

A real sqlite MLflow store and prompt registry; the user's ``predict_fn`` calls the local
OpenAI-compatible endpoint (``reflex.testing``) with the OpenAI client, as MLflow's own example
does; the reasoning model is the same endpoint through reflex's client.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import openai
import pytest
from mlflow import MlflowClient
from mlflow.genai.scorers import scorer
from mlflow.tracking._tracking_service import utils as tracking_utils

from reflex import ConfigurationError, PromptOptimizer
from reflex.api import EvalLabel, EvalSnapshot
from reflex.testing.endpoint import ChatRequest, serve
from reflex_mlflow import ReflexPromptOptimizer

KEYWORD = "Answer with one word."
WORDS = {"great": "positive", "awful": "negative", "fine": "positive", "bad": "negative"}
REVIEW = re.compile(r"review (\d+): (\w+) film")


def train_data(n: int = 30) -> list[dict[str, Any]]:
    words = list(WORDS)
    return [
        {
            "inputs": {"review": f"review {i}: {words[i % 4]} film"},
            "expectations": {"expected_response": WORDS[words[i % 4]]},
        }
        for i in range(n)
    ]


class Endpoint:
    """The task model answers one word only when asked to (else on every third review); the
    reasoning model proposes ``proposal``. Every request is kept, by kind."""

    def __init__(self, proposal: str) -> None:
        self.proposal = proposal
        self.task: list[str] = []
        self.reasoner: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> str:
        text = "\n".join(str(m.get("content", "")) for m in request.messages)
        with self._lock:
            (self.reasoner if request.model == "reasoner" else self.task).append(text)
        if request.model == "reasoner":
            return f"<diagnosis>d</diagnosis><edit>e</edit><prompt>{self.proposal}</prompt>"
        found = REVIEW.search(request.user)
        if found is None:
            return "unknown"
        label = WORDS[found[2]]
        return label if KEYWORD in text or int(found[1]) % 3 == 0 else f"I think it is {label}."


@scorer
def exact(outputs: str, expectations: dict[str, Any]) -> float:
    return float(outputs.strip() == expectations["expected_response"])


@pytest.fixture
def store(template_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The process's tracking URI on a fresh copy of the store (optimize_prompts uses MLflow's
    fluent API), put back afterwards; the OpenAI key the reasoning model's preflight checks."""
    db = tmp_path / "mlflow.db"
    shutil.copy(template_db, db)
    uri = f"sqlite:///{db}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    # mlflow.set_experiment exports MLFLOW_EXPERIMENT_ID: recorded as unset, so it goes after.
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", "")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID")
    monkeypatch.chdir(tmp_path)
    mlflow.set_experiment("optimize")
    yield uri
    if mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.tracking.fluent._active_experiment_id = None


class Evaluations:
    """Which rows each evaluation of the run measured, by split and kind."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, set[str]]] = []

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        self.seen.append((label.split, label.kind, {s.example_id for s in snapshot.samples}))


def optimize(
    url: str, template: Any, *, callbacks: Any = (), rows: int = 30, iterations: int = 2
) -> tuple[Any, ReflexPromptOptimizer]:
    prompt = mlflow.genai.register_prompt(name="sentiment", template=template)
    client = openai.OpenAI(base_url=url, api_key="sk-none")

    def predict_fn(review: str) -> str:
        version = mlflow.genai.load_prompt(prompt.uri)
        formatted = version.format(review=review)
        messages = (
            [{"role": "user", "content": formatted}] if isinstance(formatted, str) else formatted
        )
        answer = client.chat.completions.create(model="task", messages=messages)
        return str(answer.choices[0].message.content)

    reflex_builder = (
        PromptOptimizer()
        .set_reasoning_model("openai/reasoner", api_base=url)
        .set_run_dir(Path("runs"))
        .set_max_iterations(iterations)
    )
    optimizer = ReflexPromptOptimizer(reflex_builder, callbacks=callbacks)
    result = mlflow.genai.optimize_prompts(
        predict_fn=predict_fn,
        train_data=train_data(rows),
        prompt_uris=[prompt.uri],
        optimizer=optimizer,
        scorers=[exact],
    )
    return result, optimizer


def test_optimize_prompts_returns_the_winner_with_its_variables_and_a_locked_test(
    store: str,
) -> None:
    endpoint = Endpoint(
        f'<message role="user">\nClassify the sentiment. {KEYWORD}\n{{{{review}}}}\n</message>'
    )
    evaluations = Evaluations()
    with serve(responder=endpoint) as url:
        result, optimizer = optimize(
            url, "Classify the sentiment.\n{{review}}", callbacks=[evaluations]
        )

    best = result.optimized_prompts[0]
    assert best.template == f"Classify the sentiment. {KEYWORD}\n{{{{review}}}}"
    assert best.variables == {"review"} and best.version == 2
    registry = MlflowClient(tracking_uri=store)
    assert registry.load_prompt("prompts:/sentiment/2").template == best.template

    run = optimizer.last_result
    assert run is not None and run.completed and run.baseline and run.final
    assert result.optimizer_name == "ReflexPromptOptimizer"
    # MLflow's scores are the baseline's and the winner's on the held-out test split.
    assert result.initial_eval_score == run.baseline.scores_by_metric["mlflow_scorers"] < 1.0
    assert result.final_eval_score == run.final.scores_by_metric["mlflow_scorers"] == 1.0
    assert result.final_eval_score_per_scorer == {"exact": 1.0}
    assert run.p_value is not None and run.split_sizes["test"] == len(run.final.samples) > 0

    # The test rows were measured twice (baseline, final) and never used for selection: no
    # train or val evaluation holds one, and the reasoning model never saw one.
    test_ids = {s.example_id for s in run.final.samples}
    assert [kind for split, kind, _ in evaluations.seen if split == "test"] == ["baseline", "final"]
    assert all(not ids & test_ids for split, _, ids in evaluations.seen if split != "test")
    test_texts = {_review(s.trace) for s in run.final.samples}
    assert len(test_texts) == len(test_ids)
    assert endpoint.reasoner and not any(t in r for t in test_texts for r in endpoint.reasoner)
    first = train_data()[0]["inputs"]["review"]  # MLflow tries predict_fn on it once first
    for text in test_texts:
        assert sum(text in request for request in endpoint.task) == 2 + (text == first)

    # The reflex run logged into the MLflow run optimize_prompts opened.
    (mlflow_run,) = (  # the run optimize_prompts opened (reflex's evaluation runs aside)
        r
        for r in registry.search_runs([_experiment(registry)])
        if "reflex.evaluation" not in r.data.tags
    )
    assert mlflow_run.data.tags["reflex.run_id"] == run.run_id
    assert mlflow_run.data.params["target_model"] == "mlflow/predict_fn"
    assert mlflow_run.data.metrics["final_eval_score"] == 1.0
    assert Path(str(run.run_dir)).is_dir()


def _review(trace: Any) -> str:
    """The review a test row's predict_fn step was given (the step's input: MLflow's inputs)."""
    step = trace[0]
    assert step["name"] == "predict_fn"
    return str(step["input"]["review"])


def _experiment(client: MlflowClient) -> str:
    found = client.get_experiment_by_name("optimize")
    assert found is not None
    return str(found.experiment_id)


def test_a_chat_prompt_comes_back_as_messages_with_its_variables(store: str) -> None:
    system = f'<message role="system">\nClassify the sentiment. {KEYWORD}\n</message>'
    endpoint = Endpoint(f'{system}\n<message role="user">\n{{{{review}}}}\n</message>')
    template = [
        {"role": "system", "content": "Classify the sentiment."},
        {"role": "user", "content": "{{review}}"},
    ]
    with serve(responder=endpoint) as url:
        result, _ = optimize(url, template, iterations=1)  # 30 rows: 6 val rows carry the gate
    best = result.optimized_prompts[0]
    assert best.template == [
        {"role": "system", "content": f"Classify the sentiment. {KEYWORD}"},
        {"role": "user", "content": "{{review}}"},
    ]
    assert best.variables == {"review"} and result.final_eval_score == 1.0


def test_a_candidate_that_drops_a_variable_is_never_scored(store: str) -> None:
    endpoint = Endpoint(f'<message role="user">\nClassify the sentiment. {KEYWORD}\n</message>')
    with serve(responder=endpoint) as url:
        result, optimizer = optimize(
            url, "Classify the sentiment.\n{{review}}", rows=20, iterations=1
        )
    assert result.optimized_prompts[0].template == "Classify the sentiment.\n{{review}}"
    run = optimizer.last_result
    assert run is not None and run.iterations
    assert all(r.failed and "drops {{review}}" in r.failed for r in run.iterations)
    assert all("Answer with one word" not in request for request in endpoint.task)


def test_bad_input_is_refused_before_any_call(store: str) -> None:
    endpoint = Endpoint("unused")
    with serve(responder=endpoint) as url:
        rows = train_data()
        rows[4] = {"inputs": {"text": "no review"}, "expectations": {"expected_response": "x"}}
        prompt = mlflow.genai.register_prompt(name="p", template="Classify: {{review}}")
        builder = PromptOptimizer().set_reasoning_model("openai/reasoner", api_base=url)
        with pytest.raises(ConfigurationError, match=r"record 5: no input 'review'"):
            mlflow.genai.optimize_prompts(
                predict_fn=lambda review: "x",
                train_data=rows,
                prompt_uris=[prompt.uri],
                optimizer=ReflexPromptOptimizer(builder),
                scorers=[exact],
            )
        with pytest.raises(ConfigurationError, match="names task model"):
            mlflow.genai.optimize_prompts(
                predict_fn=lambda review: "x",
                train_data=train_data(),
                prompt_uris=[prompt.uri],
                optimizer=ReflexPromptOptimizer(builder.clone().add_provider("openai/task")),
                scorers=[exact],
            )
    assert endpoint.task == [] and endpoint.reasoner == []
