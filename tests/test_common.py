"""Two modules named ``common`` share this file (the flat tests/ folder):

- ``strategies/_common.py``: how a reasoning-free strategy tries a candidate (screened on a train
  minibatch, measured on val only when it could win, never screened when no val pass can follow);
- ``reflex/cli/common.py``: what every command shares (finite numbers, ``key=value`` pairs, one
  ``error:`` line and exit 2 for a ReflexError, exit 130 on Ctrl-C).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_reasoning_free import START, _index, _sent_demos, builder, task

from reflex.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    FiniteFloat,
    FiniteRange,
    Group,
    number,
    pairs,
    with_errors,
)
from reflex.errors import ConfigurationError
from reflex.testing import FakeModel
from reflex.types import Example
from reflex_strategies._common import join_sections, references


def test_screening_rejects_on_train_minibatch_without_val_calls(tmp_path: Path) -> None:
    FakeModel(task(lambda r: not _sent_demos(r) and _index(r) % 2 == 0)).install()
    # demo_source="bootstrap": the seeded draws this test's minibatches were chosen with.
    strategy = builder(tmp_path, "fewshot", screen=True, demo_source="bootstrap")
    result = strategy.configure(batch_size=4).run(START)
    assert result.best_prompt == START
    assert all(
        r.rejected and not r.failed and r.val_score is None and r.score is not None
        for r in result.iterations
    )
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    assert any(json.loads(e)["type"] == "candidate_rejected" for e in events)


@pytest.mark.parametrize("max_calls", [75, 85, 90])
def test_no_screening_calls_are_paid_when_no_val_pass_can_follow(
    tmp_path: Path, max_calls: int
) -> None:
    # Issue 17: near the end of the budget, candidates were screened on train rows although
    # fewer calls remained than one val pass (the screening calls were wasted).
    FakeModel(task(lambda r: False)).install()
    result = (
        builder(tmp_path, "fewshot", screen=True)
        .configure(batch_size=4, early_stopping_patience=None)
        .set_budget(max_calls=max_calls)
        .run(START)
    )
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    labels = [
        e["label"]
        for e in map(json.loads, events)
        if e["type"] == "evaluation" and not e["label"].startswith("test:")
    ]
    assert labels[-1].startswith("val:it")  # every screened candidate was measured on val
    assert "a candidate's val pass needs 12" in result.stop_reason
    assert result.usage["metric_calls"] <= max_calls


def test_sections_follow_a_fixed_base_and_empty_ones_are_dropped() -> None:
    assert join_sections("  Base.  ", "", "Rules.\n", "  ") == "Base.\n\nRules."
    assert join_sections("", "Only.") == "Only."


def test_references_are_the_stripped_non_empty_ideals_in_order() -> None:
    rows = [
        Example("a", ({"role": "user", "content": "q"},), ideal=" yes "),
        Example("b", ({"role": "user", "content": "q"},), ideal=None),
        Example("c", ({"role": "user", "content": "q"},), ideal="  "),
        Example("d", ({"role": "user", "content": "q"},), ideal="no"),
    ]
    assert references(rows) == ["yes", "no"]


def test_number_refuses_what_is_not_a_finite_number() -> None:
    assert number("0.05", "--tolerance") == 0.05
    with pytest.raises(ConfigurationError, match=r"--tolerance 'x': not a number"):
        number("x", "--tolerance")
    for text in ("nan", "inf", "-inf"):
        with pytest.raises(ConfigurationError, match="not a finite number"):
            number(text, "--tolerance")


def test_pairs_read_json_values_and_refuse_a_missing_key() -> None:
    assert pairs(("k=3", "s=text", 'j={"a": [1]}', "e="), "--var") == {
        "k": 3,
        "s": "text",
        "j": {"a": [1]},
        "e": "",
    }
    with pytest.raises(click.BadParameter, match="is not key=value"):
        pairs(("novalue",), "--var")
    with pytest.raises(click.BadParameter):
        pairs(("=3",), "--var")


@click.command()
@click.option("--x", type=FiniteFloat())
@click.option("--y", type=FiniteRange(0, 1))
def _floats(x: float | None, y: float | None) -> None:
    click.echo(f"{x} {y}")


@pytest.mark.parametrize("args", [["--x", "nan"], ["--x", "inf"], ["--y", "nan"]])
def test_float_options_refuse_nan_and_inf(args: list[str]) -> None:
    done = CliRunner().invoke(_floats, args)
    assert done.exit_code == 2 and "is not a finite number" in done.output


def test_float_options_take_real_numbers() -> None:
    assert CliRunner().invoke(_floats, ["--x", "1e3", "--y", "0.5"]).output == "1000.0 0.5\n"


def _command(fault: BaseException) -> click.Group:
    @click.group(cls=Group)
    def cli() -> None:
        pass

    def run() -> None:
        raise fault

    cli.command("go")(with_errors(run))
    return cli


def test_a_reflex_error_is_one_error_line_and_exit_2() -> None:
    done = CliRunner().invoke(_command(ConfigurationError("bad value: use 3")), ["go"])
    assert (done.exit_code, done.output) == (EXIT_USAGE, "error: bad value: use 3\n")


def test_ctrl_c_exits_130_with_one_line() -> None:
    done = CliRunner().invoke(_command(KeyboardInterrupt()), ["go"])
    assert (done.exit_code, done.output) == (EXIT_INTERRUPTED, "interrupted\n")
