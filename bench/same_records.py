"""Issue 34, item 3: does a change leave a run's record as it was? Two checkouts, one workload.

    python bench/same_records.py --against DIR [--rows 2500] [--iterations 12] [--strategy S]

Runs ``bench/overlap.py``'s whole optimization (``iterative``, or ``--strategy``: ``auto`` races
its candidates, so the best-of-many correction counts partly seen ones) once at L = 0 with another
checkout's code (``PYTHONPATH=DIR``, e.g. ``git archive main | tar -x -C DIR``) and once with
this one's, each in a child process writing its own run folder, then compares the records:
every JSON file and JSONL line parsed and compared value by value, the prompts byte for byte,
and result.json, checkpoint.json and the JSONL files also byte for byte (key order, number
formatting) once the clock values are masked. Only these may differ: ``latency_ms``,
``elapsed_s``, ``ts``, the run's id and folder, the endpoint's port (``api_base``), and
run.json / record.sig.json (a pid, a start time, hashes over the clocks). Prints one line per
file and a verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLOCK = {"latency_ms", "elapsed_s", "run_dir", "run_id", "ts", "api_base", "reasoning_base_url"}
_MASK = re.compile(r'("(?:' + "|".join(sorted(CLOCK)) + r')": ?)("[^"]*"|[-0-9.e+]+|null)')
_APART = ("run.json", "record.sig.json")  # a pid, a start time; hashes over the clocks


def record(run_dir: str, rows: int, iterations: int, strategy: str) -> None:
    """The child: one whole run at L = 0 into ``run_dir`` (the ``reflex`` on sys.path)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import overlap

    args = argparse.Namespace(
        latency=0.0, concurrency=64, rows=rows, iterations=iterations, strategy=strategy
    )
    with overlap.endpoint(0.0) as url:
        overlap.optimize(url, args, run_dir=run_dir)


def _diff(a: Any, b: Any, where: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key in CLOCK and key in a and key in b:
                continue
            _diff(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{where}.{key}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", found)
    elif a != b:
        found.append(f"{where}: {str(a)[:100]} | {str(b)[:100]}")


def _compare_file(a: Path, b: Path) -> tuple[str, list[str]]:
    found: list[str] = []
    if not b.exists():
        return "missing", ["only in the first run"]
    if a.suffix == ".jsonl":
        xs, ys = a.read_text().splitlines(), b.read_text().splitlines()
        if len(xs) != len(ys):
            found.append(f"{len(xs)} vs {len(ys)} lines")
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            _diff(json.loads(x), json.loads(y), f"line {i + 1}", found)
        what = f"{len(xs)} lines"
    elif a.suffix == ".json":
        _diff(json.loads(a.read_text()), json.loads(b.read_text()), "", found)
        what = "values"
    else:
        found += [] if a.read_bytes() == b.read_bytes() else ["bytes differ"]
        return "bytes", found
    if not found and _MASK.sub(r"\1~", a.read_text()) != _MASK.sub(r"\1~", b.read_text()):
        found.append("the same values, other bytes (key order or number format)")
    return what + ", bytes", found


def compare(first: Path, second: Path) -> bool:
    """One line per record file of ``first`` against ``second``; True when only clocks differ."""
    same = True
    names = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    extra = {p.relative_to(second) for p in second.rglob("*") if p.is_file()} - set(names)
    for rel in names:
        what, found = _compare_file(first / rel, second / rel)
        apart = rel.name in _APART
        verdict = "same" if not found else f"{len(found)} differences"
        print(f"{rel!s:<26}{what:<22}{verdict}{' (expected: clocks)' if apart else ''}")
        for line in [] if apart else found[:5]:
            print(f"    {line}")
        same = same and (apart or not found)
    for rel in sorted(extra):
        print(f"{rel!s:<26}only in the second run")
    return same and not extra


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", help="a checkout of another commit")
    parser.add_argument("--rows", type=int, default=2500)
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--strategy", default="iterative", help="e.g. auto: races candidates")
    parser.add_argument("--record", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record:
        record(args.record, args.rows, args.iterations, args.strategy)
        return
    if not args.against:
        parser.error("--against DIR is required")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    work = Path(tempfile.mkdtemp(prefix="reflex-records-"))
    runs = []
    for name, path in (("against", str(Path(args.against).resolve())), ("this", None)):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if path is not None:
            env["PYTHONPATH"] = path
        target = work / name
        flags = [f"--rows={args.rows}", f"--iterations={args.iterations}", f"--record={target}"]
        flags.append(f"--strategy={args.strategy}")
        subprocess.run([sys.executable, __file__, *flags], env=env, cwd=path or ROOT, check=True)
        runs.append(next((target / "runs").iterdir()))
    print(f"{runs[0]}\n  vs {runs[1]}")
    same = compare(*runs)
    print("every record equal but its clocks" if same else "the records differ")


if __name__ == "__main__":
    main()
