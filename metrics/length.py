"""``length``: a length limit as a metric, usable as a guard (e.g. "outputs must stay short")."""

from __future__ import annotations

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

__all__ = ["LengthLimit", "register_metrics"]


class LengthLimit:
    """1 while the output is within ``max_words`` / ``max_chars``; beyond, ``limit / length``.

    The penalty is smooth so a guard can tolerate a small regression. Needs no reference.
    Used as a guard, it keeps a candidate prompt from winning by writing longer answers.
    """

    name = "length"
    requires_reference = False

    def __init__(self, *, max_words: int | None = None, max_chars: int | None = None) -> None:
        if max_words is None and max_chars is None:
            raise ConfigurationError(
                "length metric needs max_words=N or max_chars=N (CLI: --metric "
                "length:WEIGHT,max_words=N; Python: add_metric('length', max_words=N))"
            )
        for label, limit in (("max_words", max_words), ("max_chars", max_chars)):
            if limit is not None and limit <= 0:
                raise ConfigurationError(f"length metric {label} must be > 0, got {limit}")
        self.max_words = max_words
        self.max_chars = max_chars

    def score(self, output: str, example: Example) -> Score:
        text = output.strip()
        ratios: dict[str, float] = {}
        if self.max_words is not None:
            ratios["words"] = _ratio(len(text.split()), self.max_words)
        if self.max_chars is not None:
            ratios["chars"] = _ratio(len(text), self.max_chars)
        value = min(ratios.values())
        if value >= 1.0:
            return Score(1.0, objectives=ratios)
        over = []
        if self.max_words is not None and ratios["words"] < 1:
            over.append(f"{len(text.split())} words (limit {self.max_words})")
        if self.max_chars is not None and ratios["chars"] < 1:
            over.append(f"{len(text)} characters (limit {self.max_chars})")
        return Score(value, feedback=f"output is too long: {', '.join(over)}", objectives=ratios)


def _ratio(size: int, limit: int) -> float:
    return 1.0 if size <= limit else limit / size


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("length", LengthLimit)
