"""The embedded model's contexts: up to K of one GGUF file, each serving one call at a time.

``local_workers = K`` (``--local-workers K``, ``PromptOptimizer.set_local_workers(K)``) lets K
calls of the ``local`` provider (:mod:`reflex.models.local`) run at once, each on its own
llama.cpp context of one thread, in threads of this process. llama-cpp-python calls llama.cpp
through ``ctypes``, which releases the GIL for the length of each foreign call, so a context's
``llama_decode`` runs while the other threads run Python or decode too (bench/README.md has the
figures: K = 2 in two threads against one context, answers identical). The contexts share the
model's weights, memory-mapped once by the OS; each has its own KV cache (its prefix cache).

Which context serves a call (:meth:`ContextPool.use`): of the free ones, the one whose previous
prompt shares the longest beginning with this call's, so rows that share a system prompt keep
landing where it is already evaluated; when none is free and fewer than K are loaded, a new one
(~0.7 s); else the call waits for the first to be free. A context is never shared by two calls
and never runs more than one thread (two threads in one context spin: 0.21x on a shared
machine).

Answers do not depend on which context serves a call, because a context's answer does not
depend on its earlier calls (:func:`aligned_llama`). llama.cpp's CPU kernels for repacked
quantized weights multiply a batch's tokens four rows at a time and the last ``n % 4`` one by
one, with different rounding; llama-cpp-python evaluates a prompt from wherever the previous
call's tokens stop matching, so the same token could land in either kind of row depending on
the previous call (measured: "pause the shows" answered two ways after different previous
calls; 1 of 187 answers of the README quick start differed between K = 1 and K = 2). The
prefix kept is therefore cut to a multiple of 4 tokens, and only to tokens that a previous
call computed in such a group: every prompt token is then computed in the same row group as
in a fresh context, so K changes the speed, never the answers, the cache keys or the ledger
(the ``real_model`` tests in tests/test_local_pool.py compare K = 1 and K = 2).

The default K (``0``, :func:`default_workers`) is one per core this process may run on
(``os.sched_getaffinity``, else ``os.cpu_count``; a cgroup CPU quota lowers it), at most one per
0.7 GB of available memory (``MemAvailable``; the 0.5B model's context costs ~0.65 GB in a
process of its own). It does not look at the machine's load: the load changes from one second
to the next, and a context that waits for a core costs nothing but its memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ALIGN",
    "INSTANCE_BYTES",
    "ContextPool",
    "affinity_key",
    "aligned_llama",
    "available_memory",
    "default_workers",
    "usable_cores",
]

ALIGN = 4  # ggml's repacked CPU matmuls take a batch's activations four rows at a time
INSTANCE_BYTES = 700_000_000  # memory held for one context of the 0.5B model (RSS ~0.65 GB)
_MEMINFO = Path("/proc/meminfo")
_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity, lowered by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = _CPU_MAX.read_text().split()[:2]
    except (OSError, ValueError):
        return max(1, cores)
    if quota != "max" and int(period) > 0:
        cores = min(cores, max(1, int(quota) // int(period)))
    return max(1, cores)


def available_memory() -> int | None:
    """Bytes of memory available to new work (``MemAvailable``), None where unknown."""
    try:
        lines = _MEMINFO.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def default_workers(cores: int | None = None, memory: int | None = None) -> int:
    """K for ``local_workers = 0``: one context per usable core, one per 0.7 GB available."""
    cores = usable_cores() if cores is None else cores
    memory = available_memory() if memory is None else memory
    by_memory = cores if memory is None else memory // INSTANCE_BYTES
    return max(1, min(cores, by_memory))


def affinity_key(messages: Sequence[Mapping[str, object]], tools: object = None) -> str:
    """A call's prompt in the order a chat template lays it out (system turn, its tools, the
    rest): calls whose keys share a long beginning share a long evaluated prefix."""
    head = [m for m in messages[:1] if m.get("role") == "system"]
    parts = [json.dumps(head, default=str), json.dumps(tools, default=str)]
    parts.append(json.dumps(list(messages[len(head) :]), default=str))
    return "\x00".join(parts)


def aligned_llama(llama_cpp: Any) -> type:
    """``llama_cpp.Llama`` whose answers do not depend on its previous calls (module docstring):
    the prefix it keeps is cut to a multiple of :data:`ALIGN` tokens that were computed in a
    whole row group (the previous prompt's tokens up to its last multiple of 4)."""

    class AlignedLlama(llama_cpp.Llama):  # type: ignore[misc]
        _clean = 0  # leading tokens of the cache computed in whole groups of ALIGN rows

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            this: Any = self  # llama_cpp's attributes are untyped
            tokens = list(tokens)
            held = [int(t) for t in this.input_ids[: this.n_tokens]]
            keep = min(_common(held, tokens), self._clean, len(tokens) - 1) // ALIGN * ALIGN
            if keep < this.n_tokens:
                this._ctx.kv_cache_seq_rm(-1, keep, -1)
                this.n_tokens = keep
            self._clean = len(tokens) // ALIGN * ALIGN
            return super().generate(tokens, *args, **kwargs)

    return AlignedLlama


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _shared(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071  (characters: prompts, not paths)


@dataclass
class _Context:
    llama: Any  # llama_cpp.Llama (untyped: see reflex.models.local)
    last: str = ""  # the affinity key of its latest call
    busy: bool = True


class ContextPool:
    """Up to ``size`` contexts made by ``load``, each used by one call at a time."""

    def __init__(self, load: Callable[[], Any], size: int = 1) -> None:
        if size < 1:
            raise ValueError(f"a context pool needs size >= 1, got {size}")
        self._load = load
        self._size = size
        self._contexts: list[_Context] = []
        self._loading = 0
        self._peak = 0
        self._cond = threading.Condition()
        self._load_lock = threading.Lock()  # one model load at a time

    @property
    def size(self) -> int:
        return self._size

    @property
    def loaded(self) -> int:
        """Contexts loaded so far (at most ``size`` once the calls under way are done)."""
        with self._cond:
            return len(self._contexts)

    def take_peak(self) -> int:
        """The most contexts that served calls at the same time since the last ``take_peak``."""
        with self._cond:
            peak, self._peak = self._peak, 0
            return peak

    def resize(self, size: int) -> None:
        """Serve with up to ``size`` contexts; free extra ones are closed now, busy ones when
        their call is done."""
        if size < 1:
            raise ValueError(f"a context pool needs size >= 1, got {size}")
        with self._cond:
            self._size = size
            extra = [c for c in self._contexts if not c.busy][: max(0, self._excess())]
            for context in extra:
                self._contexts.remove(context)
            self._cond.notify_all()
        for context in extra:
            context.llama.close()

    def _excess(self) -> int:
        return len(self._contexts) + self._loading - self._size

    def warm(self) -> None:
        """Load the first context now (a bench times calls, not the load)."""
        with self.use(""):
            pass

    @contextlib.contextmanager
    def use(self, key: str) -> Iterator[Any]:
        """A free context for a call whose :func:`affinity_key` is ``key``, held until exit."""
        context = self._acquire(key)
        try:
            yield context.llama
        finally:
            self._release(context, key)

    def _acquire(self, key: str) -> _Context:
        context = self._take(key)
        with self._cond:
            self._peak = max(self._peak, sum(c.busy for c in self._contexts))
        return context

    def _take(self, key: str) -> _Context:
        with self._cond:
            while True:
                free = [c for c in self._contexts if not c.busy]
                if free:
                    best = max(free, key=lambda c: _shared(c.last, key))  # first of equals
                    best.busy = True
                    return best
                if self._excess() < 0:
                    self._loading += 1
                    break
                self._cond.wait()
        loaded: list[_Context] = []
        try:
            with self._load_lock:
                loaded.append(_Context(self._load()))
        finally:
            with self._cond:
                self._loading -= 1
                self._contexts += loaded
                self._cond.notify_all()
        return loaded[0]

    def _release(self, context: _Context, key: str) -> None:
        with self._cond:
            context.busy, context.last = False, key
            closing = self._excess() > 0
            if closing:
                self._contexts.remove(context)
            self._cond.notify_all()
        if closing:
            context.llama.close()

    def close(self) -> None:
        """Close every context (each after its call, if one is under way)."""
        with self._cond:
            while any(c.busy for c in self._contexts) or self._loading:
                self._cond.wait()
            contexts, self._contexts = self._contexts, []
        for context in contexts:
            context.llama.close()
