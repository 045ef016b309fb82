"""Budget presets: ``--budget light|medium|heavy`` as a task-call budget sized to the run.

A preset names how many candidates each phase of the search may measure, not a number of calls:
the calls follow from the run's splits and strategy, once the splits are known (the engine
resolves them; ``--dry-run`` prints them)::

    calls = fixed + candidates x phases x per_candidate
    fixed = models x (preflight + val + 2 x test)        preflight = min(10, train)
    per_candidate = models x (val + batch_size)          (val or, without one, batch_size)

``fixed`` is what every run pays besides its candidates: the preflight rows, the val and test
baselines and the final test evaluation (the same sum that sizes ``max_iterations`` under
``--max-calls``). A candidate is screened on a ``batch_size`` train minibatch, then measured on
every val row, so its cost grows with the val split. ``phases`` is what the strategy searches
in turn: 1 for one strategy, 2 for ``auto`` (instructions, then demos; 3 with a reasoning model,
which keeps a third for its rewrites), one per step of a sequence (``-s a,b,c``). Candidates per
phase: light 4, medium 8, heavy 20. Why per phase: each phase searches another axis (the
instructions, the demos, a rewrite), and a phase that measures fewer than a handful of
candidates rarely finds one that beats the incumbent on val, so a multi-phase strategy needs
proportionally more. ``simba`` adds its sampled runs to ``per_candidate`` (``samples x
batch_size`` per step, shared by the step's two candidates: :func:`sampling_calls`).
``--max-calls`` given explicitly always wins over the preset.

``mipro`` searches in rounds (:func:`mipro_round`): ``full_eval_every`` trials on
``minibatch_size`` val rows, then ``full_eval_top`` full val evaluations (under ``--race``:
``race_top`` finalists raced, each at half a val pass). Its candidate is a round
(``per_candidate = models x (trials x rows + top x val)``, ``top x val / 2`` raced), and the
iterations a run records are rounds x (trials + top).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reflex.config import BudgetConfig, RunConfig
from reflex.run.stopping import RACED_PASS

__all__ = [
    "PRESETS",
    "PRESET_CANDIDATES",
    "SIMBA_SAMPLES",
    "PREFLIGHT_ROWS",
    "MIPRO_ROUND",
    "MiproRound",
    "PresetBudget",
    "candidate_calls",
    "fixed_calls",
    "mipro_round",
    "preset_limits",
    "resolve_preset",
    "sampling_calls",
    "strategy_phases",
]

#: Candidates each phase of the search may measure on val, by preset.
PRESET_CANDIDATES: Mapping[str, int] = {"light": 4, "medium": 8, "heavy": 20}
PRESETS = tuple(PRESET_CANDIDATES)
#: Train rows the starting prompt is checked on before the baselines (reflex.run.engine).
PREFLIGHT_ROWS = 10
#: ``mipro``'s round by its option defaults (``reflex_strategies.mipro.MiproOptions``; a test
#: keeps them equal): trials per round, val rows per trial, full val evaluations per round, and
#: under ``--race`` the finalists raced per round.
MIPRO_ROUND: Mapping[str, int] = {
    "full_eval_every": 5,
    "minibatch_size": 8,
    "full_eval_top": 1,
    "race_top": 4,
}


def fixed_calls(models: int, *, train: int, val: int, test: int) -> int:
    """The task calls a run pays besides its candidates: the preflight rows, the val and test
    baselines and the final test evaluation (what ``--max-calls`` keeps out of the search)."""
    return models * (min(PREFLIGHT_ROWS, train) + val + 2 * test)


@dataclass(frozen=True)
class PresetBudget:
    """A preset resolved for one run: its calls and the terms they come from."""

    preset: str
    calls: int
    fixed: int
    per_candidate: int
    candidates: int
    phases: int

    def formula(self) -> str:
        """``130 + 8 x 2 x 48 = 898``: how the calls were sized, for the plan."""
        return (
            f"{self.fixed} + {self.candidates} x {self.phases} x {self.per_candidate} "
            f"= {self.calls}"
        )


def candidate_calls(models: int, *, val: int, batch_size: int) -> int:
    """One candidate's task calls: its train minibatch screen and its val pass (without val
    rows, the minibatch alone selects)."""
    return models * (val + batch_size if val else batch_size)


@dataclass(frozen=True)
class MiproRound:
    """One round of ``mipro``: ``trials`` trials on ``rows`` rows each, then ``full`` full
    evaluations on ``val`` rows; per task model. ``raced`` (``--race``): the ``full`` finalists
    are raced, each planned at :data:`reflex.run.stopping.RACED_PASS` of a val pass."""

    trials: int
    rows: int
    full: int
    val: int
    raced: bool = False

    @property
    def iterations(self) -> int:
        """The iterations a round records: one per trial and per finalist."""
        return self.trials + self.full

    def calls(self, models: int) -> int:
        """A round's task calls at most (rows answered before are cached, so often fewer)."""
        finals = (
            math.ceil(self.full * self.val * RACED_PASS) if self.raced else self.full * self.val
        )
        return models * (self.trials * self.rows + finals)


def mipro_round(
    strategy: str, options: Mapping[str, object], *, val: int, raced: bool = False
) -> MiproRound | None:
    """``mipro``'s round for ``val`` selection rows with these options; None for another
    strategy. ``raced``: under ``--race`` with a val split (``race_top`` finalists raced)."""
    if strategy != "mipro":
        return None

    def option(name: str) -> int:
        value = options.get(name, MIPRO_ROUND[name])
        return value if isinstance(value, int) and value > 0 else MIPRO_ROUND[name]

    rows = min(option("minibatch_size"), val)
    finals = option("race_top") if raced else option("full_eval_top")
    return MiproRound(option("full_eval_every"), rows, finals, val, raced)


#: ``simba``'s sampled runs of the incumbent per row (``SimbaOptions.samples``' default; the
#: strategy lives above this package, so the default is repeated here: tests/test_presets.py
#: holds the two equal).
SIMBA_SAMPLES = 3


def sampling_calls(
    strategy: str, options: Mapping[str, object], *, models: int, batch_size: int
) -> int:
    """Calls a strategy pays per candidate besides its screen and val pass: ``simba`` runs the
    incumbent ``samples`` times on a ``batch_size`` minibatch each step, shared by the step's
    two candidates (its rules and its demo); 0 for every other strategy."""
    if strategy != "simba":
        return 0
    samples = options.get("samples", SIMBA_SAMPLES)
    count = samples if isinstance(samples, int) else SIMBA_SAMPLES
    return models * -(-count * batch_size // 2)


def strategy_phases(strategy: str, options: Mapping[str, object], *, reasoning: bool) -> int:
    """The phases ``strategy`` searches in turn: a sequence's steps, ``auto``'s axes, else 1."""
    steps = options.get("steps")
    if strategy == "sequence" and isinstance(steps, Sequence) and steps:
        return len(steps)
    if strategy == "auto":
        uses = options.get("use_reasoning_model", True) is not False
        return 3 if reasoning and uses else 2
    return 1


def resolve_preset(config: RunConfig, *, train: int, val: int, test: int) -> PresetBudget | None:
    """The preset's calls for these split sizes; None without a preset."""
    preset = config.budget.preset
    if preset is None:
        return None
    models = len(config.models)
    fixed = fixed_calls(models, train=train, val=val, test=test)
    per_candidate = candidate_calls(models, val=val, batch_size=config.batch_size)
    per_candidate += sampling_calls(
        config.strategy, config.strategy_options, models=models, batch_size=config.batch_size
    )
    raced = config.race and val > 0
    rounds = mipro_round(
        config.strategy, config.strategy_options, val=val or config.batch_size, raced=raced
    )
    if rounds is not None:  # a candidate of mipro is a round
        per_candidate = rounds.calls(models)
    candidates = PRESET_CANDIDATES[preset]
    phases = strategy_phases(
        config.strategy, config.strategy_options, reasoning=bool(config.reasoning_model)
    )
    calls = fixed + candidates * phases * per_candidate
    return PresetBudget(preset, calls, fixed, per_candidate, candidates, phases)


def preset_limits(limits: BudgetConfig, resolved: PresetBudget | None) -> BudgetConfig:
    """``limits`` with the preset's calls as ``max_calls``, unless ``max_calls`` was given."""
    if resolved is None or limits.max_calls is not None:
        return limits
    return limits.model_copy(update={"max_calls": resolved.calls})
