"""The Bayesian optimizer behind ``mipro``: optuna's TPE sampler, imported lazily.

No study object lives from one trial to the next. Each :func:`suggest` builds a fresh in-memory
study, tells it every past trial (its parameters and minibatch score, from the strategy's own
record of them, ``study.add_trials``) and asks a ``TPESampler`` seeded for that trial. A
suggestion is therefore a function of the seed and the past trials alone: a resumed run, which
replays the same trials, asks the same question and gets the same answer. The first
``startup`` trials are drawn at random (TPE's ``n_startup_trials``); after them TPE models
which parameter values scored well (``multivariate``: the three parameters jointly, as DSPy's
MIPROv2 samples them).

optuna is the ``mipro`` extra (``pip install 'aevyra-reflex[mipro]'``); :data:`OPTUNA_MISSING`
is the one-line error ``mipro`` raises when its options are built without it, before any call.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["OPTUNA_MISSING", "Space", "Trial", "optuna_available", "suggest"]

OPTUNA_MISSING = (
    "strategy 'mipro' needs optuna, which is not installed: pip install 'aevyra-reflex[mipro]'"
)


def optuna_available() -> bool:
    """Whether ``import optuna`` would find it (nothing is imported)."""
    return importlib.util.find_spec("optuna") is not None


@dataclass(frozen=True)
class Space:
    """What a trial chooses: an instruction, a demo set and how many of its demos to show."""

    instructions: int
    demo_sets: int
    demo_counts: tuple[int, ...]

    @property
    def size(self) -> int:
        """Distinct prompts: with 0 demos the demo set does not matter."""
        shown = [n for n in self.demo_counts if n > 0]
        return self.instructions * (len(shown) * self.demo_sets + (0 in self.demo_counts))


@dataclass(frozen=True)
class Trial:
    """One past trial as the sampler is told it: the chosen values and the minibatch score."""

    instruction: int
    demo_set: int
    demos: int
    score: float

    def params(self) -> dict[str, int]:
        return {"instruction": self.instruction, "demo_set": self.demo_set, "demos": self.demos}


def _optuna() -> ModuleType:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no line per trial on stderr
    return optuna


def _distributions(optuna: ModuleType, space: Space) -> dict[str, Any]:
    categorical = optuna.distributions.CategoricalDistribution
    return {
        "instruction": categorical(list(range(space.instructions))),
        "demo_set": categorical(list(range(space.demo_sets))),
        "demos": categorical(list(space.demo_counts)),
    }


def suggest(space: Space, past: Sequence[Trial], *, seed: int, startup: int) -> Trial:
    """The next trial's values (its ``score`` 0.0 until measured), given every past trial."""
    optuna = _optuna()
    dists = _distributions(optuna, space)
    with warnings.catch_warnings():  # multivariate TPE is "experimental" in older optuna
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, multivariate=True)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.add_trials(
            [
                optuna.trial.create_trial(params=t.params(), distributions=dists, value=t.score)
                for t in past
            ]
        )
        chosen = study.ask(dists).params
    return Trial(int(chosen["instruction"]), int(chosen["demo_set"]), int(chosen["demos"]), 0.0)
