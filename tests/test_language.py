"""Language detection, reasoning templates by name, and language/migration guidance."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import make_rows, responder

from reflex import ConfigurationError, PromptOptimizer
from reflex.data.language import Language, detect_language, detect_script
from reflex.judging import reasoning as rs
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
SPANISH = " y la película de los niños es para el fin de semana"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("The cat is on the table and it is happy with the food.", "en"),
        ("El gato está en la mesa y es feliz con los niños de la casa.", "es"),
        ("Le chat est sur la table et il est content pour le dîner.", "fr"),
        ("Der Hund ist nicht in dem Haus und die Katze auch nicht.", "de"),
        ("Il gatto è sulla tavola e non è felice per la cena della sera.", "it"),
        ("O gato está em cima da mesa e não é um problema para os pais.", "pt"),
        ("De kat is niet op de tafel en het is een mooie dag voor een wandeling.", "nl"),
        ("Кошка сидит на столе и смотрит в окно.", "ru"),
        ("η γάτα είναι στο τραπέζι.", "el"),
        ("猫はテーブルの上にいます。", "ja"),
        ("猫在桌子上睡觉。", "zh"),
        ("고양이가 테이블 위에 있다.", "ko"),
        ("القطة على الطاولة", "ar"),
        ("बिल्ली मेज पर है", "hi"),
    ],
)
def test_detects_dominant_language(text: str, code: str) -> None:
    assert detect_language([text, "", "ok 42"]).code == code


def test_dominant_script_wins_and_empty_falls_back() -> None:
    mixed = ["Кошка сидит на столе.", "Собака спит.", "OK"]
    assert detect_script(" ".join(mixed))[0] == "cyrillic"
    assert detect_language([]).code == "en" and detect_language(["123"]).confidence == 0.0


@pytest.fixture(autouse=True)
def _templates() -> Iterator[None]:
    rs.reset_templates()
    yield
    rs.reset_templates()


def test_templates_by_name_and_overrides() -> None:
    assert "iterative.system" in rs.template_names()
    assert rs.render("retry", error="no tag").startswith("That answer was unusable: no tag.")
    assert (
        rs.render("retry", {"retry": "Again {error} {unknown}"}, error="e") == "Again e {unknown}"
    )
    rs.set_template("retry", "Process-wide: {error}")
    assert rs.render("retry", error="x") == "Process-wide: x"
    assert rs.render("retry", {"retry": "run {error}"}, error="x") == "run x"  # run wins
    with pytest.raises(ConfigurationError, match="unknown reasoning template 'nope'"):
        rs.set_template("nope", "x")


def spanish_rows() -> list[dict[str, str]]:
    rows = make_rows(30)
    for row in rows:
        row["input"] = row["input"] + SPANISH
    return rows


def test_reasoning_prompts_carry_language_and_migration(tmp_path: Path) -> None:
    seen: list[FakeRequest] = []

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            seen.append(request)
            return responder(request)
        return responder(replace(request, user=request.user.split(SPANISH)[0]))

    FakeModel(answer).install()
    template = tmp_path / "brief.txt"
    template.write_text("CUSTOM BRIEF\n{current}\n{rows}", encoding="utf-8")
    (
        PromptOptimizer()
        .set_dataset(spanish_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("iterative")
        .set_reasoning_model("fake/reasoner")
        .set_source_model("anthropic/claude-3-5-sonnet")
        .set_reasoning_template("iterative.brief", template)
        .set_run_dir(tmp_path / "runs")
        .configure(max_iterations=1)
        .run(START)
    )
    system = seen[0].messages[0]["content"]
    assert "in Spanish: write the prompt in Spanish" in system
    assert "written for anthropic/claude-3-5-sonnet (anthropic)" in system
    assert "run on fake/task" in system
    assert seen[0].user.startswith(f"CUSTOM BRIEF\n{START}\ninput:")


def test_builder_and_cli_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from reflex.cli import main

    with pytest.raises(ConfigurationError, match="unknown reasoning template"):
        PromptOptimizer().set_reasoning_template("iterative.sytem", "x")
    with pytest.raises(ConfigurationError, match="source model"):
        PromptOptimizer().set_source_model("  ")
    FakeModel(responder).install()
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(20)), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START, encoding="utf-8")
    args = [
        "optimize",
        str(data),
        str(prompt),
        "-m",
        "fake/task",
        "--run-dir",
        str(tmp_path / "r"),
        "--reasoning-model",
        "fake/reasoner",
        "--max-iterations",
        "1",
        "--results-json",
        str(tmp_path / "out.json"),
    ]
    with pytest.raises(SystemExit) as done:
        main([*args, "--reasoning-template", f"nope={prompt}"])
    assert done.value.code == 2 and "unknown reasoning template 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main([*args, "--source-model", "openai/gpt-4o", "--reasoning-template", f"retry={prompt}"])
    assert done.value.code == 0
    run_dir = json.loads((tmp_path / "out.json").read_text())["run_dir"]
    config = json.loads(Path(run_dir, "config.json").read_text())
    assert config["source_model"] == "openai/gpt-4o"
    assert config["reasoning_templates"] == {"retry": START}


def test_a_run_detects_its_language_once_for_every_reasoning_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each reasoning call's system prompt names the train rows' language; detecting it scans
    every train text, so it is done once per split, not on the iterations' serial path."""
    detected: list[int] = []

    def counting(texts: list[str]) -> Language:
        detected.append(len(list(texts)))
        return detect_language(texts)

    monkeypatch.setattr(rs, "detect_language", counting)
    rs._language_of.cache_clear()
    seen: list[FakeRequest] = []

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            seen.append(request)
            return f"<edit>try {len(seen)}</edit><prompt>{START} Variant {len(seen)}.</prompt>"
        return responder(replace(request, user=request.user.split(SPANISH)[0]))

    FakeModel(answer).install()
    (
        PromptOptimizer()
        .set_dataset(spanish_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("iterative")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "runs")
        .configure(max_iterations=3, early_stopping_patience=None)
        .run(START)
    )
    assert len(seen) == 3
    assert all("in Spanish: write the prompt in Spanish" in r.system for r in seen)
    assert len(detected) == 1  # one split, one detection (it was one per reasoning call)
