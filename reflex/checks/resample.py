"""The seeded draws of the resampling tests, made in bulk: the numbers ``random.Random`` gives
one at a time, the same numbers, at a fraction of the cost.

The Monte-Carlo tests of :mod:`reflex.checks.maxstat` and :mod:`reflex.checks.stats` run in
Python loops on the serial path of a run (the winner's correction after the last search phase,
the acceptance test after each val evaluation, the paired test after the final): at 500 val
rows the best-of-many correction alone drew a million ``rng.choice((1, -1))`` and summed 2,000
patterns of 500 rows per candidate (~0.5 s). Their figures are part of a run's record, so what
is here gives *identical* results to those loops for the same ``rng``, not merely as random:

- :func:`coin_flips` is ``[rng.choice((1, -1)) for _ in range(count)]``, as 0 (+1) / 1 (-1)
  bytes. ``choice`` of two items draws ``getrandbits(2)`` (one 32-bit word of the Mersenne
  Twister, its top two bits) until it is below 2: a word with its top bit clear is kept and its
  second bit is the flip. The words are drawn in bulk (``getrandbits(32 * m)`` hands out the
  same words, least significant first) and sorted with ``bytes.translate``.
- :func:`integer_masks` / :func:`masked_sum`: the sum of some rows' values by popcount over bit
  masks, when every value is an integer (any metric scored 0/1: the paired differences are -1,
  0, 1). Sums of integers are exact in floats in any order, so it is the loops' float sum.

The bootstrap's ``rng.choices`` (``reflex.checks.stats.bootstrap_ci``) is not here: the same
indexes drawn in bulk took 0.47 s against the loop's 0.52 s (10,000 resamples of 500 rows; the
generator's words alone cost ~30 ns a draw), measured and dropped.

``tests/test_resample.py`` holds each against its loop over many seeds and sizes. On a Python
whose ``random`` drew differently, those tests would fail, not the figures drift silently.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["coin_flips", "integer_masks", "masked_sum"]

# A kept word's top byte: 0-63 (top bits 00) flips nothing (+1), 64-127 (01) flips (-1);
# 128-255 (top bit set: getrandbits(2) >= 2) is drawn again.
_FLIP = bytes(0 if b < 64 else 1 for b in range(256))
_REDRAW = bytes(range(128, 256))
_WORDS = 1 << 20  # words per batch of coin_flips (4 MB)
_MAX_VALUES = 64  # distinct values integer_masks keeps a mask for (more: the loop is as fast)
_ONE = ord("1")


def coin_flips(rng: random.Random, count: int) -> bytes:
    """``count`` draws of ``rng.choice((1, -1))``: byte 0 for +1, 1 for -1."""
    parts: list[bytes] = []
    have = 0
    while have < count:
        words = min(2 * (count - have) + 64, _WORDS)  # about half the words are drawn again
        top = rng.getrandbits(32 * words).to_bytes(4 * words, "little")[3::4]
        kept = top.translate(_FLIP, _REDRAW)
        parts.append(kept)
        have += len(kept)
    return b"".join(parts)[:count]


def integer_masks(values: Sequence[float]) -> list[tuple[int, int]] | None:
    """``[(value, mask of the rows holding it)]`` for each distinct non-zero value (bit ``j``:
    row ``j``), when every value is an integer and their sums are exact in floats; else None."""
    rows: dict[int, bytearray] = {}
    size = 0
    for row, value in enumerate(values):
        if not float(value).is_integer():
            return None
        whole = int(value)
        size += abs(whole)
        if whole:
            if whole not in rows:
                if len(rows) == _MAX_VALUES:
                    return None
                rows[whole] = bytearray(b"0" * len(values))
            rows[whole][row] = _ONE
    if size >= 1 << 53:
        return None
    return [(whole, int(bits[::-1], 2)) for whole, bits in sorted(rows.items())]


def masked_sum(masks: Sequence[tuple[int, int]], rows: int) -> int:
    """The sum of the values of ``masks`` on the rows whose bit is set in ``rows``."""
    return sum(value * (rows & mask).bit_count() for value, mask in masks)
