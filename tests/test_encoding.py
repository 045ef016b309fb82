"""What the bytes of a dataset line that will not read as text say: UTF-16, a stray NUL, a BOM."""

from __future__ import annotations

import codecs

from reflex.data.encoding import UTF16_NO_BOM, bom_hint, looks_utf16, nul_problem


def test_utf16_without_a_bom_is_told_apart_from_stray_nuls() -> None:
    line = '{"id": "a"}\n'.encode("utf-16-le")
    assert looks_utf16(line)
    assert nul_problem(line, 0) == UTF16_NO_BOM
    assert not looks_utf16(b'{"id": "a"}\x00\n')  # one stray NUL
    assert not looks_utf16(b"{}" + b"\x00" * 10 + b"\n")  # a run covers both parities


def test_a_stray_nul_is_named_by_column_and_file_offset() -> None:
    problem = nul_problem('{"é": 1}\x00\n'.encode(), 100)
    assert problem is not None
    assert problem.startswith("a NUL byte (0x00) at column 9 (byte offset 109 of the file);")
    assert "tr -d '\\000'" in problem
    many = nul_problem(b"ab\x00cd\x00\n", 0) or ""
    assert "column 3 (byte offset 2 of the file, one of 2 on this line)" in many


def test_a_line_without_nul_has_no_problem() -> None:
    assert nul_problem(b'{"id": "a"}\n', 0) is None


def test_bom_hint_names_utf16_and_utf32_only() -> None:
    for bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE):
        assert "UTF-16 or UTF-32" in bom_hint(bom + b"x")
    assert bom_hint(codecs.BOM_UTF8 + b"x") == ""
    assert bom_hint(b"\xff") == ""
