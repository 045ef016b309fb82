"""One record, one :class:`Example`: the record schemas a dataset accepts, and their errors.

Detected per record in this order:

- OpenAI chat: ``{"messages": [{"role", "content"}, ...], "ideal": ...}``; without an explicit
  reference (``ideal`` / ``output`` / ``expected`` / ``answer``) a final assistant message
  becomes the reference and is removed from the conversation. Tool-call turns (assistant
  ``tool_calls``, ``tool`` results) are kept whole; a final assistant message's calls are the
  reference answer text (:mod:`reflex.data.tool_rows`), and a row's ``tools`` go to
  ``Example.tools`` (any schema).
- ShareGPT: ``{"conversations": [{"from": "human"|"gpt"|"system", "value"}, ...]}``; same rule.
- Alpaca: ``{"instruction", "input", "output"}``; the user message is instruction + input.
- Plain: ``{"input", "ideal"}`` (or ``output`` / ``expected`` / ``answer`` / ``target``).

``parse_plain`` reads the common plain record in one step; ``parse_any`` reads every schema and
raises a :class:`DatasetError` naming the file, the 1-based line and what to fix.
:mod:`reflex.data.dataset` checks ids across records and builds the :class:`Dataset`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence

from reflex.data.readers import PLAIN_REFERENCES, Where
from reflex.data.templates import value_text
from reflex.data.tool_rows import check_offered, is_tool_message, reference, row_tools, tool_message
from reflex.errors import MissingInputError
from reflex.result import Example

__all__ = ["canonical", "parse_any", "parse_bound", "parse_plain", "parse_record", "record_id"]

_SPLIT_ALIASES = {"train": "train", "val": "val", "validation": "val", "test": "test"}
_PLAIN_REFERENCES = PLAIN_REFERENCES
_CHAT_REFERENCES = ("ideal", "output", "expected", "answer")
_SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}
_ACCEPTED = "'messages' (OpenAI), 'conversations' (ShareGPT), 'instruction' (Alpaca), 'input'"
_INPUT_KEYS = ("messages", "conversations", "instruction", "input")

_RESERVED = frozenset({"id", "split", "metadata", "tools", "variables"})


def parse_record(
    record: object,
    where: Where,
    input_field: str | None,
    output_field: str | None,
    tools: Sequence[Mapping[str, object]] = (),
) -> Example:
    """One record as an Example (what :func:`reflex.data.dataset.load_dataset` builds of it);
    ``tools`` are the run's, offered to rows that name none."""
    if output_field is None and input_field in (None, "input") and not tools:
        plain = parse_plain(record, input_field)
        if plain is not None:
            return plain
    return parse_any(record, where, input_field, output_field, tools)


def parse_plain(record: object, input_field: str | None) -> Example | None:
    """The common plain record (string ``id``, ``input`` and reference) in one step; None for
    anything else, which :func:`parse_any` reads (and reports) the general way."""
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


def parse_any(
    record: object,
    where: Where,
    input_field: str | None,
    output_field: str | None,
    tools: Sequence[Mapping[str, object]] = (),
) -> Example:
    if not isinstance(record, dict):
        hint = "; the file looks like a JSON array: write one object per line (JSON Lines)"
        raise where.error(
            f"record is not a JSON object (got {_kind(record)}); write one object per line"
            + (hint if isinstance(record, list) else "")
        )
    _refuse_lone_surrogates(record, where)
    messages, ideal, used = _extract(record, where, input_field, output_field)
    offered = row_tools(record, where)
    check_offered(ideal, offered or tools, where)
    return Example(
        id=record_id(record, where),
        messages=messages,
        ideal=ideal,
        metadata=_metadata(record, used, where),
        split=_record_split(record.get("split"), where),
        tools=offered,
        variables=_variables(record, where),
    )


def _variables(record: Mapping[str, object], where: Where) -> dict[str, str]:
    """A record's ``variables`` (a chat template's values, as ``Dataset.to_records`` writes a
    bound row): an object of names to values; none: {}."""
    raw = record.get("variables")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise where.error(f"field 'variables' must be an object, got {_kind(raw)}")
    return {str(name): value_text(value) for name, value in raw.items()}


def parse_bound(
    record: object, where: Where, output_field: str | None, variables: Mapping[str, str]
) -> Example:
    """A row for a chat template: ``variables`` maps each variable to the field that fills it.

    The row needs no input field: its one user message is the variables as a JSON line (what
    metrics and reasoning prompts show as its input); the template is what the model is sent.
    """
    if not isinstance(record, dict):
        return parse_any(record, where, None, output_field)  # reports the record's shape
    _refuse_lone_surrogates(record, where)
    values: dict[str, str] = {}
    # A row Dataset.to_records wrote holds its values by name under "variables" (and their
    # JSON line as its messages).
    saved = record.get("variables")
    saved = saved if isinstance(saved, dict) else {}
    for name, key in variables.items():
        value = record.get(key, saved.get(name))
        if value is None:
            how = "is null" if key in record or name in saved else "is missing"
            hint = f"map another field with --var {name}=FIELD" if key == name else "check --var"
            raise where.error(
                f"field {key!r} for the template variable {{{{{name}}}}} {how}; fields are "
                f"{_field_list(record)}; add it to the row or {hint}"
            )
        values[name] = value_text(value)
    refs = (output_field,) if output_field else _PLAIN_REFERENCES
    ideal, ref_key = _reference(record, where, refs)
    used = set(variables.values()) | ({ref_key} if ref_key else set()) | {"tools", "variables"}
    if saved:
        used.add("messages")
    content = json.dumps(values, ensure_ascii=False)
    return Example(
        id=record_id(record, where),
        messages=({"role": "user", "content": content},),
        ideal=ideal,
        metadata=_metadata(record, used, where),
        split=_record_split(record.get("split"), where),
        variables=values,
        tools=row_tools(record, where),
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
) -> tuple[tuple[dict[str, object], ...], str | None, set[str]]:
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
        message = f"no input: expected {need}; fields are {_field_list(record)}; {fix}"
        raise MissingInputError(message, path=where.path, line=where.line)
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
        ideal = reference(messages.pop())  # its tool calls, if any, as the answer text
    if not messages:
        raise where.error(f"field {key!r} holds only an assistant reply; add the user message")
    return tuple(messages), ideal, used


_ROLES = ("system", "developer", "user", "assistant")


def _openai_message(item: object, field: str, where: Where) -> dict[str, object]:
    if isinstance(item, dict) and is_tool_message(item):
        return tool_message(item, field, where)  # kept whole: calls, results, their ids
    if not isinstance(item, dict) or "role" not in item or "content" not in item:
        raise where.error(f"{field} must be an object with 'role' and 'content', got {_kind(item)}")
    role = _text(item["role"], f"{field}.role", where)
    if role not in _ROLES:
        raise where.error(f"{field}.role is {role!r}; allowed: {', '.join(_ROLES)}")
    return {"role": role, "content": _text(item["content"], f"{field}.content", where)}


def _sharegpt_message(item: object, field: str, where: Where) -> dict[str, object]:
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


def record_id(record: Mapping[str, object], where: Where) -> str:
    value = record.get("id")
    if value is None:
        return hashlib.sha256(canonical(record).encode("utf-8")).hexdigest()[:16]
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


def canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
