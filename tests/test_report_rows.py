"""``aevyra-reflex report``'s per-row sections: the test rows baseline vs winner (flipped first,
filtered by CSS alone) and a label task's confusion matrices, from real runs on the fake model;
the filter clicked in headless Chromium."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import BETTER, KEYWORD, make_rows, reasoner_answer
from headless import CHROMIUM, Page

from reflex import PromptOptimizer
from reflex.checks.examples import ExampleRow
from reflex.cli import build_cli
from reflex.cli.report_rows import MAX_ROWS, examples_section, readable
from reflex.testing import FakeModel, FakeRequest
from reflex.toolcalls import ToolCall, render_answer

EVIL = '<script>alert("x")</script> & <b>bold</b>'
ROWS = make_rows(60)
IDEAL = {row["input"]: row["ideal"] for row in ROWS}


def _index(request: FakeRequest) -> int:
    return int(request.user.split()[1].rstrip(":"))


def flipping(request: FakeRequest) -> str:
    """Baseline: right on every third row, a sentence otherwise. With KEYWORD: right except on
    every sixth and every fifth row: rows 0, 6, 12, ... (and 15, 45) regress, most improve."""
    if request.model.startswith("fake/reasoner"):
        return reasoner_answer(request)
    ideal, index = IDEAL.get(request.user, "unknown"), _index(request)
    if KEYWORD in request.system:
        return "neutral" if index % 6 == 0 or index % 5 == 0 else ideal
    return ideal if index % 3 == 0 else f"I think this review is {ideal}. {EVIL}"


def one_label(request: FakeRequest) -> str:
    """With KEYWORD the model answers "positive" for every row: half right, one class."""
    if request.model.startswith("fake/reasoner"):
        return reasoner_answer(request)
    if KEYWORD in request.system:
        return "positive"
    return IDEAL[request.user] if _index(request) % 3 == 0 else "no idea"


class _Page(HTMLParser):
    """The rows of the per-example table (class and cell texts) and every tag/attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._in_row = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        cls = dict(attrs).get("class") or ""
        if tag == "tr" and cls.startswith("row "):
            self.rows.append((cls.removeprefix("row "), []))
            self._in_row = True
        elif tag == "td" and self._in_row and self._cell is None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1][1].append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self._in_row = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def run_label_task(
    tmp_path: Path, rows: list[dict[str, Any]] = ROWS, callbacks: Sequence[object] = ()
) -> tuple[Path, Path]:
    """A finished run of ``rows`` (a dataset file) on the fake model: (run folder, data file)."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = (
        PromptOptimizer()
        .set_dataset(str(data))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_max_iterations(1)
        .set_accept("any")  # the collapsed winners these reports draw: the gate would refuse them
        .set_run_dir(tmp_path / "rd")
        .run("Classify the sentiment.", callbacks=list(callbacks))
    )
    return Path(str(result.run_dir)), data


def _report(tmp_path: Path, run: Path, *more: str) -> tuple[str, _Page]:
    out = tmp_path / "out" / "report.html"
    argv = ["report", run.name, "--run-dir", str(tmp_path / "rd"), "-o", str(out), *more]
    res = CliRunner().invoke(build_cli(), argv)
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    return text, page


def _result(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "result.json").read_text(encoding="utf-8")))


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    return flipping


def test_each_test_row_baseline_beside_winner_flipped_first(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    run, _ = run_label_task(tmp_path)
    result = _result(run)
    assert result["best_prompt"] == BETTER
    before = {s["example_id"]: s for s in result["baseline"]["samples"]}
    after = {s["example_id"]: s for s in result["final"]["samples"]}
    text, page = _report(tmp_path, run)
    assert len(page.rows) == len(after) == result["split_sizes"]["test"]
    changes = [change for change, _ in page.rows]
    order = ["regressed", "improved", "unscored", "same"]
    assert changes == sorted(changes, key=order.index)  # flipped rows first
    assert {"regressed", "improved", "same"} <= set(changes)
    inputs = {row["id"]: row for row in ROWS}
    for change, (ident, shown_input, reference, base, final, marker) in page.rows:
        b, f = before[ident]["score"], after[ident]["score"]
        assert marker == change == ("improved" if f > b else "regressed" if f < b else "same")
        assert shown_input == inputs[ident]["input"] and reference == inputs[ident]["ideal"]
        assert base == f"{before[ident]['output']}score {b:.3f}"
        assert final == f"{after[ident]['output']}score {f:.3f}"
    # The answers' markup is text: no element came from a model's answer.
    assert "script" not in page.tags and "b" not in page.tags
    assert any(EVIL in chunk for chunk in page.text)
    # The filter is CSS: one radio per filter, "all" checked, each with its rule and count.
    radios = re.findall(r'<input type="radio" name="exf" id="exf-(\w+)"( checked)?>', text)
    assert radios == [
        ("all", " checked"),
        ("flipped", ""),
        ("regressed", ""),
        ("improved", ""),
        ("same", ""),
    ]
    n_regressed = changes.count("regressed")
    assert f'<label for="exf-regressed">regressed ({n_regressed})</label>' in text
    assert "#exf-regressed:checked~table.ex tr.row:not(.regressed){display:none}" in text
    names = {name for name, _ in page.attrs}
    assert not names & {"src", "href", "srcset", "action"}
    assert not any(name.startswith("on") for name in names)


def test_label_task_matrices_match_the_rows(fake_model: FakeModel, tmp_path: Path) -> None:
    run, _ = run_label_task(tmp_path)
    result = _result(run)
    text, page = _report(tmp_path, run)
    words = "".join(page.text)
    assert "baseline" in words and "winner" in words and "reference \\ answer" in words
    tables = re.findall(r'<table class="cm">(.*?)</table>', text)
    assert len(tables) == 2
    ideal = {row["id"]: row["ideal"] for row in ROWS}
    for table, side in zip(tables, ("baseline", "final"), strict=True):
        samples = result[side]["samples"]
        for reference in ("negative", "positive"):
            refs = [s for s in samples if ideal[s["example_id"]] == reference]
            row = re.search(rf'<th class="r">{reference}</th>(.*?)</tr>', table)
            assert row is not None
            counts = [int(n) for n in re.findall(r'<td class="n[ d]*"[^>]*>(\d+)</td>', row[1])]
            right = sum(s["output"] == reference for s in refs)
            assert counts[["negative", "positive"].index(reference)] == right
            assert sum(counts) == len(refs)
    # The winner answered "neutral" (no label) on a fifth of the rows: the (other) column.
    assert "<th>(other)</th>" in tables[1]
    # The baseline's sentences are no label: most of its rows are (other), and it says so.
    outside = sum(
        s["output"] not in ("negative", "positive") for s in result["baseline"]["samples"]
    )
    n = len(result["baseline"]["samples"])
    warnings = [line for line in page.text if line.startswith("warning:")]
    assert warnings == [
        f"warning: the baseline answered outside the label set for {outside} of {n} rows"
    ]


def test_one_label_answered_for_most_rows_is_a_warning(tmp_path: Path) -> None:
    FakeModel(one_label).install()
    run, _ = run_label_task(tmp_path)
    result = _result(run)
    assert result["best_prompt"] == BETTER
    n = result["split_sizes"]["test"]
    positive = sum(
        1
        for s in result["final"]["samples"]
        if s["example_id"] in {r["id"] for r in ROWS if r["ideal"] == "positive"}
    )
    _, page = _report(tmp_path, run)
    words = "".join(page.text)
    line = f"the winner answered 'positive' for {n} of {n} rows (the references have {positive})"
    assert f"warning: {line}" in words
    # and in the page's Warnings list
    assert any(chunk.startswith(line) for chunk in page.text)


def test_free_text_task_has_no_matrix_and_a_moved_dataset_is_named(tmp_path: Path) -> None:
    rows = [{**row, "ideal": f"{row['ideal']} because of row {i}"} for i, row in enumerate(ROWS)]
    free = {row["input"]: row["ideal"] for row in rows}

    def answer(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return reasoner_answer(request)
        right = KEYWORD in request.system or _index(request) % 3 == 0
        return free[request.user] if right else "no idea"

    FakeModel(answer).install()
    run, data = run_label_task(tmp_path, rows)
    _, page = _report(tmp_path, run)
    assert "not a label task" in "".join(page.text)
    moved = data.rename(tmp_path / "moved.jsonl")
    _, page = _report(tmp_path, run)
    words = "".join(page.text)
    assert f"inputs and references unknown: the run's dataset file {data} could not be read" in (
        words
    )
    assert {cells[1] for _, cells in page.rows} == {"-"}  # ids, answers and scores still shown
    _, page = _report(tmp_path, run, "--dataset", str(moved))
    assert "inputs and references unknown" not in "".join(page.text)
    assert {cells[1] for _, cells in page.rows} <= {row["input"] for row in rows}


def test_tool_calls_and_json_answers_are_shown_readably() -> None:
    answer = render_answer("Let me compute <that>.", [ToolCall("math.hypot", {"x": 4, "y": 5})])
    html = readable(answer)
    assert html == (
        "Let me compute &lt;that&gt;.\n"
        '<span class="call">call math.hypot({&quot;x&quot;: 4, &quot;y&quot;: 5})</span>'
    )
    assert readable('{"city":"Oslo","n":[1,2]}') == (
        "{\n  &quot;city&quot;: &quot;Oslo&quot;,\n  &quot;n&quot;: [\n    1,\n    2\n  ]\n}"
    )
    assert readable("x" * 20, limit=5) == ('xxxxx<span class="cut">… (15 more characters)</span>')


def test_a_large_test_split_shows_the_flipped_rows_first_and_says_how_many_are_left() -> None:
    rows = [
        ExampleRow(f"r{i}", "m", "in", "a", "a", 1.0, "a", 1.0, "same")
        for i in range(MAX_ROWS + 50)
    ]
    flipped = [ExampleRow("f1", "m", "in", "a", "a", 1.0, "b", 0.0, "regressed")]
    html = examples_section(flipped + rows)
    page = _Page()
    page.feed(html)
    assert len(page.rows) == MAX_ROWS and page.rows[0][0] == "regressed"
    assert f"showing the first {MAX_ROWS} of {MAX_ROWS + 51} rows" in html
    assert '<label for="exf-same">same (350)</label>' in html  # counts are of all rows


def _visible(page: Page) -> list[str]:
    return list(
        page.evaluate(
            "[...document.querySelectorAll('table.ex tr.row')]"
            ".filter(r => getComputedStyle(r).display !== 'none')"
            ".map(r => r.className.replace('row ', ''))"
        )
    )


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless Chromium (apt-get install chromium)")
def test_the_filters_work_in_headless_chromium(fake_model: FakeModel, tmp_path: Path) -> None:
    run, _ = run_label_task(tmp_path)
    _report(tmp_path, run)
    url = (tmp_path / "out" / "report.html").resolve().as_uri()
    with Page(url, tmp_path / "profile") as page:
        every = _visible(page)
        assert len(every) == _result(run)["split_sizes"]["test"]
        assert page.evaluate("document.querySelectorAll('table.cm').length") == 2
        assert page.evaluate("document.querySelectorAll('script').length") == 0
        for name, shown in [
            ("regressed", {"regressed"}),
            ("improved", {"improved"}),
            ("flipped", {"regressed", "improved"}),
            ("same", {"same", "unscored"}),
        ]:
            page.click(f'label[for="exf-{name}"]')
            assert page.evaluate(f"document.getElementById('exf-{name}').checked") is True
            assert _visible(page) == [c for c in every if c in shown], name
        page.click('label[for="exf-all"]')
        assert _visible(page) == every
        page.screenshot(tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_tool_call_runs_rows_show_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real tool-call run on the local endpoint: the answers are canonical text with
    ``<tool_call>`` lines; the report shows each call as ``call name({arguments})``."""
    from test_tool_call_run import SEED, _optimize, _rows

    from reflex.data.dataset import load_dataset
    from reflex.testing.endpoint import ChatRequest, serve
    from reflex.toolcalls import parse_answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    data = _rows(tmp_path, 20)
    expected = {row.input: row.ideal for row in load_dataset(data)}

    def respond(request: ChatRequest) -> str:
        edited = len(request.system) > len(SEED) or len(request.messages) > 2
        call = expected.get(request.user)
        return call if edited and call else "I would compute that for you."

    with serve(responder=respond) as url:
        assert _optimize(tmp_path, data, str(url)) == 0
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    out = tmp_path / "report.html"
    argv = ["report", str(run), "-o", str(out)]
    res = CliRunner().invoke(build_cli(), argv)
    assert res.exit_code == 0, res.output
    page = _Page()
    page.feed(out.read_text(encoding="utf-8"))
    assert page.rows and "not a label task" in "".join(page.text)
    final = {s["example_id"]: s["output"] for s in _result(run)["final"]["samples"]}
    for _, (ident, _input, reference, _base, shown, _change) in page.rows:
        (call,) = parse_answer(final[ident])[1]
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        assert shown == f"call {call.name}({arguments})score 1.000"
        assert "<tool_call>" not in reference and reference.startswith("call ")
