"""Canary secrets in ``--api-base`` never reach a byte the run or its trackers write.

A real ``aevyra-reflex optimize`` process (W&B reads the command line of the process it runs
in) against the local endpoint, with W&B offline and MLflow with LiteLLM tracing
(``--mlflow-trace``: LiteLLM puts each call's ``api_base`` on its span). The canaries ride in
the query string, which the HTTP client sends as it is; then every byte under the working
directory (the run directory, the MLflow store and its artifacts, the W&B offline run and its
logs) and the process's output is grepped.
The OpenAI client appends its path after the query, so the endpoint answers 404 and the run
fails at its first call: the trackers still record the run, its command line and the spans.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import make_rows
from test_secrets import every_file_mentioning

from reflex.testing.endpoint import serve

CANARIES = ("QKEYCANARY7731", "TOKCANARY5512")
ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(12))


def test_no_url_canary_in_any_byte_written_with_both_trackers_and_tracing(
    tmp_path: Path,
    template_db: Path,
) -> None:
    (tmp_path / "d.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "p.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    shutil.copy(template_db, tmp_path / "mlflow.db")
    env = {**os.environ, "OPENAI_API_KEY": "sk-tracker-secrets-0123456789", "WANDB_SILENT": "true"}
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        env[name] = str(tmp_path / name.lower())
    with serve() as base:
        url = f"{base}?api-key={CANARIES[0]}&token={CANARIES[1]}"
        args = ["optimize", "d.jsonl", "p.md", "-m", "openai/task", "-s", "fewshot"]
        args += ["--api-base", url, "--wandb-mode", "offline", "--mlflow-trace"]
        args += ["--mlflow-tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
        done = subprocess.run(
            [sys.executable, "-c", "from reflex.cli import main; main()", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    # The calls went out with the real URL: the endpoint's 404 names the query's place.
    assert done.returncode == 2 and "no route POST /v1/?api-key=***" in done.stderr, done.stderr
    assert "logging failed" not in done.stderr, done.stderr  # every tracker hook worked
    # Every tracker wrote its run: W&B's offline file, MLflow's store with the trace spans.
    assert list(tmp_path.rglob("*.wandb")) and list((tmp_path / ".reflex").rglob("result.json"))
    db = sqlite3.connect(tmp_path / "mlflow.db")
    spans = db.execute("select count(*) from spans").fetchone()[0]
    db.close()
    assert spans > 0
    leaks = {c: every_file_mentioning(tmp_path, c) for c in CANARIES}
    assert {c: files for c, files in leaks.items() if files} == {}
    assert [c for c in CANARIES if c in done.stdout + done.stderr] == []
