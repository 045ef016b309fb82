"""Reading dataset files into numbered raw records: JSON Lines, CSV, pandas DataFrames.

Standard library only, values exactly as written. Every error is a :class:`DatasetError` naming
the file and 1-based line; :mod:`reflex.data.dataset` turns the records into examples.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from reflex.data.encoding import UTF16_NO_BOM, bom_hint, looks_utf16, nul_problem
from reflex.data.files import file_problem
from reflex.errors import DatasetError

if TYPE_CHECKING:
    from _csv import Reader as CsvReader

__all__ = [
    "FrameLike",
    "MAX_RECORD_BYTES",
    "PLAIN_REFERENCES",
    "Row",
    "Where",
    "frame_rows",
    "iter_file",
    "read_file",
]

PLAIN_REFERENCES = ("ideal", "output", "expected", "answer", "target")
_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
# CSV cells cannot say "null": a blank cell in these columns means "not set".
_CSV_BLANK_IS_NONE = frozenset({"id", "split", "metadata", *PLAIN_REFERENCES})
# One record larger than this is a mistake (no model's context holds it), and reading it whole
# would only waste memory: refuse it, naming the line.
MAX_RECORD_BYTES = 16 * 2**20
_TOO_LONG = (
    f"record is over the {MAX_RECORD_BYTES // 2**20} MB limit (no model's context holds it); "
    "shorten the row or split it into several"
)
Row = tuple[int, object]  # (1-based line or record number, parsed value: checked by the reader)


class FrameLike(Protocol):
    """What we use of a pandas DataFrame (pandas itself is never imported here)."""

    def to_dict(self, orient: str) -> Sequence[Mapping[Hashable, object]]: ...


class Where(NamedTuple):  # a tuple: one is built per row, so it must be cheap
    """Where a record came from, for error messages."""

    path: str
    line: int

    def error(self, message: str) -> DatasetError:
        return DatasetError(message, path=self.path, line=self.line)


def read_file(path: Path, label: str, input_field: str | None) -> list[Row]:
    return list(iter_file(path, label, input_field))


def iter_file(path: Path, label: str, input_field: str | None) -> Iterator[Row]:
    """The file's records one by one (JSON Lines are parsed as they are read, so a caller that
    keeps only what it builds from each record never holds the whole file's parsed JSON)."""
    if path.is_dir():
        raise DatasetError("is a directory; pass the dataset file inside it", path=label)
    problem = file_problem(path)
    if problem is not None:
        raise DatasetError(problem, path=label)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return iter(_read_csv(path, label, input_field))
    return _read_jsonl(path, label, sniff=suffix not in _JSONL_SUFFIXES)


def _read_jsonl(path: Path, label: str, *, sniff: bool) -> Iterator[Row]:
    """Read JSON Lines; with ``sniff`` (unknown suffix) a first line that is not an object fails."""
    rows = 0
    with path.open("rb") as handle:
        number = offset = 0
        while raw := handle.readline(MAX_RECORD_BYTES + 1):
            number += 1
            if len(raw) > MAX_RECORD_BYTES:
                raise DatasetError(_TOO_LONG, path=label, line=number)
            text = _decode_line(raw, label, number)
            offset += len(raw)
            if not text.strip():
                continue
            try:
                value = load_json(text)
            except json.JSONDecodeError as exc:
                if not (sniff and not rows):
                    raise DatasetError(
                        _json_problem(exc, raw, offset - len(raw)), path=label, line=number
                    ) from None
                value = None
            if sniff and not rows and not isinstance(value, dict):
                raise DatasetError(
                    f"unknown format: suffix {path.suffix!r} is not .jsonl, .json or .csv and "
                    "the file is not JSON Lines; rename it with the right suffix",
                    path=label,
                    line=number,
                )
            rows += 1
            yield number, value
    if not rows:
        raise DatasetError("empty file; write one JSON object per line", path=label, line=1)


_SCAN: Callable[[str, int], tuple[object, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> object:
    """``json.loads(text)``, minus its per-call overhead for the usual ``{...}\n`` line.

    The same C scanner ``json.loads`` uses, called at the first character; anything else
    (leading whitespace, trailing data, an error to report) goes through ``json.loads``.
    """
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text) and not text[end:].isspace():
        return json.loads(text)  # raises "Extra data" with its position
    return value


def _json_problem(exc: json.JSONDecodeError, raw: bytes, offset: int) -> str:
    """The message for line ``raw`` (at byte ``offset`` of the file) that is not JSON.

    A stray NUL byte is named with its column and byte offset (JSON never allows one, and
    "invalid control character" does not say which); NULs on alternate bytes are UTF-16.
    """
    if b"\x00" in raw and not looks_utf16(raw):
        return nul_problem(raw, offset) or ""
    return f"invalid JSON: {exc.msg} (column {exc.colno}); {_json_hint(exc.doc)}"


def _json_hint(text: str) -> str:
    """The likely cause of a line that is not JSON, when the bytes show one."""
    if "\x00" in text:
        return UTF16_NO_BOM
    if "\r" in text.rstrip("\r\n"):
        return "the lines end in CR only (old Mac line endings): convert them to LF or CRLF"
    return "each line must be one JSON object"


def load_json(text: str) -> object:
    """``json.loads``, where every failure is a JSONDecodeError with a message a user can act on.

    ``json.loads`` also raises RecursionError (arrays nested ~1,000 deep) and ValueError (an
    integer of more than 4,300 digits): tracebacks, before this.
    """
    try:
        return _loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        problem = "values nested too deeply (over ~1,000 levels)"
    except ValueError as exc:
        problem = f"a number too long to read ({str(exc).split(':')[-1].strip()}); quote it"
    raise json.JSONDecodeError(problem, text, 0) from None


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
        hint = bom_hint(raw) if number == 1 else ""
        raise DatasetError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}){hint}; "
            "re-save the file as UTF-8",
            path=label,
            line=number,
        ) from None


def _read_csv(path: Path, label: str, input_field: str | None) -> list[Row]:
    whole = path.read_bytes()
    data = whole.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problem = f"not valid UTF-8{bom_hint(data)}; re-save the file as UTF-8"
        raise Where(label, line).error(problem) from None
    _check_csv_nul(data, label, len(whole) - len(data))
    # The field limit is process-wide; raise it (never lower it) to our own record limit.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))
    # strict: an unterminated quote is an error, not a field that swallows the rest of the file.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        return _csv_rows(reader, label, input_field)
    except csv.Error as exc:  # in the header; row errors name the row's first line below
        raise _csv_error(exc, label, reader.line_num) from None


def _check_csv_nul(data: bytes, label: str, skipped: int) -> None:
    """Refuse a NUL byte anywhere in the CSV ``data`` (which starts ``skipped`` bytes into the
    file): the csv module reads it into a cell the model would be sent."""
    at = data.find(b"\x00")
    if at < 0:
        return
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
    raw = data[start : len(data) if end < 0 else end + 1]
    problem = nul_problem(raw, skipped + start) or ""
    raise Where(label, data[:start].count(b"\n") + 1).error(problem)


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
        rows.append((line, _csv_record(columns, values, Where(label, line))))
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


def _csv_record(columns: list[str], values: list[str], where: Where) -> dict[str, object]:
    record: dict[str, object] = {}
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


def frame_rows(frame: FrameLike) -> list[Row]:
    records = frame.to_dict("records")
    return [
        (number, {str(key): _plain_value(value) for key, value in record.items()})
        for number, record in enumerate(records, start=1)
    ]


def _plain_value(value: object) -> object:
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
