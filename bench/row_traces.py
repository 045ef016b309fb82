"""What per-row traces cost: seconds added per 1,000 logged rows against a local sqlite MLflow
store (``MLflowCallback(row_traces=True)``, the default), in batches of ``--max-workers``.

    python bench/row_traces.py [--rows 1000] [--batch 8] [--metrics 2] [--rounds 2]

It builds an evaluation of ``--rows`` rows (each with a reference, ``--metrics`` metric scores
and feedback, latency and tokens, like a real test split's), then times the writes
``MLflowCallback`` makes for it: the evaluation run, each batch's spans, traces with their
assessments and links. The store is migrated and LiteLLM imported before the clock starts (a
new sqlite store's first open costs seconds of schema migration, once per store; MLflow prices a
span's token usage with LiteLLM, which a reflex run has loaded already).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mlflow import MlflowClient

from reflex.api import EvalSnapshot, Example, Sample
from reflex_mlflow.evaluations import RowEvaluations, batches


def snapshot(rows: int, metrics: int) -> tuple[EvalSnapshot, dict[str, Example]]:
    names = [f"metric_{k}" for k in range(metrics)]
    samples = tuple(
        Sample(
            example_id=f"r{i:05d}",
            model="openai/task",
            output=f"answer {i}: positive",
            score=float(i % 2),
            scores=dict.fromkeys(names, float(i % 2)),
            feedback=dict.fromkeys(names, "output differs from the expected answer"),
            latency_ms=120.0,
            prompt_tokens=80,
            completion_tokens=4,
        )
        for i in range(rows)
    )
    examples = {
        s.example_id: Example(
            s.example_id,
            ({"role": "user", "content": f"review {s.example_id}: a fine film"},),
            ideal="positive",
        )
        for s in samples
    }
    mean = statistics.fmean(s.score or 0.0 for s in samples)
    return EvalSnapshot(
        "Classify the sentiment.", "test", mean, dict.fromkeys(names, mean), samples
    ), examples


def one_round(rows: int, batch: int, metrics: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        client = MlflowClient(tracking_uri=uri)
        experiment = client.create_experiment("bench", artifact_location=str(Path(tmp) / "a"))
        parent = client.create_run(experiment).info.run_id
        shot, examples = snapshot(rows, metrics)
        writer = RowEvaluations(client, experiment, parent)
        start = time.perf_counter()
        run_id, _ = writer.open("test:final", shot)
        for part in batches(shot.samples, batch):
            built = writer.traces(run_id, "test:final", part, examples, shot.system_prompt)
            writer.write(run_id, built)
        seconds = time.perf_counter() - start
        found = client.search_traces(locations=[experiment], run_id=run_id, max_results=rows + 1)
        assert len(found) == rows, f"{len(found)} traces written, {rows} expected"
        return seconds


def main() -> None:
    import litellm  # noqa: F401 - loaded in any reflex run; MLflow prices spans with it

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=8, help="rows per batch (--max-workers)")
    parser.add_argument("--metrics", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    times = [one_round(args.rows, args.batch, args.metrics) for _ in range(args.rounds)]
    best = min(times)
    print(
        f"{args.rows} rows, batches of {args.batch}, {args.metrics} metrics, sqlite: "
        f"best {best:.2f} s of {len(times)} ({', '.join(f'{t:.2f}' for t in times)}); "
        f"{1000 * best / args.rows:.2f} s per 1,000 rows"
    )


if __name__ == "__main__":
    main()
