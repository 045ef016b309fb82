"""Batched decoding for the embedded model (``--local-batch N``, opt-in; not bit-identical).

One llama.cpp context holds up to N sequences (``n_seq_max = N``, a unified KV cache of
``N * 2048`` cells) and one thread (:class:`BatchEngine`'s) decodes them together: each
``llama_decode`` carries the next token of every sequence that is generating and the prompt
tokens of those just admitted, so the weights are read once for N tokens. As ``llama-server``
does, a call that arrives takes a free slot at once (continuous refill: no waiting for the
others to finish), and its prompt starts from the longest prefix any slot holds: those cells
are shared with ``llama_memory_seq_cp`` (the system prompt's keys and values are computed once
and used by every sequence), the rest is evaluated. Slots whose call is done keep their cells
for the next prefix match until a new call overwrites them.

Everything around the decoding is llama-cpp-python's own: the chat handler renders the
template, tokenizes, builds the tool-choice and JSON-schema grammars and turns the completion
into a chat answer; it calls ``create_completion`` on a :class:`_Facade`, which hands the
tokens to the engine. Sampling is llama-cpp-python's sampler chain (``Llama._init_sampler``),
per sequence.

Not bit-identical to serial decoding: llama.cpp's arithmetic depends on how the tokens are
batched (``bench/local_model.py`` counts the answers that differ). Answers are deterministic
for a given arrival order only. So the run's cache keys a batched answer apart from a serial
one (:func:`reflex.models.local.model_identity`). Not supported with a batch: ``stream``,
``logprobs``, ``logits_processor`` and ``logit_bias`` (none of which reflex sends).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchEngine"]

N_BATCH = 512  # tokens per llama_decode
# create_completion's sampling options, passed on to Llama._init_sampler as they come.
_SAMPLING: tuple[str, ...] = ("top_k", "top_p", "min_p", "typical_p", "repeat_penalty")
_SAMPLING += ("frequency_penalty", "presence_penalty", "tfs_z", "mirostat_mode")
_SAMPLING += ("mirostat_tau", "mirostat_eta")


@dataclass
class _Request:
    tokens: list[int]
    sampler: Any  # llama_cpp._internals.LlamaSampler
    max_tokens: int
    stop: list[bytes]
    criteria: Callable[[list[int]], bool] | None
    completion: list[int] = field(default_factory=list)
    text: bytes = b""
    finish: str = "length"
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Slot:
    seq: int
    cached: list[int] = field(default_factory=list)  # tokens whose KV this sequence holds
    request: _Request | None = None
    pending: list[int] = field(default_factory=list)  # prompt tokens still to evaluate
    last: int | None = None  # the sampled token to feed next


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class BatchEngine:
    """Up to ``slots`` sequences of ``llama``'s model decoded together in one new context."""

    def __init__(self, llama: Any, slots: int, n_ctx: int, threads: int = 1) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self._cpp = llama_cpp
        self.llama = llama  # tokenizer, chat handler and samplers; its own context stays idle
        self.n_ctx = n_ctx
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx * slots
        params.n_batch = params.n_ubatch = N_BATCH
        params.n_seq_max = slots
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = threads
        self._ctx: Any = _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._batch = llama_cpp.llama_batch_init(N_BATCH, 0, 1)
        self._slots = [_Slot(seq) for seq in range(slots)]
        self._queue: list[_Request] = []
        self._cond = threading.Condition()
        self._sampler_lock = threading.Lock()  # Llama._init_sampler reads llama._seed
        self._closed = False
        self._peak = 0
        self._thread = threading.Thread(target=self._loop, name="local-batch", daemon=True)
        self._thread.start()

    # --- the calling threads -------------------------------------------------------------------

    def chat(self, **options: Any) -> dict[str, object]:
        """``Llama.create_chat_completion(**options)``, decoded in this engine's batch."""
        from llama_cpp import llama_chat_format

        llama = self.llama
        handler: Any = (
            llama.chat_handler
            or llama._chat_handlers.get(llama.chat_format)
            or llama_chat_format.get_chat_completion_handler(llama.chat_format)
        )
        result: dict[str, object] = handler(llama=_Facade(self), **options)
        return result

    def complete(self, tokens: list[int], options: Mapping[str, Any]) -> dict[str, object]:
        """A text completion of ``tokens`` (``Llama.create_completion``'s answer)."""
        for name in ("stream", "logprobs", "logits_processor", "logit_bias"):
            if options.get(name):
                raise ValueError(f"{name} is not supported with --local-batch")
        if len(tokens) >= self.n_ctx:
            raise ValueError(
                f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx}"
            )
        limit = options.get("max_tokens")
        room = self.n_ctx - len(tokens)
        request = _Request(
            tokens,
            self._sampler(options),
            room if limit is None or limit <= 0 else min(int(limit), room),
            [s.encode("utf-8") for s in _stops(options.get("stop"))],
            _criteria(options.get("stopping_criteria")),
        )
        with self._cond:
            if self._closed:
                raise RuntimeError("the batch engine is closed")
            self._queue.append(request)
            self._cond.notify_all()
        request.done.wait()
        if request.error is not None:
            raise request.error
        return _completion(request, str(options.get("model") or self.llama.model_path))

    def _sampler(self, options: Mapping[str, Any]) -> Any:
        chosen = {k: options[k] for k in _SAMPLING if options.get(k) is not None}
        seed = options.get("seed")
        with self._sampler_lock:
            self.llama.set_seed(0 if seed is None else int(seed))
            return self.llama._init_sampler(
                temp=float(options.get("temperature") or 0.0),
                grammar=options.get("grammar"),
                **chosen,
            )

    def take_peak(self) -> int:
        """The most sequences decoded in one step since the last ``take_peak``."""
        with self._cond:
            peak, self._peak = self._peak, 0
            return peak

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._cpp.llama_batch_free(self._batch)
        self._ctx.close()

    # --- the engine's thread -------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._busy() and not self._closed:
                    self._cond.wait()
                if self._closed:
                    failed = self._queue + [s.request for s in self._slots if s.request]
                    self._queue.clear()
                    break
                self._admit()
            try:
                self._step()
            except Exception as exc:  # noqa: BLE001  (any failure fails the calls it carried)
                self._fail(exc)
        for request in failed:
            request.error = RuntimeError("the batch engine closed before the answer")
            request.done.set()

    def _busy(self) -> bool:
        return any(slot.request is not None for slot in self._slots)

    def _admit(self) -> None:
        """Queued calls into free slots, each from the longest prefix any slot holds."""
        for slot in self._slots:
            if not self._queue:
                return
            if slot.request is not None:
                continue
            request = self._queue.pop(0)
            tokens = request.tokens
            source = max(self._slots, key=lambda s: _common(s.cached, tokens))
            shared = min(_common(source.cached, tokens), len(tokens) - 1)
            if source is slot:
                self._cpp.llama_memory_seq_rm(self._memory, slot.seq, shared, -1)
            else:
                self._cpp.llama_memory_seq_rm(self._memory, slot.seq, -1, -1)
                if shared > 0:
                    self._cpp.llama_memory_seq_cp(self._memory, source.seq, slot.seq, 0, shared)
            slot.cached = tokens[:shared]
            slot.pending = tokens[shared:]
            slot.request, slot.last = request, None

    def _step(self) -> None:
        """One ``llama_decode``: a token of each generating sequence, then prompt tokens."""
        batch, outputs = self._batch, []
        n = 0
        for slot in self._slots:
            if slot.request is not None and slot.last is not None:
                self._put(n, slot.last, len(slot.cached), slot.seq, True)
                outputs.append((slot, n))
                slot.cached.append(slot.last)
                n += 1
        for slot in self._slots:
            if slot.request is None or not slot.pending or n >= N_BATCH:
                continue
            take = slot.pending[: N_BATCH - n]
            slot.pending = slot.pending[len(take) :]
            for i, token in enumerate(take):
                last = not slot.pending and i == len(take) - 1
                self._put(n, token, len(slot.cached), slot.seq, last)
                slot.cached.append(token)
                if last:
                    outputs.append((slot, n))
                n += 1
        batch.n_tokens = n
        if n == 0:
            return
        with self._cond:
            self._peak = max(self._peak, sum(s.request is not None for s in self._slots))
        status = self._cpp.llama_decode(self._ctx.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed ({status}): the batch's KV cache is full")
        for slot, index in outputs:
            self._sample(slot, index)

    def _put(self, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch = self._batch
        batch.token[i], batch.pos[i] = token, pos
        batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
        batch.logits[i] = logits

    def _sample(self, slot: _Slot, index: int) -> None:
        request = slot.request
        assert request is not None
        token = request.sampler.sample(self._ctx, index)
        llama = self.llama
        if self._cpp.llama_vocab_is_eog(llama._model.vocab, token) or (
            request.criteria is not None and request.criteria([*slot.cached, token])
        ):
            self._finish(slot, "stop")
            return
        request.completion.append(token)
        text = llama.detokenize(request.completion, prev_tokens=request.tokens)
        for stop in request.stop:
            if stop in text:
                request.text = text[: text.index(stop)]
                self._finish(slot, "stop", cut=True)
                return
        request.text = text
        if len(request.completion) >= request.max_tokens:
            self._finish(slot, "length")
            return
        slot.last = token

    def _finish(self, slot: _Slot, reason: str, *, cut: bool = False) -> None:
        request = slot.request
        assert request is not None
        if not cut and reason == "stop":
            request.text = self.llama.detokenize(request.completion, prev_tokens=request.tokens)
        request.finish = reason
        slot.request, slot.last, slot.pending = None, None, []
        request.done.set()

    def _fail(self, exc: BaseException) -> None:
        for slot in self._slots:
            if slot.request is not None:
                slot.request.error = exc
                slot.request.done.set()
                slot.request, slot.last, slot.pending = None, None, []
            with contextlib.suppress(Exception):
                self._cpp.llama_memory_seq_rm(self._memory, slot.seq, -1, -1)
            slot.cached = []


class _Facade:
    """What llama-cpp-python's chat handler reads of a ``Llama``, its completion from a batch."""

    verbose = False

    def __init__(self, engine: BatchEngine) -> None:
        self._engine = engine

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        tokens: list[int] = self._engine.llama.tokenize(text, add_bos=add_bos, special=special)
        return tokens

    def create_completion(self, prompt: list[int], **options: Any) -> dict[str, object]:
        return self._engine.complete(list(prompt), options)


def _stops(stop: object) -> list[str]:
    if isinstance(stop, str):
        return [stop] if stop else []
    return [s for s in stop if isinstance(s, str) and s] if isinstance(stop, list) else []


def _criteria(criteria: Any) -> Callable[[list[int]], bool] | None:
    """A chat format's stopping criteria (``(input_ids, logits) -> bool``) on the tokens."""
    if criteria is None:
        return None
    import numpy as np

    empty = np.zeros(0, dtype=np.single)
    return lambda tokens: bool(criteria(np.array(tokens, dtype=np.intc), empty))


def _completion(request: _Request, model: str) -> dict[str, object]:
    prompt, completion = len(request.tokens), len(request.completion)
    return {
        "id": f"cmpl-{uuid.uuid4()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "text": request.text.decode("utf-8", errors="ignore"),
                "index": 0,
                "logprobs": None,
                "finish_reason": request.finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
