"""Resume safety (issue 20, part 8).

A truncated ``config.json`` used to disable the settings check, so a resume with other settings
paid for calls before "resume diverged"; now it is refused at 0 calls. A torn last line of
``events.jsonl`` (a process killed mid-write) was left in place, the ``resumed`` event glued onto
it, and ``verify`` still passed; now the resume drops the torn line (and says so in an event),
and ``verify`` rejects any line that is not one JSON event.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from killed_run import ROWS, RUN, interrupted_run

from reflex.checks.audit import seal_run
from reflex.cli import main
from reflex.testing import FakeModel


@pytest.fixture
def interrupted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> Path:
    return interrupted_run(tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("same_settings", [True, False])
def test_a_truncated_config_is_refused_before_any_call(
    same_settings: bool,
    interrupted: Path,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    config = (interrupted / "config.json").read_text(encoding="utf-8")
    (interrupted / "config.json").write_text(config[: len(config) // 2], encoding="utf-8")
    paid = len(fake_model.requests)
    other = [] if same_settings else ["--temperature", "0.7"]
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, *other, "--resume"])
    (line,) = capsys.readouterr().err.splitlines()[-1:]
    assert exit_info.value.code == 2 and "config.json" in line, line
    assert len(fake_model.requests) == paid  # refused at 0 calls


def test_a_torn_event_line_is_repaired_on_resume(
    interrupted: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    torn = b'{"ts": 1.0, "type": "evaluation", "lab'
    with open(interrupted / "events.jsonl", "ab") as handle:
        handle.write(torn)
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, "--resume"])
    assert exit_info.value.code == 0, capsys.readouterr().err
    lines = (interrupted / "events.jsonl").read_bytes().splitlines()
    events = [json.loads(line) for line in lines]  # every line is one event again
    (repaired,) = [e for e in events if e["type"] == "events_repaired"]
    assert repaired["dropped_bytes"] == len(torn)
    with pytest.raises(SystemExit) as verified:
        main(["verify", interrupted.name])
    assert verified.value.code == 0, capsys.readouterr().out


def test_verify_rejects_a_sealed_torn_line(
    interrupted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the old code did: the resumed event glued onto a torn line, then sealed.
    with open(interrupted / "events.jsonl", "ab") as handle:
        handle.write(b'{"ts": 1.0, "type": "evalu{"ts": 2.0, "type": "resumed"}\n')
    seal_run(interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", interrupted.name])
    out = capsys.readouterr().out
    assert exit_info.value.code == 1 and "not one JSON event" in out, out


def test_retries_of_every_segment_are_counted_after_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger of a resumed run comes from the cache, which has no retries: they used to be
    counted for the last segment only (12 of 179 retry events in the report)."""
    import litellm
    from conftest import responder

    from reflex.testing import FakeRequest

    def flaky(request: FakeRequest, number: int) -> BaseException | None:
        if number % 7 == 0:  # some calls of the first segment fail once, then are answered
            return litellm.InternalServerError(message="busy", llm_provider="x", model="m")
        return None

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    FakeModel(responder, fault=flaky).install()
    with pytest.raises(SystemExit):
        main(RUN)
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    first = json.loads((run / "result.json").read_text(encoding="utf-8"))
    assert first["usage"]["total"]["retries"] > 0
    (run / "result.json").unlink()
    (run / "record.sig.json").unlink()
    FakeModel(responder).install()  # the second segment meets no fault
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, "--resume"])
    assert exit_info.value.code == 0, capsys.readouterr().err
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    retried = [e for e in events if e["type"] == "retry"]
    assert result["usage"]["total"]["retries"] == len(retried) == first["usage"]["total"]["retries"]
    assert {e["role"] for e in retried} <= {"task", "reasoning"}
