"""Read a W&B offline run back from its ``.wandb`` transaction log (no server, no subprocess).

The file is LevelDB-log framing around protobuf ``Record`` messages: a 7-byte header
``<4sHB`` = (b":W&B", 0xBEE1, version), then 32 KiB blocks of chunks ``<IHB`` = (crc32, length,
type) with type FULL=1, FIRST=2, MIDDLE=3, LAST=4. Call ``wandb.teardown()`` before reading:
``run.finish()`` returns before the file is flushed.
"""

from __future__ import annotations

import glob
import json
import os
import struct
from collections.abc import Iterator
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

__all__ = ["load_run", "records"]

BLOCK = 32768
HEADER = 7


def records(path: str) -> Iterator[Any]:
    """Every protobuf Record in the file, in order."""
    with open(path, "rb") as handle:
        data = handle.read()
    ident, magic, _version = struct.unpack("<4sHB", data[:HEADER])
    assert ident == b":W&B" and magic == 0xBEE1, f"{path} is not a .wandb file"
    pos, buf = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - (pos % BLOCK)
        if left < HEADER:  # block trailer padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        pos += HEADER
        if kind == 0 and length == 0:  # zero fill to the end of the block
            pos += (BLOCK - pos % BLOCK) if pos % BLOCK else 0
            continue
        chunk = data[pos : pos + length]
        pos += length
        if kind in (2, 3):
            buf = chunk if kind == 2 else buf + chunk
            continue
        buf = chunk if kind == 1 else buf + chunk
        record = pb.Record()
        record.ParseFromString(buf)
        buf = b""
        yield record


def _key(item: Any) -> str:
    return str(item.key or ".".join(item.nested_key))


def _items(items: Any) -> dict[str, Any]:
    """Key -> decoded value; nested keys are joined with "." (``prompts._type``)."""
    return {_key(item): json.loads(item.value_json) for item in items}


def load_run(run_dir: str) -> dict[str, Any]:
    """config, history rows, summary, artifacts (with their files' local paths), tags, exit.

    Keys starting with ``_`` (``_step``, ``_runtime``, ``_timestamp``) are W&B's own.
    """
    path = glob.glob(os.path.join(run_dir, "run-*.wandb"))[0]
    out: dict[str, Any] = {
        "config": {},
        "summary": {},
        "history": [],
        "artifacts": [],
        "tags": [],
        "exit_code": None,
        "dir": run_dir,
    }
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["tags"], out["name"] = list(record.run.tags), record.run.display_name
            out["job_type"] = record.run.job_type
            out["config"].update(_items(record.run.config.update))
        elif kind == "config":
            out["config"].update(_items(record.config.update))
        elif kind == "history":
            out["history"].append(_items(record.history.item))
        elif kind == "summary":
            out["summary"].update(_items(record.summary.update))
        elif kind == "artifact":
            art = record.artifact
            out["artifacts"].append(
                {
                    "name": art.name,
                    "type": art.type,
                    "files": {c.path: c.local_path for c in art.manifest.contents},
                    "metadata": json.loads(art.metadata or "{}"),
                    "aliases": sorted(art.aliases),
                    "digest": art.digest,
                }
            )
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
    out["config"].pop("_wandb", None)
    return out
