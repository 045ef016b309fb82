"""An output path never replaces an input (reflex/cli/outputs.py, ``refuse_clobbering``): the
same path, a symlink or hard link to it, a file inside an input folder, or another output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reflex.cli.outputs import refuse_clobbering
from reflex.errors import ConfigurationError


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "data.jsonl").write_text('{"input": "x"}\n', encoding="utf-8")
    (tmp_path / "prompt").mkdir()
    (tmp_path / "prompt" / "system.md").write_text("Be brief.", encoding="utf-8")
    return {"dataset": tmp_path / "data.jsonl", "prompt": tmp_path / "prompt"}


def test_distinct_paths_pass(tmp_path: Path, inputs: dict[str, Path]) -> None:
    outputs = {"-o": tmp_path / "best.md", "--results-json": tmp_path / "result.json"}
    refuse_clobbering({**outputs, "--unused": None}, {**inputs, "none": None, "empty": ""})


def test_an_input_by_any_name_is_refused(tmp_path: Path, inputs: dict[str, Path]) -> None:
    link, hard = tmp_path / "link.jsonl", tmp_path / "hard.jsonl"
    link.symlink_to(inputs["dataset"])
    os.link(inputs["dataset"], hard)
    for output in (inputs["dataset"], link, hard, tmp_path / "." / "data.jsonl"):
        with pytest.raises(ConfigurationError, match=r"is the dataset \(.*data.jsonl\)"):
            refuse_clobbering({"--results-json": output}, inputs)


def test_a_file_inside_an_input_folder_is_refused(inputs: dict[str, Path]) -> None:
    inside = inputs["prompt"] / "system.md"
    with pytest.raises(ConfigurationError, match=r"is the prompt .* or a file in it"):
        refuse_clobbering({"-o": inside}, inputs)


def test_two_outputs_may_not_be_one_file(tmp_path: Path, inputs: dict[str, Path]) -> None:
    same = tmp_path / "out.json"
    with pytest.raises(ConfigurationError, match=r"--results-json .* is also -o"):
        refuse_clobbering({"-o": same, "--results-json": same}, inputs)
