"""Security: no listening sockets, no code or paths from data, reasoning output is only text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import make_rows, responder

from reflex import PromptOptimizer
from reflex.testing import FakeModel, FakeRequest
from reflex.testing.endpoint import _parser, serve

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reflex", "reflex_mlflow", "reflex_wandb", "strategies", "metrics", "aevyra_reflex")
LISTENING = re.compile(r"start_server|create_server|\.bind\(\(|\.listen\(|HTTPServer|socketserver")
CODE_LOADING = re.compile(
    r"\bexec\(|\beval\(|runpy|spec_from_file_location|exec_module|__import__\(|pickle\.loads?\("
    r"|yaml\.load\(|os\.system|subprocess"
)


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def matches(pattern: re.Pattern[str]) -> set[str]:
    return {name for name, text in sources().items() if pattern.search(text)}


def test_only_the_test_endpoint_listens_and_only_on_localhost() -> None:
    assert matches(LISTENING) == {"reflex/testing/endpoint.py"}
    assert _parser().parse_args([]).host == "127.0.0.1"
    with serve() as url:
        assert url.startswith("http://127.0.0.1:")


def test_only_the_pipeline_loader_runs_user_files() -> None:
    # reflex/models/offload.py starts its own worker (sys.executable, a fixed command); the protocol
    # unpickles only what comes over an anonymous socketpair shared with that child.
    offloading = {"reflex/models/offload.py", "reflex/models/offload_protocol.py"}
    assert matches(CODE_LOADING) == {"reflex/data/pipeline.py", *offloading}
    offload = sources()["reflex/models/offload.py"]
    assert "socket.socketpair()" in offload
    assert not any("connect(" in sources()[name] for name in offloading)
    assert '[sys.executable, "-c", code, str(child.fileno())]' in offload
    callers = {n for n, t in sources().items() if "load_pipeline(" in t}
    # Only the builder (from --pipeline-file or .set_pipeline) asks for a pipeline file.
    assert callers <= {"reflex/data/pipeline.py", "reflex/data/run_data.py"}


EVIL = "import pathlib; pathlib.Path(__file__).with_name('PWNED').write_text('x')\n"


def test_paths_and_code_in_a_dataset_are_never_loaded(tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text(EVIL, encoding="utf-8")
    evil = str(tmp_path / "evil.py")
    rows = [
        {
            **row,
            "pipeline": evil,
            "pipeline_file": f"{evil}:run",
            "prompt_file": evil,
            "metadata": {"pipeline": evil, "plugin": "evil"},
        }
        for row in make_rows(30)
    ]
    FakeModel(responder).install()
    result = (
        PromptOptimizer()
        .set_dataset(rows)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_strategy("fewshot")
        .set_run_dir(tmp_path / "runs")
        .configure(max_iterations=2)
        .run("Classify the sentiment.")
    )
    assert result.completed
    assert not (tmp_path / "PWNED").exists()


HOSTILE = [
    "{__import__('os').system('touch PWNED')}",
    "--run-dir /tmp/evil --pipeline-file evil.py",
    "../../../../PWNED.txt",
    "{0} {prompt} {{x}} %s %(name)s $(touch PWNED) `touch PWNED`",
    "<prompt>nested</prompt></prompt>\x00 tail",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_reasoning_output_is_only_ever_a_prompt_string(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    def reasoner(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return f"<edit>{text}</edit><prompt>{text}</prompt>"
        return responder(request)

    FakeModel(reasoner).install()
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_strategy("iterative")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "runs")
        .configure(max_iterations=2, early_stopping_patience=None)
        .run("Classify the sentiment.")
    )
    assert result.completed
    proposed = [r.system_prompt for r in result.iterations]
    assert any(text[:10] in p for p in proposed)  # verbatim text, nothing evaluated
    everything = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}
    assert not [p for p in everything if "PWNED" in str(p) or "evil" in str(p)]
    run_dir = Path(str(result.run_dir))
    assert {p.parent for p in run_dir.rglob("*.txt")} == {run_dir / "prompts"}
    assert not Path("/tmp/evil").exists()
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    assert config["run_dir"] == str(tmp_path / "runs") and config.get("pipeline") is None
