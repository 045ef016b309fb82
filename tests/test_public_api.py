"""The three doors, one list per audience, each written once (docs/architecture.md, "Three doors").

``aevyra_reflex`` for users (``reflex`` re-exports the same list), ``reflex.api`` for strategy
and metric authors, ``reflex.api.tracking`` for tracker adapters. As httpx checks its
``__all__``: each list is literal, sorted and exactly the module's public names, every name in it
exists and is documented, and no name is in two lists unless it is the same object (a deliberate
re-export, such as the records both users and plugins read).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import aevyra_reflex
import reflex
import reflex.api
import reflex.api.tracking

ROOT = Path(__file__).resolve().parents[1]
DOORS = {"users": aevyra_reflex, "plugins": reflex.api, "trackers": reflex.api.tracking}
# Loaded on first use (the extras' trackers, the metric plugins), so not in vars() at import.
LAZY = {"MLflowCallback", "WandbCallback", *aevyra_reflex._METRICS}


def _literal_all(module: ModuleType) -> list[str]:
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return value
    raise AssertionError(f"{module.__name__} has no literal __all__")


def _public_names(module: ModuleType) -> set[str]:
    """The module's own public attributes, less submodules and what it imports for itself."""
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or name in {"annotations", "TYPE_CHECKING"}:
            continue
        if inspect.ismodule(value) or getattr(value, "__module__", None) == "typing":
            continue
        names.add(name)
    return names


def _door_section(door: str) -> str:
    """The bullet for ``door`` in docs/architecture.md's "Three doors" section."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Three doors\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n(?=- \*\*)", section)
    found = [b for b in bullets if b.startswith(f"- **{door}**")]
    assert len(found) == 1, f"docs/architecture.md: no '- **{door}**' bullet in Three doors"
    return found[0]


@pytest.mark.parametrize("door", sorted(DOORS))
def test_the_list_is_literal_sorted_and_exactly_the_public_names(door: str) -> None:
    module = DOORS[door]
    names = _literal_all(module)
    assert names == module.__all__ == sorted(names), "a literal, sorted __all__"
    assert len(set(names)) == len(names)
    own = {"__version__"} if door == "users" else set()
    lazy = LAZY if door == "users" else set()
    assert set(names) == _public_names(module) | own | lazy


@pytest.mark.parametrize("door", sorted(DOORS))
def test_every_name_exists_and_is_documented(door: str) -> None:
    module = DOORS[door]
    section = _door_section(door)
    spans = re.findall(r"`([^`]+)`", section)
    undocumented = [
        name
        for name in module.__all__
        if not any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", span) for span in spans)
    ]
    assert undocumented == [], f"docs/architecture.md, Three doors, {door}: {undocumented}"
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_a_name_in_two_lists_is_the_same_object() -> None:
    seen: dict[str, tuple[str, object]] = {}
    for door, module in sorted(DOORS.items()):
        for name in module.__all__:
            if name in seen:
                other, value = seen[name]
                assert getattr(module, name) is value, f"{name}: {other} and {door} differ"
            seen[name] = (door, getattr(module, name))
    # The two plugin doors split one audience's needs: nothing is in both.
    assert set(reflex.api.__all__).isdisjoint(reflex.api.tracking.__all__)


def test_reflex_is_the_user_list_loaded_lazily() -> None:
    assert reflex.__all__ == aevyra_reflex.__all__
    assert set(aevyra_reflex.__all__) <= set(dir(reflex))
    for name in aevyra_reflex.__all__:
        assert getattr(reflex, name) is getattr(aevyra_reflex, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        reflex.nothing_here  # noqa: B018
    from reflex import plugins  # a submodule is imported, not looked up in the user list

    assert plugins.__name__ == "reflex.plugins"
