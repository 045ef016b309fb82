"""Exceptions raised by aevyra-reflex.

Hierarchy::

    ReflexError                      base of everything we raise on purpose
    ├── DatasetError                 bad dataset file / records (names file and line)
    ├── ConfigurationError           bad option value or combination (names the value and the fix)
    ├── PluginError                  duplicate or unknown plugin names, broken plugins
    ├── ProviderError                a permanent provider failure (bad key, bad request, ...)
    │   └── TransientProviderError   retries exhausted on a transient failure
    ├── BudgetExhausted              a budget ran out; carries the partial result
    ├── DegenerateSeedError          the starting prompt gives no signal to optimize from
    └── StorageError                 the run directory cannot be written (read-only, disk full)

Every message is one line that shows the bad value and what to do about it.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

__all__ = [
    "BudgetExhausted",
    "ConfigurationError",
    "DatasetError",
    "DegenerateSeedError",
    "MissingInputError",
    "PluginError",
    "ProviderError",
    "ReflexError",
    "StorageError",
    "TransientProviderError",
    "storage_error",
]


class ReflexError(Exception):
    """Base class for every error aevyra-reflex raises on purpose."""


class DatasetError(ReflexError):
    """A dataset could not be loaded or split; the message names the file and line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class MissingInputError(DatasetError):
    """A record has no input field: a chat template's variables may still fill it."""


class ConfigurationError(ReflexError):
    """An option has a bad value or clashes with another option."""


class PluginError(ReflexError):
    """A plugin name is unknown or registered twice, or a plugin failed to load."""


class ProviderError(ReflexError):
    """A model call failed permanently (authentication, bad request, context too long)."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class TransientProviderError(ProviderError):
    """A transient failure (rate limit, 5xx, timeout) persisted through every retry."""


class BudgetExhausted(ReflexError):
    """A budget ran out. ``partial`` holds the result so far (an OptimizationResult or None)."""

    def __init__(self, reason: str, partial: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial = partial


class DegenerateSeedError(ReflexError):
    """The starting prompt errors on every row or scores the worst value on every row."""


class StorageError(ReflexError):
    """A run-directory file could not be written; the message names the path and the fix."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


def storage_error(path: Path | str, exc: OSError | Exception) -> StorageError:
    """The one-line error for a run-directory write that failed: which path, and what to do."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    full = (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "full" in reason.lower()
    fix = (
        "free disk space (or pass --run-dir on another disk)"
        if full
        else "make the directory writable or pass --run-dir to a writable directory"
    )
    return StorageError(
        f"cannot write {path}: {reason}; {fix}, then run again (with --resume to continue a "
        "started run)",
        path=str(path),
    )
