"""What every command shares: one-line errors, exit codes, Ctrl-C handling, flag parsing,
keeping credentials given on the command line out of what the process shows.

Library errors become one line on stderr and exit code 2 (tracebacks only with ``-v``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING, Any, ParamSpec, SupportsFloat, SupportsIndex

import click

from reflex.cli.pipes import closed_output, exit_on_closed_output
from reflex.data.files import file_problem, output_problem
from reflex.data.sources import split_source
from reflex.errors import ConfigurationError, ReflexError
from reflex.redact import (
    credential_urls,
    data_secrets,
    hidden_values,
    redact_argv,
    scrub,
    scrubbed_logs,
)

if TYPE_CHECKING:
    from reflex.plugins import Registry

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "FiniteFloat",
    "FiniteRange",
    "InputFile",
    "OutputFile",
    "RESUME_HINT",
    "Group",
    "RunDir",
    "hidden_credentials",
    "router_secrets",
    "number",
    "pairs",
    "registry",
    "with_errors",
]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


class _Interrupts:
    """SIGINT handler: the first Ctrl-C raises KeyboardInterrupt, so the run cancels its calls,
    saves its partial result and closes its trackers; a second one exits at once."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            os.write(2, b"interrupted again: exiting now (the last checkpoint is kept)\n")
            os._exit(EXIT_INTERRUPTED)
        raise KeyboardInterrupt


@contextlib.contextmanager
def handle_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = signal.signal(signal.SIGINT, _Interrupts())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def hidden_credentials(*urls: str | None, values: Iterable[str] = ()) -> Iterator[None]:
    """Keep the credentials of ``urls`` (``--api-base`` and the like) and of every URL on the
    command line (``--cache-url``, ``--mlflow-tracking-uri``, any option's) out of what the
    process shows: while the block runs every log record of every logger is scrubbed, the
    command line is redacted in place (W&B records ``sys.argv`` with its run), and the
    traceback of an error that escapes the block (``-v``) is scrubbed when it is printed.
    ``values``: literal secrets hidden the same way (:func:`router_secrets`)."""
    urls = (*urls, *credential_urls(sys.argv))
    values = tuple(values)
    with hidden_values(values):
        sys.argv[:] = redact_argv(sys.argv, *urls)
        try:
            with scrubbed_logs(*urls):
                yield
        except Exception:
            # Wrap the hook in place now, not before the run: W&B installs its own, which
            # prints the traceback raw, when its first run starts.
            sys.excepthook = _scrubbing(sys.excepthook, urls, values)
            raise


def router_secrets(path: Path | None) -> list[str]:
    """The API keys, passwords and URL credentials in the ``--router-config`` file (its
    ``os.environ/`` references resolved): they are hidden like ``--api-base``'s."""
    if path is None:
        return []
    from reflex.models.router import load_router_config

    try:
        return data_secrets(load_router_config(path))
    except ReflexError:  # a bad config: the builder reports it, with the entry it is about
        return []


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], None]


def _scrubbing(
    hook: ExceptHook, urls: tuple[str | None, ...], values: tuple[str, ...] = ()
) -> ExceptHook:
    """``hook`` with everything it writes to stderr scrubbed of the credentials of ``urls``
    and of ``values``."""

    def scrubbed(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed):
            hook(kind, exc, tb)
        with hidden_values(values):
            sys.stderr.write(scrub(printed.getvalue(), *urls))

    return scrubbed


RESUME_HINT = (
    "interrupted: the checkpoint is saved; run the same command with --resume to continue "
    "(paid calls are not repeated)"
)


P = ParamSpec("P")


def with_errors(func: Callable[P, None], *, on_interrupt: str = "interrupted") -> Callable[P, None]:
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        # -v of the command being run; its callback may have turned its params into typed args.
        ctx = click.get_current_context(silent=True)
        verbose = ctx is not None and bool(ctx.params.get("verbose"))
        try:
            # Log records and warnings may quote a model's answer (and a secret in it).
            with handle_interrupts(), scrubbed_logs():
                func(*args, **kwargs)
        except ReflexError as exc:
            if verbose:
                raise
            # The message may quote a model's answer (a parse failure, a provider's body).
            click.echo(f"error: {scrub(str(exc))}", err=True)
            sys.exit(EXIT_USAGE)
        except OSError as exc:  # e.g. -o / --results-json on a full or read-only disk
            if closed_output(exc):  # `| head` exited: not a storage problem, nothing to say
                exit_on_closed_output()
            if verbose:
                raise
            from reflex.errors import storage_error

            click.echo(f"error: {storage_error(exc.filename or '?', exc)}", err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo(on_interrupt, err=True)
            sys.exit(EXIT_INTERRUPTED)

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


class _UsageLine(click.ClickException):
    """A click usage error shown as one ``error:`` line, like every other CLI error."""

    exit_code = EXIT_USAGE

    def __init__(self, exc: click.UsageError) -> None:
        where = exc.ctx.command_path if exc.ctx is not None else "aevyra-reflex"
        super().__init__(f"{exc.format_message()} (see '{where} --help')")

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class Group(click.Group):
    """Subcommand usage errors (bad flag, bad value, missing file) become one line, exit 2; a
    closed stdout (``| head``), in ``--help`` or in any command, ends quietly (reflex.cli.pipes).
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:  # --help and --version print while the command line is parsed
            return super().make_context(info_name, args, parent, **extra)
        except OSError as exc:
            if closed_output(exc):
                exit_on_closed_output()
            raise

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _UsageLine(exc) from None
        except OSError as exc:  # a command without with_errors (runs, plugins, a plugin's own)
            if closed_output(exc):
                exit_on_closed_output()
            raise


def number(text: str, flag: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigurationError(f"{flag} {text!r}: not a number (e.g. length:0.05)") from None
    if not math.isfinite(value):  # nan passes every comparison; inf has no meaning here
        raise ConfigurationError(f"{flag} {text!r}: not a finite number (e.g. length:0.05)")
    return value


def _finite(
    number: float,
    kind: click.types.FloatParamType,
    value: object,
    param: click.Parameter | None,
    ctx: click.Context | None,
) -> float:
    if not math.isfinite(number):
        kind.fail(f"{value!r} is not a finite number", param, ctx)
    return number


class FiniteFloat(click.types.FloatParamType):
    """A float option that must be a real number.

    click's FLOAT (and FloatRange) accept "nan" and "inf": a nan compares false with every bound,
    so ``--tolerance nan`` would pass any regression. No float option of ours means anything by
    them (leave a budget option out for "no limit").
    """

    def convert(
        self,
        value: SupportsFloat | SupportsIndex,
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> float:
        return _finite(super().convert(value, param, ctx), self, value, param, ctx)


class FiniteRange(click.FloatRange):
    """:class:`FiniteFloat` within bounds (a nan would slip through FloatRange's checks)."""

    def convert(
        self, value: float, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        return _finite(super().convert(value, param, ctx), self, value, param, ctx)


class InputFile(click.Path):
    """A file an option reads, checked when the command line is parsed with the readers' own
    line (:func:`reflex.data.files.file_problem`): a FIFO would block the read forever, and a
    device, a socket, a symlink loop or a missing file is refused before anything runs.

    ``exists=False``: a missing path is fine (a cache file made on first use), but an existing
    one must still be a regular file. ``dir_okay``: a folder is accepted too (prompt folders).
    ``sources``: a dataset source name (``mlflow:qa``, :mod:`reflex.data.sources`) that is no
    file passes too; reading it says what is wrong with it.
    """

    def __init__(
        self, what: str, *, exists: bool = True, dir_okay: bool = False, sources: bool = False
    ) -> None:
        super().__init__(dir_okay=dir_okay, path_type=Path)
        self.what, self.must_exist, self.sources = what, exists, sources

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(os.fsdecode(value)) if isinstance(value, str | bytes) else value
        named = self.sources and split_source(str(path)) is not None
        checked = (self.must_exist and not named) or os.path.lexists(path)
        if isinstance(path, Path) and checked and not (self.dir_okay and path.is_dir()):
            problem = file_problem(path, self.what)
            if problem is not None:
                self.fail(f"{path}: {problem}", param, ctx)
        return super().convert(value, param, ctx)


class OutputFile(click.Path):
    """A file an option writes: an existing FIFO, device or socket there is refused when the
    command line is parsed (:func:`reflex.data.files.output_problem`), before any paid call."""

    def __init__(self, what: str = "output file") -> None:
        super().__init__(dir_okay=False, path_type=Path)
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(os.fsdecode(value)) if isinstance(value, str | bytes) else value
        problem = output_problem(path, self.what) if isinstance(path, Path) else None
        if problem is not None:
            self.fail(f"{path}: {problem}", param, ctx)
        return super().convert(value, param, ctx)


class RunDir(click.Path):
    """``--run-dir``: a directory path that is not empty (``""`` used to mean the current one)."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("is empty: give a directory for the runs (default .reflex)", param, ctx)
        return super().convert(value, param, ctx)


def registry() -> Registry:
    from reflex.plugins import get_registry

    return get_registry()


def pairs(values: tuple[str, ...], flag: str) -> dict[str, object]:
    """``KEY=VALUE`` items as a dict; a VALUE that parses as JSON is that JSON value."""
    out: dict[str, object] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint=flag)
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out
