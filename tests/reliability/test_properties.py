"""Property-based tests (hypothesis): the readers and the CLI's options, on random input.

Readers: random JSONL / CSV bytes (binary junk, JSON fragments, deep nesting, huge numbers,
lone surrogate escapes, BOMs, CR-only endings) either load or raise one ``DatasetError`` line,
never another exception. Numeric options: random values (NaN, inf, huge, negative, not numbers)
for every numeric ``optimize`` option either run or exit 2 with one ``error:`` line and nothing
written (no run directory, no ``-o`` file, no model call). The same for random ``--cache-url``
strings and random Router config files (``--router-config``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from services import free_port

from reflex import ReflexError
from reflex.cli import main
from reflex.data.dataset import load_dataset
from reflex.testing import FakeModel

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
_records = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=5) | st.integers(),
        "input": st.text(max_size=20) | _json_values,
        "ideal": _json_values,
        "messages": _json_values,
        "split": st.sampled_from(["train", "val", "test", "x", ""]) | _json_values,
    },
)
_fragments = st.one_of(
    st.binary(max_size=40),
    _records.map(lambda r: json.dumps(r).encode()),
    _json_values.map(lambda v: json.dumps(v).encode()),
    st.sampled_from(
        [
            b'{"input": "\\ud800"}',
            b'{"input": ' + b"[" * 3000 + b"]" * 3000 + b"}",
            b'{"input": "x", "ideal": ' + b"7" * 5000 + b"}",
            b"\xef\xbb\xbf",
            b"\x00",
            b'"unclosed',
        ]
    ),
)
_separators = st.sampled_from([b"\n", b"\r\n", b"\r", b""])


@st.composite
def _files(draw: st.DrawFn) -> bytes:
    parts = draw(st.lists(st.tuples(_fragments, _separators), max_size=6))
    return b"".join(part + sep for part, sep in parts)


def _one_line_or_loads(path: Path) -> None:
    try:
        load_dataset(path)
    except ReflexError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message, message


@SETTINGS
@given(content=_files())
def test_random_jsonl_bytes_load_or_are_one_error_line(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.jsonl"
        path.write_bytes(content)
        _one_line_or_loads(path)


_csv_cells = st.one_of(
    st.text(max_size=15), st.binary(max_size=15).map(lambda b: b.decode("latin-1"))
)


@st.composite
def _csv_files(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(["input,ideal", "input", "question,answer,split", ""]))
    rows = draw(st.lists(st.lists(_csv_cells, max_size=4), max_size=5))
    text = header + "\n" + "\n".join(",".join(row) for row in rows)
    junk = draw(st.binary(max_size=10))
    return text.encode("utf-8", "surrogatepass") + junk


@SETTINGS
@given(content=_csv_files())
def test_random_csv_bytes_load_or_are_one_error_line(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        path.write_bytes(content)
        _one_line_or_loads(path)


# --- numeric options ------------------------------------------------------------------------

NUMERIC_OPTIONS = [
    "--temperature",
    "--max-tokens",
    "--pipeline-timeout",
    "--max-iterations",
    "--threshold",
    "--batch-size",
    "--early-stopping-patience",
    "--train-split",
    "--val-split",
    "--seed",
    "--max-workers",
    "--client-processes",
    "--max-calls",
    "--max-reasoning-calls",
    "--max-cost",
    "--max-seconds",
]
_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["nan", "inf", "-inf", "NaN", "1e309", "", " ", "abc", "0x10", "1_000"]),
)
ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))
CLI_TAIL = ("-m", "fake/task", "-o", "best.md", "--reasoning-model", "fake/reasoner")
CLI_TAIL += ("--max-iterations", "1")


@contextlib.contextmanager
def _fresh_workdir() -> Iterator[Path]:
    before = Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "data.jsonl").write_text(ROWS, encoding="utf-8")
        (root / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(before)


@pytest.fixture(scope="module")
def fake() -> FakeModel:
    from conftest import responder

    return FakeModel(responder)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option=st.sampled_from(NUMERIC_OPTIONS), value=_values)
def test_numeric_options_run_or_exit_2_with_one_line_and_nothing_written(
    option: str, value: str, fake: FakeModel
) -> None:
    if option == "--client-processes" and value.strip() not in ("0", "-0"):
        value = "nan"  # a valid count would start client processes: keep the test light
    fake.install()
    paid = len(fake.requests)
    args = ["optimize", "data.jsonl", "prompt.md", "-m", "fake/task"]
    args += ["--reasoning-model", "fake/reasoner", "--max-iterations", "1", "-o", "best.md"]
    args += [option, value]
    stderr = io.StringIO()
    with _fresh_workdir() as root, contextlib.redirect_stderr(stderr):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        code = exit_info.value.code
        written = (root / "best.md").exists(), (root / ".reflex" / "runs").exists()
    err = stderr.getvalue()
    assert "Traceback" not in err, err
    if code in (0, 3):  # ran (3: a tiny --max-seconds paused it, its final measured)
        return
    assert code == 2, (option, value, err)
    lines = [line for line in err.splitlines() if line.strip()]
    if option == "--max-seconds" and len(lines) > 1:
        # A valid but tiny time budget: how far the run got before it ran out depends on the
        # machine's speed (a busy one spends it in the preflight or the baseline). The run's
        # progress lines come first; it still ends with one error line saying what to do.
        assert lines[-1].startswith("error: ") and "--max-seconds" in lines[-1], err
        assert not any(line.startswith("error: ") for line in lines[:-1]), err
        assert not written[0], (option, value, err)
        return
    assert len(lines) == 1 and lines[0].startswith("error: "), (option, value, err)
    assert written == (False, False) and len(fake.requests) == paid, (option, value, err)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=_files(), suffix=st.sampled_from([".jsonl", ".csv", ".json", ".txt"]))
def test_random_dataset_files_through_the_cli_run_or_are_one_line(
    content: bytes, suffix: str, fake: FakeModel
) -> None:
    fake.install()
    paid = len(fake.requests)
    stderr = io.StringIO()
    with _fresh_workdir() as root, contextlib.redirect_stderr(stderr):
        (root / f"rows{suffix}").write_bytes(content)
        with pytest.raises(SystemExit) as exit_info:
            main(["optimize", f"rows{suffix}", "prompt.md", *CLI_TAIL])
        code = exit_info.value.code
        written = (root / "best.md").exists(), (root / ".reflex" / "runs").exists()
    err = stderr.getvalue()
    assert "Traceback" not in err, err
    if code == 0:
        return
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert written == (False, False) and len(fake.requests) == paid, err


# --- --cache-url and --router-config ---------------------------------------------------------

_CLOSED_PORT = free_port()  # nothing listens there: every server URL below is unreachable
_SCHEMES = ["sqlite", "SQLite", "redis", "rediss", "unix", "postgresql", "mysql", "nosuch", ""]
_SCHEMES += ["sqlite+pysqlite", "postgresql+psycopg", "sqlite+nodriver"]
_url_parts = st.text(alphabet="abc/.:?=&%@_-+19x\x00 ", max_size=12)
_cache_urls = st.one_of(
    st.text(max_size=20),
    st.builds(
        lambda scheme, sep, tail: f"{scheme}{sep}{tail}",
        st.sampled_from(_SCHEMES),
        st.sampled_from(["://", ":///", ":////", ":/", "//"]),
        _url_parts,
    ),
    st.builds(
        lambda scheme, port, tail: f"{scheme}://127.0.0.1:{port}/{tail}",
        st.sampled_from(["redis", "rediss", "postgresql", "mysql", "nosuch"]),
        st.sampled_from([str(_CLOSED_PORT), "0", "99999", "abc", "-1", ""]),
        st.sampled_from(["0", "", "x", "0?socket_timeout=abc", "0?db=x", "db?sslmode=zzz"]),
    ),
)


def _run_or_one_line(args: list[str], fake: FakeModel, setup: object = None) -> None:
    """``optimize`` with ``args``: it runs (exit 0), or exits 2 with one ``error:`` line, no
    traceback, no run folder, no ``-o`` file and no model call."""
    fake.install()
    paid = len(fake.requests)
    stderr = io.StringIO()
    with _fresh_workdir() as root, contextlib.redirect_stderr(stderr):
        if callable(setup):
            setup(root)
        with pytest.raises(SystemExit) as exit_info:
            main(["optimize", "data.jsonl", "prompt.md", *CLI_TAIL[2:], *args])
        code = exit_info.value.code
        written = (root / "best.md").exists(), (root / ".reflex" / "runs").exists()
    err = stderr.getvalue()
    assert "Traceback" not in err, err
    if code in (0, None):
        return
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (args, err)
    assert written == (False, False) and len(fake.requests) == paid, (args, err)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url=_cache_urls)
def test_random_cache_urls_run_or_are_one_line_and_make_nothing(url: str, fake: FakeModel) -> None:
    if "\x00" in url:  # an argv cannot hold NUL: the shell never passes one
        url = url.replace("\x00", "")
    _run_or_one_line(["-m", "fake/task", "--cache-url", url], fake)


_yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=10**20),
    st.sampled_from(["fake/task", "nosuch/m", "openai", "", "os.environ/NOT_SET_HERE", "task"]),
    st.text(max_size=8),
)
# A small valid rpm paces a run's calls seconds apart: only fast or invalid limits here.
_limits = st.sampled_from([600_000, 1e9, "x", -5, 0, True, "os.environ/NOT_SET_HERE", float("nan")])
_models = st.sampled_from(["fake/task", "fake/task", "nosuch/m", "openai", "", "task"])
_deployments = st.one_of(
    st.fixed_dictionaries(  # a well-formed entry: what is checked next is its values
        {
            "model_name": st.sampled_from(["task", "tagger"]),
            "litellm_params": st.fixed_dictionaries(
                {"model": _models}, optional={"rpm": _limits, "api_base": _yaml_scalars}
            ),
        },
        optional={"model_info": st.fixed_dictionaries({}, optional={"id": _yaml_scalars})},
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "model_name": _yaml_scalars,
            "litellm_params": st.fixed_dictionaries({}, optional={"model": _yaml_scalars})
            | _yaml_scalars,
        },
    ),
)
_router_settings = st.fixed_dictionaries(
    {},
    optional={
        "routing_strategy": st.sampled_from(["simple-shuffle", "least-busy", "nope", ""]),
        "redis_url": st.sampled_from([f"redis://127.0.0.1:{_CLOSED_PORT}/0", "", "x://"]),
        "num_retries": st.sampled_from([0, 3, "x"]),
        "not_a_setting": _yaml_scalars,
    },
)
_router_files = st.one_of(
    st.fixed_dictionaries(
        {"model_list": st.lists(_deployments, min_size=1, max_size=2)},
        optional={"router_settings": _router_settings},
    ).map(json.dumps),
    st.fixed_dictionaries(
        {}, optional={"model_list": _yaml_scalars, "router_settings": _yaml_scalars}
    ).map(json.dumps),
    st.text(max_size=40),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_router_files, model=st.sampled_from(["router/task", "task", "tagger", "fake/task"]))
def test_random_router_configs_run_or_are_one_line_and_make_nothing(
    text: str, model: str, fake: FakeModel
) -> None:
    def write(root: Path) -> None:
        (root / "litellm.yaml").write_text(text, encoding="utf-8")

    args = ["--router-config", "litellm.yaml", "-m", model]
    _run_or_one_line(args, fake, write)
