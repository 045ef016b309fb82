"""No message quotes a secret out of a model's answer (issue 18).

A model may echo a secret it saw (a key in a document, a value from the environment). The
degenerate-seed refusal was fixed to scrub what it quotes; these runs send a canary secret, held
in a secret-named environment variable, back in every answer of every role and check that it
appears in no stderr or stdout line, no warning and no log record, whatever quotes the answer:
the summary and progress lines, pipeline errors (the user's exception quotes the answer), judge
feedback printed by ``judge-check``, a provider error quoting its body, the ``error:`` line, and
a library warning quoting the response (LiteLLM's pydantic serializer warnings do).
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.cli import main
from reflex.testing import FakeModel, FakeRequest

CANARY = "canary-5ecret-7f3a9b21c4"
START = "Classify the sentiment."


def leaky(request: FakeRequest) -> str:
    """Every answer carries the canary; the library 'warns' quoting the response, as LiteLLM's
    serializer warnings do."""
    warnings.warn(
        f"Pydantic serializer warnings: input_value=Message(content='{CANARY}')",
        UserWarning,
        stacklevel=2,
    )
    if request.model.startswith("fake/reasoner"):
        return f"My key is {CANARY}; no prompt tags here."  # unusable: every iteration fails
    if request.model.startswith("fake/judge"):
        reason = {"grade": 1, "reason": f"the answer leaks {CANARY}"}
        names = ("correctness", "completeness", "clarity")  # the default rubric
        return json.dumps({"criteria": dict.fromkeys(names, reason)})
    return f"positive {CANARY}"


def pipeline_file(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.py"
    path.write_text(
        "def run(prompt, input, call):\n"
        "    answer = call([{'role': 'system', 'content': prompt},"
        " {'role': 'user', 'content': input}])\n"
        "    if input.endswith('awful film'):\n"
        "        raise ValueError(f'could not parse {answer!r}')\n"
        "    return answer\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_SERVICE_TOKEN", CANARY)
    rows = [{**r, "verdict": "pass" if i % 2 else "fail"} for i, r in enumerate(make_rows(30))]
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "prompt.md").write_text(f"{START}\n", encoding="utf-8")
    pipeline_file(tmp_path)
    return tmp_path


OPTIMIZE = ["optimize", "data.jsonl", "prompt.md", "-m", "fake/task"]
REASONER = ["--reasoning-model", "fake/reasoner", "--max-iterations", "2"]
CASES: dict[str, list[str]] = {
    "optimize, every iteration fails": [*OPTIMIZE, *REASONER, "--allow-degenerate-seed"],
    "optimize -v (debug logs)": [*OPTIMIZE, *REASONER, "--allow-degenerate-seed", "-v"],
    "degenerate seed refusal": [*OPTIMIZE, *REASONER],
    "pipeline errors": [
        *OPTIMIZE,
        *REASONER,
        "--pipeline-file",
        "pipe.py",
        "--allow-degenerate-seed",
    ],
    "judge": [*OPTIMIZE, *REASONER, "--judge", "fake/judge", "--allow-degenerate-seed"],
    "judge-check feedback": [
        "judge-check",
        "data.jsonl",
        "--judge",
        "fake/judge",
        "--label-field",
        "verdict",
    ],
    "judge-check --json": [
        "judge-check",
        "data.jsonl",
        "--judge",
        "fake/judge",
        "--label-field",
        "verdict",
        "--json",
    ],
}


def _no_canary(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    caught: list[warnings.WarningMessage],
) -> None:
    out, err = capsys.readouterr()
    assert CANARY not in out, [line for line in out.splitlines() if CANARY in line]
    assert CANARY not in err, [line for line in err.splitlines() if CANARY in line]
    logged = [r.getMessage() for r in caplog.records]
    assert not [m for m in logged if CANARY in m]
    assert not [str(w.message) for w in caught if CANARY in str(w.message)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_canary_in_the_answers_reaches_no_message(
    case: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeModel(leaky).install()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        with contextlib.suppress(SystemExit):
            main(CASES[case])
    assert fake.requests, "the case made no model call"
    assert caught, "the fake library warning was not raised"
    _no_canary(capsys, caplog, caught)


def test_a_provider_error_quoting_its_body_reaches_no_message(
    workdir: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import litellm

    def fault(request: FakeRequest, n: int) -> BaseException | None:
        return litellm.BadRequestError(
            message=f"invalid request: the body was {CANARY}", llm_provider="x", model="task"
        )

    FakeModel(leaky, fault=fault).install()
    with (
        warnings.catch_warnings(record=True) as caught,
        caplog.at_level(logging.DEBUG),
        pytest.raises(SystemExit) as exit_info,
    ):
        main([*OPTIMIZE, *REASONER])
    assert exit_info.value.code == 2
    _no_canary(capsys, caplog, caught)


def test_the_python_api_logs_and_warns_no_canary(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    FakeModel(leaky).install()
    opt: Any = (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_allow_degenerate_seed()
        .configure(max_iterations=2, run_dir=str(workdir / "runs"))
    )
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        result = opt.run(START)
    assert result.warnings and caught
    _no_canary(capsys, caplog, caught)
