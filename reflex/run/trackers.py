"""What tracker adapters read from and keep in a run's directory.

``.trackers.json`` holds each tracker's own ids for the run (the MLflow run id, the W&B run id),
so a resumed run (``--resume``) continues the same tracker runs and ``aevyra-reflex sync`` knows
where a run went. It starts with a dot: it is bookkeeping, not part of the sealed record
(``verify`` ignores it). ``recorded_iterations`` reads the iterations a run has recorded (its
checkpoint), so an adapter can log what an interrupted process recorded but never sent, and
``recorded_initial_val`` the initial prompt's val score (the start of the running best val).
``evaluation_rows`` is the per-example view of the test split: baseline and final side by side;
``confusion_matrices`` the baseline's and the final's confusion matrices of a label task.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reflex.callbacks import EvalLabel
from reflex.callbacks.guarded import GuardedCallback
from reflex.callbacks.tracking import INITIAL_VAL_LABEL
from reflex.checks.confusion import Confusion
from reflex.checks.examples import change_of, compare_rows, label_matrices
from reflex.config import RunConfig
from reflex.data.dataset import Dataset, load_dataset
from reflex.data.demos import template_fields
from reflex.data.files import atomic_write_text
from reflex.result import Example, IterationRecord, OptimizationResult

__all__ = [
    "TRACKERS_FILE",
    "confusion_matrices",
    "evaluation_examples",
    "evaluation_rows",
    "recorded_examples",
    "recorded_initial_val",
    "recorded_iterations",
    "replay_run",
    "run_path",
    "save_tracker_state",
    "tracker_state",
]

TRACKERS_FILE = ".trackers.json"

logger = logging.getLogger(__name__)


def run_path(config: RunConfig) -> Path | None:
    """The run's directory (``<run_dir>/runs/<run_id>``), or None before the engine made one."""
    if not config.run_id:
        return None
    return Path(config.run_dir) / "runs" / config.run_id


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def tracker_state(run: Path | None, tracker: str) -> dict[str, Any]:
    """What ``tracker`` saved about this run (e.g. ``{"run_id": ...}``); ``{}`` when nothing."""
    if run is None:
        return {}
    data = _read_json(run / TRACKERS_FILE)
    entry = data.get(tracker) if isinstance(data, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def save_tracker_state(run: Path | None, tracker: str, **values: Any) -> None:
    """Merge ``values`` into ``tracker``'s entry of ``.trackers.json`` (atomic write)."""
    if run is None or not run.is_dir():
        return
    data = _read_json(run / TRACKERS_FILE)
    data = data if isinstance(data, dict) else {}
    entry = data.get(tracker)
    data[tracker] = {**(entry if isinstance(entry, dict) else {}), **values}
    atomic_write_text(run / TRACKERS_FILE, json.dumps(data, indent=2, default=str))


def recorded_iterations(run: Path | None) -> list[IterationRecord]:
    """The iterations the run recorded so far (its checkpoint, else its result)."""
    if run is None:
        return []
    for name in ("checkpoint.json", "result.json"):
        data = _read_json(run / name)
        if isinstance(data, dict) and isinstance(data.get("iterations"), list):
            return [IterationRecord.from_dict(r) for r in data["iterations"]]
    return []


def recorded_initial_val(run: Path | None) -> float | None:
    """The initial prompt's val score the run recorded (its ``val:baseline`` evaluation event in
    events.jsonl), so a resumed or replayed run seeds the running best val as the live run did;
    None when the run has no val split or has not measured it yet."""
    if run is None:
        return None
    try:
        lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        if str(INITIAL_VAL_LABEL) not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:  # a line cut short by a kill
            continue
        if (
            isinstance(event, dict)
            and event.get("type") == "evaluation"
            and EvalLabel.parse(event.get("label")) == INITIAL_VAL_LABEL
            and isinstance(event.get("mean_score"), int | float)
        ):
            return float(event["mean_score"])
    return None


def _examples(run: Path | None, dataset: Dataset | None, prompt: str | None) -> dict[str, Any]:
    """The run's rows by id: ``dataset``, else its file reloaded as the run read it (rows of a
    chat template bound to ``prompt``'s variables through the run's ``--var`` mapping)."""
    if dataset is None and run is not None:
        return recorded_examples(run, prompt=prompt)
    return {example.id: example for example in dataset} if dataset is not None else {}


def evaluation_examples(
    run: Path | None, dataset: Dataset | None = None, prompt: str | None = None
) -> dict[str, Example]:
    """The rows an evaluation of ``prompt`` was made on, by id: ``dataset``, else the run's
    dataset file as the run read it (:func:`recorded_examples`); ``{}`` when neither is known
    (ids, answers and scores are in the snapshot)."""
    return _examples(run, dataset, prompt)


def recorded_examples(
    run: Path, source: str | Path | None = None, *, prompt: str | None = None
) -> dict[str, Example]:
    """The run's dataset rows by id: ``source``, else the file ``run.json`` names, read as the
    run read it (a chat template's rows bound to ``prompt``'s variables, by default the recorded
    best prompt's, through config.json's ``--var`` mapping); ``{}`` when it is gone or no longer
    reads (the rows are extra: ids, answers and scores are in the record)."""
    if source is None:
        meta = _read_json(run / "run.json")
        found = meta.get("dataset_source") if isinstance(meta, dict) else None
        source = found if isinstance(found, str) else None
    if source is None or not Path(source).is_file():
        return {}
    config = _read_json(run / "config.json")
    if prompt is None:
        result = _read_json(run / "result.json")
        prompt = str(result.get("best_prompt") or "") if isinstance(result, dict) else ""
    mapping = config.get("variables") if isinstance(config, dict) else None
    try:
        fields = template_fields(prompt, mapping if isinstance(mapping, dict) else None)
        dataset = load_dataset(source, variables=fields)
    except Exception as exc:  # noqa: BLE001 - the rows are extra; ids still go out
        logger.debug("could not reload %s for the per-row view: %s", source, exc)
        return {}
    return {example.id: example for example in dataset}


def confusion_matrices(
    result: OptimizationResult, dataset: Dataset | None = None
) -> dict[str, Confusion]:
    """The baseline's and the final's confusion matrices on the test rows (``"baseline"``,
    ``"final"``) when the dataset's references form a label set
    (:mod:`reflex.checks.confusion`); ``{}`` for other tasks, or when the rows are unknown."""
    if result.final is None:
        return {}
    run = Path(result.run_dir) if result.run_dir else None
    examples = _examples(run, dataset, result.initial_prompt)
    rows = compare_rows(result.baseline, result.final, examples)
    return label_matrices(rows, (example.ideal for example in examples.values()))


def evaluation_rows(
    result: OptimizationResult, dataset: Dataset | None = None
) -> list[dict[str, Any]]:
    """One row per test (example, model): input, expected, baseline and final outputs and scores.

    ``input``/``expected`` come from ``dataset``, else from the run's dataset file (``run.json``);
    empty when neither is known. Per-metric scores are ``baseline_<metric>`` / ``final_<metric>``.
    ``change`` says how the row moved (``regressed``, ``improved``, ``same``, ``unscored``:
    :func:`~reflex.checks.examples.change_of`) and ``changed`` whether it flipped (went up or
    down), so a tracker's table filters the flipped rows.
    """
    if result.final is None:
        return []
    run = Path(result.run_dir) if result.run_dir else None
    examples = _examples(run, dataset, result.initial_prompt)
    before = {s.key: s for s in result.baseline.samples} if result.baseline else {}
    metrics = sorted({name for s in result.final.samples for name in s.scores})
    rows = []
    for sample in result.final.samples:
        base = before.get(sample.key)
        example = examples.get(sample.example_id)
        change = change_of(base.score if base is not None else None, sample.score)
        row: dict[str, Any] = {
            "example_id": sample.example_id,
            "model": sample.model,
            "input": _text(example.input) if example is not None else "",
            "expected": _text(example.ideal) if example is not None else "",
            "baseline_output": base.output if base is not None else "",
            "final_output": sample.output,
            "baseline_score": base.score if base is not None else None,
            "final_score": sample.score,
            "change": change,
            "changed": change in ("regressed", "improved"),
        }
        for name in metrics:
            row[f"baseline_{name}"] = base.scores.get(name) if base is not None else None
            row[f"final_{name}"] = sample.scores.get(name)
        rows.append(row)
    return rows


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def replay_run(run: Path, callbacks: Sequence[object]) -> OptimizationResult:
    """Send a recorded run's hooks to ``callbacks`` again, from its run directory.

    ``on_run_start`` gets the run's config with ``resumed`` True, so tracker adapters continue
    the tracker runs the run saved in ``.trackers.json`` (when they point at the same store)
    and log only what those lack; a run made with no tracker gets new tracker runs. The
    finished run is not changed (``.trackers.json`` is outside its sealed record).
    """
    from reflex.callbacks import CallbackDispatcher
    from reflex.errors import ConfigurationError, ReflexError

    config_data = _read_json(run / "config.json")
    result_data = _read_json(run / "result.json")
    if not isinstance(config_data, dict) or not isinstance(result_data, dict):
        raise ConfigurationError(
            f"{run}: no config.json/result.json to replay (a run still going, or not a run "
            "folder); resume it first (aevyra-reflex optimize ... --resume)"
        )
    config = RunConfig.model_validate({**config_data, "resumed": True})
    result = OptimizationResult.from_dict(result_data)
    dispatcher = CallbackDispatcher(list(callbacks))
    dispatcher.run_start(config, result.initial_prompt)
    if result.baseline is not None:
        dispatcher.baseline(result.baseline)
    for record in result.iterations:
        dispatcher.iteration(record)
    if result.final is not None:
        dispatcher.final(result.final)
    if result.completed:
        dispatcher.run_end(result)
    else:
        dispatcher.run_error(ReflexError(result.stop_reason or "the run did not finish"), result)
    for callback in callbacks:
        if isinstance(callback, GuardedCallback) and callback.state_key and not callback.missed():
            _gap_filled(run, callback.state_key)
    return result


def _gap_filled(run: Path, tracker: str) -> None:
    """A replay reached ``tracker`` whole: its ``.trackers.json`` entry no longer says it
    missed part of the run (``missed``, ``offline_in`` are dropped)."""
    data = _read_json(run / TRACKERS_FILE)
    entry = data.get(tracker) if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(entry, dict) or "missed" not in entry:
        return
    data[tracker] = {k: v for k, v in entry.items() if k not in ("missed", "offline_in")}
    atomic_write_text(run / TRACKERS_FILE, json.dumps(data, indent=2, default=str))
