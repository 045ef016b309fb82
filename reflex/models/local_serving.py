"""How the embedded model (:mod:`reflex.models.local`) serves its calls, process-wide.

Each model file gets a :class:`reflex.models.local_pool.ContextPool` of up to K contexts
(``--local-workers K``), or, with ``--local-batch N``, one
:class:`reflex.models.local_batch.BatchEngine` of N sequences. :func:`set_workers` chooses;
a :class:`reflex.models.client.ProviderClient` calls it at its first ``local`` call with its
settings, so the run that calls last decides (the models are the process's, like the rest of
the provider). Up to K (or N) calls then enter LiteLLM at once, still in the order they were
made (``providers.set_lanes``).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflex.errors import ConfigurationError
from reflex.models import providers
from reflex.models.local_pool import ContextPool, default_workers

if TYPE_CHECKING:
    from reflex.models.local_batch import BatchEngine

__all__ = ["batch", "batch_engine", "close_all", "lanes", "model_pool", "set_workers", "workers"]

PROVIDER = "local"
_LOCK = threading.Lock()  # guards the settings and the two caches below
_POOLS: dict[str, ContextPool] = {}  # one per model file
_ENGINES: dict[str, BatchEngine] = {}  # one per model file, with a batch
_SETTINGS = [0, 0]  # the K asked for (0: default_workers()) and the batch N (0: off)


def workers() -> int:
    """K: the contexts each model file may have, as :func:`set_workers` last asked."""
    return _SETTINGS[0] or default_workers()


def batch() -> int:
    """N: the sequences decoded together, or 0 (the default) for contexts of one call each."""
    return _SETTINGS[1]


def lanes() -> int:
    """The calls that may be under way at once: N with a batch, else K."""
    return batch() or workers()


def set_workers(k: int = 0, batch: int = 0) -> int:
    """Serve the ``local`` provider with up to ``k`` contexts per model file (0: one per usable
    core, capped by memory: :func:`reflex.models.local_pool.default_workers`), or with ``batch``
    sequences decoded together in one context (0: off); returns :func:`lanes`."""
    if k < 0:
        raise ConfigurationError(f"local workers must be >= 0 (0: one per core), got {k}")
    if batch < 0:
        raise ConfigurationError(f"local batch must be >= 0 (0: off), got {batch}")
    with _LOCK:
        engines = list(_ENGINES.values()) if batch != _SETTINGS[1] else []
        if engines:
            _ENGINES.clear()
        _SETTINGS[:] = [k, batch]
        pools = list(_POOLS.values())
    providers.set_lanes(PROVIDER, lanes())
    for pool in pools:
        pool.resize(workers())
    for engine in engines:
        engine.close()
    return lanes()


def model_pool(path: Path, load: Callable[[], Any]) -> ContextPool:
    """The process-wide contexts of ``path``, each made by ``load()`` when a call needs it."""
    key = str(path)
    with _LOCK:
        if key not in _POOLS:
            _first_model()
            _POOLS[key] = ContextPool(load, workers())
        return _POOLS[key]


def batch_engine(path: Path, load: Callable[[], Any], n_ctx: int, threads: int) -> BatchEngine:
    """The process-wide batch engine of ``path`` (with ``set_workers(batch=N)``, N > 0), over
    the model of the ``llama_cpp.Llama`` that ``load()`` makes."""
    from reflex.models.local_batch import BatchEngine

    key = str(path)
    with _LOCK:
        if key not in _ENGINES:
            _first_model()
            _ENGINES[key] = BatchEngine(load(), max(1, _SETTINGS[1]), n_ctx, threads)
        return _ENGINES[key]


def _first_model() -> None:
    if not _POOLS and not _ENGINES:
        atexit.register(close_all)


def close_all() -> None:
    """Free every model (at exit: llama_cpp's own finaliser would run after its C bindings are
    gone, and print "NoneType is not callable")."""
    with _LOCK:
        pools, engines = list(_POOLS.values()), list(_ENGINES.values())
        _POOLS.clear()
        _ENGINES.clear()
    for pool in pools:
        pool.close()
    for engine in engines:
        engine.close()
