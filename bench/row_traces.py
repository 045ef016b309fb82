"""What per-row traces cost: seconds added per 1,000 logged rows against a local sqlite MLflow
store (``MLflowCallback(row_traces=True)``, the default), in batches of ``--max-workers``.

    python bench/row_traces.py [--rows 1000] [--batch 8] [--metrics 2] [--rounds 2]

It builds an evaluation of ``--rows`` rows (each with a reference, ``--metrics`` metric scores
and feedback, latency and tokens, like a real test split's), then times the writes
``MLflowCallback`` makes for it: the evaluation run, each batch's spans, traces with their
assessments and links. The store is migrated and LiteLLM imported before the clock starts (a
new sqlite store's first open costs seconds of schema migration, once per store; MLflow prices a
span's token usage with LiteLLM, which a reflex run has loaded already).

``--evaluate`` also times ``mlflow.genai.evaluate`` logging the same rows into a fresh store
(precomputed outputs, one trivial ``@scorer`` per metric): what MLflow's own evaluation pays
for the rows we write the way it does, side by side in one process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from mlflow import MlflowClient

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-table fetch

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


def evaluate_round(rows: int, metrics: int) -> float:
    """Seconds ``mlflow.genai.evaluate`` takes to log the same rows (store migrated first)."""
    import mlflow
    from mlflow.genai.scorers import scorer

    def metric(k: int) -> object:
        @scorer(name=f"metric_{k}")
        def score(outputs: str, expectations: dict[str, str]) -> float:
            return float(outputs.endswith(expectations["expected_response"]))

        return score

    data = [
        {
            "inputs": {"input": f"review r{i:05d}: a fine film"},
            "outputs": f"answer {i}: positive" if i % 2 else f"answer {i}: negative",
            "expectations": {"expected_response": "positive"},
        }
        for i in range(rows)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        mlflow.set_tracking_uri(f"sqlite:///{Path(tmp) / 'mlflow.db'}")
        mlflow.set_experiment("bench")
        start = time.perf_counter()
        mlflow.genai.evaluate(data=data, scorers=[metric(k) for k in range(metrics)])
        return time.perf_counter() - start


def main() -> None:
    import litellm  # noqa: F401 - loaded in any reflex run; MLflow prices spans with it

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=8, help="rows per batch (--max-workers)")
    parser.add_argument("--metrics", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--evaluate", action="store_true", help="time mlflow.genai.evaluate too")
    args = parser.parse_args()
    times = [one_round(args.rows, args.batch, args.metrics) for _ in range(args.rounds)]
    best = min(times)
    print(
        f"{args.rows} rows, batches of {args.batch}, {args.metrics} metrics, sqlite: "
        f"best {best:.2f} s of {len(times)} ({', '.join(f'{t:.2f}' for t in times)}); "
        f"{1000 * best / args.rows:.2f} s per 1,000 rows"
    )
    if args.evaluate:
        theirs = min(evaluate_round(args.rows, args.metrics) for _ in range(args.rounds))
        print(
            f"mlflow.genai.evaluate, the same rows: best {theirs:.2f} s; "
            f"{1000 * theirs / args.rows:.2f} s per 1,000 rows (reflex / evaluate "
            f"{best / theirs:.2f}x)"
        )


if __name__ == "__main__":
    main()
