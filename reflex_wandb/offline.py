"""What an offline W&B run directory really holds, read from its ``.wandb`` transaction log.

A process killed with ``kill -9`` leaves the offline file with only what ``wandb-core`` had
written (often nothing past the header): what was "logged" is not what is on disk. A resumed
run reads the earlier files of its run id and logs again exactly the steps they lack.

The file is LevelDB-log framing around protobuf ``Record`` messages: a 7-byte header
``<4sHB`` = (b":W&B", 0xBEE1, version), then 32 KiB blocks of chunks ``<IHB`` = (crc32,
length, type) with type FULL=1, FIRST=2, MIDDLE=3, LAST=4. A torn tail is ignored.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

__all__ = ["logged_artifacts", "logged_keys", "logged_steps", "records"]

BLOCK = 32768
HEADER = 7


def records(path: Path) -> Iterator[Any]:
    """Every complete protobuf Record in the file, in order."""
    data = path.read_bytes()
    if len(data) < HEADER or data[:4] != b":W&B":
        return
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
        if pos + length > len(data):
            return  # torn tail: the writer was killed mid-chunk
        chunk, pos = data[pos : pos + length], pos + length
        if kind in (2, 3):
            buf = chunk if kind == 2 else buf + chunk
            continue
        buf = chunk if kind == 1 else buf + chunk
        record = pb.Record()  # type: ignore[attr-defined]  # generated protobuf module
        try:
            record.ParseFromString(buf)
        except Exception:  # noqa: BLE001 - a damaged record ends what can be trusted
            return
        buf = b""
        yield record


def logged_steps(sync_dirs: Iterable[str | Path]) -> set[int]:
    """The ``iteration`` values of the history rows on disk in these offline run directories."""
    return set(logged_keys(sync_dirs))


def logged_keys(sync_dirs: Iterable[str | Path]) -> dict[int, set[str]]:
    """``iteration`` -> the keys of the history rows on disk at it, in these offline run
    directories (a step may hold several rows, e.g. the baseline test and val scores)."""
    found: dict[int, set[str]] = {}
    for sync_dir in sync_dirs:
        for path in Path(sync_dir).glob("run-*.wandb"):
            for record in records(path):
                if record.WhichOneof("record_type") != "history":
                    continue
                keys = {item.key or ".".join(item.nested_key): item for item in record.history.item}
                step = json.loads(keys["iteration"].value_json) if "iteration" in keys else None
                if isinstance(step, int | float):
                    found.setdefault(int(step), set()).update(keys)
    return found


def logged_artifacts(sync_dirs: Iterable[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, metadata)`` of every artifact on disk in these offline run directories."""
    found: list[tuple[str, dict[str, Any]]] = []
    for sync_dir in sync_dirs:
        for path in Path(sync_dir).glob("run-*.wandb"):
            for record in records(path):
                if record.WhichOneof("record_type") != "artifact":
                    continue
                try:
                    metadata = json.loads(record.artifact.metadata or "{}")
                except ValueError:
                    metadata = {}
                found.append((record.artifact.name, metadata if isinstance(metadata, dict) else {}))
    return found
