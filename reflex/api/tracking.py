"""The tracker-adapter API: what an adapter (``reflex_mlflow``, ``reflex_wandb``, a tracker of
your own) needs beside :mod:`reflex.api` (its ``Callback``, records and ``hookimpl``).

- the params, tags, metric names and summary values every tracker logs the same way
  (:mod:`reflex.callbacks.tracking`): ``run_params``, ``run_tags``, ``split_params``,
  ``iteration_metrics``, ``iteration_row``, ``baseline_metrics``, ``summary_metrics``,
  ``split_summary``, ``RunningTotals``, ``INITIAL_VAL_LABEL``, ``RUN_END_SERIES``, ...;
- ``GuardedCallback`` (:mod:`reflex.callbacks.guarded`): a tracker failure never stops a run;
- the one redactor (:mod:`reflex.redact`): ``redact_url``, ``redact_data``, ``redacted_argv``,
  ``scrub``;
- the tracker state kept in the run directory (:mod:`reflex.run.trackers`): ``tracker_state``,
  ``save_tracker_state``, ``recorded_iterations``, ``recorded_initial_val``, the per-example
  ``evaluation_rows``, the rows themselves (``evaluation_examples``), ``run_path``; a label
  task's ``confusion_matrices`` (:class:`Confusion`, :mod:`reflex.checks.confusion`); a final
  row's change against the baseline (``change_of``) and the messages a row was sent
  (``prompt_messages``);
- for the adapter's CLI options: ``wanted``, ``parse_tag_pairs``;
- for a prompt registry (``reflex_mlflow``'s ``prompts:/`` and ``promote``): ``chat_spec`` (a
  chat template as a PromptSpec; ``reflex.api.saved_template`` gives a run's prompt back as that
  list), ``resolve_run`` (a run record from what a user typed), ``REDACTED`` (the redactor's
  mark), and ``check``'s gate for an alias: ``plan_gate`` -> :class:`PromotionGate` ->
  :class:`CheckOutcome`; ``announce_alias_move``: what a registry adapter calls once an alias
  moved, so other trackers mirror it (the ``prompt_alias_moved`` hook; W&B's artifact aliases).

docs/trackers.md describes them; tests/test_public_api.py checks that each listed name exists
and is named in docs/architecture.md ("Three doors"), and that none is in reflex.api too.
"""

from __future__ import annotations

from reflex.callbacks.guarded import GuardedCallback
from reflex.callbacks.tracking import (
    INITIAL_VAL_LABEL,
    RUN_END_SERIES,
    ParamValue,
    RunningTotals,
    baseline_metrics,
    best_train_score,
    iteration_metrics,
    iteration_row,
    metric_key,
    on_model_thread,
    parse_tag_pairs,
    run_params,
    run_tags,
    split_params,
    split_summary,
    summary_metrics,
    wanted,
)
from reflex.checks.confusion import Confusion
from reflex.checks.examples import change_of
from reflex.data.demos import prompt_messages
from reflex.data.prompts import chat_spec
from reflex.plugins import announce_alias_move
from reflex.redact import REDACTED, redact_data, redact_url, redacted_argv, scrub
from reflex.run.gate import CheckOutcome
from reflex.run.promotion import PromotionGate, plan_gate
from reflex.run.records import resolve_run
from reflex.run.trackers import (
    confusion_matrices,
    evaluation_examples,
    evaluation_rows,
    recorded_initial_val,
    recorded_iterations,
    run_path,
    save_tracker_state,
    tracker_state,
)

__all__ = [
    "CheckOutcome",
    "Confusion",
    "GuardedCallback",
    "INITIAL_VAL_LABEL",
    "ParamValue",
    "PromotionGate",
    "REDACTED",
    "RUN_END_SERIES",
    "RunningTotals",
    "announce_alias_move",
    "baseline_metrics",
    "best_train_score",
    "change_of",
    "chat_spec",
    "confusion_matrices",
    "evaluation_examples",
    "evaluation_rows",
    "iteration_metrics",
    "iteration_row",
    "metric_key",
    "on_model_thread",
    "parse_tag_pairs",
    "plan_gate",
    "prompt_messages",
    "recorded_initial_val",
    "recorded_iterations",
    "redact_data",
    "redact_url",
    "redacted_argv",
    "resolve_run",
    "run_params",
    "run_path",
    "run_tags",
    "save_tracker_state",
    "scrub",
    "split_params",
    "split_summary",
    "summary_metrics",
    "tracker_state",
    "wanted",
]
