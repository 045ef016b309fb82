"""reflex_mlflow.bridge: MLflow's templates as reflex chat templates and back, train_data as rows
with stable ids, eval_fn one call at a time, and the scorers' verdict as a reflex Score."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from mlflow.genai.optimize.types import EvaluationResultRecord

from reflex.api import ConfigurationError, Example, render_chat_demos
from reflex.data.prompts import prompt_spec
from reflex_mlflow.bridge import (
    SCORE_STEP,
    Bridge,
    MlflowScorers,
    PredictError,
    PromptForm,
    Serial,
    records,
    reflex_rows,
)
from reflex_mlflow.prompts import template_spec


def _string_form(messages: list[dict[str, str]]) -> str:
    return prompt_spec(messages).render()


def test_a_text_prompt_is_one_user_message_and_comes_back_as_text() -> None:
    form = PromptForm.parse("qa", "Answer: {{question}} ({{ lang }})")
    assert (form.chat, form.variables) == (False, ["question", "lang"])
    assert form.messages == [{"role": "user", "content": "Answer: {{question}} ({{ lang }})"}]
    edited = [{"role": "user", "content": "Answer briefly: {{question}} ({{ lang }})"}]
    assert form.mlflow_template(_string_form(edited)) == "Answer briefly: {{question}} ({{ lang }})"


def test_a_chat_prompt_comes_back_as_its_json_message_list() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{q}}"}]
    form = PromptForm.parse("qa", json.dumps(messages))
    assert (form.chat, form.messages, form.variables) == (True, messages, ["q"])
    assert json.loads(form.mlflow_template(_string_form(messages))) == messages


def test_demo_turns_are_fixed_messages_of_a_chat_prompt_and_paragraphs_of_a_text_one() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q: {{q}}"}]
    demos = render_chat_demos([(json.dumps({"q": "2+2"}), "4")])
    with_demos = f"{_string_form(messages)}\n\n{demos}"
    chat = json.loads(PromptForm.parse("qa", json.dumps(messages)).mlflow_template(with_demos))
    assert chat == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q: 2+2"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "Q: {{q}}"},
    ]
    text = PromptForm.parse("qa", "Q: {{q}}")
    assert text.mlflow_template(with_demos) == "Be brief.\n\nQ: 2+2\n\n4\n\nQ: {{q}}"
    with pytest.raises(ConfigurationError, match="not a chat template"):
        text.mlflow_template("plain text")


def test_records_keep_mlflow_ids_or_hash_their_content() -> None:
    data = [
        {"inputs": {"q": "a"}, "outputs": "1"},
        {"inputs": {"q": "a"}, "outputs": "1"},
        {
            "inputs": {"q": "b"},
            "expectations": {"expected_response": "2"},
            "dataset_record_id": "dr-7",
        },
    ]
    found = records(data, ["q"])
    first, repeat, given = list(found)
    assert repeat == f"{first}-2" and given == "dr-7" and len(first) == 16
    assert records(data, ["q"]).keys() == found.keys()  # the same ids on every run
    rows = reflex_rows(found)
    assert [r["ideal"] for r in rows] == ["1", "1", "2"] and rows[2]["q"] == "b"
    with pytest.raises(ConfigurationError, match=r"^train_data record 2: no input 'lang'"):
        records([{"inputs": {"q": "a", "lang": "en"}}, {"inputs": {"q": "b"}}], ["q", "lang"])


def _result(record: dict[str, Any], output: Any, score: float | None) -> EvaluationResultRecord:
    return EvaluationResultRecord(
        inputs=record["inputs"],
        outputs=output,
        expectations=record.get("expectations"),
        score=score,
        trace=None,  # type: ignore[arg-type]
        rationales={"exact": "matched" if score else "differs"},
        individual_scores={"exact": score} if score is not None else {},
    )


class EvalFn:
    """An eval_fn that records the candidates of each call and whether two calls overlapped."""

    def __init__(self, outputs: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[dict[str, str], int]] = []
        self.inside = 0
        self.overlapped = False
        self.outputs = outputs or {}
        self._lock = threading.Lock()

    def __call__(
        self, candidates: dict[str, str], dataset: list[dict[str, Any]]
    ) -> list[EvaluationResultRecord]:
        with self._lock:
            self.inside += 1
            self.overlapped |= self.inside > 1
            self.calls.append((dict(candidates), len(dataset)))
        try:
            return [
                _result(r, self.outputs.get(r["inputs"]["q"], r["inputs"]["q"].upper()), 1.0)
                for r in dataset
            ]
        finally:
            with self._lock:
                self.inside -= 1


def test_serial_never_runs_two_eval_fn_calls_at_once_and_each_row_gets_its_own_result() -> None:
    eval_fn = EvalFn()
    serial = Serial(eval_fn)
    out: dict[tuple[str, str], str] = {}

    def one(candidate: str, q: str) -> None:
        out[(candidate, q)] = serial.evaluate({"p": candidate}, {"inputs": {"q": q}}).outputs

    threads = [threading.Thread(target=one, args=(c, q)) for c in ("A", "B") for q in "abcdefgh"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not eval_fn.overlapped
    assert out == {(c, q): q.upper() for c in ("A", "B") for q in "abcdefgh"}
    assert sum(n for _, n in eval_fn.calls) == 16 and serial.calls == len(eval_fn.calls)
    assert all(len(set(c.values())) == 1 for c, _ in eval_fn.calls)


def test_the_bridge_traces_the_verdict_and_the_metric_reads_it() -> None:
    form = PromptForm.parse("p", "Q: {{q}}")
    rows = {"r1": {"inputs": {"q": "a"}, "expectations": {"expected_response": "A"}}}
    eval_fn = EvalFn()
    bridge = Bridge(form, rows, Serial(eval_fn))
    example = Example(id="r1", messages=({"role": "user", "content": '{"q": "a"}'},))
    traced = bridge(_string_form(form.messages), '{"q": "a"}', example=example)
    assert eval_fn.calls == [({"p": "Q: {{q}}"}, 1)]
    assert traced["output"] == "A"
    score = MlflowScorers().score(json.dumps(traced), example)
    assert (score.value, score.feedback, dict(score.objectives)) == (
        1.0,
        "exact: matched",
        {"exact": 1.0},
    )


def test_a_predict_fn_failure_fails_the_row_instead_of_being_scored() -> None:
    form = PromptForm.parse("p", "Q: {{q}}")
    failed = "Failed to invoke the predict_fn with {'q': 'a'}: timeout"
    bridge = Bridge(form, {"r1": {"inputs": {"q": "a"}}}, Serial(EvalFn({"a": failed})))
    example = Example(id="r1", messages=({"role": "user", "content": "a"},))
    with pytest.raises(PredictError, match="timeout"):
        bridge(_string_form(form.messages), "a", example=example)


@pytest.mark.parametrize(
    ("verdict", "error"),
    [
        ({"score": None}, "no scorer"),
        ({"score": 3.0}, "outside [0, 1]"),
        (None, "no MLflow scorer verdict"),
    ],
)
def test_a_missing_or_out_of_range_verdict_is_an_error_not_a_zero(
    verdict: dict[str, Any] | None, error: str
) -> None:
    steps = [] if verdict is None else [{"name": SCORE_STEP, "input": {}, "output": verdict}]
    example = Example(id="r1", messages=({"role": "user", "content": "a"},))
    score = MlflowScorers().score(json.dumps({"output": "x", "steps": steps}), example)
    assert score.error is not None and error in score.error


@pytest.mark.parametrize(
    "template",
    [
        "Answer: {{question}}",
        "Be brief.",
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{q}}"}],
    ],
)
def test_optimize_prompts_and_prompts_uris_read_a_template_the_same_way(template: Any) -> None:
    """One conversion: what optimize_prompts hands over (a chat prompt as JSON text) and what the
    registry holds (a list) give the same prompt as prompts:/ URIs read."""
    handed = json.dumps(template) if isinstance(template, list) else template
    form = PromptForm.parse("qa", handed)
    assert form.spec == template_spec(template, "prompts:/qa/1")
    assert form.chat is isinstance(template, list)


def test_a_text_prompt_without_variables_is_a_system_prompt_and_comes_back_as_text() -> None:
    form = PromptForm.parse("qa", "Be brief.")
    assert form.spec.is_single and form.messages == [] and form.variables == []
    assert form.mlflow_template("Be brief. Answer with one word.") == (
        "Be brief. Answer with one word."
    )
