"""A user's own sequence of strategies: ``-s instructions,fewshot,iterative``.

The built-in ``sequence`` strategy (``strategies/sequence.py``) runs its ``steps`` as phases;
this module is the core's side of it. :func:`sequence_setting` turns a strategy name listing
several (``a,b,c``, or ``a+b+c`` where a comma already separates strategies, as in
``compare --strategies``) into ``sequence`` with those steps, so config.json records the run as
``{"strategy": "sequence", "strategy_options": {"steps": [...]}}`` and a resume compares like for
like. :func:`check_steps` makes, before the run's first call, the checks the engine makes for
one strategy: every step is registered, has its reasoning model when it needs one, and takes
the options given for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reflex.config import RunConfig
from reflex.errors import ConfigurationError
from reflex.plugins import build_options, get_registry

__all__ = ["SEQUENCE", "check_steps", "sequence_setting"]

SEQUENCE = "sequence"
_SEPARATORS = re.compile(r"[,+]")


def sequence_setting(name: str, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(strategy, options)`` for ``name``: ``sequence`` with its steps when ``name`` lists
    several strategies, else ``name`` and ``options`` unchanged. Unknown steps are refused."""
    if not _SEPARATORS.search(name):
        return name, dict(options)
    steps = [step.strip() for step in _SEPARATORS.split(name)]
    if not all(steps):
        raise ConfigurationError(
            f"strategy {name!r}: a step has no name; list strategies like "
            "instructions,fewshot,iterative"
        )
    registry = get_registry()
    for step in steps:
        registry.strategy(step)  # unknown: one line listing the known ones
    if "steps" in options:
        raise ConfigurationError(
            f"strategy {name!r} names its steps; give no 'steps' option besides"
        )
    return SEQUENCE, {"steps": steps, **options}


def check_steps(config: RunConfig) -> None:
    """Refuse, before any call, a sequence step that is unknown, lacks its reasoning model or
    is given options it does not take."""
    if config.strategy != SEQUENCE:
        return
    steps = config.strategy_options.get("steps")
    given = config.strategy_options.get("options") or {}
    if not isinstance(steps, list) or not isinstance(given, Mapping):
        return  # the strategy's own options model reports the shape (build_options)
    registry = get_registry()
    for step in steps:
        cls = registry.strategy(str(step))
        if cls.requires_reasoning_model and not config.reasoning_model:
            raise ConfigurationError(
                f"sequence step {step!r} needs a reasoning model: pass --reasoning-model "
                "provider/model (builder: .set_reasoning_model(...)), or leave the step out"
            )
        build_options(cls, dict(given.get(step) or {}))
    unknown = sorted(set(given) - {str(s) for s in steps})
    if unknown:
        raise ConfigurationError(
            f"sequence option 'options' names {unknown[0]!r}, which is not a step ({steps})"
        )
