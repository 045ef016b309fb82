"""What an offline W&B run directory really holds (reflex_wandb/offline.py), read from the
``.wandb`` transaction log of a real offline run: its history steps and keys, its artifacts, and
no more than the complete records of a torn file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import wandb

from reflex_wandb.offline import logged_artifacts, logged_keys, logged_steps, records


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An offline run that logged iterations 0-2 (the baseline at 0) and one artifact."""
    root = tmp_path_factory.mktemp("wandb-offline")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(name, str(root / name.lower()))
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_ERROR_REPORTING", "false")
        run = wandb.init(mode="offline", project="offline-test", dir=str(root))
        run.log({"iteration": 0, "score_test": 0.5})
        run.log({"iteration": 0, "score_val": 0.4})
        for step in (1, 2):
            run.log({"iteration": step, "score_val": 0.5 + step / 10})
        artifact = wandb.Artifact("best_prompt", type="prompt", metadata={"val": 0.7})
        (root / "best.txt").write_text("Be brief.", encoding="utf-8")
        artifact.add_file(str(root / "best.txt"))
        run.log_artifact(artifact)
        sync_dir = Path(run.settings.sync_dir)
        run.finish()
        wandb.teardown()  # finish() returns before the .wandb file is flushed
        yield sync_dir


def test_the_history_on_disk_by_iteration(offline_run: Path) -> None:
    assert logged_steps([offline_run]) == {0, 1, 2}
    keys = logged_keys([offline_run])
    assert {"score_test", "score_val", "iteration"} <= keys[0]
    assert "score_test" not in keys[2]


def test_the_artifacts_on_disk(offline_run: Path) -> None:
    assert ("best_prompt", {"val": 0.7}) in logged_artifacts([offline_run])


def test_a_torn_file_yields_only_its_complete_records(offline_run: Path, tmp_path: Path) -> None:
    [log] = offline_run.glob("run-*.wandb")
    whole = list(records(log))
    torn = tmp_path / "run-torn.wandb"
    torn.write_bytes(log.read_bytes()[: log.stat().st_size // 2])  # killed mid-write
    kept = list(records(torn))
    assert 0 < len(kept) < len(whole)
    assert [r.SerializeToString() for r in kept] == [
        r.SerializeToString() for r in whole[: len(kept)]
    ]
    (tmp_path / "run-empty.wandb").write_bytes(b"")
    assert list(records(tmp_path / "run-empty.wandb")) == []
