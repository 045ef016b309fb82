"""Multi-component prompts: files, templates, errors, the builder, the CLI's PROMPT and -o."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import BETTER, make_rows

from reflex import ConfigurationError, PromptOptimizer
from reflex.data.prompts import PromptSpec, load_prompt_file, write_prompt_file
from reflex.optimizer import prompt_spec
from reflex.testing import FakeModel

PARTS = {"role": "You classify reviews.", "format": "Answer positive or negative."}


def test_render_joins_in_order_or_uses_the_template() -> None:
    assert PromptSpec(PARTS).render() == "You classify reviews.\n\nAnswer positive or negative."
    spec = PromptSpec(PARTS, "<role>{role}</role> {format} {unknown}")
    assert (
        spec.render() == "<role>You classify reviews.</role> Answer positive or negative. {unknown}"
    )
    assert PromptSpec.single("Hi.").render() == "Hi." and PromptSpec.single("x").is_single


def test_a_candidate_s_components_are_the_edited_ones_or_a_plain_prompt_s_text() -> None:
    plain = PromptSpec.single("Be brief.")
    assert plain.components_of("Be terse.") == {"system": "Be terse."}
    parts = PromptSpec({"role": "You grade.", "format": "Answer A or B."})
    assert parts.components_of("You grade.\n\nAnswer B.") is None  # edited as one text
    edited = {"role": "You grade.", "format": "Answer B."}
    assert parts.components_of(parts.render(edited), edited) == edited
    assert plain.components_of("Be terse.", {"system": "Be terse."}) == {"system": "Be terse."}


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".toml"])
def test_mapping_files_round_trip(suffix: str, tmp_path: Path) -> None:
    spec = PromptSpec(PARTS, "{role}\n---\n{format}", fmt=suffix.strip(".").replace("yml", "yaml"))
    path = tmp_path / f"prompt{suffix}"
    write_prompt_file(path, spec)
    loaded = load_prompt_file(path)
    assert loaded == spec and loaded.fmt == spec.fmt
    assert loaded.render() == "You classify reviews.\n---\nAnswer positive or negative."


def test_directory_of_markdown_files(tmp_path: Path) -> None:
    (tmp_path / "a_role.md").write_text("You classify reviews.\n", encoding="utf-8")
    (tmp_path / "b_format.md").write_text("Answer in one word.\n", encoding="utf-8")
    spec = load_prompt_file(tmp_path)
    assert spec.names == ["a_role", "b_format"] and spec.fmt == "dir"
    assert spec.render() == "You classify reviews.\n\nAnswer in one word."
    (tmp_path / "_template.md").write_text("{b_format} {a_role}", encoding="utf-8")
    assert load_prompt_file(tmp_path).render() == "Answer in one word. You classify reviews."


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"role": ""}', "prompt.json: component 'role' is empty"),
        ('{"role": 3}', "prompt.json: component 'role' must be text, got int"),
        ('{"bad name": "x"}', "component name 'bad name'"),
        ('["x"]', "chat template message 0 must be an object with only 'role'"),
        ('{"role": "x", "_template": "{role} {tone}"}', "unknown component 'tone'"),
        ('{"role": "x", "tone": "y", "_template": "{role}"}', "component 'tone' is not used"),
        ("{nope", "prompt.json: not valid json"),
        ("{}", "no prompt components found"),
    ],
)
def test_bad_prompt_files_name_the_file_and_component(
    text: str, match: str, tmp_path: Path
) -> None:
    path = tmp_path / "prompt.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=match) as info:
        load_prompt_file(path)
    assert "\n" not in str(info.value)


def test_prompt_spec_accepts_every_input_shape(tmp_path: Path) -> None:
    md = tmp_path / "p.md"
    md.write_text("Plain.\n", encoding="utf-8")
    assert prompt_spec(md) == PromptSpec.single("Plain.")
    assert prompt_spec("Plain.") == PromptSpec.single("Plain.")
    assert prompt_spec(PARTS).names == ["role", "format"]
    with pytest.raises(ConfigurationError, match="component 'format' is empty"):
        prompt_spec({"role": "x", "format": " "})


def test_builder_runs_a_mapping_and_reports_components(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    result = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path)
        .run(PARTS)
    )
    assert result.initial_prompt == PromptSpec(PARTS).render()
    if result.best_prompt == result.initial_prompt:
        assert result.best_components == PARTS
    else:  # instructions edits the assembled text: its components are unknown
        assert result.best_components is None


def test_cli_optimizes_a_yaml_prompt_and_writes_yaml(
    fake_model: FakeModel, tmp_path: Path, dataset_file: Path
) -> None:
    from reflex.cli import main

    prompt = tmp_path / "prompt.yaml"
    prompt.write_text(
        yaml.safe_dump({"role": "Classify the sentiment.", "format": "Be careful."}),
        encoding="utf-8",
    )
    out = tmp_path / "best.yaml"
    args = ["optimize", str(dataset_file), str(prompt), "-m", "fake/task", "-s", "gepa"]
    args += ["--reasoning-model", "fake/reasoner", "--run-dir", str(tmp_path / "runs")]
    args += ["-o", str(out), "--results-json", str(tmp_path / "r.json")]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (0, None)
    best = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert set(best) == {"role", "format"} and BETTER in best.values()
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["best_components"] == best and saved["lineage"][0]["kind"] == "seed"
