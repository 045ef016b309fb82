"""Credentials in any command-line URL never reach what W&B or MLflow record of the process.

W&B records the process's command line (``args`` in ``wandb-metadata.json`` and the run's
``.wandb`` file, uploaded by ``wandb sync``), MLflow its ``argv[0]`` (``mlflow.source.name``).
Only ``--api-base``, ``--reasoning-base-url`` and ``--judge-api-base`` used to be scrubbed:
a ``--cache-url`` or ``--mlflow-tracking-uri`` password landed in the W&B run verbatim. Every
token that holds a URL with credentials is redacted now, whatever the option, in both forms
(``--opt value`` and ``--opt=value``), for the CLI and for a script using the builder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import wandb
from conftest import make_rows
from test_secrets import every_file_mentioning
from wandb_reader import load_run, records

from reflex import PromptOptimizer
from reflex.redact import redact_argv
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_wandb import WandbCallback

CANARIES = ("PGCANARY4410", "MLCANARY5521", "RDCANARY6632", "TKCANARY7743")
ARGV = [
    "train.py",
    "--cache-url",
    f"postgresql://reflex:{CANARIES[0]}@db.internal:5432/cache",
    f"--mlflow-tracking-uri=http://me:{CANARIES[1]}@mlflow.internal:5000",
    f"--queue=redis://:pa/{CANARIES[2]}@q.internal:6379/0",  # a "/" in the password
    f"token={CANARIES[3]}",
]


def test_redact_argv_hides_every_url_credential_whatever_the_option() -> None:
    clean = redact_argv(ARGV)
    assert clean == [
        "train.py",
        "--cache-url",
        "postgresql://reflex:***@db.internal:5432/cache",
        "--mlflow-tracking-uri=http://me:***@mlflow.internal:5000",
        "--queue=redis://:***@q.internal:6379/0",
        "token=***",
    ]
    assert redact_argv(["optimize", "d.jsonl", "-m", "openai/x"]) == [
        "optimize",
        "d.jsonl",
        "-m",
        "openai/x",
    ]


def recorded_args(sync_dir: str) -> list[str]:
    """The command line W&B recorded (its ``environment`` record: ``args``, as
    ``wandb-metadata.json`` has them once synced)."""
    [path] = Path(sync_dir).glob("run-*.wandb")
    found = [list(r.environment.args) for r in records(str(path)) if r.HasField("environment")]
    [args] = [f for f in found if f]  # (a second environment record holds the hardware)
    return args


@pytest.fixture
def tracker_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_ERROR_REPORTING", "false")
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts land under tmp_path/mlruns
    return tmp_path


def test_a_script_command_line_reaches_neither_tracker(
    tracker_env: Path,
    template_db: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A script using the builder, started with credentials on its own command line: the W&B and
    # MLflow callbacks record the process as it is (no CLI scrubbed it first).
    monkeypatch.setattr(sys, "argv", list(ARGV))
    shutil.copy(template_db, tracker_env / "mlflow.db")
    wandb_cb = WandbCallback(mode="offline", dir=str(tracker_env))
    mlflow_cb = MLflowCallback(tracking_uri=f"sqlite:///{tracker_env / 'mlflow.db'}")
    (
        PromptOptimizer()
        .set_dataset(make_rows(12))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tracker_env / ".reflex")
        .configure(max_iterations=1)
        .run("Classify the sentiment.", callbacks=[wandb_cb, mlflow_cb])
    )
    assert sys.argv == ARGV  # the script's own argv is given back as it was
    assert wandb_cb.run is not None
    sync_dir = wandb_cb.run.settings.sync_dir
    wandb.teardown()  # flush the .wandb file
    run = load_run(sync_dir)
    assert run["exit_code"] == 0
    assert recorded_args(sync_dir) == redact_argv(ARGV)[1:]  # recorded, redacted
    leaks = {c: every_file_mentioning(tracker_env, c) for c in CANARIES}
    assert {c: files for c, files in leaks.items() if files} == {}


@pytest.mark.services
def test_cli_cache_and_tracker_passwords_in_no_byte_written(
    tmp_path: Path, postgres_url: str, mlflow_server: str
) -> None:
    # The command: a real PostgreSQL cache (trust auth takes any password) and a real
    # MLflow server (it ignores the basic-auth credentials), W&B offline; both options in both
    # spellings. Then every byte under the working directory and the output are grepped.
    pg = postgres_url.replace("postgresql://reflex@", f"postgresql://reflex:{CANARIES[0]}@")
    ml = mlflow_server.replace("http://", f"http://me:{CANARIES[1]}@")
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(12)), encoding="utf-8"
    )
    (tmp_path / "p.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_ERROR_REPORTING": "false"}
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        env[name] = str(tmp_path / name.lower())
    from reflex.testing.endpoint import serve

    with serve() as base:
        args = ["optimize", "d.jsonl", "p.md", "-m", "openai/task", "-s", "fewshot"]
        args += ["--api-base", base, "--max-iterations", "1"]
        args += ["--cache-url", pg, f"--mlflow-tracking-uri={ml}", "--wandb-mode", "offline"]
        done = subprocess.run(
            [sys.executable, "-c", "from reflex.cli import main; main()", *args],
            cwd=tmp_path,
            env={**env, "OPENAI_API_KEY": "sk-argv-secrets-0123456789"},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr
    [sync_dir] = (tmp_path / "wandb_dir" / "wandb").glob("offline-run-*")
    args_seen = recorded_args(str(sync_dir))
    assert "postgresql://reflex:***@127.0.0.1:" in args_seen[args_seen.index("--cache-url") + 1]
    assert any(a.startswith("--mlflow-tracking-uri=http://me:***@127.0.0.1:") for a in args_seen)
    leaks = {c: every_file_mentioning(tmp_path, c) for c in CANARIES[:2]}
    assert {c: files for c, files in leaks.items() if files} == {}
    assert [c for c in CANARIES if c in done.stdout + done.stderr] == []
    # The MLflow server got the run (its store is elsewhere): nothing of it holds a canary.
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    [exp] = [e for e in client.search_experiments() if e.name == "aevyra-reflex"]
    [run] = [
        r for r in client.search_runs([exp.experiment_id]) if "reflex.evaluation" not in r.data.tags
    ]
    recorded = json.dumps([run.data.params, run.data.tags, run.info.run_name])
    assert not any(c in recorded for c in CANARIES)


def test_router_config_secrets_are_hidden_while_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A router config's literal api_key, an os.environ/ reference (resolved: a secret even
    # though its variable's name is not secret-named) and a password in a deployment's URL.
    import logging

    from reflex.cli.common import hidden_credentials, router_secrets
    from reflex.redact import scrub

    monkeypatch.setenv("TEAM_DEPLOYMENT_REF", "RTENVCANARY3344")
    config = tmp_path / "router.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: team\n"
        "    litellm_params:\n"
        "      model: openai/task\n"
        "      api_key: RTKEYCANARY1122\n"
        "      api_base: http://svc:RTPWCANARY5566@127.0.0.1:9/v1\n"
        "  - model_name: other\n"
        "    litellm_params:\n"
        "      model: openai/other\n"
        "      api_key: os.environ/TEAM_DEPLOYMENT_REF\n",
        encoding="utf-8",
    )
    canaries = ("RTKEYCANARY1122", "RTENVCANARY3344", "RTPWCANARY5566")
    monkeypatch.setattr(sys, "argv", ["aevyra-reflex", "optimize", "--router-config", str(config)])
    line = "deployment failed: key=RTKEYCANARY1122 ref=RTENVCANARY3344 pw=RTPWCANARY5566"
    with caplog.at_level(logging.WARNING), hidden_credentials(values=router_secrets(config)):
        logging.getLogger("LiteLLM Router").warning(line)
        tracker_text = scrub(line)  # what a tracker callback sends (its error tag, ...)
    assert not any(c in caplog.text or c in tracker_text for c in canaries), caplog.text
    assert scrub(line) == line  # hidden for the command's duration only
