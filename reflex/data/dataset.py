"""Datasets: load JSONL, CSV, plain records or a pandas DataFrame into :class:`Example` rows.

The record schemas (OpenAI chat, ShareGPT, Alpaca, plain) are read by :mod:`reflex.data.records`,
one record at a time; here the rows become a :class:`Dataset` with unique ids.

Files are read with the standard library only (no pandas): values stay exactly as written, so a
CSV ``007`` stays ``"007"`` and ``NA`` stays ``"NA"``. Every error is a :class:`DatasetError`
naming the file and 1-based line. A dataset is loaded completely or not at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from reflex.data.json_types import JSONDict
from reflex.data.readers import MAX_RECORD_BYTES, FrameLike, Row, Where, frame_rows, iter_file
from reflex.data.records import canonical, parse_any, parse_bound, parse_plain, record_id
from reflex.data.sources import read_source
from reflex.data.templates import value_text
from reflex.data.tool_rows import check_offered, not_offered, tool_name
from reflex.errors import ConfigurationError, DatasetError
from reflex.result import Example

__all__ = [
    "MAX_RECORD_BYTES",
    "SPLIT_NAMES",
    "Dataset",
    "bind_dataset",
    "check_feedback_field",
    "check_run_tools",
    "load_dataset",
]

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")


class Dataset:
    """An ordered, read-only collection of :class:`Example` rows with unique ids."""

    def __init__(
        self, examples: Iterable[Example], *, name: str = "dataset", source: str | None = None
    ) -> None:
        items = tuple(examples)
        index: dict[str, int] = {}
        for position, example in enumerate(items):
            if not isinstance(example, Example):
                raise TypeError(f"Dataset holds Example objects, got {type(example).__name__}")
            if example.id in index:
                message = f"duplicate id {example.id!r} in dataset {name!r}; ids must be unique"
                raise DatasetError(message, path=source)
            index[example.id] = position
        self._examples, self._index = items, index
        self.name = name  # a short name: the file stem, or what the caller passed
        self.source = source  # the file the rows came from; None for in-memory records

    @classmethod
    def _trusted(
        cls, examples: tuple[Example, ...], index: dict[str, int], name: str, source: str | None
    ) -> Dataset:
        """A dataset from rows already checked (Examples, unique ids, ``index`` their positions)."""
        dataset = cls.__new__(cls)
        dataset._examples, dataset._index = examples, index
        dataset.name, dataset.source = name, source
        return dataset

    def subset(self, examples: Sequence[Example], name: str) -> Dataset:
        """Some of this dataset's rows (unique ids already), without checking them again."""
        rows = tuple(examples)
        index = {example.id: position for position, example in enumerate(rows)}
        return Dataset._trusted(rows, index, name, self.source)

    def __len__(self) -> int:
        return len(self._examples)

    def __iter__(self) -> Iterator[Example]:
        return iter(self._examples)

    def __getitem__(self, index: int) -> Example:
        return self._examples[index]

    def __repr__(self) -> str:
        return f"Dataset(name={self.name!r}, rows={len(self)}, source={self.source!r})"

    @property
    def ids(self) -> list[str]:
        """Row ids in dataset order."""
        return [example.id for example in self._examples]

    def by_id(self, example_id: str) -> Example:
        """The row with this id; KeyError when there is none."""
        try:
            return self._examples[self._index[example_id]]
        except KeyError:
            raise KeyError(f"no row with id {example_id!r} in dataset {self.name!r}") from None

    @property
    def with_references(self) -> int:
        """How many rows carry a reference answer (``ideal`` is not None)."""
        return sum(1 for example in self._examples if example.ideal is not None)

    def fingerprint(self) -> str:
        """sha256 of ids, messages, references (and tools, where a row has them); independent of
        row order and of the run."""
        rows = sorted(
            [
                e.id,
                [dict(m) for m in e.messages],
                e.ideal,
                *([[dict(t) for t in e.tools]] * bool(e.tools)),
            ]
            for e in self._examples
        )
        return hashlib.sha256(canonical(rows).encode("utf-8")).hexdigest()

    def to_records(self) -> list[JSONDict]:
        """Plain dicts in the OpenAI-chat schema; ``load_dataset`` reads them back unchanged
        (a row bound to a chat template keeps its values in ``variables``)."""
        return [
            {
                "id": e.id,
                "messages": [dict(m) for m in e.messages],
                "ideal": e.ideal,
                "split": e.split,
                "metadata": dict(e.metadata),
                **({"tools": [dict(t) for t in e.tools]} if e.tools else {}),
                **({"variables": dict(e.variables)} if e.variables else {}),
            }
            for e in self._examples
        ]


def load_dataset(
    path_or_records: str | PathLike[str] | Sequence[Mapping[str, object]] | FrameLike,
    *,
    input_field: str | None = None,
    output_field: str | None = None,
    name: str | None = None,
    variables: Mapping[str, str] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> Dataset:
    """Load a dataset from a file (.jsonl/.json/.csv), a list of dicts or a pandas DataFrame,
    or a dataset source a plugin reads (``mlflow:NAME``: :mod:`reflex.data.sources`).

    ``input_field`` names the input field (the record is then read as plain ``input``);
    ``output_field`` names the reference field in any schema. ``variables`` (a chat template's
    variable -> field) binds each row to the template (:func:`reflex.data.records.parse_bound`):
    rows then need no input field, and one missing a variable's field is a file:line error.
    ``tools`` are the run's function schemas (``--tools``), against which a row without its own
    ``tools`` has its reference call checked (a call naming a function not offered is refused,
    naming the file and line).
    """
    source: str | None = None
    rows: Iterable[Row]
    is_path = isinstance(path_or_records, str | PathLike)
    named = read_source(str(path_or_records)) if is_path else None
    if named is not None:  # a dataset source, scheme:rest (reflex.data.sources)
        source = label = str(path_or_records)
        default_name, records = named
        rows = list(enumerate(records, start=1))
    elif isinstance(path_or_records, (str, PathLike)):
        path = Path(path_or_records)
        source = label = str(path)
        rows, default_name = iter_file(path, label, input_field), path.stem
    elif hasattr(path_or_records, "to_dict"):
        label, default_name = "<dataframe>", "dataframe"
        rows = frame_rows(path_or_records)
    elif isinstance(path_or_records, Sequence) and not isinstance(path_or_records, bytes):
        label, default_name = "<records>", "records"
        rows = list(enumerate(path_or_records, start=1))
    else:
        raise DatasetError(
            f"unknown dataset format: got {type(path_or_records).__name__}; pass a .jsonl/.json/"
            ".csv path, a list of dicts or a pandas DataFrame"
        )
    if isinstance(rows, list) and not rows:
        raise DatasetError("no records; the dataset needs at least one row", path=label, line=1)
    with _paused_gc():
        examples, index = _parse_rows(
            rows, label, input_field, output_field, variables, tools or ()
        )
        return Dataset._trusted(tuple(examples), index, name or default_name, source)


def bind_dataset(dataset: Dataset, variables: Mapping[str, str]) -> Dataset:
    """An in-memory dataset's rows bound to a chat template (variable -> field), from each
    row's variables (rows loaded for it already) or metadata; a row missing a field is an error
    naming its id."""
    rows: list[Example] = []
    for example in dataset:
        values: dict[str, str] = {}
        for name, key in variables.items():
            value = example.variables.get(name, example.metadata.get(key))
            if value is None:
                raise DatasetError(
                    f"row {example.id!r} has no field {key!r} for the template variable "
                    f"{{{{{name}}}}}; add it or map another field with --var {name}=FIELD",
                    path=dataset.source,
                )
            values[name] = value_text(value)
        rows.append(dataclasses.replace(example, variables=values))
    return dataset.subset(rows, dataset.name)


@contextlib.contextmanager
def _paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a large dataset is built (nothing here is cyclic).

    Each collection walks every object made so far, and 100,000 rows make ~1M of them: with
    collections on, loading 100k rows took ~1.4x as long.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _parse_rows(
    rows: Iterable[Row],
    label: str,
    input_field: str | None,
    output_field: str | None,
    variables: Mapping[str, str] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[Example], dict[str, int]]:
    """The examples, and each id's position (ids are checked unique here, naming both lines)."""
    examples: list[Example] = []
    first_line: dict[str, int] = {}
    index: dict[str, int] = {}
    has_output = False
    fast = output_field is None and input_field in (None, "input") and not variables and not tools
    for number, record in rows:
        example = parse_plain(record, input_field) if fast else None
        if variables:
            example = parse_bound(record, Where(label, number), output_field, variables)
        if example is None:
            example = parse_any(record, Where(label, number), input_field, output_field, tools)
        if example.id in first_line:
            raise Where(label, number).error(
                f"duplicate id {example.id!r} (also on line {first_line[example.id]}); "
                "ids must be unique: fix or remove one of the rows"
            )
        first_line[example.id] = number
        index[example.id] = len(examples)
        examples.append(example)
        if output_field and not has_output and isinstance(record, dict):  # a dict by now
            has_output = output_field in record
    if output_field and not has_output:
        raise DatasetError(
            f"output field {output_field!r} is in no record; check --output-field", path=label
        )
    return examples, index


def check_run_tools(
    dataset: Dataset,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None = None,
) -> None:
    """Refuse a reference call to a function the run's ``tools`` do not offer, in a row without
    its own tools (those were checked at load), and a ``tool_choice`` naming a function that a
    row is not offered (its own tools replace the run's). The run's tools are often set after
    the dataset was loaded, so this runs when the run starts, before any call; a row read from
    a file is named by its line, found again by its id."""
    _check_named_choice(dataset, tools, tool_choice)
    if not tools:
        return
    bad = next((e for e in dataset if not e.tools and not_offered(e.ideal, tools)), None)
    if bad is None:
        return
    where = _line_of(dataset.source, bad.id)
    if where is not None:
        check_offered(bad.ideal, tools, where)  # raises, naming file:line
    name = not_offered(bad.ideal, tools)
    raise DatasetError(
        f"row {bad.id!r}: the reference calls {name!r}, which the run's tools do not offer; "
        "fix the call's name or add the tool",
        path=dataset.source,
    )


def _check_named_choice(
    dataset: Dataset,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
) -> None:
    """A tool choice that names a function (``--tool-choice NAME``) must be offered to every
    row: a provider refuses the request otherwise, a paid call into the run."""
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str):
        return
    for example in dataset:
        offered = [tool_name(t) for t in (example.tools or tools or ())]
        if name in offered:
            continue
        shown = ", ".join(offered) or "none"
        message = (
            f"row {example.id!r} is not offered the function {name!r} that --tool-choice names "
            f"(its tools: {shown}); add it to the row's tools, or use --tool-choice auto or "
            "required"
        )
        where = _line_of(dataset.source, example.id)
        if where is not None:
            raise where.error(message.replace(f"row {example.id!r}", "the row", 1))
        raise DatasetError(message, path=dataset.source)


def check_feedback_field(
    train: Iterable[Example], name: str, filled: Mapping[str, str] | None = None
) -> None:
    """Refuse a feedback column (``--feedback-field``) that no train row has, or that fills a
    chat-template variable (``filled``: variable -> field), which would send it to the task
    model: a one-line ConfigurationError, before any call."""
    for variable, field in (filled or {}).items():
        if field == name:
            raise ConfigurationError(
                f"--feedback-field {name}: the column also fills the template variable "
                f"{{{{{variable}}}}}, so the task model would see it; keep the feedback in a "
                "column of its own"
            )
    rows = list(train)
    if any(example.metadata.get(name) is not None for example in rows):
        return
    columns = sorted({key for example in rows for key in example.metadata})
    shown = ", ".join(map(repr, columns[:12])) + (", ..." if len(columns) > 12 else "")
    raise ConfigurationError(
        f"--feedback-field {name}: no train row has a column {name!r} (the input and reference "
        f"fields are not feedback); their other columns: {shown or '(none)'}; check the name"
    )


def _line_of(source: str | None, example_id: str) -> Where | None:
    if source is None or not Path(source).is_file():
        return None
    try:
        for number, record in iter_file(Path(source), source, None):
            if isinstance(record, dict) and record_id(record, Where(source, number)) == example_id:
                return Where(source, number)
    except DatasetError:
        return None
    return None
