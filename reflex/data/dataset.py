"""Datasets: load JSONL, CSV, plain records or a pandas DataFrame into :class:`Example` rows.

Accepted record schemas, detected per record in this order:

- OpenAI chat: ``{"messages": [{"role", "content"}, ...], "ideal": ...}``; without an explicit
  reference (``ideal`` / ``output`` / ``expected`` / ``answer``) a final assistant message
  becomes the reference and is removed from the conversation.
- ShareGPT: ``{"conversations": [{"from": "human"|"gpt"|"system", "value"}, ...]}``; same rule.
- Alpaca: ``{"instruction", "input", "output"}``; the user message is instruction + input.
- Plain: ``{"input", "ideal"}`` (or ``output`` / ``expected`` / ``answer`` / ``target``).

Files are read with the standard library only (no pandas): values stay exactly as written, so a
CSV ``007`` stays ``"007"`` and ``NA`` stays ``"NA"``. Every error is a :class:`DatasetError`
naming the file and 1-based line. A dataset is loaded completely or not at all.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path

from reflex.data.json_types import JSONDict
from reflex.data.readers import (
    MAX_RECORD_BYTES,
    PLAIN_REFERENCES,
    FrameLike,
    Row,
    Where,
    frame_rows,
    iter_file,
)
from reflex.errors import DatasetError
from reflex.types import Example

__all__ = ["MAX_RECORD_BYTES", "SPLIT_NAMES", "Dataset", "load_dataset"]

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")
_SPLIT_ALIASES = {"train": "train", "val": "val", "validation": "val", "test": "test"}
_PLAIN_REFERENCES = PLAIN_REFERENCES
_CHAT_REFERENCES = ("ideal", "output", "expected", "answer")
_SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}
_ACCEPTED = "'messages' (OpenAI), 'conversations' (ShareGPT), 'instruction' (Alpaca), 'input'"
_INPUT_KEYS = ("messages", "conversations", "instruction", "input")

_RESERVED = frozenset({"id", "split", "metadata"})


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
        """sha256 of ids, messages and references; independent of row order and of the run."""
        rows = sorted([e.id, [dict(m) for m in e.messages], e.ideal] for e in self._examples)
        return hashlib.sha256(_canonical(rows).encode("utf-8")).hexdigest()

    def to_records(self) -> list[JSONDict]:
        """Plain dicts in the OpenAI-chat schema; ``load_dataset`` reads them back unchanged."""
        return [
            {
                "id": e.id,
                "messages": [dict(m) for m in e.messages],
                "ideal": e.ideal,
                "split": e.split,
                "metadata": dict(e.metadata),
            }
            for e in self._examples
        ]


def load_dataset(
    path_or_records: str | PathLike[str] | Sequence[Mapping[str, object]] | FrameLike,
    *,
    input_field: str | None = None,
    output_field: str | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a dataset from a file (.jsonl/.json/.csv), a list of dicts or a pandas DataFrame.

    ``input_field`` names the input field (the record is then read as plain ``input``);
    ``output_field`` names the reference field in any schema.
    """
    source: str | None = None
    rows: Iterable[Row]
    if isinstance(path_or_records, (str, PathLike)):
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
        examples, index = _parse_rows(rows, label, input_field, output_field)
        return Dataset._trusted(tuple(examples), index, name or default_name, source)


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
    rows: Iterable[Row], label: str, input_field: str | None, output_field: str | None
) -> tuple[list[Example], dict[str, int]]:
    """The examples, and each id's position (ids are checked unique here, naming both lines)."""
    examples: list[Example] = []
    first_line: dict[str, int] = {}
    index: dict[str, int] = {}
    has_output = False
    fast = output_field is None and input_field in (None, "input")
    for number, record in rows:
        example = _parse_plain(record, input_field) if fast else None
        if example is None:
            example = _parse_any(record, Where(label, number), input_field, output_field)
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


def _parse_record(
    record: object, where: Where, input_field: str | None, output_field: str | None
) -> Example:
    """One record as an Example (the same as what :func:`_parse_rows` builds)."""
    if output_field is None and input_field in (None, "input"):
        plain = _parse_plain(record, input_field)
        if plain is not None:
            return plain
    return _parse_any(record, where, input_field, output_field)


def _parse_plain(record: object, input_field: str | None) -> Example | None:
    """The common plain record (string ``id``, ``input`` and reference) in one step; None for
    anything else, which :func:`_parse_any` reads (and reports) the general way."""
    if type(record) is not dict:
        return None
    text, example_id = record.get("input"), record.get("id")
    if type(text) is not str or type(example_id) is not str or not example_id:
        return None
    if input_field is None and (
        "messages" in record or "conversations" in record or "instruction" in record
    ):
        return None  # another schema's input key comes first
    if "split" in record or "metadata" in record:
        return None
    ideal, used = None, "input"
    for key in _PLAIN_REFERENCES:
        if key in record:
            value, used = record[key], key
            if value is not None and type(value) is not str:
                return None  # numbers, NaN, booleans: the general rules
            ideal = value
            break
    metadata = {k: v for k, v in record.items() if k != "input" and k != used and k != "id"}
    if not _storable(text, example_id, ideal, *metadata.values()):
        return None  # a lone surrogate or a nested value: the general path reports or reads it
    messages = ({"role": "user", "content": text},)
    return Example(id=example_id, messages=messages, ideal=ideal, metadata=metadata, split=None)


def _storable(*values: object) -> bool:
    """True when every value is a scalar and every string encodes as UTF-8 (no lone surrogate)."""
    for value in values:
        if type(value) is str:
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif value is not None and type(value) not in (int, float, bool):
            return False
    return True


def _parse_any(
    record: object, where: Where, input_field: str | None, output_field: str | None
) -> Example:
    if not isinstance(record, dict):
        hint = "; the file looks like a JSON array: write one object per line (JSON Lines)"
        raise where.error(
            f"record is not a JSON object (got {_kind(record)}); write one object per line"
            + (hint if isinstance(record, list) else "")
        )
    _refuse_lone_surrogates(record, where)
    messages, ideal, used = _extract(record, where, input_field, output_field)
    return Example(
        id=_record_id(record, where),
        messages=messages,
        ideal=ideal,
        metadata=_metadata(record, used, where),
        split=_record_split(record.get("split"), where),
    )


def _refuse_lone_surrogates(record: Mapping[str, object], where: Where) -> None:
    """A ``\\ud800``-style escape decodes to half a character that no file, cache or provider
    can store (UnicodeEncodeError, a half-written run): refused here, before anything runs."""
    text = json.dumps(record, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end].encode("utf-8", "backslashreplace").decode("ascii")
        raise where.error(
            f"holds a lone surrogate ({bad}), half of a character that cannot be stored; "
            "fix the \\u escape (a pair such as \\ud83d\\ude00 is one character)"
        ) from None


def _extract(
    record: Mapping[str, object], where: Where, input_field: str | None, output_field: str | None
) -> tuple[tuple[dict[str, str], ...], str | None, set[str]]:
    """The conversation, the reference and the fields they used."""
    key = input_field or None
    if key is None:
        for candidate in _INPUT_KEYS:
            if candidate in record:
                key = candidate
                break
    if key is None or key not in record:
        fix = "check --input-field" if key else "or pass --input-field NAME (input_field=...)"
        need = f"field {key!r}" if key else f"one of {_ACCEPTED}"
        raise where.error(f"no input: expected {need}; fields are {_field_list(record)}; {fix}")
    plain = key == input_field or key == "input"
    refs = (output_field,) if output_field else _PLAIN_REFERENCES if plain else _CHAT_REFERENCES
    ideal, ref_key = _reference(record, where, refs)
    used = {key} | ({ref_key} if ref_key else set())
    if plain:
        return ({"role": "user", "content": _text(record[key], key, where)},), ideal, used
    if key == "instruction":
        content, extra = _text(record[key], key, where), record.get("input")
        if extra is not None and _text(extra, "input", where):
            content = f"{content}\n\n{extra}"
        return ({"role": "user", "content": content},), ideal, used | {"input"}
    raw = record[key]
    if not isinstance(raw, list) or not raw:
        raise where.error(f"field {key!r} must be a non-empty list of messages, got {_kind(raw)}")
    convert = _openai_message if key == "messages" else _sharegpt_message
    messages = [convert(item, f"{key}[{i}]", where) for i, item in enumerate(raw)]
    if ref_key is None and messages[-1]["role"] == "assistant":
        ideal = messages.pop()["content"]
    if not messages:
        raise where.error(f"field {key!r} holds only an assistant reply; add the user message")
    return tuple(messages), ideal, used


_ROLES = ("system", "developer", "user", "assistant")
_TOOL_KEYS = ("tool_calls", "function_call", "tool_call_id")


def _openai_message(item: object, field: str, where: Where) -> dict[str, str]:
    tool = [k for k in _TOOL_KEYS if isinstance(item, dict) and item.get(k) is not None]
    if tool or (isinstance(item, dict) and item.get("role") in ("tool", "function")):
        what = f"{tool[0]!r}" if tool else f"role {item['role']!r}"  # type: ignore[index]
        raise where.error(
            f"{field} is part of a tool-call conversation ({what}), which reflex cannot send "
            "faithfully yet (the calls would be dropped); remove the tool turns from this row"
        )
    if not isinstance(item, dict) or "role" not in item or "content" not in item:
        raise where.error(f"{field} must be an object with 'role' and 'content', got {_kind(item)}")
    role = _text(item["role"], f"{field}.role", where)
    if role not in _ROLES:
        raise where.error(f"{field}.role is {role!r}; allowed: {', '.join(_ROLES)}")
    return {"role": role, "content": _text(item["content"], f"{field}.content", where)}


def _sharegpt_message(item: object, field: str, where: Where) -> dict[str, str]:
    if not isinstance(item, dict) or "from" not in item or "value" not in item:
        raise where.error(f"{field} must be an object with 'from' and 'value', got {_kind(item)}")
    role = _SHAREGPT_ROLES.get(item["from"]) if isinstance(item["from"], str) else None
    if role is None:
        raise where.error(f"{field}.from is {item['from']!r}; allowed: human, gpt, system")
    return {"role": role, "content": _text(item["value"], f"{field}.value", where)}


def _reference(
    record: Mapping[str, object], where: Where, keys: Sequence[str]
) -> tuple[str | None, str | None]:
    """The reference value and the key it came from (None, None when no key is present)."""
    for key in keys:
        if key in record:
            value = record[key]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return None, key
            if isinstance(value, bool):
                return json.dumps(value), key
            if isinstance(value, (str, int, float)):
                return str(value), key
            raise where.error(
                f"field {key!r} (the reference) must be a string or number, got {_kind(value)}"
            )
    return None, None


def _text(value: object, field: str, where: Where) -> str:
    if not isinstance(value, str):
        raise where.error(f"field {field!r} must be a string, got {_kind(value)}")
    return value


def _record_id(record: Mapping[str, object], where: Where) -> str:
    value = record.get("id")
    if value is None:
        return hashlib.sha256(_canonical(record).encode("utf-8")).hexdigest()[:16]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise where.error(f"field 'id' must be a non-empty string or integer, got {value!r}")
    return str(value)


def _record_split(value: object, where: Where) -> str | None:
    if value is None:
        return None
    split = _SPLIT_ALIASES.get(value.strip().lower()) if isinstance(value, str) else None
    if split is None:
        raise where.error(
            f"field 'split' is {value!r}; allowed values: train, val (or validation), test; "
            "or leave it out to let the splitter decide"
        )
    return split


def _metadata(record: Mapping[str, object], used: set[str], where: Where) -> dict[str, object]:
    nested = record.get("metadata")
    if nested is not None and not isinstance(nested, dict):
        raise where.error(f"field 'metadata' must be an object, got {_kind(nested)}")
    skip = used | _RESERVED
    metadata = {key: value for key, value in record.items() if key not in skip}
    return {**nested, **metadata} if nested else metadata


def _kind(value: object) -> str:
    """A JSON-flavoured type name for error messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _field_list(record: Mapping[str, object]) -> str:
    return ", ".join(map(repr, record)) or "(none)"


def _canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
