"""The seeded draws of the resampling tests, made in bulk: the numbers ``random.Random`` gives
one at a time, the same numbers, at a fraction of the cost.

The Monte-Carlo tests of :mod:`reflex.checks.maxstat` and :mod:`reflex.checks.stats` run in
Python loops on the serial path of a run (the winner's correction after the last search phase,
the acceptance test after each val evaluation, the paired test and its bootstrap CI after the
final): at 500 val rows the best-of-many correction alone drew a million ``rng.choice((1, -1))``
and summed 2,000 patterns of 500 rows per candidate (~0.5 s). Their figures are part of a
run's record, so what is here gives *identical* results to those loops for the same ``rng``,
not merely as random:

- :func:`coin_flips` is ``[rng.choice((1, -1)) for _ in range(count)]``, as 0 (+1) / 1 (-1)
  bytes. ``choice`` of two items draws ``getrandbits(2)`` (one 32-bit word of the Mersenne
  Twister, its top two bits) until it is below 2: a word with its top bit clear is kept and its
  second bit is the flip. The words are drawn in bulk (``getrandbits(32 * m)`` hands out the
  same words, least significant first) and sorted with ``bytes.translate``.
- :func:`integer_masks` / :func:`masked_sum`: the sum of some rows' values by popcount over bit
  masks, when every value is an integer (any metric scored 0/1: the paired differences are -1,
  0, 1). Sums of integers are exact in floats in any order, so it is the loops' float sum.
- :func:`bootstrap_sums`: the sums of ``rng.choices(values, k=len(values))``, resample after
  resample, for integer values (a 0/1 metric's paired differences). Each draw is
  ``floor(random() * n)``, and ``random()`` is ``(a >> 5) * 2**26 + (b >> 6)`` over ``2**53``
  (two words ``a``, ``b``). The words are drawn in bulk, each draw's pair one 64-bit field of a
  big integer, and all fields are worked on at once: masked and multiplied by ``n`` (up to
  2,048 rows), a field holds ``(a >> 5) * n``, whose bits from 27 up are the index, unless the
  16 bits below them are all set (one draw in 65,536: ``b`` or the float product's rounding
  may carry it to the next index), where the draw is computed as ``random()`` computes it. The
  indexes' low bytes go through ``bytes.translate`` to the rows holding each value, their high
  bytes select the bit, and ``bytes.count`` counts each resample's hits. 500 rows, 10,000
  resamples: ~0.5 s in the loop, ~0.25 s here. (Drawing the indexes one by one from the bulk
  words, tried first, saved nothing: 0.47 s against 0.52 s.)

``tests/test_resample.py`` holds each against its loop over many seeds and sizes. On a Python
whose ``random`` drew differently, those tests would fail, not the figures drift silently.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["bootstrap_sums", "coin_flips", "integer_masks", "masked_sum"]

# A kept word's top byte: 0-63 (top bits 00) flips nothing (+1), 64-127 (01) flips (-1);
# 128-255 (top bit set: getrandbits(2) >= 2) is drawn again.
_FLIP = bytes(0 if b < 64 else 1 for b in range(256))
_REDRAW = bytes(range(128, 256))
_WORDS = 1 << 20  # words per batch of coin_flips (4 MB)
_MAX_VALUES = 64  # distinct values integer_masks keeps a mask for (more: the loop is as fast)
_ONE = ord("1")
_MAX_ROWS = 2048  # a draw's x * rows (x < 2**53) stays inside its 64-bit field
_MAX_CLASSES = 8  # distinct non-zero values bootstrap_sums counts apart (each is a pass)
_DRAWS = 1 << 12  # draws per batch of bootstrap_sums (32 KB integers: kept in the cache)
_HIGH = bytes(1 << b if b < 8 else 0 for b in range(256))  # an index's high byte: its bit
_FULL = bytes(b == 255 for b in range(256))
_UNIT = 1.0 / 9007199254740992.0  # random()'s 2**-53


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


def _repeat(pattern: int, count: int) -> int:
    """``pattern`` in each of ``count`` 64-bit fields."""
    return int.from_bytes(pattern.to_bytes(8, "little") * count, "little")


def _indexes(words: int, n: int, draws: int, first: int) -> bytes:
    """``floor(random() * n)`` of each of ``draws`` draws (its two words a 64-bit field of
    ``words``, the first low), as bytes 4 (low byte) and 5 of each 8: ``(a >> 5) * n >> 27`` of
    the first word ``a``, except where the second word or the float product's rounding could
    carry it to the next index (the 16 bits below it all set: one draw in 65,536), done there as
    ``random()`` does it. ``first``: ``a``'s top 27 bits repeated over the fields."""
    scaled = ((words & first) * n).to_bytes(8 * draws, "little")
    near = int.from_bytes(scaled[2::8].translate(_FULL), "little")
    near &= int.from_bytes(scaled[3::8].translate(_FULL), "little")
    if not near:
        return scaled
    fixed = bytearray(scaled)
    while near:
        draw = (near.bit_length() - 1) // 8
        near &= ~(0xFF << 8 * draw)
        pair = words >> 64 * draw
        x = (pair & 0xFFFFFFFF) >> 5 << 26 | (pair >> 38 & (1 << 26) - 1)
        index = math.floor(x * _UNIT * float(n))
        fixed[8 * draw + 4 : 8 * draw + 6] = index.to_bytes(2, "little")
    return bytes(fixed)


def _value_tables(values: Sequence[float]) -> list[tuple[int, bytes]] | None:
    """For each distinct non-zero value, a ``bytes.translate`` table from an index's low byte
    to the bits ``1 << (index >> 8)`` of the rows holding it; None when
    :func:`bootstrap_sums` cannot count them (a fraction, too many rows or values, sums not
    exact in floats)."""
    n = len(values)
    if not 0 < n <= _MAX_ROWS or not all(float(v).is_integer() for v in values):
        return None
    if max(abs(v) for v in values) * n >= 1 << 53:
        return None
    tables: dict[int, bytearray] = {}
    for row, value in enumerate(values):
        whole = int(value)
        if whole:
            if whole not in tables and len(tables) == _MAX_CLASSES:
                return None
            tables.setdefault(whole, bytearray(256))[row & 255] |= 1 << (row >> 8)
    return [(whole, bytes(table)) for whole, table in sorted(tables.items())]


def bootstrap_sums(values: Sequence[float], rng: random.Random, count: int) -> list[int] | None:
    """The sums of ``count`` resamples ``sum(rng.choices(values, k=len(values)))``, in turn,
    when every value is an integer (the same draws, the same sums); None otherwise."""
    tables = _value_tables(values)
    if tables is None:
        return None
    n = len(values)
    per = max(1, _DRAWS // n)  # resamples per batch
    first = _repeat(0xFFFFFFE0, per * n)
    sums: list[int] = []
    for done in range(0, count, per):
        resamples = min(per, count - done)
        draws = resamples * n
        if resamples < per:
            first = _repeat(0xFFFFFFE0, draws)
        indexes = _indexes(rng.getrandbits(64 * draws), n, draws, first)
        low, high = indexes[4::8], int.from_bytes(indexes[5::8].translate(_HIGH), "little")
        batch = [0] * resamples
        for value, table in tables:
            hits = int.from_bytes(low.translate(table), "little") & high
            rows = hits.to_bytes(draws, "little")  # 0: the draw is not one of value's rows
            for r in range(resamples):
                batch[r] += value * (n - rows.count(0, r * n, r * n + n))
        sums.extend(batch)
    return sums
