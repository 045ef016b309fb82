"""Pipeline mode: the user's function, not one model call, turns prompt and input into output.

A pipeline file defines ``run`` (or ``pipeline``; ``file.py:name`` picks another)::

    def run(prompt, input, call):
        facts = call([{"role": "system", "content": prompt.components["extract"]},
                      {"role": "user", "content": input}], step="extract")
        return call([{"role": "system", "content": prompt.components["answer"]},
                     {"role": "user", "content": facts}], step="answer")

- ``prompt``: a :class:`Prompt`, i.e. the candidate's assembled text (a ``str``) whose
  ``components`` maps component names to texts (``{"system": text}`` for a plain prompt).
- ``input``: the example's input text (structured inputs arrive as JSON text).
- ``call(messages, model=None, step=None) -> str``: one task-model call through the run's client
  (cached, counted under "task", within ``max_workers``). ``model`` picks another model with the
  same decoding parameters; ``step`` records the call as a named trace step. ``messages`` may be
  one string (sent as a user message). In an ``async def`` pipeline, ``await call(...)``.
  The function may also take only ``(prompt, input)``. A keyword-only ``example`` parameter
  (``def run(prompt, input, call, *, example)``) receives the dataset row itself
  (:class:`~reflex.types.Example`: its ``id``, ``variables``, ``metadata``, ``ideal``).
- With a chat template (:mod:`reflex.data.templates`), ``prompt`` is the candidate template's
  string form, placeholders unfilled, and ``input`` the row's variables as a JSON line: the
  pipeline renders it itself (``reflex.prompt_messages(prompt, example)`` does it as a plain
  run would).
- It returns the final output (a ``str``), a :class:`Trace`, a dict ``{"output", "steps"}``
  or a tuple ``(output, steps)``; each step is ``{"name", "input", "output"}`` (or a
  :class:`Step`, or a 3-tuple). Without returned steps, the ``step=`` calls form the trace.

Failures: an exception, a bad return value or a timeout scores the example 0 on every metric
that applies, with the reason as ``Sample.error`` and as feedback. Provider errors raised by
``call`` still stop the run, as they do outside pipeline mode, even if the function caught them.

Timeout (``pipeline_timeout``, default 60 s) covers one example. An ``async`` function is
cancelled. A plain function runs on its own daemon thread; Python cannot kill a thread, so at the
timeout the example is scored as failed ("timeout after Ns"), the thread's late result is
discarded and its further ``call`` s raise; a model call already in flight finishes and is cached.

Reflection: the reasoning model of ``iterative``, ``gepa`` and ``pdo`` sees each shown
example's trace (step names, inputs and outputs, cut to the strategy's ``max_chars`` per field
and four times that per example) and its failure reason.

Budget: ``max_calls`` counts every model call a pipeline makes; the room kept for the final
test evaluation is what the baseline test evaluation needed (cache hits included).

Caching: pipeline outputs are not cached (a pipeline may run code whose results change); its
model calls are, like any other, so a resumed run replays a deterministic pipeline for free.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from reflex.data.dataset import Dataset, load_dataset
from reflex.data.files import file_problem
from reflex.data.readers import load_json
from reflex.errors import ConfigurationError, DatasetError

__all__ = [
    "Pipeline",
    "PipelineTimeout",
    "Prompt",
    "Step",
    "Trace",
    "load_inputs",
    "load_pipeline",
    "pipeline_from_function",
]

_NAMES = ("run", "pipeline")
T = TypeVar("T")


class PipelineTimeout(RuntimeError):
    """Raised by ``call`` in a pipeline thread whose example already timed out."""


class Prompt(str):
    """The candidate prompt: its assembled text, plus ``components`` (name -> text)."""

    components: Mapping[str, str]

    def __new__(cls, text: str, components: Mapping[str, str] | None = None) -> Prompt:
        self = super().__new__(cls, text)
        self.components = dict(components) if components is not None else {}
        return self


@dataclass(frozen=True)
class Step:
    """One named step of a trace."""

    name: str
    input: object = None
    output: object = None


@dataclass
class Trace:
    """A trace builder: ``trace.step(name, input, output)`` returns ``output``."""

    steps: list[Step] = field(default_factory=list)
    output: object = None

    def step(self, name: str, input: object, output: T) -> T:
        self.steps.append(Step(name, input, output))
        return output

    def finish(self, output: object) -> Trace:
        self.output = output
        return self


@dataclass(frozen=True)
class Pipeline:
    """A loaded pipeline: the function, how to call it, and its identity for the run config."""

    fn: Callable[..., object]
    name: str
    sha256: str | None
    takes_call: bool = True
    takes_example: bool = False

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


def pipeline_from_function(fn: Callable[..., object], where: str | None = None) -> Pipeline:
    """Wrap a function; ``where`` names it in errors (default ``module:qualname``)."""
    name = where or f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    if not callable(fn):
        raise ConfigurationError(f"{name}: the pipeline is not a function (got {fn!r})")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return Pipeline(fn, name, _source_hash(fn))
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    if not varargs and len(positional) not in (2, 3):
        raise ConfigurationError(
            f"{name}: the pipeline takes {len(positional)} argument(s); "
            "define it as run(prompt, input, call) or run(prompt, input)"
        )
    example = any(p.name == "example" and p.kind == p.KEYWORD_ONLY for p in params)
    takes_call = varargs or len(positional) == 3
    return Pipeline(fn, name, _source_hash(fn), takes_call=takes_call, takes_example=example)


def load_pipeline(target: str | Path) -> Pipeline:
    """Import ``file.py`` (or ``file.py:function``) by path and find its pipeline function."""
    text = str(target)
    path, wanted = Path(text), ""
    head, _, tail = text.rpartition(":")
    if not os.path.lexists(path) and head and tail.isidentifier():
        path, wanted = Path(head), tail
    problem = file_problem(path, "pipeline file")  # a FIFO would block the import forever
    if problem is not None:
        raise ConfigurationError(
            f"{path}: {problem.replace('; check the path', '; check --pipeline-file, the path')}"
        )
    module = _import(path)
    names = (wanted,) if wanted else _NAMES
    fn = next((getattr(module, n) for n in names if callable(getattr(module, n, None))), None)
    if fn is None:
        what = f"no function {wanted!r}" if wanted else "no `run` or `pipeline` function"
        raise ConfigurationError(
            f"{path}: defines {what}; define def run(prompt, input, call): ... returning the output"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = pipeline_from_function(fn, f"{path}:{fn.__name__}")
    return replace(loaded, sha256=digest)


def _import(path: Path) -> ModuleType:
    name = "reflex_pipeline_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"{path}: cannot import this file as Python; use a .py file")
    module = importlib.util.module_from_spec(spec)
    # Sibling modules of the pipeline file may be imported at its top level.
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # any import-time failure of user code
        raise ConfigurationError(
            f"{path}: importing the pipeline file failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _source_hash(fn: Callable[..., object]) -> str | None:
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def load_inputs(source: str | Path | Sequence[object]) -> Dataset:
    """Inputs for a pipeline: a JSON array or JSON Lines file of strings or objects, or a list.

    An object holds ``input`` (text, or any JSON value, passed on as JSON text) and optionally
    ``id``, a reference (``ideal`` / ``output`` / ``expected`` / ``answer`` / ``target``),
    ``split`` and other fields (kept as metadata). A bare string is an input without reference.
    """
    if not isinstance(source, (str, Path)):
        where = Path("<inputs>")
        return load_dataset(
            [_input_record(item, where, i) for i, item in enumerate(source, 1)], name="inputs"
        )
    path = Path(source)
    problem = file_problem(path, "inputs file")
    if problem is not None:
        raise DatasetError(
            problem.replace("; check the path", "; check --inputs-file, the path"), path=str(path)
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError("inputs file not found; check --inputs-file", path=str(path)) from None
    except UnicodeDecodeError:
        raise DatasetError("inputs file is not UTF-8 text", path=str(path)) from None
    records = [_input_record(item, path, line) for line, item in _items(text, path)]
    if not records:
        raise DatasetError("no inputs; the file needs at least one", path=str(path), line=1)
    dataset = load_dataset(records, name=path.stem)
    return Dataset(list(dataset), name=dataset.name, source=str(path))


def _items(text: str, path: Path) -> list[tuple[int, object]]:
    if text.lstrip().startswith("["):
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON array: {exc.msg}"
            raise DatasetError(message, path=str(path), line=exc.lineno) from None
        if not isinstance(data, list):
            raise DatasetError("not a JSON array of inputs", path=str(path))
        return [(i, item) for i, item in enumerate(data, start=1)]
    items: list[tuple[int, object]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append((number, load_json(line)))
            except json.JSONDecodeError as exc:
                message = f"invalid JSON: {exc.msg}; write a JSON array or one value per line"
                raise DatasetError(message, path=str(path), line=number) from None
    return items


def _input_record(item: object, path: Path, line: int) -> dict[str, object]:
    if isinstance(item, str):
        return {"input": item}
    if not isinstance(item, dict) or "input" not in item:
        raise DatasetError(
            "each input must be a string or an object with an 'input' field",
            path=str(path),
            line=line,
        )
    value = item["input"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {**item, "input": text}
