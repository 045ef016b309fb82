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

import codecs
import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from reflex.errors import DatasetError
from reflex.types import Example

if TYPE_CHECKING:
    from _csv import Reader as CsvReader

__all__ = ["MAX_RECORD_BYTES", "SPLIT_NAMES", "Dataset", "load_dataset"]

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")
_SPLIT_ALIASES = {"train": "train", "val": "val", "validation": "val", "test": "test"}
_PLAIN_REFERENCES = ("ideal", "output", "expected", "answer", "target")
_CHAT_REFERENCES = ("ideal", "output", "expected", "answer")
_SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}
_ACCEPTED = "'messages' (OpenAI), 'conversations' (ShareGPT), 'instruction' (Alpaca), 'input'"
_INPUT_KEYS = ("messages", "conversations", "instruction", "input")
_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
# CSV cells cannot say "null": a blank cell in these columns means "not set".
_CSV_BLANK_IS_NONE = frozenset({"id", "split", "metadata", *_PLAIN_REFERENCES})
# One record larger than this is a mistake (no model's context holds it), and reading it whole
# would only waste memory: refuse it, naming the line.
MAX_RECORD_BYTES = 16 * 2**20
_TOO_LONG = (
    f"record is over the {MAX_RECORD_BYTES // 2**20} MB limit (no model's context holds it); "
    "shorten the row or split it into several"
)

_RESERVED = frozenset({"id", "split", "metadata"})
Row = tuple[int, Any]  # (1-based line or record number, parsed value)


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

    def to_records(self) -> list[dict[str, Any]]:
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


class _Where(NamedTuple):  # a tuple: one is built per row, so it must be cheap
    """Where a record came from, for error messages."""

    path: str
    line: int

    def error(self, message: str) -> DatasetError:
        return DatasetError(message, path=self.path, line=self.line)


def load_dataset(
    path_or_records: str | PathLike[str] | Sequence[Mapping[str, Any]] | Any,
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
        rows, default_name = _read_file(path, label, input_field), path.stem
    elif hasattr(path_or_records, "to_dict"):
        label, default_name = "<dataframe>", "dataframe"
        rows = _frame_rows(path_or_records)
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


def _read_file(path: Path, label: str, input_field: str | None) -> list[Row]:
    if path.is_dir():
        raise DatasetError("is a directory; pass the dataset file inside it", path=label)
    if not path.is_file():
        raise DatasetError("file not found; check the path and the working directory", path=label)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_csv(path, label, input_field)
    return _read_jsonl(path, label, sniff=suffix not in _JSONL_SUFFIXES)


def _read_jsonl(path: Path, label: str, *, sniff: bool) -> list[Row]:
    """Read JSON Lines; with ``sniff`` (unknown suffix) a first line that is not an object fails."""
    rows: list[Row] = []
    with path.open("rb") as handle:
        number = 0
        while raw := handle.readline(MAX_RECORD_BYTES + 1):
            number += 1
            if len(raw) > MAX_RECORD_BYTES:
                raise DatasetError(_TOO_LONG, path=label, line=number)
            text = _decode_line(raw, label, number)
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                problem = f"invalid JSON: {exc.msg} (column {exc.colno})"
                if not (sniff and not rows):
                    raise DatasetError(
                        f"{problem}; each line must be one JSON object", path=label, line=number
                    ) from None
                value = None
            if sniff and not rows and not isinstance(value, dict):
                raise DatasetError(
                    f"unknown format: suffix {path.suffix!r} is not .jsonl, .json or .csv and "
                    "the file is not JSON Lines; rename it with the right suffix",
                    path=label,
                    line=number,
                )
            rows.append((number, value))
    if not rows:
        raise DatasetError("empty file; write one JSON object per line", path=label, line=1)
    return rows


def _decode_line(raw: bytes, label: str, number: int) -> str:
    if number == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)
    elif raw.startswith(codecs.BOM_UTF8):
        raise DatasetError(
            "a byte-order mark (BOM) starts this line (were files concatenated?); remove it",
            path=label,
            line=number,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "re-save the file as UTF-8",
            path=label,
            line=number,
        ) from None


def _read_csv(path: Path, label: str, input_field: str | None) -> list[Row]:
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _Where(label, line).error("not valid UTF-8; re-save the file as UTF-8") from None
    # The field limit is process-wide; raise it (never lower it) to our own record limit.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))
    # strict: an unterminated quote is an error, not a field that swallows the rest of the file.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        return _csv_rows(reader, label, input_field)
    except csv.Error as exc:  # in the header; row errors name the row's first line below
        raise _csv_error(exc, label, reader.line_num) from None


def _csv_error(exc: csv.Error, label: str, line: int) -> DatasetError:
    if "field limit" in str(exc):
        return DatasetError(_TOO_LONG, path=label, line=line)
    return DatasetError(
        f"malformed CSV ({exc}); quote fields that contain commas, quotes or newlines, and "
        "close every quote",
        path=label,
        line=line,
    )


def _csv_rows(reader: CsvReader, label: str, input_field: str | None) -> list[Row]:
    header = next(reader, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(reader, None)
    if header is None:
        raise DatasetError("empty file; the first line must be a header", path=label, line=1)
    header_line = reader.line_num
    columns = [cell.strip() for cell in header]
    _check_csv_header(columns, label, header_line, input_field)
    rows: list[Row] = []
    start = reader.line_num + 1
    while True:
        line = start
        try:
            values = next(reader, None)
        except csv.Error as exc:
            raise _csv_error(exc, label, line) from None
        if values is None:
            break
        start = reader.line_num + 1
        if not values:
            continue
        if len(values) != len(columns):
            raise DatasetError(
                f"row has {len(values)} columns but the header has {len(columns)}; quote "
                "fields that contain commas or newlines",
                path=label,
                line=line,
            )
        rows.append((line, _csv_record(columns, values, _Where(label, line))))
    if not rows:
        raise DatasetError("no data rows below the header", path=label, line=header_line)
    return rows


def _check_csv_header(columns: list[str], label: str, line: int, input_field: str | None) -> None:
    duplicates = sorted({c for c in columns if columns.count(c) > 1})
    if duplicates:
        raise DatasetError(
            f"duplicate column names: {', '.join(duplicates)}; rename them", path=label, line=line
        )
    wanted = [input_field] if input_field else ["input", "instruction"]
    if not any(column in columns for column in wanted):
        raise DatasetError(
            f"CSV has no input column (looked for {' or '.join(map(repr, wanted))}); columns "
            f"are {', '.join(map(repr, columns))}; pass --input-field NAME (input_field=...)",
            path=label,
            line=line,
        )


def _csv_record(columns: list[str], values: list[str], where: _Where) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for column, value in zip(columns, values, strict=True):
        if column in _CSV_BLANK_IS_NONE and value == "":
            record[column] = None
        elif column == "metadata":
            try:
                record[column] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise where.error(f"column 'metadata' is not valid JSON: {exc.msg}") from None
        else:
            record[column] = value
    return record


def _frame_rows(frame: Any) -> list[Row]:
    records = frame.to_dict("records")
    return [
        (number, {str(key): _plain_value(value) for key, value in record.items()})
        for number, record in enumerate(records, start=1)
    ]


def _plain_value(value: Any) -> Any:
    """Turn pandas/numpy cell values into plain Python; a missing value (NaN, NA) becomes None."""
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes, list, dict)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return value
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _parse_rows(
    rows: list[Row], label: str, input_field: str | None, output_field: str | None
) -> list[Example]:
    examples: list[Example] = []
    first_line: dict[str, int] = {}
    for number, record in rows:
        where = _Where(label, number)
        example = _parse_record(record, where, input_field, output_field)
        if example.id in first_line:
            raise where.error(
                f"duplicate id {example.id!r} (also on line {first_line[example.id]}); "
                "ids must be unique: fix or remove one of the rows"
            )
        first_line[example.id] = number
        examples.append(example)
    if output_field and not any(output_field in record for _, record in rows):
        raise DatasetError(
            f"output field {output_field!r} is in no record; check --output-field", path=label
        )
    return examples


def _parse_record(
    record: Any, where: _Where, input_field: str | None, output_field: str | None
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
    record: dict[str, Any], where: _Where, input_field: str | None, output_field: str | None
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


def _openai_message(item: Any, field: str, where: _Where) -> dict[str, str]:
    if not isinstance(item, dict) or "role" not in item or "content" not in item:
        raise where.error(f"{field} must be an object with 'role' and 'content', got {_kind(item)}")
    role = _text(item["role"], f"{field}.role", where)
    return {"role": role, "content": _text(item["content"], f"{field}.content", where)}


def _sharegpt_message(item: Any, field: str, where: _Where) -> dict[str, str]:
    if not isinstance(item, dict) or "from" not in item or "value" not in item:
        raise where.error(f"{field} must be an object with 'from' and 'value', got {_kind(item)}")
    role = _SHAREGPT_ROLES.get(item["from"]) if isinstance(item["from"], str) else None
    if role is None:
        raise where.error(f"{field}.from is {item['from']!r}; allowed: human, gpt, system")
    return {"role": role, "content": _text(item["value"], f"{field}.value", where)}


def _reference(
    record: dict[str, Any], where: _Where, keys: Sequence[str]
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


def _text(value: Any, field: str, where: _Where) -> str:
    if not isinstance(value, str):
        raise where.error(f"field {field!r} must be a string, got {_kind(value)}")
    return value


def _record_id(record: dict[str, Any], where: _Where) -> str:
    value = record.get("id")
    if value is None:
        return hashlib.sha256(_canonical(record).encode("utf-8")).hexdigest()[:16]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise where.error(f"field 'id' must be a non-empty string or integer, got {value!r}")
    return str(value)


def _record_split(value: Any, where: _Where) -> str | None:
    if value is None:
        return None
    split = _SPLIT_ALIASES.get(value.strip().lower()) if isinstance(value, str) else None
    if split is None:
        raise where.error(
            f"field 'split' is {value!r}; allowed values: train, val (or validation), test; "
            "or leave it out to let the splitter decide"
        )
    return split


def _metadata(record: dict[str, Any], used: set[str], where: _Where) -> dict[str, Any]:
    nested = record.get("metadata")
    if nested is not None and not isinstance(nested, dict):
        raise where.error(f"field 'metadata' must be an object, got {_kind(nested)}")
    skip = used | _RESERVED
    metadata = {key: value for key, value in record.items() if key not in skip}
    return {**nested, **metadata} if nested else metadata


def _kind(value: Any) -> str:
    """A JSON-flavoured type name for error messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _field_list(record: Mapping[str, Any]) -> str:
    return ", ".join(map(repr, record)) or "(none)"


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
