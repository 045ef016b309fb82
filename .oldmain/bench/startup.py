"""Target 5: ``aevyra-reflex --help`` and ``aevyra-reflex plugins`` in <= 0.4 s.

    python bench/startup.py [--repeats 5] [--peer /tmp/peer-venv/bin/aevyra-reflex] [--rows FILE]

Prints the best of ``--repeats`` wall times (a busy machine only ever adds time) and checks that
litellm, mlflow, wandb, pandas, numpy and rouge-score (nltk) are not imported by either command.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import Row, emit

HEAVY = ("litellm", "mlflow", "wandb", "pandas", "numpy", "rouge_score", "nltk")
PROBE = (
    "import sys, runpy; sys.argv = ['aevyra-reflex', {arg!r}]\n"
    "try:\n    from reflex.cli import main; main()\nexcept SystemExit: pass\n"
    "print(','.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
)


def best_of(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)


def heavy_imports(arg: str) -> str:
    probe = PROBE.format(arg=arg, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer", default="/tmp/peer-venv/bin/aevyra-reflex")
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    ours = shutil.which("aevyra-reflex") or str(Path(sys.executable).parent / "aevyra-reflex")
    rows = []
    for arg in ("--help", "plugins"):
        wall = best_of([ours, arg], args.repeats)
        heavy = heavy_imports(arg)
        print(f"aevyra-reflex {arg}: {wall:.2f}s; heavy imports: {heavy or 'none'}", flush=True)
        rows.append(
            Row(
                "5",
                f"aevyra-reflex {arg} (best of {args.repeats})",
                f"{wall:.2f}s",
                "<= 0.40s",
                wall <= 0.40,
            )
        )
        rows.append(
            Row(
                "5",
                f"  {arg} imports litellm/mlflow/wandb/pandas/numpy",
                heavy or "none",
                "none",
                not heavy,
            )
        )
    if Path(args.peer).exists():
        wall = best_of([args.peer, "--help"], args.repeats)
        print(f"aevyra-reflex 0.2.0 --help: {wall:.2f}s", flush=True)
        rows.append(Row("5", "aevyra-reflex 0.2.0 --help (peer, same machine)", f"{wall:.2f}s"))
    emit(rows, args.rows)


if __name__ == "__main__":
    main()
