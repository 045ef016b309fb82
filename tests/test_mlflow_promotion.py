"""The prompt registry in and out, against a real sqlite MLflow store: a run starts from
``prompts:/cat@production``, its winner is registered as the next version of ``cat`` with its
figures, ``promote`` moves the alias behind check's gate (refusing a regression), ``rollback``
moves it back; a second promote or rollback is a no-op."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from conftest import BETTER, KEYWORD, make_rows
from mlflow import MlflowClient
from test_engine import START, builder
from test_mlflow_registry import store  # noqa: F401 - the sqlite store fixture

from reflex.testing import FakeModel, FakeRequest
from reflex_mlflow import MLflowCallback, promote, rollback
from reflex_mlflow.promotion import alias_tag

WORSE = "Classify the sentiment, please."  # no KEYWORD: scores like START


def _no_better_idea(request: FakeRequest) -> str:
    return f"<diagnosis>-</diagnosis>\n<edit>reword</edit>\n<prompt>{WORSE}</prompt>"


def _rows_file(folder: Path, rows: list[dict[str, str]] | None = None) -> Path:
    """The rows as a file: promote gates on the run's test rows, read from the run's file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows or make_rows()))
    return path


def _holder(client: MlflowClient) -> int:
    return int(client.get_prompt_version_by_alias("cat", "production").version)


@pytest.fixture
def registry(store: str, monkeypatch: pytest.MonkeyPatch) -> MlflowClient:  # noqa: F811
    """``cat`` v1 = START, held by @production; the store is the process's MLflow store (the env
    var, and MLflow's process-wide URI, which an earlier test may have set and which wins)."""
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setattr(mlflow.tracking._tracking_service.utils, "_tracking_uri", None)
    client = MlflowClient(tracking_uri=store)
    client.register_prompt("cat", template=START)
    client.set_prompt_alias("cat", "production", 1)
    return client


def test_start_from_an_alias_register_promote_refuse_and_roll_back(
    fake_model: FakeModel,
    tmp_path: Path,
    registry: MlflowClient,
    store: str,  # noqa: F811
) -> None:
    runs, rows = tmp_path / "runs", _rows_file(tmp_path)
    result = (
        builder(runs).set_dataset(rows).run("prompts:/cat@production", callbacks=[MLflowCallback()])
    )
    assert result.best_prompt == BETTER and result.final is not None
    assert result.baseline is not None and result.p_value is not None
    run = Path(str(result.run_dir))
    assert json.loads((run / "config.json").read_text())["prompt_source"] == "prompts:/cat/1"

    # The winner is cat v2, tagged with the run and its figures.
    v2 = registry.get_prompt_version("cat", 2)
    assert v2 is not None and v2.template == BETTER
    assert v2.tags["reflex.run_id"] == result.run_id
    assert v2.tags["reflex.source"] == "prompts:/cat/1"
    assert float(v2.tags["reflex.test_final"]) == pytest.approx(result.final.mean_score)
    assert float(v2.tags["reflex.test_baseline"]) == pytest.approx(result.baseline.mean_score)
    assert float(v2.tags["reflex.p_value"]) == pytest.approx(result.p_value, rel=1e-5)
    assert v2.tags["reflex.end_state"] == "succeeded"

    # Promote: v1 (the run's starting prompt) against v2 on the run's test rows, all cached.
    calls_before, plan = len(fake_model.requests), []
    move = promote(str(result.run_id), run_dir=runs, echo=plan.append)
    assert move.changed and (move.version, move.previous) == ("2", "1") and not move.refused
    assert len(fake_model.requests) == calls_before  # the run's cache answered every row
    assert "calls      winner 0, cat v1 (@production) 0" in plan[1]
    assert move.outcome is not None and move.outcome.test is not None
    assert move.outcome.baseline.score == pytest.approx(result.baseline.mean_score)
    assert move.outcome.current.mean_score == pytest.approx(result.final.mean_score)
    assert _holder(registry) == 2
    again = promote(str(result.run_id), run_dir=runs)
    assert not again.changed and "already holds cat v2" in again.message and _holder(registry) == 2

    # A later run (from v1) whose winner is worse than v2 is refused: the alias stays.
    fake_model.responder = lambda r: _no_better_idea(r) if "reasoner" in r.model else _task(r)
    other = tmp_path / "other"  # its own cache: the reasoner's answer above is not replayed
    worse = builder(other).set_dataset(rows).run("prompts:/cat/1", callbacks=[MLflowCallback()])
    assert KEYWORD not in worse.best_prompt
    refused = promote(str(worse.run_id), run_dir=other, dataset=rows)  # significant on 30 rows
    assert refused.refused and not refused.changed and _holder(registry) == 2
    assert refused.outcome is not None and refused.outcome.delta < 0
    assert refused.outcome.test is not None and refused.outcome.test.significant
    assert any(line.startswith("verdict   REGRESSION") for line in refused.lines)

    # Rollback: v2 -> v1; once more is a no-op.
    back = rollback("cat", tracking_uri=store)
    assert back.changed and (back.version, back.previous) == ("1", "2") and _holder(registry) == 1
    record = json.loads(registry.get_prompt("cat").tags[alias_tag("production")])
    assert record == {"version": "1", "previous": "2", "action": "rollback", "run_id": None}
    twice = rollback("cat", tracking_uri=store)
    assert not twice.changed and "already rolled back to v1" in twice.message
    assert _holder(registry) == 1


def _task(request: FakeRequest) -> str:
    from conftest import task_answer

    return task_answer(request)


def test_a_chat_template_round_trips_as_a_chat_prompt(
    fake_model: FakeModel, tmp_path: Path, registry: MlflowClient
) -> None:
    chat = [
        {"role": "system", "content": "Classify the sentiment."},
        {"role": "user", "content": "Review: {{review}}"},
    ]
    registry.register_prompt("chat", template=chat)
    rows = [{"id": r["id"], "review": r["input"], "ideal": r["ideal"]} for r in make_rows()]
    fake_model.responder = lambda r: _chat_answer(r, rows)
    result = builder(tmp_path / "runs", rows).run("prompts:/chat/1", callbacks=[MLflowCallback()])
    v2 = registry.get_prompt_version("chat", 2)
    assert v2 is not None and not v2.is_text_prompt  # registered back as a list of messages
    assert [m["role"] for m in v2.template] == ["system", "user"]
    assert v2.template[1]["content"] == "Review: {{review}}"
    assert KEYWORD in v2.template[0]["content"] and KEYWORD in result.best_prompt


def _chat_answer(request: FakeRequest, rows: list[dict[str, str]]) -> str:
    if "reasoner" in request.model:
        return (
            "<diagnosis>-</diagnosis>\n<edit>one word</edit>\n<prompt>"
            '<message role="system">\nClassify the sentiment. Answer with one word.\n'
            '</message>\n<message role="user">\nReview: {{review}}\n</message></prompt>'
        )
    ideal = {f"Review: {r['review']}": r["ideal"] for r in rows}.get(request.user, "?")
    index = int(request.user.split()[2].rstrip(":"))  # "Review: review 7: ..."
    return ideal if KEYWORD in request.system or index % 3 == 0 else f"It is {ideal}."


@pytest.mark.services
def test_the_round_trip_against_an_mlflow_server_on_postgresql(
    fake_model: FakeModel, tmp_path: Path, mlflow_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"cat-{uuid.uuid4().hex[:8]}"  # the server lives for the session
    client = MlflowClient(tracking_uri=mlflow_server)
    client.register_prompt(name, template=START)
    client.set_prompt_alias(name, "production", 1)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    runs, rows = tmp_path / "runs", _rows_file(tmp_path)
    uri = f"prompts:/{name}@production"
    result = builder(runs).set_dataset(rows).run(uri, callbacks=[MLflowCallback()])
    assert client.get_prompt_version(name, 2).template == result.best_prompt == BETTER
    move = promote(str(result.run_id), run_dir=runs)
    assert move.changed and int(client.get_prompt_version_by_alias(name, "production").version) == 2
    assert not promote(str(result.run_id), run_dir=runs).changed
    assert rollback(name).changed and not rollback(name).changed
    assert int(client.get_prompt_version_by_alias(name, "production").version) == 1
