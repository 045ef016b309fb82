"""``aevyra-reflex report``: a self-contained, escaped HTML page, parsed and opened in Chromium."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.testing import FakeModel

EVIL = 'Classify the sentiment. <script>alert("x")</script> & <b>bold</b>'


class _Page(HTMLParser):
    """Collects tags, attributes and text, to check what a browser would build."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        self.classes.extend(v or "" for k, v in attrs if k == "class")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _run(tmp_path: Path) -> Path:
    rows = make_rows()
    for i, row in enumerate(rows):
        row["metadata"] = {"topic": "odd" if i % 2 else "even"}  # type: ignore[assignment]
    result = (
        PromptOptimizer()
        .set_dataset(rows)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_slices("topic")
        .set_run_dir(tmp_path / "rd")
        .run(EVIL)
    )
    return Path(str(result.run_dir))


def _report(tmp_path: Path, run: Path) -> Path:
    out = tmp_path / "out" / "report.html"
    res = CliRunner().invoke(
        build_cli(), ["report", run.name, "--run-dir", str(tmp_path / "rd"), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    return out


def test_report_is_escaped_and_self_contained(fake_model: FakeModel, tmp_path: Path) -> None:
    page_text = _report(tmp_path, _run(tmp_path)).read_text(encoding="utf-8")
    page = _Page()
    page.feed(page_text)
    assert "script" not in page.tags and "b" not in page.tags
    assert any(EVIL in chunk for chunk in page.text)  # shown as text, exactly
    # No network: nothing to fetch, no scripts, no handlers.
    names = {name for name, _ in page.attrs}
    assert not names & {"src", "href", "srcset", "action"}
    assert not any(name.startswith("on") for name in names)
    assert "svg" in page.tags
    for series in ("pt-train", "pt-val", "pt-test"):
        assert series in page.classes
    text = "".join(page.text)
    for heading in ("Per-metric test scores", "Per-slice test scores", "Iterations", "Cost"):
        assert heading in text
    assert "odd" in text and "exact_match" in text and "p=" in text and "95% CI" in text
    # In-memory rows: the test rows show ids, answers and scores, and say why there is no input.
    assert "the run recorded no dataset file (in-memory rows) (pass --dataset FILE)" in text


def test_report_of_unknown_run_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(build_cli(), ["report", "nope", "--run-dir", str(tmp_path)])
    assert res.exit_code == 2 and "no run matching 'nope'" in res.output


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless Chromium (apt-get install chromium)")
def test_report_renders_in_headless_chromium(fake_model: FakeModel, tmp_path: Path) -> None:
    report = _report(tmp_path, _run(tmp_path))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ]
    url = report.resolve().as_uri()
    dom = subprocess.run(
        [str(CHROMIUM), *flags, "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    page = _Page()
    page.feed(dom)
    # The browser built the page we meant: no script element, the prompt as text, the plot.
    assert "script" not in page.tags
    assert any(EVIL in chunk for chunk in page.text)
    assert {"svg", "circle", "table"} <= set(page.tags)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [str(CHROMIUM), *flags, f"--screenshot={shot}", "--window-size=1000,1600", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_report_shows_prompt_version_ids(fake_model: FakeModel, tmp_path: Path) -> None:
    import json

    run = _run(tmp_path)
    versions = json.loads((run / "result.json").read_text(encoding="utf-8"))["prompt_versions"]
    assert len(versions) >= 2  # the initial prompt and at least one accepted one
    page = _Page()
    page.feed(_report(tmp_path, run).read_text(encoding="utf-8"))
    titles = [v for k, v in page.attrs if k == "title"]
    text = "".join(page.text)
    for version in versions[1:]:
        assert version["id"] in titles and version["parent"] in titles  # full ids
        assert f"version {version['id'][:8]} · parent {version['parent'][:8]}" in text
    assert f"best prompt version {versions[-1]['id'][:8]}" in text


def test_show_prints_version_ids(fake_model: FakeModel, tmp_path: Path) -> None:
    import json

    run = _run(tmp_path)
    versions = json.loads((run / "result.json").read_text(encoding="utf-8"))["prompt_versions"]
    res = CliRunner().invoke(build_cli(), ["show", run.name, "--run-dir", str(tmp_path / "rd")])
    assert res.exit_code == 0, res.output
    assert f"version     {versions[-1]['id']} (best prompt)" in res.output
    for version in versions[1:]:
        rows = [line for line in res.output.splitlines() if line.startswith("   ")]
        row = next(line for line in rows if version["id"] in line)
        assert row.split()[0] == str(version["iteration"]) and version["parent"] in row
