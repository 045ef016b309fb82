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
    read_file,
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
    if isinstance(path_or_records, (str, PathLike)):
        path = Path(path_or_records)
        source = label = str(path)
        rows, default_name = read_file(path, label, input_field), path.stem
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
    if not rows:
        raise DatasetError("no records; the dataset needs at least one row", path=label, line=1)
    examples = _parse_rows(rows, label, input_field, output_field)
    return Dataset(examples, name=name or default_name, source=source)


def _parse_rows(
    rows: list[Row], label: str, input_field: str | None, output_field: str | None
) -> list[Example]:
    examples: list[Example] = []
    first_line: dict[str, int] = {}
    for number, record in rows:
        where = Where(label, number)
        example = _parse_record(record, where, input_field, output_field)
        if example.id in first_line:
            raise where.error(
                f"duplicate id {example.id!r} (also on line {first_line[example.id]}); "
                "ids must be unique: fix or remove one of the rows"
            )
        first_line[example.id] = number
        examples.append(example)
    # Every record is an object by now (``_parse_record`` refused the others).
    if output_field and not any(
        isinstance(record, dict) and output_field in record for _, record in rows
    ):
        raise DatasetError(
            f"output field {output_field!r} is in no record; check --output-field", path=label
        )
    return examples


def _parse_record(
    record: object, where: Where, input_field: str | None, output_field: str | None
) -> Example:
    if not isinstance(record, dict):
        hint = "; the file looks like a JSON array: write one object per line (JSON Lines)"
        raise where.error(
            f"record is not a JSON object (got {_kind(record)}); write one object per line"
            + (hint if isinstance(record, list) else "")
        )
    messages, ideal, used = _extract(record, where, input_field, output_field)
    return Example(
        id=_record_id(record, where),
        messages=messages,
        ideal=ideal,
        metadata=_metadata(record, used, where),
        split=_record_split(record.get("split"), where),
    )


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


def _openai_message(item: object, field: str, where: Where) -> dict[str, str]:
    if not isinstance(item, dict) or "role" not in item or "content" not in item:
        raise where.error(f"{field} must be an object with 'role' and 'content', got {_kind(item)}")
    role = _text(item["role"], f"{field}.role", where)
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
