"""Leakage checks on every candidate prompt: copied held-out text and implausible val gains.

:class:`StrategyContext.record_iteration <reflex.run.context.StrategyContext>` runs two checks on
each candidate:

- ``verbatim_span``: the candidate shares a long run of words with one validation or test
  example (its input or its reference answer). Text is compared as lowercase word tokens
  (punctuation and whitespace ignored). A span counts when it has at least ``min_words`` words
  (default 8) and covers a meaningful part of the example text: at least 20% of it, or
  ``2 * min_words`` words whatever the text's length. A whole short held-out input (4 to
  ``min_words - 1`` words) counts too, and so does a whole 2-3 word input followed (within
  ``min_words`` words) by its whole reference answer. A short answer alone ("yes", "42") never
  counts. Word runs that also occur in a train example or in the starting prompt are never
  leakage: the user wrote them, or the optimizer may legitimately see them.
- ``implausible_gain``: the candidate's val gain over the best-so-far is at least
  ``gain_margin`` (default 0.15) and more than ``gain_ratio`` (default 3) times its train gain
  (the strategy's reported ``change``, else its train score minus the best-so-far's), and the
  gap between the two gains is beyond minibatch noise: more than ``NOISE_Z`` standard errors,
  with the per-row variance of a gain ``g`` taken as ``g * (1 - g)`` (rows that flipped) on
  both the train rows and the val rows. A +0.25 val gain against +0.00 on an 8-row train
  minibatch is noise (standard error 0.17), not leakage; against +0.00 on 40 rows it is
  flagged. Skipped when either train number is unknown.

Held-out text is indexed once per run (a hash of every ``min_words``-word shingle -> example
and position), so checking a candidate costs O(words in the candidate), not O(dataset).
Flags are recorded on the iteration; ``strict_leakage`` rejects flagged candidates instead (the
span check runs before the candidate's val evaluation is paid for).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from reflex.data.json_types import JSONScalar
from reflex.result import Example

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import IterationRecord

__all__ = [
    "LeakageFlag",
    "LeakageGuard",
    "SpanIndex",
    "describe",
    "implausible_gain",
    "leakage_reason",
    "leakage_warnings",
    "words",
]

#: A span covering at least this share of a held-out text counts (with ``min_words`` words).
MIN_FRACTION = 0.2
#: A whole held-out input of at least this many words counts on its own.
SHORT_INPUT_WORDS = 4
#: Held-out examples remembered per shingle: keeps a check O(candidate) on repetitive data.
MAX_HITS = 32
#: Flags kept per candidate (longest spans first) and characters kept of a span.
MAX_FLAGS = 10
SPAN_CHARS = 120
#: A val gain is implausible only when it exceeds the train gain by this many standard errors.
NOISE_Z = 2.0

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Normalised word tokens: lowercase, punctuation and whitespace dropped."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class LeakageFlag:
    """One finding. Span fields are None for ``implausible_gain``, gain fields for spans."""

    kind: str
    split: str
    example_id: str | None = None
    field: str | None = None
    span: str | None = None
    words: int | None = None
    example_words: int | None = None
    val_gain: float | None = None
    train_gain: float | None = None

    def to_dict(self) -> dict[str, JSONScalar]:
        return asdict(self)


@dataclass(frozen=True)
class _Text:
    split: str
    example_id: str
    field: str
    n_words: int


class SpanIndex:
    """Held-out examples indexed by word shingle, minus every shingle visible to the optimizer."""

    def __init__(
        self,
        held_out: Mapping[str, Iterable[Example]],
        visible: Iterable[str],
        min_words: int = 8,
    ) -> None:
        if min_words < 2:
            raise ValueError(f"min_words must be >= 2, got {min_words}")
        self.k = min_words
        self._texts: list[_Text] = []
        self._shingles: dict[int, list[tuple[int, int]]] = {}
        self._short: dict[int, list[int]] = {}  # hash of a whole short input -> text index
        self._short_words: dict[int, tuple[list[str], list[str]]] = {}  # index -> input, ideal
        self._seen: dict[int, set[int]] = {}  # text index -> word positions visible elsewhere
        for split, examples in held_out.items():
            for example in examples:
                self._add(split, example)
        self._lengths = sorted({len(inp) for inp, _ in self._short_words.values()})
        for text in visible:
            self._forget(words(text))

    def _add(self, split: str, example: Example) -> None:
        inp = words(" ".join(str(m.get("content", "")) for m in example.messages))
        ideal = words(example.ideal or "")
        for field, toks in (("input", inp), ("ideal", ideal)):
            if len(toks) >= self.k:
                index = self._new_text(split, example.id, field, len(toks))
                for pos in range(len(toks) - self.k + 1):
                    hits = self._shingles.setdefault(hash(tuple(toks[pos : pos + self.k])), [])
                    if len(hits) < MAX_HITS:
                        hits.append((index, pos))
        if 2 <= len(inp) < self.k:
            index = self._new_text(split, example.id, "input", len(inp))
            self._short.setdefault(hash(tuple(inp)), []).append(index)
            self._short_words[index] = (inp, ideal)

    def _new_text(self, split: str, example_id: str, field: str, n_words: int) -> int:
        self._texts.append(_Text(split, example_id, field, n_words))
        return len(self._texts) - 1

    def _forget(self, toks: Sequence[str]) -> None:
        """Drop the shingles and short inputs that occur in visible text; mark their words."""
        for pos in range(len(toks) - self.k + 1):
            for index, start in self._shingles.pop(hash(tuple(toks[pos : pos + self.k])), ()):
                self._seen.setdefault(index, set()).update(range(start, start + self.k))
        for n in self._lengths:
            for pos in range(len(toks) - n + 1):
                self._short.pop(hash(tuple(toks[pos : pos + n])), None)

    def find(self, text: str) -> list[LeakageFlag]:
        """Held-out examples ``text`` leaks, longest span first (at most ``MAX_FLAGS``)."""
        toks = words(text)
        found: dict[tuple[str, str], LeakageFlag] = {}
        for flag in [*self._long_spans(toks), *self._short_inputs(toks)]:
            key = (flag.split, str(flag.example_id))
            if key not in found or (flag.words or 0) > (found[key].words or 0):
                found[key] = flag
        ranked = sorted(found.values(), key=lambda f: (-(f.words or 0), f.split, f.example_id))
        return ranked[:MAX_FLAGS]

    def _long_spans(self, toks: Sequence[str]) -> Iterable[LeakageFlag]:
        """Every maximal run of consecutive shingles shared with one held-out text, judged."""
        k, last_start = self.k, len(toks) - self.k
        previous: dict[tuple[int, int], int] = {}  # (text, example position) -> run so far
        for i in range(last_start + 2):  # one step past the end closes the open runs
            hits = self._shingles.get(hash(tuple(toks[i : i + k])), ()) if i <= last_start else ()
            current = {(index, pos): previous.get((index, pos - 1), 0) + 1 for index, pos in hits}
            for (index, pos), run in previous.items():
                if (index, pos + 1) not in current:  # the run ended at candidate word i - 1
                    flag = self._judge(index, pos - run + 1, run, toks[i - run : i - 1 + k])
                    if flag is not None:
                        yield flag
            previous = current

    def _judge(self, index: int, first: int, run: int, span: Sequence[str]) -> LeakageFlag | None:
        """A flag when the run has enough words no train row or the seed also holds."""
        text, seen = self._texts[index], self._seen.get(index, set())
        unseen = longest = 0
        for pos in range(first, first + run + self.k - 1):
            unseen = 0 if pos in seen else unseen + 1
            longest = max(longest, unseen)
        needed = max(self.k, min(math.ceil(MIN_FRACTION * text.n_words), 2 * self.k))
        return self._flag(text, span, len(span)) if longest >= needed else None

    def _short_inputs(self, toks: Sequence[str]) -> Iterable[LeakageFlag]:
        for n in self._lengths:
            for i in range(len(toks) - n + 1):
                for index in self._short.get(hash(tuple(toks[i : i + n])), ()):
                    inp, ideal = self._short_words[index]
                    if list(toks[i : i + n]) != inp:
                        continue  # a hash collision
                    end = i + n
                    if n < SHORT_INPUT_WORDS:
                        end = self._answer_end(toks, end, ideal)
                    if end:
                        yield self._flag(self._texts[index], toks[i:end], end - i)

    def _answer_end(self, toks: Sequence[str], start: int, answer: Sequence[str]) -> int:
        """Where ``answer`` ends when it starts within ``k`` words after ``start``, else 0."""
        if not answer:
            return 0
        for i in range(start, min(start + self.k, len(toks) - len(answer)) + 1):
            if list(toks[i : i + len(answer)]) == list(answer):
                return i + len(answer)
        return 0

    @staticmethod
    def _flag(text: _Text, span: Sequence[str], length: int) -> LeakageFlag:
        shown = " ".join(span)
        if len(shown) > SPAN_CHARS:
            shown = shown[: SPAN_CHARS - 3] + "..."
        return LeakageFlag(
            kind="verbatim_span",
            split=text.split,
            example_id=text.example_id,
            field=text.field,
            span=shown,
            words=length,
            example_words=text.n_words,
        )


def implausible_gain(
    val_gain: float | None,
    train_gain: float | None,
    *,
    margin: float = 0.15,
    ratio: float = 3.0,
    rows: tuple[int, int] | None = None,
) -> LeakageFlag | None:
    """A flag when val rose by at least ``margin`` and by more than ``ratio`` x the train gain.

    ``rows``: ``(train rows, val rows)`` the gains were measured on; when given, the gap must
    also exceed ``NOISE_Z`` standard errors (see the module docstring).
    """
    if val_gain is None or train_gain is None:
        return None
    if val_gain < margin - 1e-9 or val_gain <= ratio * max(train_gain, 0.0):
        return None
    if rows is not None and val_gain - max(train_gain, 0.0) <= NOISE_Z * _gain_noise(
        val_gain, rows
    ):
        return None
    return LeakageFlag(
        kind="implausible_gain",
        split="val",
        val_gain=round(val_gain, 6),
        train_gain=round(train_gain, 6),
    )


def _gain_noise(gain: float, rows: tuple[int, int]) -> float:
    """Standard error of (val gain - train gain) when both have per-row variance g(1-g)."""
    share = min(max(gain, 0.0), 1.0)
    variance = share * (1.0 - share)
    return math.sqrt(sum(variance / n for n in rows if n > 0))


class LeakageGuard:
    """The run's leakage checker: the held-out index, the thresholds and the best-so-far."""

    def __init__(
        self,
        index: SpanIndex,
        *,
        strict: bool = False,
        gain_margin: float = 0.15,
        gain_ratio: float = 3.0,
    ) -> None:
        self.index = index
        self.strict = strict
        self.gain_margin = gain_margin
        self.gain_ratio = gain_ratio
        self._best_train: float | None = None

    @classmethod
    def for_run(
        cls,
        config: RunConfig,
        *,
        train: Iterable[Example],
        held_out: Mapping[str, Iterable[Example]],
        seed_texts: Iterable[str],
    ) -> LeakageGuard:
        """Index ``held_out`` once; ``train`` rows and ``seed_texts`` are visible, never leaks."""
        visible = [*seed_texts]
        for example in train:
            visible.extend(str(m.get("content", "")) for m in example.messages)
            visible.append(example.ideal or "")
        return cls(
            SpanIndex(held_out, visible, config.leakage_min_words),
            strict=config.strict_leakage,
            gain_margin=config.leakage_gain_margin,
            gain_ratio=config.leakage_gain_ratio,
        )

    def screen(self, prompt: str) -> list[LeakageFlag]:
        """Held-out text the candidate copies (checked before its val evaluation)."""
        return self.index.find(prompt)

    def gain(
        self,
        train_score: float | None,
        val_score: float | None,
        incumbent_val: float | None,
        change: float | None,
        rows: tuple[int, int] | None = None,
    ) -> list[LeakageFlag]:
        """``[flag]`` when the val gain over the best-so-far is implausible, else ``[]``.

        ``rows``: ``(train rows, val rows)`` behind the two scores (noise allowance).
        """
        train_gain = change
        if train_gain is None and train_score is not None and self._best_train is not None:
            train_gain = train_score - self._best_train
        val_gain = None
        if val_score is not None and incumbent_val is not None:
            val_gain = val_score - incumbent_val
        flag = implausible_gain(
            val_gain, train_gain, margin=self.gain_margin, ratio=self.gain_ratio, rows=rows
        )
        return [flag] if flag is not None else []

    def became_best(self, train_score: float | None) -> None:
        """Remember the new best-so-far's train score (the fallback train gain baseline)."""
        self._best_train = train_score

    def reject(self, flags: Sequence[LeakageFlag]) -> str | None:
        """The rejection reason under ``strict`` when there are flags, else None."""
        return leakage_reason(flags) if self.strict and flags else None


def describe(flag: Mapping[str, object] | LeakageFlag) -> str:
    """One line for a flag (or its ``to_dict()``)."""
    data = flag.to_dict() if isinstance(flag, LeakageFlag) else flag
    if data.get("kind") == "implausible_gain":
        val, train = _signed(data.get("val_gain")), _signed(data.get("train_gain"))
        return f"val gain {val} vs train gain {train}"
    return (
        f"copies {data.get('words')} words of {data.get('split')} example "
        f"{data.get('example_id')} ({data.get('field')}): {data.get('span')!r}"
    )


def _signed(value: object) -> str:
    return f"{value:+.3f}" if isinstance(value, int | float) else "?"


def leakage_reason(flags: Sequence[LeakageFlag]) -> str:
    """Why a strict run rejected the candidate."""
    more = f" (+{len(flags) - 1} more)" if len(flags) > 1 else ""
    return f"leakage: {describe(flags[0])}{more}"


def leakage_warnings(iterations: Iterable[IterationRecord]) -> list[dict[str, str]]:
    """One ``{"kind": "leakage", "message"}`` warning per iteration with leakage flags."""
    out: list[dict[str, str]] = []
    for record in iterations:
        flags: list[Mapping[str, object]] = list(getattr(record, "leakage", None) or [])
        if not flags:
            continue
        more = f" (+{len(flags) - 1} more)" if len(flags) > 1 else ""
        rejected = str(getattr(record, "rejected", "") or "").startswith("leakage:")
        verdict = "rejected" if rejected else "recorded (not rejected: see --strict-leakage)"
        message = f"iteration {record.iteration}: {describe(flags[0])}{more}; {verdict}"
        out.append({"kind": "leakage", "message": message})
    return out
