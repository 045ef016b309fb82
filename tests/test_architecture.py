"""The house rules of docs/architecture.md, checked on the code's own imports.

Every ``import`` counts, including those inside functions (lazy imports are still dependencies).
The cycle check and the plugin rule count ``if TYPE_CHECKING:`` imports too (a ring through
annotations is a ring a reader and a type checker walk; a plugin's annotations are part of its
contract); only the layer checks leave them out, since they never run.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# import name -> folder (strategies/ and metrics/ install under namespaced names)
PACKAGES = {
    "reflex": "reflex",
    "reflex_strategies": "strategies",
    "reflex_metrics": "metrics",
    "reflex_mlflow": "reflex_mlflow",
    "reflex_wandb": "reflex_wandb",
    "aevyra_reflex": "aevyra_reflex",
    "reflex_plugin_example": "examples/plugin_package/src/reflex_plugin_example",
}
PLUGINS = (
    "reflex_strategies",
    "reflex_metrics",
    "reflex_mlflow",
    "reflex_wandb",
    "reflex_plugin_example",
)
# Sub-packages of the core, lowest first: each may import lower levels and the base modules.
# optimizer.py and api/ (the plugin API) sit at 4, above run/; grid/ (the compare grid of
# builders) above them; the root package (the user API, aevyra_reflex's list) beside grid/.
LEVELS = {
    "models": 0,
    "data": 0,
    "judging": 1,
    "checks": 2,
    "run": 3,
    "api": 4,
    "grid": 5,
    "cli": 6,
    "testing": 6,
}
BASE = {
    "errors",
    "types",
    "scoring",
    "result",
    "outcomes",
    "redact",
    "hookspecs",
    "callbacks",
    "plugins",
    "config",
    "channel",
    "limits",
    "toolcalls",
}


def _module_name(path: Path) -> str:
    for name, folder in PACKAGES.items():
        base = ROOT / folder
        if path.is_relative_to(base):
            parts = [name, *path.relative_to(base).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for folder in PACKAGES.values()
        for path in (ROOT / folder).rglob("*.py")
    }


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
    return name == "TYPE_CHECKING"


def _imports(name: str, *, type_checking: bool) -> Iterator[str]:
    """Every module of ours that ``name`` imports (resolved to the deepest known module)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not type_checking:
                for other in child.orelse:
                    yield from walk_one(other)
                continue
            yield from walk_one(child)

    def walk_one(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # ``from pkg import sub`` of a module depends on pkg.sub, not on pkg's own names.
            names = [f"{base}.{alias.name}" for alias in node.names]
            if not all(name in MODULES for name in names):
                yield base
            yield from names
        else:
            yield from walk(node)

    for target in walk(ast.parse(path.read_text(encoding="utf-8"))):
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            yield target


def _graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    return {name: set(_imports(name, type_checking=type_checking)) for name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_ring() -> None:
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(ring) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert _cycles(_graph(type_checking=True)) == []


def test_the_cycle_check_counts_type_only_imports() -> None:
    typed, running = _graph(type_checking=True), _graph()
    type_only = {(a, b) for a in typed for b in typed[a] - running[a]}
    assert ("reflex.models.router", "reflex.models.spec") in type_only  # ModelSpec, annotations
    assert _cycles({"a": {"b"}, "b": set()}) == [] != _cycles({"a": {"b"}, "b": {"a"}})


def test_core_top_level_modules_are_the_base_modules_and_the_builder() -> None:
    # A count would only invite merging unrelated code; the rule: every module at the top of
    # reflex/ is a declared base module (BASE) or the builder, optimizer.py.
    top = sorted(p.stem for p in (ROOT / "reflex").glob("*.py") if p.stem != "__init__")
    assert top == sorted({*BASE, "optimizer"} - {"callbacks"}), top
    subpackages = sorted(p.parent.name for p in (ROOT / "reflex").glob("*/__init__.py"))
    assert subpackages == sorted([*LEVELS, "callbacks"])  # callbacks: a base package


def _level(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    if parts[0] != "reflex":
        return None
    if len(parts) < 2:
        return "", LEVELS["grid"]  # the root package: the user API, loaded lazily
    if parts[1] in LEVELS:
        return parts[1], LEVELS[parts[1]]
    return parts[1], -1 if parts[1] in BASE else 4  # optimizer.py sits above run/, below grid/


@pytest.mark.parametrize("package", sorted(LEVELS))
def test_sub_package_imports_only_lower_levels(package: str) -> None:
    graph = _graph()
    wrong = []
    for name, targets in graph.items():
        if not name.startswith(f"reflex.{package}"):
            continue
        mine = LEVELS[package]
        for target in targets:
            if not target.startswith("reflex"):
                continue
            where = _level(target)
            if target.split(".")[0] != "reflex" or where is None:
                wrong.append((name, target))  # core never imports plugins or adapters
            elif where[0] != package and where[1] >= mine:
                wrong.append((name, target))
    assert wrong == [], "\n".join(f"{a} -> {b}" for a, b in sorted(wrong))


def test_base_modules_import_no_sub_package_above_models() -> None:
    graph = _graph()
    wrong = [
        (name, target)
        for name, targets in graph.items()
        if name.split(".")[-1] in BASE and name.count(".") == 1
        for target in targets
        if (_level(target) or ("", -1))[1] > LEVELS["models"]
    ]
    assert wrong == []


ADAPTERS = ("reflex_mlflow", "reflex_wandb")


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugins_import_only_the_plugin_api(plugin: str) -> None:
    """Strategies and metrics: reflex.api; tracker adapters also reflex.api.tracking."""
    allowed = {"reflex.api", *(["reflex.api.tracking"] if plugin in ADAPTERS else [])}
    wrong = sorted(
        (name, target)
        for name in MODULES
        if name.split(".")[0] == plugin
        for target in _imports(name, type_checking=True)
        if target.split(".")[0] == "reflex" and target not in allowed
    )
    assert wrong == [], "\n".join(f"{a} -> {b}" for a, b in wrong)


def test_adapters_never_import_each_other() -> None:
    adapters = ADAPTERS
    wrong = sorted(
        (name, target)
        for name in MODULES
        if name.split(".")[0] in adapters
        for target in _imports(name, type_checking=True)
        if target.split(".")[0] in adapters and target.split(".")[0] != name.split(".")[0]
    )
    assert wrong == []


def test_a_typed_user_project_sees_the_public_types(tmp_path: Path) -> None:
    """mypy --strict on a user's script against aevyra_reflex laid out as an install would be.

    Without a py.typed marker mypy treats the package as untyped (``PromptOptimizer`` is Any and
    ``import-untyped`` is an error under --strict).
    """
    site = tmp_path / "site"
    for package in ("reflex", "aevyra_reflex"):
        shutil.copytree(
            ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    script = tmp_path / "user.py"
    script.write_text(
        "from aevyra_reflex import OptimizationResult, PromptOptimizer\n"
        "from reflex.api import BaseStrategy, StrategyContext\n\n\n"
        "def best(result: OptimizationResult) -> str:\n"
        "    return result.best_prompt\n\n\n"
        "optimizer: PromptOptimizer = PromptOptimizer().add_metric('exact_match')\n"
        "reveal_type(optimizer)\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            "user.py",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'Revealed type is "reflex.optimizer.PromptOptimizer"' in run.stdout


# Tests mirror the modules: reflex/<pkg>/<name>.py and strategies/<name>.py are tested in
# tests/test_<name>.py, metrics/<name>.py in tests/test_metric_<name>.py, an adapter's
# <name>.py in tests/test_mlflow_<name>.py / test_wandb_<name>.py (a leading ``_`` dropped;
# CONTRIBUTING.md). Where that name is taken (tests/reliability/ has a file of it, or two
# packages share the stem) the package goes first: reflex/testing/faults.py ->
# tests/test_testing_faults.py. Two rules exempt a module: a package's __init__.py, and a module
# that defines no function or class (re-exports, __all__, type aliases: nothing runs to test).
# Every other module has its file (the allowlist of modules without one reached 0 in the
# thirteenth session): a new module comes with its test file.
TEST_PREFIXES = {"reflex": "", "strategies": "", "metrics": "metric_"} | {
    "reflex_mlflow": "mlflow_",
    "reflex_wandb": "wandb_",
}


def _runs_nothing(path: Path) -> bool:
    """Whether a module defines no function or class (re-exports, ``__all__``, type aliases)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return not any(isinstance(node, kinds) for node in ast.walk(tree))


def _test_files(path: Path, folder: str, prefix: str) -> set[str]:
    """The names that mirror ``path``: test_<name>.py, or with its package first."""
    stem = path.stem.lstrip("_")
    names = {f"test_{prefix}{stem}.py"}
    if path.parent != ROOT / folder:
        names.add(f"test_{prefix}{path.parent.name}_{stem}.py")
    return names


def _modules_without_test_file() -> set[str]:
    tests = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    return {
        path.relative_to(ROOT).as_posix()
        for folder, prefix in TEST_PREFIXES.items()
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "__init__.py"
        and not _runs_nothing(path)
        and not _test_files(path, folder, prefix) & tests
    }


def test_the_mirror_rules() -> None:
    faults = ROOT / "reflex/testing/faults.py"
    assert _test_files(faults, "reflex", "") == {"test_faults.py", "test_testing_faults.py"}
    assert _test_files(ROOT / "strategies/_pareto.py", "strategies", "") == {"test_pareto.py"}
    assert _runs_nothing(ROOT / "reflex/api/tracking.py")  # re-exports only
    assert not _runs_nothing(ROOT / "reflex/run/lock.py")


def test_every_module_comes_with_a_same_named_test_file() -> None:
    missing = _modules_without_test_file()
    assert sorted(missing) == [], "add tests/test_<name>.py for these"
