"""Meta-tests: the docs, the public API and the test suite keep up with the code."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import reflex
from reflex import hookspecs
from reflex.cli import build_cli
from reflex.cli import docgen as _docgen
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult, Sample

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _hookspecs() -> list[str]:
    return sorted(
        name
        for name, value in vars(hookspecs).items()
        if inspect.isfunction(value) and hasattr(value, "reflex_spec")
    )


# --- hooks ----------------------------------------------------------------------------------


def test_there_are_hooks() -> None:
    assert _hookspecs() == [
        "prompt_alias_moved",
        "register_commands",
        "register_dataset_sources",
        "register_metrics",
        "register_optimize_options",
        "register_prompt_sources",
        "register_strategies",
    ]


@pytest.mark.parametrize("name", _hookspecs())
def test_hook_is_documented_with_its_exact_signature(name: str) -> None:
    text = _read(DOCS / "hooks.md")
    # As written in reflex/hookspecs.py (the registrar aliases by name, as plugins import them).
    spec = inspect.signature(getattr(hookspecs, name))
    params = ", ".join(f"{p.name}: {p.annotation}" for p in spec.parameters.values())
    signature = f"({params}) -> {spec.return_annotation}"
    assert f"## `{name}`" in text
    assert f"\n{name}{signature}\n" in text, f"docs/hooks.md: want `{name}{signature}`"


@pytest.mark.parametrize("name", _hookspecs())
def test_hook_has_a_test(name: str) -> None:
    pattern = re.compile(rf"^def test_hook_{name}\(", re.MULTILINE)
    assert any(pattern.search(_read(path)) for path in (ROOT / "tests").glob("test_*.py")), (
        f"no test_hook_{name} in tests/"
    )


# --- CLI reference ----------------------------------------------------------------------------


def test_cli_reference_is_up_to_date() -> None:
    assert _read(DOCS / "cli.md") == _docgen.cli_reference(), (
        "docs/cli.md is stale: run `make docs`"
    )


def _commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, f"{path} {name}")


def test_every_cli_option_is_in_the_reference() -> None:
    text = _read(DOCS / "cli.md")
    missing = [
        f"{path} {opt}"
        for path, command in _commands(build_cli(), "aevyra-reflex")
        for param in command.params
        if isinstance(param, click.Option)
        for opt in [*param.opts, *param.secondary_opts]
        if f"## `{path}`" not in text or f"`{opt}`" not in text.split(f"## `{path}`")[1]
    ]
    assert not missing, f"options missing from docs/cli.md: {missing}"


# --- callback contract, plugin guide ----------------------------------------------------------


@pytest.mark.parametrize("cls", [EvalSnapshot, Sample, IterationRecord, OptimizationResult])
def test_every_result_field_is_documented(cls: type) -> None:
    text = _read(DOCS / "callbacks.md")
    section = text.split(f"## `{cls.__name__}`")[1].split("\n## ")[0]
    names = [f.name for f in dataclasses.fields(cls)]
    names += [n for n, v in vars(cls).items() if isinstance(v, property) and n != "key"]
    missing = [n for n in names if f"| `{n}` |" not in section]
    assert not missing, f"docs/callbacks.md, {cls.__name__}: undocumented {missing}"


def test_callback_hooks_are_documented() -> None:
    text = _read(DOCS / "callbacks.md")
    hooks = [n for n in vars(reflex.Callback) if n.startswith("on_")]
    assert hooks and all(f"`{n}(" in text for n in hooks)


def _fenced_after(text: str, marker: str) -> str:
    after = text.split(marker, 1)[1]
    return after.split("```", 2)[1].split("\n", 1)[1]


@pytest.mark.parametrize(
    "relative",
    [
        "examples/plugin_package/pyproject.toml",
        "examples/plugin_package/src/reflex_plugin_example/__init__.py",
        "examples/plugin_package/src/reflex_plugin_example/reflect.py",
        "examples/plugin_package/tests/test_plugin.py",
    ],
)
def test_plugin_guide_quotes_the_example_package_verbatim(relative: str) -> None:
    text = _read(DOCS / "plugins.md")
    assert _fenced_after(text, f"<!-- {relative}") == _read(ROOT / relative)


def test_docs_exist() -> None:
    for name in ["plugins", "hooks", "callbacks", "cli", "run-directory", "trackers"]:
        assert (DOCS / f"{name}.md").is_file()


# --- links and field lists in the docs ------------------------------------------------------

DOC_FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")  # [text](target) and ![alt](target)
# A project document named in the text: DESIGN.md, README.md, docs/cli.md (not a user's
# prompt.md in an example command line).
_MENTION = re.compile(r"(?<![\w/.-])((?:docs/)?[A-Z][A-Z_]*\.md|docs/[\w.-]+\.md)\b")
_FIELD_LISTS = {"field", "property", "method", "option", "fixture", "code"}


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of ``path``: lower case, spaces to ``-``, punctuation
    other than ``-`` and ``_`` dropped."""
    headings = re.findall(r"^#+ (.+)$", _read(path), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _broken_references(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", _read(doc), flags=re.DOTALL)  # code blocks are not prose
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = doc.parent / path if path else doc
        if not resolved.exists() or (anchor and anchor not in _anchors(resolved)):
            broken.append(target)
    broken += [
        name
        for name in _MENTION.findall(text)
        if not (doc.parent / name).exists() and not (ROOT / name).exists()
    ]
    return broken


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_named_document_exists(doc: Path) -> None:
    assert not _broken_references(doc), f"{doc.relative_to(ROOT)}: {_broken_references(doc)}"


def test_a_missing_document_is_caught(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "# Top\nsee DESIGN.md and [cli](cli.md) and [here](#top) and [gone](#nowhere)\n",
        encoding="utf-8",
    )
    assert _broken_references(doc) == ["cli.md", "#nowhere", "DESIGN.md"]


def _field_tables(text: str) -> Iterator[tuple[str, list[str]]]:
    """(header's first cell, the first cells of the rows) of every markdown table in ``text``."""
    rows: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append(line.split("|")[1].strip())
            continue
        if len(rows) > 2:
            yield rows[0], rows[2:]
        rows = []


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_field_list_names_each_field_once(doc: Path) -> None:
    for header, names in _field_tables(_read(doc)):
        if header in _FIELD_LISTS:
            twice = sorted({n for n in names if names.count(n) > 1})
            assert not twice, f"{doc.relative_to(ROOT)}: a {header} table lists {twice} twice"


# --- public API: tests/test_public_api.py ----------------------------------------------------


# --- tooling ----------------------------------------------------------------------------------


def test_pytest_plugin_loads_through_its_entry_point(request: pytest.FixtureRequest) -> None:
    from reflex.testing import pytest_plugin

    assert request.config.pluginmanager.get_plugin("reflex") is pytest_plugin


def test_makefile_has_the_targets() -> None:
    targets = set(re.findall(r"^([a-z-]+):", _read(ROOT / "Makefile"), re.MULTILINE))
    assert {"test", "lint", "fix", "typecheck", "docs", "bench"} <= targets


def test_changelog_has_unreleased_section() -> None:
    assert "\n## [Unreleased]\n" in _read(ROOT / "CHANGELOG.md")
