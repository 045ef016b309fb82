"""What the bytes of a dataset line that will not read as UTF-8 text say is wrong.

A NUL byte (0x00) is valid UTF-8 but never valid in JSON or in text a model is sent. Many NULs
on alternate bytes are UTF-16 text saved without a byte-order mark; one NUL (or a run of them,
left by a write cut off by a crash) is a stray byte, named by column and byte offset so it can
be found and deleted. Standard library only.
"""

from __future__ import annotations

import codecs

__all__ = ["UTF16_NO_BOM", "bom_hint", "looks_utf16", "nul_problem"]

UTF16_NO_BOM = (
    "the file looks like UTF-16 without a byte-order mark (NUL bytes): re-save it as UTF-8"
)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)  # also the start of the UTF-32 ones


def looks_utf16(raw: bytes) -> bool:
    """Whether the NULs in ``raw`` (one line) are those of UTF-16 text: several, all on one
    parity (ASCII in UTF-16 is ``x\\0x\\0...``). A run of NULs covers both parities, and one or
    two stray NULs are too few to tell: neither is UTF-16."""
    body = raw.rstrip(b"\r\n")
    even, odd = body[0::2].count(0), body[1::2].count(0)
    high, low = max(even, odd), min(even, odd)
    return high >= 4 and low * 8 <= high


def nul_problem(raw: bytes, offset: int) -> str | None:
    """The one-line problem with the NUL bytes in ``raw``, a line that starts at byte ``offset``
    of its file (None: the line has no NUL). Says UTF-16 when the pattern shows it, otherwise
    names the first NUL's column (characters, 1-based) and byte offset (0-based, as ``xxd -s``
    and ``dd skip=`` count), and how to delete it."""
    at = raw.find(b"\x00")
    if at < 0:
        return None
    if looks_utf16(raw):
        return UTF16_NO_BOM
    column = len(raw[:at].decode("utf-8", "replace")) + 1
    count = raw.count(b"\x00")
    more = f", one of {count} on this line" if count > 1 else ""
    return (
        f"a NUL byte (0x00) at column {column} (byte offset {offset + at} of the file{more}); "
        "a NUL is never valid in text data (a write cut off by a crash or a binary paste "
        "leaves them): delete it, e.g. tr -d '\\000' < FILE > FIXED"
    )


def bom_hint(data: bytes) -> str:
    """A clause naming UTF-16/UTF-32 when ``data`` (a file's first bytes) starts with its
    byte-order mark, for the "not valid UTF-8" message; empty otherwise."""
    if data.startswith(_UTF16_BOMS) or data.startswith(codecs.BOM_UTF32_BE):
        return ": the file is UTF-16 or UTF-32 (it starts with that byte-order mark)"
    return ""
