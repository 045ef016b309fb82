"""The builder's data side (reflex/data/run_data.py): rows as given, bound to a template at run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_rows

from reflex import ConfigurationError, PromptOptimizer
from reflex.data.prompts import prompt_spec
from reflex.data.run_data import DataSide
from reflex.errors import MissingInputError

TEMPLATE = [
    {"role": "system", "content": "Classify the sentiment of the word."},
    {"role": "user", "content": "Word: {{ word }}"},
]
ROWS = [{"id": f"r{i}", "w": w, "ideal": "p"} for i, w in enumerate(["great", "fine", "bad"])]


def test_rows_without_input_wait_for_a_template_and_bind_to_its_variables(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    side = DataSide().set_dataset(path).set_variables(word="w")
    with pytest.raises(MissingInputError, match=rf"^{path}:1: no input"):
        side.bind_template(prompt_spec("A plain prompt, no variables."))
    side.bind_template(prompt_spec(TEMPLATE))  # reloaded from the file, bound
    assert [e.variables for e in side._rows()] == [{"word": w} for w in ("great", "fine", "bad")]


def test_a_template_names_a_message_that_is_not_one() -> None:
    side = DataSide().set_dataset(ROWS, input_field="w").set_rewrite_messages("nope")
    with pytest.raises(ConfigurationError, match="--rewrite-messages nope: not a message"):
        side.bind_template(prompt_spec(TEMPLATE))
    piped = DataSide().set_inputs(["a", "b"]).set_pipeline(lambda prompt, text, call: text)
    piped.bind_template(prompt_spec("plain"))  # no template: nothing to bind, no error


def test_no_rows_and_rows_no_metric_can_score_are_refused_when_a_config_is_built() -> None:
    with pytest.raises(ConfigurationError, match=r"no dataset: call \.set_dataset"):
        PromptOptimizer().add_provider("fake/task").add_metric("exact_match").build_config()
    no_refs = [{"id": "a", "input": "x"}]
    opt = PromptOptimizer().set_dataset(no_refs, name="bare").add_provider("fake/task")
    with pytest.raises(ConfigurationError, match="'bare' has no reference answers"):
        opt.add_metric("exact_match").build_config()


def test_a_clone_keeps_the_rows_as_given_and_its_own_settings() -> None:
    opt = PromptOptimizer().set_dataset(make_rows(10)).add_provider("fake/task")
    twin = opt.clone().set_splits(0.5, 0.3, group_key="g").set_slices("lang", "lang")
    assert twin._dataset is opt._dataset  # the rows are shared, not reread
    assert (twin._config.train_split, twin._config.slice_by) == (0.5, ["lang"])
    assert (opt._config.train_split, opt._config.slice_by) == (0.6, [])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.set_slices(""), "slice keys must be non-empty strings"),
        (lambda s: s.set_feedback_field("  "), "feedback field must be a column name"),
        (lambda s: s.set_tools(None, choice=" "), "is not auto, required, none"),
    ],
)
def test_a_bad_data_setting_is_refused_where_it_is_made(
    call: Callable[[DataSide], DataSide], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        call(DataSide())
