"""The exception hierarchy (reflex/errors.py): what each error carries, one line each, and the
run-directory write error that names the path and the fix."""

from __future__ import annotations

import errno

import pytest

from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    DatasetError,
    DegenerateSeedError,
    MissingInputError,
    PluginError,
    ProviderError,
    ReflexError,
    StorageError,
    TransientProviderError,
    storage_error,
)


def test_every_error_raised_on_purpose_is_a_reflex_error() -> None:
    kinds = [ConfigurationError, PluginError, DegenerateSeedError, BudgetExhausted, StorageError]
    kinds += [DatasetError, MissingInputError, ProviderError, TransientProviderError]
    assert all(issubclass(kind, ReflexError) for kind in kinds)
    assert issubclass(MissingInputError, DatasetError)
    # One retried to exhaustion is still a provider error: `except ProviderError` catches both.
    assert issubclass(TransientProviderError, ProviderError)


def test_a_dataset_error_names_the_file_and_line() -> None:
    error = DatasetError("no input field", path="rows.jsonl", line=7)
    assert str(error) == "rows.jsonl:7: no input field" and (error.path, error.line) == (
        "rows.jsonl",
        7,
    )
    assert str(DatasetError("empty", path="rows.csv")) == "rows.csv: empty"
    assert str(DatasetError("no rows")) == "no rows"


def test_errors_carry_what_their_handlers_need() -> None:
    assert ProviderError("bad key", model="openai/m").model == "openai/m"
    partial = object()
    stop = BudgetExhausted("max_cost reached", partial)
    assert (stop.reason, stop.partial, str(stop)) == ("max_cost reached", partial, stop.reason)


@pytest.mark.parametrize(
    ("error", "fix"),
    [
        (OSError(errno.EACCES, "Permission denied"), "make the directory writable"),
        (OSError(errno.ENOSPC, "No space left on device"), "free disk space"),
        (RuntimeError("database or disk is full"), "free disk space"),
    ],
)
def test_a_failed_write_names_the_path_and_the_fix(error: Exception, fix: str) -> None:
    made = storage_error("/runs/r1/events.jsonl", error)
    text = str(made)
    assert isinstance(made, StorageError) and made.path == "/runs/r1/events.jsonl"
    assert text.startswith("cannot write /runs/r1/events.jsonl: ") and fix in text
    assert "--resume" in text and "\n" not in text
