"""Bad input through the real CLI entry point: one ``error:`` line, exit 2, nothing written.

Every case runs ``reflex.cli.main([...])`` in a fresh working directory holding a good dataset
(``data.jsonl``), a good prompt (``prompt.md``) and whatever files the case adds. Each must exit
with code 2 and print exactly one line on stderr that starts with ``error:`` and names the file
and line or the bad value, plus the fix (the ``expect`` fragments); no traceback, nothing on
stdout, no ``-o`` / ``--results-json`` file, no run directory, no model call.

Inputs that look odd but are valid (a BOM-led file, CSV fields with embedded
newlines, large CSV fields) are checked to load in ``test_odd_but_valid_input_loads``.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.data.dataset import MAX_RECORD_BYTES, load_dataset
from reflex.testing import FakeModel

MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")
OUTPUTS = ("-o", "best.md", "--results-json", "result.json")
GOOD = ("data.jsonl", "prompt.md")


def jsonl(*records: object) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


ROWS = jsonl(*make_rows(3))
BIG = "x" * (MAX_RECORD_BYTES + 2**20)


@dataclass(frozen=True)
class Case:
    """One bad input: extra files, the CLI arguments after ``optimize``, expected fragments."""

    id: str
    args: tuple[str, ...]
    expect: tuple[str, ...]
    files: dict[str, str | bytes] = field(default_factory=dict)


def data(name: str, content: str | bytes, *expect: str) -> Case:
    """A bad dataset file ``name`` with the good prompt and the default models."""
    return Case(f"dataset {name}", (name, "prompt.md", *MODELS), expect, {name: content})


def opts(case_id: str, *args: str, expect: tuple[str, ...]) -> Case:
    """Good files plus the default models and these options."""
    return Case(case_id, (*GOOD, *MODELS, *args), expect)


CASES: list[Case] = [
    # --- JSON Lines ----------------------------------------------------------------------------
    Case(
        "invalid JSON",
        ("d.jsonl", "prompt.md", *MODELS),
        ("d.jsonl:4:", "invalid JSON", "one JSON object"),
        {"d.jsonl": ROWS + "{oops\n"},
    ),
    Case(
        "truncated last line",
        ("t.jsonl", "prompt.md", *MODELS),
        ("t.jsonl:4:", "invalid JSON"),
        {"t.jsonl": ROWS + '{"input": "a", "ideal": '},
    ),
    Case(
        "array line",
        ("a.jsonl", "prompt.md", *MODELS),
        ("a.jsonl:4:", "not a JSON object", "array"),
        {"a.jsonl": ROWS + "[1, 2]\n"},
    ),
    Case(
        "string line",
        ("s.jsonl", "prompt.md", *MODELS),
        ("s.jsonl:2:", "not a JSON object", "string"),
        {"s.jsonl": jsonl(make_rows(1)[0], "hi")},
    ),
    Case(
        "whole file is a JSON array",
        ("arr.json", "prompt.md", *MODELS),
        ("arr.json:1:", "JSON Lines"),
        {"arr.json": json.dumps(make_rows(3))},
    ),
    Case(
        "BOM in the middle of the file",
        ("m.jsonl", "prompt.md", *MODELS),
        ("m.jsonl:4:", "byte-order mark", "remove it"),
        {"m.jsonl": ROWS.encode() + codecs.BOM_UTF8 + jsonl(*make_rows(5)[4:]).encode()},
    ),
    Case(
        "UTF-16 file with BOM",
        ("u16.jsonl", "prompt.md", *MODELS),
        ("u16.jsonl:1:", "not valid UTF-8", "0xff", "re-save the file as UTF-8"),
        {"u16.jsonl": ROWS.encode("utf-16")},
    ),
    Case(
        "latin-1 bytes",
        ("l1.jsonl", "prompt.md", *MODELS),
        ("l1.jsonl:2:", "0xe9", "UTF-8"),
        {"l1.jsonl": b'{"input": "x"}\n' + '{"input": "caf\xe9"}\n'.encode("latin-1")},
    ),
    Case(
        "50 MB line",
        ("huge.jsonl", "prompt.md", *MODELS),
        ("huge.jsonl:4:", "16 MB", "shorten the row"),
        {"huge.jsonl": ROWS + json.dumps({"input": "x" * 50 * 2**20}) + "\n"},
    ),
    data("empty.jsonl", b"", "empty.jsonl:1:", "empty file", "one JSON object per line"),
    data("blank.jsonl", "\n   \n\t\n\n", "blank.jsonl:1:", "empty file"),
    data(
        "noinput.jsonl",
        jsonl({"ideal": "x"}),
        "noinput.jsonl:1:",
        "no input",
        "fields are 'ideal'",
        "--input-field",
    ),
    data(
        "num.jsonl",
        jsonl({"input": 42, "ideal": "x"}),
        "num.jsonl:1:",
        "'input'",
        "must be a string, got int",
    ),
    data(
        "list.jsonl",
        jsonl({"input": ["a"], "ideal": "x"}),
        "list.jsonl:1:",
        "must be a string, got array",
    ),
    data(
        "null.jsonl",
        jsonl({"input": None, "ideal": "x"}),
        "null.jsonl:1:",
        "must be a string, got null",
    ),
    data(
        "ref.jsonl",
        jsonl({"input": "a", "ideal": ["x"]}),
        "ref.jsonl:1:",
        "'ideal'",
        "string or number, got array",
    ),
    data(
        "msgs.jsonl",
        jsonl({"messages": "hi", "ideal": "x"}),
        "msgs.jsonl:1:",
        "'messages' must be a non-empty list",
    ),
    data(
        "role.jsonl",
        jsonl({"messages": [{"role": "user"}]}),
        "role.jsonl:1:",
        "messages[0]",
        "'role' and 'content'",
    ),
    data(
        "sharegpt.jsonl",
        jsonl({"conversations": [{"from": "bot", "value": "x"}]}),
        "sharegpt.jsonl:1:",
        "'bot'",
        "allowed: human, gpt, system",
    ),
    data(
        "dup.jsonl",
        jsonl({"id": "a", "input": "x"}, {"id": "a", "input": "y"}),
        "dup.jsonl:2:",
        "duplicate id 'a'",
        "also on line 1",
    ),
    data(
        "schema.jsonl",
        jsonl({"question": "q", "response": "r"}),
        "schema.jsonl:1:",
        "fields are 'question', 'response'",
        "--input-field",
    ),
    data(
        "id.jsonl",
        jsonl({"id": [1], "input": "x"}),
        "id.jsonl:1:",
        "field 'id'",
        "non-empty string or integer",
    ),
    data(
        "meta.jsonl",
        jsonl({"input": "x", "metadata": "tag"}),
        "meta.jsonl:1:",
        "'metadata' must be an object",
    ),
    data("notes.txt", "just some notes\n", "notes.txt:1:", "unknown format", "rename it"),
    Case(
        "dataset file missing",
        ("missing.jsonl", "prompt.md", *MODELS),
        ("missing.jsonl", "file not found", "check the path"),
    ),
    Case(
        "dataset is a directory",
        ("folder", "prompt.md", *MODELS),
        ("'DATASET'", "'folder' is a directory", "--help"),
        {"folder/data.jsonl": ROWS},
    ),
    Case(
        "input field not in the file",
        (*GOOD, *MODELS, "--input-field", "question"),
        ("data.jsonl:1:", "field 'question'", "check --input-field"),
    ),
    Case(
        "output field in no record",
        (*GOOD, *MODELS, "--output-field", "label"),
        ("data.jsonl", "'label'", "check --output-field"),
    ),
    # --- CSV ------------------------------------------------------------------------------------
    data(
        "nocol.csv",
        "question,ideal\na,b\n",
        "nocol.csv:1:",
        "no input column",
        "columns are 'question', 'ideal'",
        "--input-field",
    ),
    data(
        "ragged.csv",
        "input,ideal\na,b\nc,d,e\n",
        "ragged.csv:3:",
        "3 columns",
        "header has 2",
        "quote fields",
    ),
    data(
        "open.csv",
        'input,ideal\na,b\nc,"d\ne,f\n',
        "open.csv:3:",
        "malformed CSV",
        "close every quote",
    ),
    data("stray.csv", 'input,ideal\n"a"b,c\n', "stray.csv:2:", "malformed CSV"),
    data("header.csv", "input,ideal\n", "header.csv:1:", "no data rows"),
    data(
        "twice.csv",
        "input,input,ideal\na,b,c\n",
        "twice.csv:1:",
        "duplicate column names: input",
        "rename",
    ),
    data(
        "latin.csv",
        "input,ideal\ncaf\xe9,x\n".encode("latin-1"),
        "latin.csv:2:",
        "not valid UTF-8",
        "re-save",
    ),
    data(
        "meta.csv",
        "input,metadata\na,{oops\n",
        "meta.csv:2:",
        "column 'metadata'",
        "not valid JSON",
    ),
    data("wide.csv", f"input,ideal\na,b\n{BIG},c\n", "wide.csv:3:", "16 MB"),
    # --- splits ---------------------------------------------------------------------------------
    data(
        "dev.jsonl",
        jsonl({"input": "a", "split": "dev"}),
        "dev.jsonl:1:",
        "field 'split' is 'dev'",
        "train, val (or validation), test",
    ),
    data(
        "splitnum.jsonl",
        jsonl({"input": "a", "split": 1}),
        "splitnum.jsonl:1:",
        "field 'split' is 1",
    ),
    data(
        "two.jsonl",
        jsonl(*make_rows(2)),
        "two.jsonl",
        "of 2 rows is too small",
        "split would be empty",
        "change the fractions",
    ),
    data(
        "alltest.jsonl",
        jsonl(*({**r, "split": "test"} for r in make_rows(6))),
        "alltest.jsonl",
        "train split would be empty",
    ),
    Case(
        "group key missing",
        (*GOOD, *MODELS, "--group-key", "topic"),
        ("group key 'topic'", "in no row's metadata", "available metadata keys"),
    ),
    Case(
        "one group asks for two splits",
        ("groups.jsonl", "prompt.md", *MODELS, "--group-key", "topic"),
        ("group key 'topic'", "different splits (test, train)", "one split value"),
        {
            "groups.jsonl": jsonl(
                {"input": "a", "topic": "t", "split": "train"},
                {"input": "b", "topic": "t", "split": "test"},
                *make_rows(12),
            )
        },
    ),
    # --- prompts --------------------------------------------------------------------------------
    Case(
        "empty prompt",
        ("data.jsonl", "p.md", *MODELS),
        ("p.md", "the prompt is empty"),
        {"p.md": ""},
    ),
    Case(
        "whitespace prompt", ("data.jsonl", "p.md", *MODELS), ("p.md", "empty"), {"p.md": " \n\t\n"}
    ),
    Case(
        "binary prompt",
        ("data.jsonl", "p.bin", *MODELS),
        ("p.bin", "binary"),
        {"p.bin": b"abc\x00\x01\x02"},
    ),
    Case(
        "non-UTF-8 prompt",
        ("data.jsonl", "p.md", *MODELS),
        ("p.md", "not UTF-8", "re-save"),
        {"p.md": "caf\xe9".encode("latin-1")},
    ),
    Case("prompt file missing", ("data.jsonl", "nope.md", *MODELS), ("nope.md", "not found")),
    Case(
        "component file with an empty component",
        ("data.jsonl", "p.json", *MODELS),
        ("p.json", "component 'format' is empty"),
        {"p.json": json.dumps({"role": "You classify reviews.", "format": " "})},
    ),
    Case(
        "component file that is not JSON",
        ("data.jsonl", "p.json", *MODELS),
        ("p.json", "not valid json"),
        {"p.json": '{"role": "x",'},
    ),
    Case(
        "component with a bad name",
        ("data.jsonl", "p.json", *MODELS),
        ("p.json", "component name 'my role'", "plain identifier"),
        {"p.json": json.dumps({"my role": "x"})},
    ),
    Case(
        "component that is not text",
        ("data.jsonl", "p.json", *MODELS),
        ("p.json", "component 'role' must be text"),
        {"p.json": json.dumps({"role": 3})},
    ),
    Case(
        "template naming an unknown component",
        ("data.jsonl", "p.json", *MODELS),
        ("template names unknown component 'tone'",),
        {"p.json": json.dumps({"role": "x", "_template": "{role} {tone}"})},
    ),
    Case(
        "prompt directory without components",
        ("data.jsonl", "prompts", *MODELS),
        ("prompts", "holds no .md component files"),
        {"prompts/notes.txt": "x"},
    ),
    Case(
        "prompt directory with a binary component",
        ("data.jsonl", "prompts", *MODELS),
        ("role.md", "binary"),
        {"prompts/role.md": b"a\x00b"},
    ),
    # --- options --------------------------------------------------------------------------------
    opts(
        "unknown strategy",
        "-s",
        "nope",
        expect=("unknown strategy 'nope'", "available: ", "iterative"),
    ),
    opts(
        "unknown metric",
        "--metric",
        "nope",
        expect=("unknown metric 'nope'", "available: ", "exact_match"),
    ),
    opts(
        "unknown strategy option",
        "--strategy-option",
        "nope=1",
        expect=("option 'nope'", "its options: "),
    ),
    opts(
        "bad strategy option value",
        "--strategy-option",
        "worst_k=many",
        expect=("option 'worst_k'", "integer"),
    ),
    opts(
        "strategy option not key=value",
        "--strategy-option",
        "worst_k",
        expect=("--strategy-option", "'worst_k' is not key=value"),
    ),
    opts("zero call budget", "--max-calls", "0", expect=("max_calls=0", "greater than 0")),
    opts("negative call budget", "--max-calls", "-5", expect=("=-5", "greater than 0")),
    opts("zero cost budget", "--max-cost", "0", expect=("max_cost=0.0", "greater than 0")),
    opts("NaN cost budget", "--max-cost", "nan", expect=("--max-cost", "not a finite number")),
    opts("inf time budget", "--max-seconds", "inf", expect=("--max-seconds", "finite number")),
    opts("NaN threshold", "--threshold", "nan", expect=("--threshold", "not a finite number")),
    opts("NaN temperature", "--temperature", "nan", expect=("--temperature", "finite number")),
    opts(
        "NaN metric weight",
        "--metric",
        "exact_match:nan",
        expect=("--metric 'nan': not a finite number",),
    ),
    opts("NaN guard", "--guard", "exact_match:nan", expect=("--guard 'nan'", "finite number")),
    opts("inf guard", "--guard", "exact_match:inf", expect=("--guard 'inf'", "finite number")),
    opts("negative time budget", "--max-seconds", "-1", expect=("max_seconds=-1.0",)),
    opts(
        "zero reasoning budget",
        "--max-reasoning-calls",
        "0",
        expect=("max_reasoning_calls=0", "greater than 0"),
    ),
    opts("negative iterations", "--max-iterations", "-1", expect=("max_iterations=-1",)),
    opts("zero batch size", "--batch-size", "0", expect=("batch_size=0",)),
    opts("zero workers", "--max-workers", "0", expect=("max_workers=0",)),
    opts(
        "fractions over 1",
        "--train-split",
        "0.9",
        "--val-split",
        "0.2",
        expect=("train split 0.9 + val split 0.2", "sum to less than 1"),
    ),
    opts(
        "fractions leave no test",
        "--train-split",
        "0.8",
        "--val-split",
        "0.2",
        expect=("leaves no test split",),
    ),
    opts("zero train fraction", "--train-split", "0", expect=("train_split=0.0",)),
    opts("train fraction over 1", "--train-split", "1.5", expect=("train_split=1.5",)),
    opts("negative val fraction", "--val-split", "-0.1", expect=("val_split=-0.1",)),
    opts("temperature out of range", "--temperature", "3", expect=("temperature=3.0",)),
    opts("threshold out of range", "--threshold", "1.5", expect=("score_threshold=1.5",)),
    opts(
        "budget not a number",
        "--max-calls",
        "ten",
        expect=("'--max-calls'", "'ten' is not a valid integer", "optimize --help"),
    ),
    opts("unknown flag", "--nope", expect=("No such option", "--nope", "optimize --help")),
    Case(
        "model without provider",
        (*GOOD, "-m", "gpt4", "--reasoning-model", "fake/r"),
        ("model 'gpt4' has no provider", "provider/model"),
    ),
    Case(
        "reasoning model without provider",
        (*GOOD, "-m", "fake/task", "--reasoning-model", "o3"),
        ("model 'o3' has no provider",),
    ),
    opts("judge without provider", "--judge", "gpt4", expect=("model 'gpt4' has no provider",)),
    opts(
        "judge metric without a judge",
        "--metric",
        "llm_judge",
        expect=("--metric llm_judge", "--judge PROVIDER/MODEL"),
    ),
    Case(
        "judge criteria without a judge",
        (*GOOD, *MODELS, "--judge-criteria", "rubric.txt"),
        ("--judge-criteria", "needs --judge"),
        {"rubric.txt": "Be correct."},
    ),
    Case(
        "reference metric on a label-free dataset",
        ("nolabel.jsonl", "prompt.md", *MODELS),
        ("'nolabel' has no reference answers", "exact_match", "judge metric"),
        {"nolabel.jsonl": jsonl(*({"input": r["input"]} for r in make_rows(12)))},
    ),
    Case(
        "strategy needs a reasoning model",
        (*GOOD, "-m", "fake/task", "-s", "iterative"),
        ("'iterative' needs a reasoning model", "--reasoning-model"),
    ),
]


def test_the_table_is_large_and_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_one_clear_line(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(jsonl(*make_rows(30)), encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", *case.args, *OUTPUTS])

    out, err = capsys.readouterr()
    assert exit_info.value.code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for fragment in case.expect:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert "Traceback" not in out + err
    assert out == ""
    # Nothing written as if it succeeded, and nothing paid for.
    assert not (tmp_path / "best.md").exists()
    assert not (tmp_path / "result.json").exists()
    assert not (tmp_path / ".reflex" / "runs").exists()
    assert fake_model.requests == []


ODD_BUT_VALID: dict[str, tuple[str, str | bytes, int]] = {
    "BOM before the first line": ("bom.jsonl", codecs.BOM_UTF8 + ROWS.encode(), 3),
    "CSV fields with embedded newlines": (
        "nl.csv",
        'input,ideal\n"line one\nline two",a\n"x, y",b\n',
        2,
    ),
    "CSV field over the default csv limit (128 KB)": ("big.csv", f"input\n{'y' * 200_000}\n", 1),
    "CRLF line endings": ("crlf.jsonl", ROWS.replace("\n", "\r\n"), 3),
}


@pytest.mark.parametrize("name", list(ODD_BUT_VALID))
def test_odd_but_valid_input_loads(name: str, tmp_path: Path) -> None:
    filename, content, rows = ODD_BUT_VALID[name]
    path = tmp_path / filename
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    dataset = load_dataset(path)
    assert len(dataset) == rows
    if filename == "nl.csv":
        assert dataset[0].messages[-1]["content"] == "line one\nline two"
        assert dataset[1].messages[-1]["content"] == "x, y"
