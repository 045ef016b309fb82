"""A closed stdout ends a command quietly (reflex/cli/pipes.py): an EPIPE is a closed output
only when the stream's own reader went away, asked of the real pipe. (The whole command under
``| head -1``: tests/reliability/test_hardening3_pipes.py.)"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from typing import IO

import pytest

from reflex.cli.pipes import closed_output


@pytest.fixture
def pipe() -> Iterator[tuple[int, IO[str]]]:
    """A real pipe: its read end's fd and its write end as a text stream."""
    read, write = os.pipe()
    stream = os.fdopen(write, "w")
    yield read, stream
    stream.close()
    with contextlib.suppress(OSError):  # the test closed it
        os.close(read)


def _as_stdout(monkeypatch: pytest.MonkeyPatch, stream: IO[str]) -> None:
    # In the test itself: pytest's capture puts its own streams back between phases.
    monkeypatch.setattr("sys.stdout", stream)
    monkeypatch.setattr("sys.stderr", stream)


def test_an_epipe_after_the_reader_left_is_a_closed_output(
    pipe: tuple[int, IO[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    read, stream = pipe
    _as_stdout(monkeypatch, stream)
    broken = BrokenPipeError(errno.EPIPE, "Broken pipe")
    assert not closed_output(broken)  # the reader is still there: someone else's pipe broke
    os.close(read)
    assert closed_output(broken)


def test_other_errors_are_never_a_closed_output(
    pipe: tuple[int, IO[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    read, stream = pipe
    _as_stdout(monkeypatch, stream)
    os.close(read)
    assert not closed_output(OSError(errno.ENOSPC, "No space left on device"))
    assert not closed_output(ValueError("I/O operation on closed file"))
