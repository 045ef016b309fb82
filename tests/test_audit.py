"""The audit record: the seal written at run end, ``verify``, warnings and environment."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.checks.audit import KEY_ENV, SEAL_FILE, run_warnings, seal_run, verify_run
from reflex.cli import build_cli
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult
from reflex.testing import FakeModel


def verify(run: Path) -> Result:
    return CliRunner().invoke(build_cli(), ["verify", str(run)], catch_exceptions=False)


def _run(tmp_path: Path, data: Path | None = None) -> Path:
    result = (
        PromptOptimizer()
        .set_dataset(data or make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "rd")
        .run("Classify the sentiment.")
    )
    return Path(str(result.run_dir))


@pytest.fixture
def run(fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(KEY_ENV, raising=False)
    return _run(tmp_path)


def test_a_finished_run_is_sealed_and_verifies(run: Path) -> None:
    assert (run / SEAL_FILE).is_file()
    res = verify(run)
    assert res.exit_code == 0 and res.output.startswith("verified"), res.output
    assert "unsigned" in res.output  # says what was checked, no more


def _edit_json(path: Path, edit: dict[str, object]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(edit)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_every_kind_of_edit_is_reported_as_tampering(run: Path) -> None:
    result = json.loads((run / "result.json").read_text())
    result["final"]["mean_score"] = 0.99
    result["iterations"][0]["val_score"] = 0.5
    (run / "result.json").write_text(json.dumps(result), encoding="utf-8")
    lines = (run / "events.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"type"', '"kind"')
    (run / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run / "prompts" / "iter_001.txt").write_text("edited", encoding="utf-8")
    (run / "splits.json").unlink()
    res = verify(run)
    assert res.exit_code == 1 and "TAMPERED" in res.output and "verified" not in res.output
    for change in (
        "result.json: final.mean_score changed",
        "result.json: iterations[0] changed",
        "events.jsonl: line 3 changed",
        "prompts/iter_001.txt: content changed",
        "splits.json: file removed",
    ):
        assert change in res.output


def test_signed_record_detects_a_recomputed_fingerprint(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "s3cret")
    run = _run(tmp_path)
    assert json.loads((run / SEAL_FILE).read_text())["hmac_sha256"]
    assert "s3cret" not in (run / SEAL_FILE).read_text()
    assert verify(run).exit_code == 0 and "signature checked" in verify(run).output
    # Someone edits a score and recomputes the fingerprint, without the key.
    _edit_json(run / "result.json", {"best_score": 1.0, "p_value": 0.001})
    seal = json.loads((run / SEAL_FILE).read_text())
    resealed = seal_run(run, key="guess")
    assert json.loads(resealed.read_text())["digest"] != seal["digest"]
    res = verify(run)
    assert res.exit_code == 1 and "signature does not match" in res.output
    # Without the key at hand the signature cannot be checked: say so, never "verified".
    monkeypatch.delenv(KEY_ENV)
    res = verify(run)
    assert res.exit_code == 2 and res.output.startswith("unchecked")


def test_stripped_signature_is_tampering_when_a_key_is_set(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "s3cret")
    outcome = verify_run(run)
    assert outcome.status == "tampered" and "not signed" in outcome.changes[0]


def test_unsealed_run_cannot_be_verified(run: Path) -> None:
    (run / SEAL_FILE).unlink()
    res = verify(run)
    assert res.exit_code == 2 and "no record.sig.json" in res.output


def test_result_holds_environment_and_dataset_file_hash(
    fake_model: FakeModel, tmp_path: Path, dataset_file: Path
) -> None:
    run = _run(tmp_path, dataset_file)
    env = json.loads((run / "result.json").read_text())["environment"]
    assert env["dataset_file_sha256"] == hashlib.sha256(dataset_file.read_bytes()).hexdigest()
    assert env["aevyra_reflex"] and env["plugins"]["exact_match"]


def _snapshot(score: float, graded: bool = False) -> EvalSnapshot:
    return EvalSnapshot("p", "test", score, {"m": score}, model_graded=graded)


def test_warnings_for_overfit_judges_and_missing_val() -> None:
    record = IterationRecord(1, 0.9, None, {}, "p")
    result = OptimizationResult(
        "p",
        0.9,
        _snapshot(0.5),
        _snapshot(0.7, graded=True),
        iterations=[record],
        best_score_val=0.95,
    )
    result.split_sizes = {"train": 10, "val": 5, "test": 5}
    kinds = {w["kind"]: w["message"] for w in run_warnings(result)}
    assert set(kinds) == {"overfit", "model_graded"} and "0.250" in kinds["overfit"]
    result.split_sizes = {"train": 10, "val": 0, "test": 5}
    assert "validation_reused_as_training" in {w["kind"] for w in run_warnings(result)}
    result.best_score_val = 0.75
    result.final = _snapshot(0.7)
    result.split_sizes["val"] = 5
    assert run_warnings(result) == []


def test_prompt_versions_are_content_addressed_with_provenance(run: Path) -> None:
    from reflex.checks.versions import version_id

    result = json.loads((run / "result.json").read_text())
    versions = result["prompt_versions"]
    root, best = versions[0], versions[-1]
    assert root["parent"] is None and root["text"] == result["initial_prompt"]
    assert root["id"] == version_id(None, root["text"])
    assert best["text"] == result["best_prompt"] and best["parent"] == versions[-2]["id"]
    assert best["id"] == version_id(best["parent"], best["text"])
    assert best["reasoning"] and best["val_score"] == result["best_score_val"]
    assert best["diff"].startswith(f"--- {best['parent']}") and "+" in best["diff"]
    tried = {s["iteration"] for v in versions for s in v["rejected_siblings"]}
    accepted = {v["iteration"] for v in versions[1:]}
    # Every iteration before the last accepted one is either a version or a sibling of one.
    assert tried | accepted >= set(range(1, best["iteration"] + 1))
