"""Runs a :class:`reflex.data.pipeline.Pipeline` on one example: timeout, ``call`` helper, trace.

The evaluator asks :class:`PipelineRunner` for each (prompt, model, example) instead of making
one task-model call; everything the pipeline sends to a model goes through the run's
:class:`reflex.models.client.ProviderClient`. See :mod:`reflex.data.pipeline` for the user contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import json
import math
import re
import threading
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reflex.config import default
from reflex.data.json_types import JSONDict, JSONValue
from reflex.data.pipeline import Pipeline, PipelineTimeout, Prompt, Step, Trace
from reflex.data.prompts import PromptSpec
from reflex.errors import ReflexError
from reflex.models.client import ModelSpec, ProviderClient, load_litellm
from reflex.redact import scrub
from reflex.types import Example, Metric

__all__ = ["PipelineOutcome", "PipelineRunner", "components_of"]

Messages = str | Sequence[Mapping[str, str]]
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
_MAX_ANCHORED = 8  # beyond this many components, only all-or-nothing anchoring is tried


@dataclass
class PipelineOutcome:
    """One example's pipeline run: the output and trace, or the reason it failed."""

    output: str = ""
    trace: list[JSONDict] = field(default_factory=list)
    error: str | None = None
    calls: int = 0
    cached_calls: int = 0
    fatal: BaseException | None = None
    closed: bool = False

    @property
    def cached(self) -> bool:
        """True when the pipeline called a model and every call was a cache hit."""
        return self.calls > 0 and self.cached_calls == self.calls

    def scored_text(self) -> str:
        """What a trace-scoring metric receives: the output and the steps as JSON text."""
        return json.dumps({"output": self.output, "steps": self.trace}, ensure_ascii=False)


@dataclass
class PipelineRunner:
    """Runs the pipeline per example with a timeout, at most ``client.max_workers`` at once."""

    pipeline: Pipeline
    client: ProviderClient
    timeout: float = default("pipeline_timeout")
    spec: PromptSpec | None = None
    trace_metrics: Collection[str] = ()
    runs: int = field(default=0, init=False)
    calls: int = field(default=0, init=False)
    _limit: asyncio.Semaphore | None = field(default=None, init=False, repr=False)
    _limit_loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    def scores_trace(self, metric: Metric) -> bool:
        """Whether ``metric`` scores the whole trace (its ``scores_trace`` or the config)."""
        return bool(getattr(metric, "scores_trace", False)) or metric.name in self.trace_metrics

    def estimate_calls(self, rows: int) -> int:
        """Model calls ``rows`` pipeline runs may pay for: the average so far, 1 at first."""
        if self.runs == 0:
            return rows
        return math.ceil(rows * self.calls / self.runs)

    async def run(self, prompt: str, spec: ModelSpec, example: Example) -> PipelineOutcome:
        """Run the pipeline on ``example``; failures come back as ``outcome.error``."""
        outcome = PipelineOutcome()
        candidate = Prompt(prompt, components_of(self.spec, prompt))
        load_litellm()  # its first import takes seconds: not inside the first example's timeout
        async with self._semaphore():
            try:
                raw = await asyncio.wait_for(
                    self._invoke(candidate, spec, example, outcome), self.timeout
                )
                if outcome.fatal is None:
                    _accept(outcome, raw)
            except asyncio.TimeoutError:
                outcome.error = f"timeout after {self.timeout:g}s"
            except Exception as exc:  # noqa: BLE001 - the user's code failed on this example
                outcome.error = f"{type(exc).__name__}: {exc}"
            finally:
                outcome.closed = True  # a timed-out thread's further calls now raise
                if outcome.error is not None:  # it may quote the model's answer, and a secret
                    outcome.error = scrub(outcome.error, spec.api_base)
                self.runs += 1
                self.calls += outcome.calls
        if outcome.fatal is not None:
            raise outcome.fatal
        return outcome

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._limit is None or self._limit_loop is not loop:
            self._limit, self._limit_loop = asyncio.Semaphore(self.client.max_workers), loop
        return self._limit

    async def _invoke(
        self, prompt: Prompt, spec: ModelSpec, example: Example, outcome: PipelineOutcome
    ) -> object:
        fn, takes_call = self.pipeline.fn, self.pipeline.takes_call
        row = {"example": example} if self.pipeline.takes_example else {}
        if inspect.iscoroutinefunction(fn):  # Pipeline.is_async, asked here so fn is awaitable
            async_call = self._async_call(spec, outcome)
            try:
                args = (prompt, example.input, async_call)[: 3 if takes_call else 2]
                return await fn(*args, **row)
            except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
                # Past this task a SystemExit would stop the event loop itself: the run hung.
                raise UserCodeExit(exc) from exc
        call = self._sync_call(spec, outcome)
        return await _in_thread(
            functools.partial(fn, **row),
            (prompt, example.input, call)[: 3 if takes_call else 2],
            example.id,
        )

    def _async_call(
        self, spec: ModelSpec, outcome: PipelineOutcome
    ) -> Callable[..., Awaitable[str]]:
        async def call(
            messages: Messages, model: str | None = None, step: str | None = None
        ) -> str:
            return await self._complete(spec, outcome, messages, model, step)

        return call

    def _sync_call(self, spec: ModelSpec, outcome: PipelineOutcome) -> Callable[..., str]:
        loop = asyncio.get_running_loop()

        def call(messages: Messages, model: str | None = None, step: str | None = None) -> str:
            if outcome.closed:
                raise PipelineTimeout("this example already timed out; its result is discarded")
            if _on_a_loop():
                raise RuntimeError("call() blocks: in an async pipeline, await call(...)")
            coro = self._complete(spec, outcome, messages, model, step)
            return asyncio.run_coroutine_threadsafe(coro, loop).result()

        return call

    async def _complete(
        self,
        spec: ModelSpec,
        outcome: PipelineOutcome,
        messages: Messages,
        model: str | None,
        step: str | None,
    ) -> str:
        target = spec if model is None else replace(spec, model=model)
        conversation = _conversation(messages)
        try:
            completion = await self.client.complete(target, conversation, role="task")
        except ReflexError as exc:  # provider errors stop the run, caught by the user or not
            outcome.fatal = outcome.fatal or exc
            raise
        outcome.calls += 1
        outcome.cached_calls += completion.cached
        if step is not None:
            user = [m.get("content", "") for m in conversation if m.get("role") == "user"]
            outcome.trace.append(
                {"name": step, "input": user[-1] if user else "", "output": completion.text}
            )
        return completion.text


class UserCodeExit(Exception):
    """The pipeline's ``run()`` raised SystemExit / KeyboardInterrupt / GeneratorExit itself.

    That fails its example like any exception (it must not end the run, nor, raised on the event
    loop, stop the loop and hang the run).
    """

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"run() raised {type(exc).__name__}({exc!s}); return a value instead")


async def _in_thread(fn: Callable[..., object], args: Sequence[object], name: str) -> object:
    """``fn(*args)`` on a daemon thread: a hung pipeline can neither block the loop nor exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()

    def settle(value: object, error: BaseException | None) -> None:
        if future.done():  # timed out or cancelled: the late result is discarded
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value, error = fn(*args), None
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            value, error = None, exc
        except BaseException as exc:  # noqa: BLE001 - sys.exit() in run(): this row's failure
            value, error = None, UserCodeExit(exc)
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"reflex-pipeline-{name}", daemon=True).start()
    return await future


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _conversation(messages: Messages) -> list[dict[str, str]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [{k: str(v) for k, v in m.items()} for m in messages]


def _accept(outcome: PipelineOutcome, raw: object) -> None:
    """Normalise the pipeline's return value into ``outcome`` (or set ``outcome.error``)."""
    output: object = raw
    steps: object = None
    if isinstance(raw, Trace):
        output, steps = raw.output, raw.steps
    elif isinstance(raw, Mapping):
        if "output" not in raw:
            outcome.error = f"the pipeline returned a dict without 'output' (keys: {list(raw)})"
            return
        output, steps = raw["output"], raw.get("steps", raw.get("trace"))
    elif isinstance(raw, tuple) and len(raw) == 2:
        output, steps = raw
    if output is None:
        outcome.error = "the pipeline returned no output (None)"
        return
    outcome.output = output if isinstance(output, str) else _json(output)
    if steps is not None:
        try:
            if not isinstance(steps, Iterable):
                raise TypeError(f"{type(steps).__name__!r} object is not iterable")
            outcome.trace = [_step(item) for item in steps]
        except (TypeError, ValueError) as exc:
            outcome.error = f"the pipeline returned a bad trace: {exc}"


def _step(item: object) -> JSONDict:
    if isinstance(item, Step):
        name, given, got = item.name, item.input, item.output
    elif isinstance(item, Mapping) and "name" in item:
        name, given, got = item["name"], item.get("input"), item.get("output")
    elif isinstance(item, (tuple, list)) and len(item) == 3:
        name, given, got = item
    else:
        raise ValueError(f"a step is {{'name', 'input', 'output'}} or a 3-tuple, got {item!r}")
    return {"name": str(name), "input": _plain(given), "output": _plain(got)}


def _plain(value: object) -> JSONValue:
    """``value`` as JSON data (what result.json can hold); other objects become text."""
    plain: JSONValue = json.loads(json.dumps(value, ensure_ascii=False, default=str))
    return plain


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def components_of(spec: PromptSpec | None, text: str) -> dict[str, str]:
    """The named components ``text`` was assembled from; ``{}`` when they cannot be recovered.

    A plain prompt is ``{"system": text}``. A multi-component prompt is split back along its
    template (or the blank lines between parts), preferring the seed texts of unchanged parts,
    and kept only if it re-assembles to ``text`` exactly. A split is a best guess when an edited
    part itself holds blank lines or another part's old text.
    """
    if spec is None or spec.is_single:
        return {"system": text}
    if text == spec.render():
        return dict(spec.components)
    present = [name for name in spec.names if _literal(spec, name) in text]
    # Most parts unchanged first: an edit usually touches one component (e.g. gepa's).
    sizes = range(len(present), -1, -1) if len(present) <= _MAX_ANCHORED else (len(present), 0)
    for size in sizes:
        for anchors in itertools.combinations(present, size):
            parts = _split(spec, text, set(anchors))
            if parts is not None and spec.render(parts) == text:
                return parts
    return {}


def _literal(spec: PromptSpec, name: str) -> str:
    seed = spec.components[name]
    return seed.strip() if spec.template is None else seed


def _split(spec: PromptSpec, text: str, anchors: set[str]) -> dict[str, str] | None:
    def hole(name: str) -> str:
        if name in anchors:
            return f"(?P<{name.replace('-', '_')}>{re.escape(_literal(spec, name))})"
        return f"(?P<{name.replace('-', '_')}>.+?)"

    if spec.template is None:
        pattern = r"\n\n".join(hole(name) for name in spec.names)
    else:
        pieces: list[str] = []
        seen: set[str] = set()
        last = 0
        template = spec.template.strip()
        for match in _FIELD.finditer(template):
            pieces.append(re.escape(template[last : match.start()]))
            name = match[1]
            if name not in spec.components:
                pieces.append(re.escape(match[0]))
            elif name in seen:
                pieces.append(f"(?P={name.replace('-', '_')})")
            else:
                pieces.append(hole(name))
                seen.add(name)
            last = match.end()
        pieces.append(re.escape(template[last:]))
        pattern = "".join(pieces)
    found = re.fullmatch(pattern, text, flags=re.DOTALL)
    if found is None:
        return None
    return {name: found[name.replace("-", "_")] for name in spec.names}
