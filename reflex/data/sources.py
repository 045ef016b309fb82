"""Datasets named by a source, ``scheme:rest`` (``mlflow:qa``), instead of a file path.

A plugin registers a scheme and its reader (the ``register_dataset_sources`` hook,
:mod:`reflex.hookspecs`); ``load_dataset("mlflow:qa")`` (and every command's DATASET) then
reads ``reader("qa")``'s records exactly as it reads a list of records: the same schemas, the
same checks, each error naming the source and the record's 1-based number. An existing file
always wins: ``data:v2.jsonl`` on disk is read as that file.

The data layer sits below the plugin registry (which imports the contracts, which name
``Dataset``), so the registry installs its lookup here when it is imported
(:func:`use_resolver`); every entry point (the builder, the CLI) imports it.

The reader keeps each row's ``id`` (the source's own record id), so the seeded split of a
source is the same from one run to the next, whatever order the source lists its rows in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence

from reflex.errors import DatasetError, ReflexError

__all__ = ["Resolver", "SourceRows", "read_source", "source_name", "split_source", "use_resolver"]

# A scheme of two or more characters: a one-letter "C:" stays a Windows drive.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(.+)$", re.DOTALL)
SourceRows = Sequence[Mapping[str, object]]
Reader = Callable[[str], SourceRows]
# scheme -> its reader (None: no plugin registered it), and the schemes there are.
Resolver = tuple[Callable[[str], Reader | None], Callable[[], list[str]]]
_RESOLVER: list[Resolver] = []


def use_resolver(resolver: Resolver) -> None:
    """Install the lookup of dataset sources (the plugin registry does, at import)."""
    _RESOLVER[:] = [resolver]


def split_source(text: str) -> tuple[str, str] | None:
    """``(scheme, rest)`` of ``scheme:rest``; None for anything else (a plain path)."""
    match = _SCHEME.match(text)
    if match is None or match[2].startswith("//"):  # a URL (s3://...) is not a source name
        return None
    return match[1], match[2]


def source_name(rest: str) -> str:
    """A short dataset name for a source: its name up to any ``?query``."""
    return rest.partition("?")[0].strip() or rest


def read_source(text: str) -> tuple[str, SourceRows] | None:
    """``(name, records)`` of the dataset source ``text``; None when it is a file path to read.

    An existing path, or a name with no ``scheme:``, is a file (None). A scheme no plugin
    registered is a one-line :class:`DatasetError` listing the known ones (the file does not
    exist either). A reader's own failure is its error, named after the source.
    """
    parts = split_source(text)
    if parts is None or not _RESOLVER or os.path.lexists(text):
        return None
    scheme, rest = parts
    lookup, schemes = _RESOLVER[0]
    reader = lookup(scheme)
    if reader is None:
        known = ", ".join(f"{name}:" for name in schemes())
        hint = f"; dataset sources: {known}" if known else ""
        raise DatasetError(
            f"no such file, and no plugin reads datasets named {scheme}:...{hint}; check "
            "the path (or install the plugin, e.g. pip install 'aevyra-reflex[mlflow]')",
            path=text,
        )
    try:
        records = reader(rest)
    except ReflexError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin's reader failed: one line, named
        problem = f"reading the dataset failed: {type(exc).__name__}: {exc}"
        raise DatasetError(problem, path=text) from None
    if not records:
        raise DatasetError("the source has no rows; add some, or check its name", path=text)
    return source_name(rest), records
