"""End to end on the local endpoint: an extraction run with ``--metric json_match,schema=FILE``
and ``--response-format FILE`` (every request carries it), and ``check`` rebuilding the metric
(its schema by content) from the run's config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reflex.cli import build_cli
from reflex.data.dataset import load_dataset
from reflex.testing.endpoint import ChatRequest, serve

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "extraction"
SEED = "Extract the quantities."


def test_extraction_run_then_check_rebuilds_json_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    lines = (EXAMPLE / "dataset.jsonl").read_text(encoding="utf-8").splitlines()[:24]
    data = tmp_path / "q.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    schema = tmp_path / "format.json"
    schema.write_text((EXAMPLE / "response_format.json").read_text(encoding="utf-8"))
    prompt = tmp_path / "prompt.md"
    prompt.write_text(SEED + "\n", encoding="utf-8")
    expected = {row.input: row.ideal for row in load_dataset(data)}

    seen: list[ChatRequest] = []

    def respond(request: ChatRequest) -> str:
        seen.append(request)
        edited = len(request.system) > len(SEED) or len(request.messages) > 2
        if edited:
            return expected.get(request.user) or "{}"
        return "```json\n" + (expected.get(request.user) or "{}") + "\n```"  # fenced: 0

    results = tmp_path / "result.json"
    runner = CliRunner()
    with serve(responder=respond) as url:
        base = ["-m", "openai/task", "--api-base", str(url), "--run-dir", str(tmp_path / "rd")]
        metric = ["--metric", f"json_match,schema={schema}", "--response-format", str(schema)]
        args = [str(data), str(prompt), *base, *metric, "-s", "auto", "--max-iterations", "2"]
        done = runner.invoke(
            build_cli(),
            ["optimize", *args, "--results-json", str(results)],
            catch_exceptions=False,
        )
        assert done.exit_code == 0, done.output
        result = json.loads(results.read_text(encoding="utf-8"))
        sent = json.loads(schema.read_text(encoding="utf-8"))
        assert seen and all(r.params.get("response_format") == sent for r in seen)
        assert result["baseline"]["mean_score"] == 0.0 and result["final"]["mean_score"] == 1.0
        run = Path(result["run_dir"])
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
        [spec] = config["metric_specs"]
        assert spec["name"] == "json_match" and spec["options"]["schema"]["type"] == "object"
        schema.unlink()  # check rebuilds the metric from config.json alone
        check = ["check", "--prompt", str(prompt), "--dataset", str(data), "--baseline", str(run)]
        checked = runner.invoke(build_cli(), [*check, *base[:4], "--json"], catch_exceptions=False)
    assert checked.exit_code in (0, 1), checked.output
    assert json.loads(checked.output)["scores_by_metric"]["json_match"] == 0.0  # the seed again
