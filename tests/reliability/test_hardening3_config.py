"""The edges of --cache-url and --router-config (issue 29, items 10 and 12).

Every bad or unreachable value is one ``error:`` line and exit 2 before anything is made: no run
folder for ``runs`` to list as interrupted, no folder outside the run directory, no model call.
A Router config is checked whole (settings, strategy, every deployment's provider, its Redis)
when the run is built, not at the first call; a bare ``model_name`` (``-m tagger``) is routed.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from services import free_port

from reflex.cli import main
from reflex.testing import FakeModel

ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(20))
ARGS = ["optimize", "data.jsonl", "prompt.md", "--reasoning-model", "fake/reasoner"]
ARGS += ["--max-iterations", "1", "-o", "best.md"]


@contextlib.contextmanager
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def cli(args: list[str]) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as done:
        main(args)
    code = done.value.code
    return (0 if code is None else int(code)), stderr.getvalue()


def refused(root: Path, fake: FakeModel, args: list[str], *needles: str) -> str:
    paid = len(fake.requests)
    code, err = cli(args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    assert not (root / ".reflex").exists() and not (root / "best.md").exists(), err
    assert len(fake.requests) == paid, err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        ("redis://127.0.0.1:6379/0?socket_timeout=abc", ("socket_timeout",)),
        ("redis://127.0.0.1:99999/0", ("Port",)),
        ("sqlite://rel.db", ("sqlite:///",)),
        ("sqlite:///", ("sqlite:///",)),
        ("nosuchdb://127.0.0.1/x", ("nosuchdb",)),
        ("redis://127.0.0.1:{port}/0", ("unavailable", "redis-server")),
        ("postgresql://x@127.0.0.1:{port}/db", ("unavailable",)),
    ],
)
def test_a_bad_or_unreachable_cache_url_is_one_line_and_makes_nothing(
    url: str,
    needles: tuple[str, ...],
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("redis" if url.startswith("redis") else "sqlalchemy")
    if url.startswith("postgresql"):
        pytest.importorskip("psycopg")
    with workdir(tmp_path, monkeypatch) as root:
        target = url.format(port=free_port())
        refused(root, fake_model, [*ARGS, "-m", "fake/task", "--cache-url", target], *needles)


def test_a_sqlite_cache_url_makes_no_folder_outside_the_run_dir(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere" / "deep"
    with workdir(tmp_path / "work", monkeypatch) as root:
        url = f"sqlite:///{outside / 'x.db'}"
        line = refused(root, fake_model, [*ARGS, "-m", "fake/task", "--cache-url", url])
        assert "does not exist" in line and str(outside) in line
    assert not (tmp_path / "elsewhere").exists()


def _router(tmp_path: Path, settings: dict[str, Any], model: str = "fake/task") -> Path:
    path = tmp_path / "litellm.json"
    name, _, rpm = model.partition("@")  # MODEL@RPM: a deployment with that rpm
    params: dict[str, Any] = {"model": name, **({"rpm": json.loads(rpm)} if rpm else {})}
    entry = {"model_name": "tagger", "litellm_params": params}
    path.write_text(json.dumps({"model_list": [entry], "router_settings": settings}))
    return path


@pytest.mark.parametrize(
    ("settings", "model", "needles"),
    [
        (
            {"routing_strategy": "fastest-first"},
            "fake/task",
            ("routing_strategy", "simple-shuffle"),
        ),
        (
            {"routing_stratgy": "simple-shuffle"},
            "fake/task",
            ("routing_stratgy", "routing_strategy"),
        ),
        ({}, "nosuchprovider/m", ("model_list[0]", "nosuchprovider/m")),
        ({}, 'fake/task@"x"', ("model_list[0]", "rpm 'x'")),
        ({}, "fake/task@-5", ("model_list[0]", "rpm -5")),
        ({"redis_url": "redis://127.0.0.1:{port}/0"}, "fake/task", ("unavailable", "redis")),
        ({"redis_host": "127.0.0.1", "redis_port": "{port}"}, "fake/task", ("unavailable",)),
    ],
)
def test_a_router_config_is_checked_whole_before_the_run(
    settings: dict[str, Any],
    model: str,
    needles: tuple[str, ...],
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if any("redis" in key for key in settings):
        pytest.importorskip("redis")
    port = str(free_port())
    settings = {
        k: (v.replace("{port}", port) if isinstance(v, str) else v) for k, v in settings.items()
    }
    with workdir(tmp_path / "w", monkeypatch) as root:
        config = _router(tmp_path, settings, model)
        args = [*ARGS, "-m", "router/tagger", "--router-config", str(config)]
        refused(root, fake_model, args, *needles)


@pytest.mark.parametrize("name", ["tagger", "router/tagger"])
def test_a_bare_model_name_of_the_router_config_is_routed(
    name: str, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with workdir(tmp_path / "w", monkeypatch) as root:
        config = _router(tmp_path, {})
        args = [*ARGS, "-m", name, "--router-config", str(config), "--results-json", "r.json"]
        code, err = cli(args)
        assert code == 0, err
        usage = json.loads((root / "r.json").read_text())["usage"]
        assert usage["task"]["calls"] > 0 and len(fake_model.calls_to("fake/task")) > 0


def test_without_the_router_a_bare_name_says_how_to_write_it() -> None:
    from reflex.errors import ConfigurationError
    from reflex.models.spec import parse_model

    with pytest.raises(ConfigurationError, match=r"router/tagger"):
        parse_model("tagger")


@pytest.mark.services
def test_redis_pacing_that_loses_redis_says_so_and_keeps_pacing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    from reflex.models.pacing import redis_pacing

    pacing = redis_pacing(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens: Redis is gone

    async def go() -> tuple[list[float], float, float]:
        waits = await pacing.waits(["a", "b"])
        return waits, await pacing.reserve("a", 10.0), await pacing.reserve("a", 10.0)

    with caplog.at_level(logging.WARNING, logger="reflex"):
        waits, first, second = asyncio.run(go())
    assert waits == [0.0, 0.0] and first == 0.0 and second > 9.0  # still paced, here
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "this process only" in said[0]
