"""The audit record: a content fingerprint of a run folder, an optional HMAC, and warnings.

At the end of a run the engine writes ``record.sig.json``: a sha256 of every file of the run
folder, and of every part of the JSON files (each top-level key, each element of a list such as
``iterations``) and every line of ``events.jsonl``, so :func:`verify_run` can say *what* was
edited, not only *that* something was. With ``REFLEX_SIGNING_KEY`` set, the manifest is also
signed (HMAC-SHA256); without a key, anyone who edits the record can recompute the fingerprint,
so only a signed record proves it came from the run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import platform
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from reflex.checks.leakage import leakage_warnings
from reflex.checks.maxstat import selection_warnings
from reflex.checks.outcome import outcome_warnings
from reflex.checks.trivial import label_warnings
from reflex.data.files import atomic_write_text
from reflex.errors import ReflexError
from reflex.result import OptimizationResult

__all__ = [
    "FileEntry",
    "KEY_ENV",
    "Manifest",
    "SEAL_FILE",
    "Verification",
    "annotate",
    "file_sha256",
    "fingerprint",
    "run_warnings",
    "seal_after_run",
    "seal_run",
    "verify_run",
]

logger = logging.getLogger(__name__)

SEAL_FILE = "record.sig.json"
KEY_ENV = "REFLEX_SIGNING_KEY"
SEAL_VERSION = 1
#: A best-on-val score this far above the final test score is flagged as overfitting.
OVERFIT_GAP = 0.1


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileEntry(TypedDict):
    """One file of the record: its hash, and the hashes of its parts (see ``_parts``)."""

    sha256: str
    parts: dict[str, str]


class Manifest(TypedDict):
    files: dict[str, FileEntry]
    digest: str


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _record_files(run: Path) -> Iterator[Path]:
    for path in sorted(run.rglob("*")):
        name = path.name
        if path.is_file() and name != SEAL_FILE and not name.startswith("."):
            yield path


def _parts(path: Path, data: bytes) -> dict[str, str]:
    """Hashes of the parts of a file: JSON keys and list elements, or JSONL lines."""
    if path.suffix == ".jsonl":
        return {f"line {i}": _sha(line) for i, line in enumerate(data.splitlines(), 1)}
    if path.suffix != ".json":
        return {}
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    if not isinstance(value, dict):
        return {}
    parts: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, list):
            parts.update({f"{key}[{i}]": _sha(_canonical(x)) for i, x in enumerate(item)})
            parts[f"{key}.length"] = _sha(_canonical(len(item)))
        elif isinstance(item, dict):
            parts.update({f"{key}.{k}": _sha(_canonical(v)) for k, v in item.items()})
        else:
            parts[key] = _sha(_canonical(item))
    return parts


def fingerprint(run: Path) -> Manifest:
    """``{"files": {relpath: {"sha256", "parts"}}, "digest"}`` of the run folder's record."""
    files: dict[str, FileEntry] = {}
    for path in _record_files(run):
        data = path.read_bytes()
        files[path.relative_to(run).as_posix()] = {
            "sha256": _sha(data),
            "parts": _parts(path, data),
        }
    digest = _sha(_canonical({name: entry["sha256"] for name, entry in files.items()}))
    return {"files": files, "digest": digest}


def _signature(manifest: Manifest, key: str) -> str:
    body = _canonical({"files": manifest["files"], "digest": manifest["digest"]})
    return hmac.new(key.encode("utf-8"), body, hashlib.sha256).hexdigest()


def seal_run(run: Path, key: str | None = None) -> Path:
    """Write ``record.sig.json`` for ``run`` (signed when ``key``, default: ``$KEY_ENV``)."""
    key = key if key is not None else os.environ.get(KEY_ENV) or None
    manifest = fingerprint(run)
    seal = {
        "version": SEAL_VERSION,
        "algorithm": "sha256",
        "sealed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "digest": manifest["digest"],
        "hmac_sha256": _signature(manifest, key) if key else None,
        "key_env": KEY_ENV,
        "files": manifest["files"],
    }
    target = run / SEAL_FILE
    atomic_write_text(target, json.dumps(seal, indent=1, sort_keys=True) + "\n")
    return target


@dataclass(frozen=True)
class Verification:
    """``status``: verified, tampered, or unchecked (a signed record without the key)."""

    status: str
    signed: bool
    changes: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "verified"


def _file_changes(name: str, before: FileEntry, after: FileEntry) -> list[str]:
    old, new = before.get("parts", {}), after.get("parts", {})
    detail = [f"{name}: {p} changed" for p in old if p in new and old[p] != new[p]]
    detail += [f"{name}: {p} removed" for p in old if p not in new]
    detail += [f"{name}: {p} added" for p in new if p not in old]
    return detail or [f"{name}: content changed"]


def _changes(sealed: Mapping[str, FileEntry], now: Mapping[str, FileEntry]) -> list[str]:
    # ``sealed`` is read back from record.sig.json: the shape seal_run wrote, unless edited.
    out: list[str] = []
    for name in sorted(set(sealed) | set(now)):
        if name not in now:
            out.append(f"{name}: file removed")
        elif name not in sealed:
            out.append(f"{name}: file added after the record was sealed")
        elif sealed[name].get("sha256") != now[name]["sha256"]:
            out.extend(_file_changes(name, sealed[name], now[name]))
    return out


def verify_run(run: Path, key: str | None = None) -> Verification:
    """Compare ``run`` with its seal; FileNotFoundError when it was never sealed."""
    seal = _read_seal(run)
    if isinstance(seal, str):  # not a seal at all: edited or damaged, which verify must catch
        return Verification("tampered", False, [f"{SEAL_FILE}: {seal} (seal edited or damaged)"])
    key = key if key is not None else os.environ.get(KEY_ENV) or None
    now = fingerprint(run)
    sealed_files = seal.get("files") or {}
    changes = _changes(sealed_files, now["files"]) + _unreadable_events(run)
    recomputed = _sha(_canonical({n: e.get("sha256") for n, e in sealed_files.items()}))
    if recomputed != seal.get("digest"):
        changes.insert(0, f"{SEAL_FILE}: the digest does not match its file list (seal edited)")
    signed = bool(seal.get("hmac_sha256"))
    if signed and key:
        expected = _signature({"files": sealed_files, "digest": seal.get("digest")}, key)
        if not hmac.compare_digest(expected, str(seal["hmac_sha256"])):
            changes.insert(0, f"{SEAL_FILE}: the signature does not match (seal edited or forged)")
    if changes:
        return Verification("tampered", signed, changes)
    if signed and not key:
        return Verification(
            "unchecked", signed, note=f"fingerprint intact; set {KEY_ENV} to check the signature"
        )
    if not signed and key:
        return Verification(
            "tampered",
            signed,
            [
                f"{SEAL_FILE}: not signed, but {KEY_ENV} is set (signature removed, or the run "
                "was made without the key)"
            ],
        )
    note = "signature checked" if signed else "fingerprint only (unsigned: set KEY_ENV to sign)"
    return Verification("verified", signed, note=note.replace("KEY_ENV", KEY_ENV))


def _unreadable_events(run: Path) -> list[str]:
    """events.jsonl lines that are not one JSON object each (a torn or edited line)."""
    try:
        lines = (run / "events.jsonl").read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    bad = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            ok = isinstance(json.loads(line), dict)
        except ValueError:
            ok = False
        if not ok:
            bad.append(f"events.jsonl:{number}: not one JSON event (a torn or edited line)")
    return bad[:5]


def _read_seal(run: Path) -> Any:
    """The seal (a dict), or what is wrong with it (a str); FileNotFoundError when there is none."""
    text = (run / SEAL_FILE).read_bytes().decode("utf-8", "replace")
    try:
        seal = json.loads(text)
    except (ValueError, RecursionError):
        return "not valid JSON"
    if not isinstance(seal, dict):
        return f"not a JSON object (got {type(seal).__name__})"
    files = seal.get("files") or {}
    if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
        return "its file list is not a mapping of file entries"
    return seal


def seal_after_run(run: Path) -> None:
    """``seal_run``, but a failure to write the seal (full disk) is a warning, not an error."""
    try:
        seal_run(run)
    except OSError as exc:
        logger.warning("could not write %s in %s: %s", SEAL_FILE, run, exc)


def file_sha256(path: str | None) -> str | None:
    """sha256 of a dataset file's bytes (None for in-memory data or a missing file)."""
    if not path:
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def run_warnings(
    result: OptimizationResult, overfit_gap: float = OVERFIT_GAP
) -> list[dict[str, str]]:
    """What a reviewer should know before trusting the numbers, as ``{"kind", "message"}``;
    first how the run's candidates fared (:func:`reflex.checks.outcome.outcome_warnings`)."""
    out: list[dict[str, str]] = outcome_warnings(result)
    if result.model_graded:
        out.append(
            _warning(
                "model_graded",
                "a judge model scored these numbers: they carry the judge's bias and noise",
            )
        )
    sizes = result.split_sizes
    if sizes and not sizes.get("val") and result.iterations:
        out.append(
            _warning(
                "validation_reused_as_training",
                "no validation split: the best "
                "prompt was selected on the train scores it was optimized on",
            )
        )
    out += _unpaired(result)
    final = result.final.mean_score if result.final is not None else None
    if sizes.get("val") and result.best_score_val is not None and final is not None:
        gap = result.best_score_val - final
        if gap > overfit_gap:
            out.append(
                _warning(
                    "overfit",
                    f"val {result.best_score_val:.3f} vs test {final:.3f}: "
                    f"the gap {gap:.3f} is above {overfit_gap:.2f}",
                )
            )
    out += selection_warnings(result.selection) + label_warnings(result.label_check)
    return out + leakage_warnings(result.iterations)


def _unpaired(result: OptimizationResult) -> list[dict[str, str]]:
    """A warning when the baseline and the final share no scored test row (no paired test)."""
    baseline, final = result.baseline, result.final
    if baseline is None or final is None or result.significance is not None:
        return []
    if not baseline.samples or not final.samples:  # no rows to pair (a summary-only record)
        return []
    if baseline.per_example().keys() & final.per_example().keys():
        return []
    return [
        _warning(
            "no_paired_test",
            f"no test row was scored under both prompts ({baseline.n_errors} of "
            f"{len(baseline.samples)} baseline rows and {final.n_errors} of "
            f"{len(final.samples)} final rows failed): there is no paired test and the "
            "scores say nothing about a gain; look at the rows' errors in evaluations.jsonl",
        )
    ]


def _warning(kind: str, message: str) -> dict[str, str]:
    return {"kind": kind, "message": message}


def annotate(
    result: OptimizationResult, dataset_source: str | None, overfit_gap: float = OVERFIT_GAP
) -> None:
    """Fill ``result.warnings``, ``prompt_versions`` and ``environment`` (versions, file hash)."""
    from reflex.checks.versions import prompt_versions
    from reflex.plugins import get_registry
    from reflex.result import VERSION

    result.warnings = run_warnings(result, overfit_gap)
    result.prompt_versions = prompt_versions(result)
    try:
        plugins = {i.name: i.version for i in get_registry().plugins()}
    except ReflexError:  # a broken plugin set must not lose the record of a finished run
        plugins = {}
    result.environment = {
        "aevyra_reflex": VERSION,
        "python": platform.python_version(),
        "plugins": plugins,
        "dataset_file": dataset_source,
        "dataset_file_sha256": file_sha256(dataset_source),
    }
