"""A closed stdout (``aevyra-reflex show RUN | head -1``) ends the command quietly.

When the reader of a pipe exits early, the next write gets EPIPE (Python ignores SIGPIPE, so
it is a BrokenPipeError, not the signal that ends ``cat`` or ``seq``). That is not an error of
the command, of its inputs or of the run directory: it stops at once, prints nothing, and exits
with :data:`EXIT_BROKEN_PIPE` (141 = 128 + SIGPIPE), the status a shell reports for ``seq`` in
``seq 100000 | head -1``; non-zero, so a ``check`` whose verdict line never reached its reader is
never taken for a pass under ``set -o pipefail``. Standard library only.
"""

from __future__ import annotations

import errno
import os
import select
import sys
from typing import IO, NoReturn

__all__ = ["EXIT_BROKEN_PIPE", "closed_output", "exit_on_closed_output"]

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


def _reader_gone(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a pipe or socket whose reader has gone away."""
    try:
        fd = stream.fileno() if stream is not None else -1
    except (AttributeError, OSError, ValueError):  # captured (pytest, CliRunner) or closed
        return False
    if fd < 0:
        return False
    if not hasattr(select, "poll"):  # Windows: no poll; an EPIPE there is the console's
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def closed_output(exc: BaseException) -> bool:
    """Whether ``exc`` is a write to stdout or stderr after its reader went away (not, say, a
    broken connection to a tracker: the stream itself is asked)."""
    if not isinstance(exc, OSError) or exc.errno != errno.EPIPE:
        return False
    return _reader_gone(sys.stdout) or _reader_gone(sys.stderr)


def exit_on_closed_output() -> NoReturn:
    """Exit with :data:`EXIT_BROKEN_PIPE`, without a word.

    The closed streams are pointed at /dev/null first (the Python documentation's recipe):
    otherwise the interpreter's own flush of what is still buffered fails again at shutdown
    and prints "Exception ignored ... BrokenPipeError".
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            if _reader_gone(stream):
                os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)
    sys.exit(EXIT_BROKEN_PIPE)
