"""How the MLflow run page draws a reflex run's metrics: how many charts, how many are lines,
bars, and lines of a single point (a lone dot). Prints one line per strategy.

    python bench/mlflow_charts.py [--strategies iterative,instructions]

Each strategy runs once with the fake model of the tests (no network) into a fresh sqlite store
read back with ``MlflowClient``. The chart type follows MLflow 3's run page
(``RunsChartsCardConfig.getBaseChartAndSectionConfigs`` in the UI bundle): one chart per metric
key outside ``system/``, a line when the metric's latest step is >= 1, else a bar. Run it with
another checkout's interpreter to compare (e.g. main's ``.venv/bin/python``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def charts(client: MlflowClient, run_id: str) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {"line": [], "bar": [], "dot": []}
    for key, _ in sorted(client.get_run(run_id).data.metrics.items()):
        if key.startswith("system/"):
            continue
        history = client.get_metric_history(run_id, key)
        latest = max(history, key=lambda m: (m.step, m.timestamp, m.value))
        if latest.step < 1:
            kinds["bar"].append(key)
        elif len(history) == 1:
            kinds["dot"].append(key)
        else:
            kinds["line"].append(key)
    return kinds


def measure(strategy: str, where: Path) -> dict[str, list[str]]:
    from test_resume import START, builder, reasoner_variants

    from reflex.testing import FakeModel
    from reflex_mlflow import MLflowCallback

    uri = f"sqlite:///{where / 'mlflow.db'}"
    FakeModel(reasoner_variants).install()
    callback = MLflowCallback(tracking_uri=uri)
    builder(where / "runs", strategy).run(START, callbacks=[callback])
    return charts(MlflowClient(tracking_uri=uri), str(callback.run_id))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategies", default="iterative,instructions")
    args = parser.parse_args()
    import reflex

    print(f"reflex from {Path(reflex.__file__).parent}")
    for strategy in args.strategies.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            kinds = measure(strategy, Path(tmp))
        total = sum(len(v) for v in kinds.values())
        print(
            f"{strategy}: {total} charts: {len(kinds['line'])} lines, {len(kinds['bar'])} bars, "
            f"{len(kinds['dot'])} single-dot lines {kinds['dot']}"
        )


if __name__ == "__main__":
    main()
