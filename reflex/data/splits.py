"""Seeded train / val / test splits with disjoint ids.

Rows whose file set ``split`` go to that split. The other rows are sorted by id, shuffled with
``random.Random(seed)`` and cut by the fractions, so the same set of ids and the same seed give
the same split whatever the file order. With ``group_key`` (a metadata key), rows sharing a value
stay together, so near-duplicates (e.g. ``variant_of``) never leak from train into test.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reflex.config import default
from reflex.data.dataset import SPLIT_NAMES, Dataset
from reflex.errors import ConfigurationError, DatasetError
from reflex.result import Example

__all__ = ["Split", "split_dataset"]

logger = logging.getLogger(__name__)

_TOLERANCE = 1e-6
_Group = tuple[str, list[Example]]  # (sort key, member rows in dataset order)


@dataclass(frozen=True)
class Split:
    """Three datasets with disjoint ids."""

    train: Dataset
    val: Dataset
    test: Dataset

    def ids(self) -> dict[str, list[str]]:
        """``{"train": [...], "val": [...], "test": [...]}``, to save with the run."""
        return {name: list(getattr(self, name).ids) for name in SPLIT_NAMES}

    @classmethod
    def from_ids(cls, dataset: Dataset, ids: Mapping[str, Sequence[str]]) -> Split:
        """Restore a split saved with :meth:`ids`; every saved id must still be in ``dataset``."""
        missing_keys = [name for name in SPLIT_NAMES if name not in ids]
        if missing_keys:
            raise DatasetError(
                f"saved split has no {', '.join(missing_keys)} list; expected keys "
                f"{', '.join(SPLIT_NAMES)}",
                path=dataset.source,
            )
        known = set(dataset.ids)
        seen: dict[str, str] = {}
        for name in SPLIT_NAMES:
            for example_id in ids[name]:
                if example_id not in known:
                    raise DatasetError(
                        f"saved {name} split names id {example_id!r}, which is not in dataset "
                        f"{dataset.name!r}; the dataset changed since the split was saved: "
                        "restore the original file or split again",
                        path=dataset.source,
                    )
                if example_id in seen:
                    raise DatasetError(
                        f"saved split puts id {example_id!r} in both {seen[example_id]} and "
                        f"{name}; the saved split is corrupt: split again",
                        path=dataset.source,
                    )
                seen[example_id] = name
        unused = len(known) - len(seen)
        if unused:
            logger.warning("%d rows of dataset %r are in no saved split", unused, dataset.name)
        return cls(**{name: _subset(dataset, name, ids[name]) for name in SPLIT_NAMES})


def split_dataset(
    dataset: Dataset,
    *,
    train: float = default("train_split"),
    val: float = default("val_split"),
    test: float | None = None,
    seed: int = 0,
    group_key: str | None = None,
) -> Split:
    """Split ``dataset`` into train / val / test; ``test`` defaults to ``1 - train - val``."""
    fractions = _fractions(train, val, test)
    if group_key is None:  # every row its own group: the fast path for large datasets
        assignment, n_groups = _assign_rows(dataset, fractions, seed), None
    else:
        groups = _groups(dataset, group_key)
        assignment, n_groups = _assign_groups(groups, group_key, fractions, seed), len(groups)
    buckets: dict[str, list[Example]] = {name: [] for name in SPLIT_NAMES}
    for example in dataset:  # one pass, in dataset order
        buckets[assignment[example.id]].append(example)
    split = Split(
        **{name: dataset.subset(rows, f"{dataset.name}:{name}") for name, rows in buckets.items()}
    )
    _check_sizes(split, fractions, dataset, n_groups)
    return split


def _assign_rows(dataset: Dataset, fractions: dict[str, float], seed: int) -> dict[str, str]:
    """Same result as ``_assign_free`` on groups of one, without building the groups."""
    assignment = {e.id: e.split for e in dataset if e.split is not None}
    free = sorted(e.id for e in dataset if e.split is None)
    n_test = _round(fractions["test"] * len(free))
    n_val = _round(fractions["val"] * len(free))
    random.Random(seed).shuffle(free)
    # A row of one goes where its middle (position + 0.5) falls: test, then val, then train.
    assignment.update(dict.fromkeys(free[:n_test], "test"))
    assignment.update(dict.fromkeys(free[n_test : n_test + n_val], "val"))
    assignment.update(dict.fromkeys(free[n_test + n_val :], "train"))
    return assignment


def _assign_groups(
    groups: list[_Group], group_key: str, fractions: dict[str, float], seed: int
) -> dict[str, str]:
    assignment: dict[str, str] = {}
    free: list[_Group] = []
    for key, members in groups:
        forced = sorted({m.split for m in members if m.split is not None})
        if len(forced) > 1:
            raise ConfigurationError(
                f"rows of group {key!r} (group key {group_key!r}) ask for different splits "
                f"({', '.join(forced)}); give the whole group one split value"
            )
        if forced:
            assignment.update((m.id, forced[0]) for m in members)
        else:
            free.append((key, members))
    _assign_free(free, fractions, seed, assignment)
    return assignment


def _fractions(train: float, val: float, test: float | None) -> dict[str, float]:
    if test is None:
        test = 1.0 - train - val
        if abs(test) < 1e-12:  # 0.8 + 0.2 leaves a float crumb, not a real fraction
            test = 0.0
    fractions = {"train": train, "val": val, "test": test}
    shown = _show(fractions)
    for name, value in fractions.items():
        if not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 1:
            raise ConfigurationError(
                f"split fraction {_show({name: value})} is outside [0, 1] ({shown}; test "
                "defaults to 1 - train - val); use fractions between 0 and 1 that sum to 1"
            )
    total = train + val + test
    if abs(total - 1.0) > _TOLERANCE:
        raise ConfigurationError(
            f"split fractions must sum to 1, got {total:g} ({shown}); e.g. train=0.6, val=0.2, "
            "test=0.2"
        )
    for name in ("train", "test"):
        if fractions[name] <= 0:
            raise ConfigurationError(
                f"the {name} fraction must be greater than 0 ({shown}); only val may be 0"
            )
    return fractions


def _groups(dataset: Dataset, group_key: str | None) -> list[_Group]:
    if group_key is None:
        return [(example.id, [example]) for example in dataset]
    if not any(example.metadata.get(group_key) is not None for example in dataset):
        available = sorted({key for example in dataset for key in example.metadata})
        raise ConfigurationError(
            f"group key {group_key!r} is in no row's metadata; available metadata keys: "
            f"{', '.join(available) or '(none)'}"
        )
    groups: dict[str, list[Example]] = {}
    for example in dataset:
        value = example.metadata.get(group_key)
        # Rows without the key are groups of one; the prefixes keep the two kinds apart.
        key = (
            f"id:{example.id}"
            if value is None
            else "group:" + json.dumps(value, sort_keys=True, default=str)
        )
        groups.setdefault(key, []).append(example)
    return list(groups.items())


def _assign_free(
    free: list[_Group], fractions: dict[str, float], seed: int, assignment: dict[str, str]
) -> None:
    """Cut the shuffled groups at the test and val targets (a group goes where its middle falls)."""
    total = sum(len(members) for _, members in free)
    n_test = _round(fractions["test"] * total)
    n_val = _round(fractions["val"] * total)
    order = sorted(free, key=lambda group: group[0])
    random.Random(seed).shuffle(order)
    seen = 0
    for _, members in order:
        middle = seen + len(members) / 2
        name = "test" if middle < n_test else "val" if middle < n_test + n_val else "train"
        for member in members:
            assignment[member.id] = name
        seen += len(members)


def _check_sizes(
    split: Split, fractions: dict[str, float], dataset: Dataset, n_groups: int | None
) -> None:
    for name in SPLIT_NAMES:
        if fractions[name] > 0 and len(getattr(split, name)) == 0:
            groups = f" in {n_groups} groups" if n_groups is not None else ""
            raise DatasetError(
                f"dataset {dataset.name!r} of {len(dataset)} rows{groups} is too small for "
                f"fractions {_show(fractions)}: the {name} split would be empty; add rows or "
                f"change the fractions (e.g. a larger {name} fraction, or val=0)",
                path=dataset.source,
            )


def _subset(dataset: Dataset, name: str, ids: Sequence[str]) -> Dataset:
    return Dataset(
        [dataset.by_id(i) for i in ids], name=f"{dataset.name}:{name}", source=dataset.source
    )


def _round(value: float) -> int:
    """Round half up: Python's round() sends 0.5 to 0 and 2.5 to 2."""
    return math.floor(value + 0.5)


def _show(fractions: Mapping[str, float]) -> str:
    return ", ".join(
        f"{name}={value:g}" if isinstance(value, (int, float)) else f"{name}={value!r}"
        for name, value in fractions.items()
    )
