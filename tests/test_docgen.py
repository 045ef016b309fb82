"""docs/cli.md from the CLI itself: --check says when it is stale, --write renews it."""

from __future__ import annotations

from pathlib import Path

from reflex.cli import docgen as _docgen


def test_docgen_check_mode(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text("old\n", encoding="utf-8")
    assert _docgen.main(["--check", str(stale)]) == 1
    assert _docgen.main(["--write", str(stale)]) == 0
    assert _docgen.main(["--check", str(stale)]) == 0
