"""Output paths checked against the inputs before anything runs: an output never replaces one.

``--results-json data.jsonl`` used to replace the dataset with the result (exit 0), ``-o
prompt.md`` the starting prompt. Every command that writes a file calls :func:`refuse_clobbering`
first: an output that is an input (the same path, a symlink to it or a hard link: the same
inode), a file inside an input folder, or another output of the same command is one error line,
before any model call. The files themselves are then written atomically (``data.files``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from reflex.errors import ConfigurationError

__all__ = ["refuse_clobbering"]

_MAX_FILES = 10_000  # files looked at inside one input folder (a prompt or run directory)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return None
    return (stat.st_dev, stat.st_ino)


def _files(path: Path) -> Iterator[Path]:
    """``path``, and the files inside it when it is a folder (a prompt or run directory)."""
    yield path
    if not path.is_dir():
        return
    count = 0
    for root, _, names in os.walk(path):
        for name in names:
            count += 1
            if count > _MAX_FILES:
                return
            yield Path(root) / name


def _same(a: Path, b: Path) -> bool:
    same = _identity(a)
    if same is not None and same == _identity(b):
        return True
    return os.path.abspath(a) == os.path.abspath(b)


def refuse_clobbering(
    outputs: Mapping[str, Path | None], inputs: Mapping[str, Path | str | None]
) -> None:
    """ConfigurationError when an output (``{flag: path}``) would overwrite an input
    (``{what: path}``) or another output."""
    written: list[tuple[str, Path]] = []
    for flag, output in outputs.items():
        if output is None:
            continue
        for what, given in inputs.items():
            if given is None or str(given) == "":
                continue
            if any(_same(output, f) for f in _files(Path(given))):
                raise ConfigurationError(
                    f"{flag} {output} is the {what} ({given}) or a file in it: writing it would "
                    "replace your input; choose another output path"
                )
        for other, path in written:
            if _same(output, path):
                raise ConfigurationError(
                    f"{flag} {output} is also {other}: one would replace the other; choose "
                    "two different paths"
                )
        written.append((flag, output))
