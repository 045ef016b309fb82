"""Convert BFCL rows (Berkeley Function Calling Leaderboard) into reflex tool-call rows.

    python examples/tool_calls/convert_bfcl.py BFCL.jsonl OUT.jsonl

A BFCL row (as in ``../shared/datasets/bfcl_*.jsonl``) holds ``messages`` (the user turn),
``functions`` (BFCL's function documentation) and ``ground_truth`` (a list of calls, each
``{function: {argument: [acceptable values...]}}``; ``""`` among them: the argument may be left
out). The row written is OpenAI's fine-tuning format for function calling, plus BFCL's answers:

- ``messages``: the user turn, then an assistant message whose ``tool_calls`` make each call
  with the first acceptable value of every argument (an argument whose first acceptable value is
  ``""`` is left out): the reference any metric sees as the answer text;
- ``tools``: each function as an OpenAI function schema. BFCL's types become JSON Schema types
  (``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` -> ``array``, ``any`` -> no type)
  and BFCL's non-standard ``optional`` flag is dropped (``required`` already says it);
- ``metadata.ground_truth``: BFCL's ``ground_truth`` unchanged, which the ``tool_call`` metric
  reads first, so every acceptable value and every optional argument counts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def schema(value: Any) -> Any:
    """BFCL's parameter documentation as JSON Schema (recursively)."""
    if isinstance(value, list):
        return [schema(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "optional":
            continue
        if key == "type" and isinstance(item, str):
            if item == "any":
                continue
            out[key] = TYPES.get(item, item)
        elif key == "properties" and isinstance(item, Mapping):
            out[key] = {name: schema(prop) for name, prop in item.items()}
        else:
            out[key] = schema(item)
    return out


def first(value: Any) -> Any:
    """The first acceptable value; BFCL writes an object's values as lists of them too."""
    if isinstance(value, Mapping):
        return {k: first(v[0]) for k, v in value.items() if isinstance(v, list) and v[0] != ""}
    if isinstance(value, list):
        return [first(v) for v in value]
    return value


def convert(row: Mapping[str, Any]) -> dict[str, Any]:
    calls = []
    for i, call in enumerate(row["ground_truth"]):
        ((name, arguments),) = call.items()
        chosen = {k: first(v[0]) for k, v in arguments.items() if v and v[0] != ""}
        function = {"name": name, "arguments": json.dumps(chosen)}
        calls.append({"id": f"call_{i}", "type": "function", "function": function})
    tools = [{"type": "function", "function": schema(f)} for f in row["functions"]]
    reference = {"role": "assistant", "content": None, "tool_calls": calls}
    return {
        "id": row["id"],
        "messages": [*row["messages"], reference],
        "tools": tools,
        "metadata": {"ground_truth": row["ground_truth"]},
    }


def main(argv: list[str]) -> None:
    source, target = Path(argv[0]), Path(argv[1])
    lines = source.read_text(encoding="utf-8").splitlines()
    rows = [convert(json.loads(line)) for line in lines if line.strip()]
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{len(rows)} rows -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
