"""One run's directory (reflex/run/store.py): its folders' modes, JSON and prompt files written
whole, JSON-lines logs appended to, a torn last line dropped (and said) when a run reopens."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from reflex.run.store import RunStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_run_s_folders_are_private_or_shared_by_choice(tmp_path: Path) -> None:
    private = RunStore(tmp_path / "private")
    assert private.path == tmp_path / "private" / "runs" / private.run_id
    assert _mode(private.path) == 0o700
    shared = RunStore(tmp_path / "team", shared=True)
    assert _mode(shared.path) == 0o750
    assert private.cache_path == tmp_path / "private" / "cache.sqlite"
    assert RunStore(tmp_path / "private").run_id != private.run_id  # two runs never collide


def test_files_are_written_whole_and_logs_appended(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    config = store.write_json("config.json", {"seed": 0, "path": tmp_path})
    assert json.loads(config.read_text(encoding="utf-8")) == {"seed": 0, "path": str(tmp_path)}
    assert _mode(config) == 0o600
    store.write_prompt("iter_001", "Be brief.")
    assert (store.path / "prompts" / "iter_001.txt").read_text(encoding="utf-8") == "Be brief."
    store.event("start", n=1)
    store.append("evaluations.jsonl", [{"example_id": "a"}, {"example_id": "b"}])
    events = (store.path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(events[0])["type"] == "start" and json.loads(events[0])["n"] == 1
    rows = (store.path / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["example_id"] for r in rows] == ["a", "b"]


def test_a_reopened_run_drops_a_torn_last_line_and_says_so(tmp_path: Path) -> None:
    first = RunStore(tmp_path)
    first.append("evaluations.jsonl", [{"example_id": "a"}])
    with open(first.path / "evaluations.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"example_id": "b", "out')  # killed mid-write
    again = RunStore(tmp_path, first.run_id)
    assert (again.path / "evaluations.jsonl").read_text(encoding="utf-8") == (
        '{"example_id": "a"}\n'
    )
    event = json.loads((again.path / "events.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert event["type"] == "events_repaired" and event["file"] == "evaluations.jsonl"
    assert event["dropped_bytes"] == len('{"example_id": "b", "out')
