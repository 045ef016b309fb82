"""A self-hosted judge is reached from every command that calls one (issue 29, item 14a).

``judge-check`` and ``check`` had no ``--judge-api-base``: ``judge-check`` against a self-hosted
judge retried the default OpenAI host and exited 1, and ``check`` rebuilt a record's judge with
the URL its config.json stored (redacted, or none). ``export`` (which re-scores rollouts with the
record's judge) had the same gap. Each now takes optimize's own option, and the judge's calls
land on the local endpoint (reflex.testing.endpoint) it names; credentials in it are hidden.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import LABELS, make_rows
from test_faults import answer, api_key
from test_metric_specs import judge_reply

from reflex import PromptOptimizer
from reflex.cli import main
from reflex.testing import FakeRequest
from reflex.testing.endpoint import ChatRequest, serve

__all__ = ["api_key"]

START = "Classify the sentiment."
ROWS = make_rows(12)


def judge_or_task(request: ChatRequest) -> str:
    """The conftest task and reasoning models, and a judge (``openai/judge``), over HTTP."""
    if request.model == "judge":
        return judge_reply(
            FakeRequest(request.model, request.system, request.user, request.messages)
        )
    return answer(request)


def models_asked(requests: list[ChatRequest]) -> set[str]:
    return {request.model for request in requests}


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out, err = capsys.readouterr()
    code = done.value.code
    return (code if isinstance(code, int) else 1), out, err


def labelled(tmp_path: Path) -> Path:
    rows = [
        {"id": f"j{i}", "input": f"review {i}", "output": LABELS[i % 2], "verdict": "pass"}
        for i in range(6)
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_judge_check_calls_the_judge_at_judge_api_base(
    tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[ChatRequest] = []

    def judge(request: ChatRequest) -> str:
        seen.append(request)
        return judge_or_task(request)

    with serve(responder=judge) as url:
        code, out, err = run_cli(
            [
                "judge-check",
                str(labelled(tmp_path)),
                "--judge",
                "openai/judge",
                "--judge-api-base",
                url,
                "--label-field",
                "verdict",
                "--run-dir",
                str(tmp_path / "r"),
                "--json",
            ],
            capsys,
        )
        completions = url.stats().completions
    assert code == 0, err
    report = json.loads(out)
    assert report["n"] == 6 and report["failed"] == 0 and report["tpr"] == 1.0
    assert completions == 6 and models_asked(seen) == {"judge"}


def test_judge_check_hides_credentials_in_judge_api_base(
    tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve(responder=judge_or_task) as url:
        secret_url = str(url).replace("http://", "http://alice:PWSECRET@")
        code, out, err = run_cli(
            [
                "judge-check",
                str(labelled(tmp_path)),
                "--judge",
                "openai/judge",
                "--judge-api-base",
                secret_url,
                "--label-field",
                "verdict",
                "--json",
                "--run-dir",
                str(tmp_path / "r"),
            ],
            capsys,
        )
    # aiohttp refuses credentials in a URL (permanent): the error says so, without them.
    assert code == 1 and "API key in the environment" in err, err
    assert "PWSECRET" not in out + err


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished run scored by a judge on a host that is gone once the run ends."""
    run_dir = tmp_path_factory.mktemp("judged") / ".reflex"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test-judge-host-0123456789")
        with serve(responder=judge_or_task) as gone:
            result = (
                PromptOptimizer()
                .set_dataset(ROWS)
                .add_provider("openai/task", api_base=gone)
                .add_metric("exact_match")
                .set_judge("openai/judge", api_base=gone)
                .set_reasoning_model("openai/reasoner", base_url=gone)
                .configure(max_iterations=1, run_dir=str(run_dir))
                .run(START)
            )
    assert result.run_dir is not None
    (Path(result.run_dir).parent.parent.parent / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8"
    )
    yield Path(result.run_dir)


def test_check_sends_the_records_judge_to_judge_api_base(
    record: Path, tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    seen: list[ChatRequest] = []

    def both(request: ChatRequest) -> str:
        seen.append(request)
        return judge_or_task(request)

    with serve(responder=both) as url:
        code, out, err = run_cli(
            [
                "check",
                "--prompt",
                str(prompt),
                "--dataset",
                str(record.parents[2] / "data.jsonl"),
                "--baseline",
                str(record),
                "--tolerance",
                "1",
                "--json",
                "--api-base",
                url,
                "--judge-api-base",
                url,
            ],
            capsys,
        )
    assert code == 0, err
    report = json.loads(out)
    assert report["errors"] == 0 and "llm_judge" in report["scores_by_metric"], report
    assert models_asked(seen) == {"task", "judge"}  # the judge's host from the record is gone


def test_check_sends_a_supplied_judge_to_judge_api_base(
    tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, prompt = tmp_path / "d.jsonl", tmp_path / "p.md"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    prompt.write_text(START + "\n", encoding="utf-8")
    task_seen: list[ChatRequest] = []
    judge_seen: list[ChatRequest] = []

    def task(request: ChatRequest) -> str:
        task_seen.append(request)
        return answer(request)

    def judge(request: ChatRequest) -> str:
        judge_seen.append(request)
        return judge_or_task(request)

    with serve(responder=task) as task_url, serve(responder=judge) as judge_url:
        code, out, err = run_cli(
            [
                "check",
                "--prompt",
                str(prompt),
                "--dataset",
                str(data),
                "--baseline",
                "0",
                "-m",
                "openai/task",
                "--api-base",
                task_url,
                "--judge",
                "openai/judge",
                "--judge-api-base",
                judge_url,
                "--json",
            ],
            capsys,
        )
    assert code == 0, err
    assert json.loads(out)["errors"] == 0
    assert models_asked(task_seen) == {"task"} and models_asked(judge_seen) == {"judge"}
    assert len(judge_seen) == len(ROWS)


def test_judge_api_base_without_a_judge_is_refused(
    tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, prompt = tmp_path / "d.jsonl", tmp_path / "p.md"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    prompt.write_text(START + "\n", encoding="utf-8")
    code, _, err = run_cli(
        [
            "check",
            "--prompt",
            str(prompt),
            "--dataset",
            str(data),
            "--baseline",
            "0",
            "-m",
            "openai/task",
            "--judge-api-base",
            "http://127.0.0.1:9/v1",
        ],
        capsys,
    )
    assert code == 2 and "--judge-api-base: no judge to send it to" in err, err


def test_export_sends_the_records_judge_to_judge_api_base(
    record: Path, tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[ChatRequest] = []

    def both(request: ChatRequest) -> str:
        seen.append(request)
        return judge_or_task(request)

    out_file = tmp_path / "train.jsonl"
    with serve(responder=both) as url:
        code, out, err = run_cli(
            [
                "export",
                str(record),
                "--training-jsonl",
                str(out_file),
                "--min-score",
                "0",
                "--dataset",
                str(record.parents[2] / "data.jsonl"),
                "--allow-calls",
                "--api-base",
                url,
                "--judge-api-base",
                url,
            ],
            capsys,
        )
    assert code == 0, err
    assert "judge" in models_asked(seen) and out_file.read_text(encoding="utf-8"), (out, err)


SECRET_URL = "http://alice:PWSECRET@127.0.0.1:9/v1"


@pytest.mark.parametrize(
    "command",
    [
        ["judge-check", "empty.jsonl", "--judge", "openai/judge", "--label-field", "v"],
        [
            "check",
            "--prompt",
            "p.md",
            "--dataset",
            "empty.jsonl",
            "--baseline",
            "0",
            "-m",
            "openai/task",
            "--judge",
            "openai/judge",
        ],
        [
            "compare",
            "empty.jsonl",
            "p.md",
            "-m",
            "openai/task",
            "--strategies",
            "iterative",
            "--judge",
            "openai/judge",
        ],
        ["export", "no-such-run", "--training-jsonl", "out.jsonl"],
    ],
    ids=["judge-check", "check", "compare", "export"],
)
def test_judge_api_base_credentials_are_hidden_like_api_bases(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api_key: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command line is scrubbed in place (W&B records sys.argv), as for --api-base."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "p.md").write_text(START + "\n", encoding="utf-8")
    args = [*command, "--judge-api-base", SECRET_URL]
    monkeypatch.setattr("sys.argv", ["aevyra-reflex", *args])
    code, out, err = run_cli(args, capsys)
    assert code != 0 and "no such option" not in err.lower(), err
    assert not [arg for arg in sys.argv if "PWSECRET" in arg], sys.argv
    assert "PWSECRET" not in out + err


def test_check_calls_the_records_task_host_without_api_base(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api_key: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A record's self-hosted task model is checked there, not at the provider's default host
    (stood in for by a second local endpoint: LiteLLM's OPENAI_BASE_URL)."""
    recorded: list[ChatRequest] = []
    default: list[ChatRequest] = []

    def at_record(request: ChatRequest) -> str:
        recorded.append(request)
        return judge_or_task(request)

    def at_default(request: ChatRequest) -> str:
        default.append(request)
        return judge_or_task(request)

    data, prompt = tmp_path / "d.jsonl", tmp_path / "p.md"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    prompt.write_text(START + "\n", encoding="utf-8")
    with serve(responder=at_record) as url, serve(responder=at_default) as default_url:
        result = (
            PromptOptimizer()
            .set_dataset(data)
            .add_provider("openai/task", api_base=url)
            .add_metric("exact_match")
            .set_reasoning_model("openai/reasoner", base_url=url)
            .configure(max_iterations=1, run_dir=str(tmp_path / ".reflex"))
            .run(START)
        )
        assert result.run_dir is not None
        recorded.clear()
        monkeypatch.setenv("OPENAI_BASE_URL", str(default_url))
        code, _, err = run_cli(
            [
                "check",
                "--prompt",
                str(prompt),
                "--dataset",
                str(data),
                "--baseline",
                result.run_dir,
                "--tolerance",
                "1",
            ],
            capsys,
        )
    assert code == 0, err
    assert models_asked(recorded) == {"task"} and default == []


def test_a_records_redacted_judge_url_must_be_given_again(
    record: Path, tmp_path: Path, api_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """config.json keeps a judge URL with credentials only redacted: check asks for it."""
    copy = tmp_path / "runs" / record.name
    shutil.copytree(record, copy)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    [spec] = [s for s in config["metric_specs"] if s["name"] == "llm_judge"]
    spec["options"]["api_base"] = "http://***@127.0.0.1:9/v1"
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    code, _, err = run_cli(
        [
            "check",
            "--prompt",
            str(prompt),
            "--dataset",
            str(record.parents[2] / "data.jsonl"),
            "--baseline",
            str(copy),
            "--api-base",
            "http://127.0.0.1:9/v1",
        ],
        capsys,
    )
    assert code == 2 and "stored redacted: pass --judge-api-base URL" in err, err
