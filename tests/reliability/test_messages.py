"""Error messages that point the right way (issue 20, part 9).

Each case used to say something misleading: a damaged ``cache.sqlite`` said "cannot write ...
make the directory writable"; UTF-16 without a BOM and CR-only JSONL got a bare "invalid JSON";
an answer with empty ``choices`` or a null message was "IndexError: list index out of range"
(not retried); ``--run-dir ""`` wrote into the current directory; ``show`` printed a tampered
result.json without a word. (Special files as paths, a prompt symlink loop and ``--resume``
while the run is going are in test_special_inputs.py and test_provider_mistakes.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_rows
from test_faults import api_key

from reflex.cli import main
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel
from reflex.testing.endpoint import FaultPlan, serve

__all__ = ["api_key"]

ROWS = [json.dumps(r) for r in make_rows(30)]
MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner", "--max-iterations", "1")


def one_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert exit_info.value.code == 2 and len(lines) == 1, err
    assert "Traceback" not in out + err
    return lines[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    return tmp_path


def test_a_damaged_cache_says_so_and_that_it_can_be_deleted(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    (workdir / ".reflex").mkdir()
    (workdir / ".reflex" / "cache.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    line = one_line(["optimize", "data.jsonl", "prompt.md", *MODELS], capsys)
    assert "cache.sqlite is damaged" in line and "delete it" in line, line
    assert "writable" not in line and fake_model.requests == []


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (("\n".join(ROWS) + "\n").encode("utf-16-le"), "UTF-16 without a byte-order mark"),
        (("\r".join(ROWS) + "\r").encode(), "CR only"),
    ],
    ids=["utf16-no-bom", "cr-only"],
)
def test_encodings_and_line_endings_get_a_hint(
    content: bytes,
    expect: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    (workdir / "odd.jsonl").write_bytes(content)
    line = one_line(["optimize", "odd.jsonl", "prompt.md", *MODELS], capsys)
    assert "odd.jsonl:1: invalid JSON" in line and expect in line, line


def test_an_empty_run_dir_is_refused(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    line = one_line(["optimize", "data.jsonl", "prompt.md", *MODELS, "--run-dir", ""], capsys)
    assert "--run-dir" in line and "is empty" in line, line
    assert sorted(p.name for p in workdir.iterdir()) == ["data.jsonl", "prompt.md"]


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.close()


@pytest.mark.parametrize("kind", ["no-choices", "null-message"])
def test_an_answer_without_choices_is_retried_not_an_index_error(
    kind: str, runner: LoopRunner
) -> None:
    with serve(faults=FaultPlan(script=[kind])) as url:
        client = ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=2, base_delay=0.001)))
        spec = ModelSpec("openai/m", api_base=url, extra={"api_key": "sk-none"})
        out = runner.run(client.complete(spec, [{"role": "user", "content": "hello there"}]))
        stats = url.stats()
    assert out.text == "hello there" and out.attempts == 2 and stats.faults == {kind: 1}


def test_show_warns_when_the_record_was_tampered_with(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    with pytest.raises(SystemExit):
        main(["optimize", "data.jsonl", "prompt.md", *MODELS])
    (run,) = (workdir / ".reflex" / "runs").iterdir()
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    result["best_score"] = 0.999
    (run / "result.json").write_text(json.dumps(result), encoding="utf-8")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["show", run.name])
    err = capsys.readouterr().err
    assert exit_info.value.code == 0
    assert f"warning: run {run.name} changed since it was sealed" in err, err
    assert "result.json" in err


def test_an_error_that_carries_a_traceback_is_one_clean_line() -> None:
    from reflex.models.retry import first_line, permanent_message

    class APIError(Exception):
        pass

    error = APIError(
        "litellm.APIError: OpenAIException - Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n'
        "TypeError: 'NoneType' object is not subscriptable\n"
    )
    line = first_line(error)
    assert "Traceback" not in line and "\n" not in line
    assert line == (
        "APIError: litellm.APIError: OpenAIException "
        "TypeError: 'NoneType' object is not subscriptable"
    )
    assert "Traceback" not in permanent_message("openai/m", error)
