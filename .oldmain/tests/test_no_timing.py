"""Meta-test: no test asserts on wall-clock durations.

Such asserts fail on a loaded machine (CI shares two cores) while the code is correct. A speed
property belongs in bench/ (scripts that print figures); a behaviour that involves time ("the
timeout fires", "nothing is retried") is asserted through events, counters or fakes.

What the scan catches: an ``assert`` with an ordering comparison (``<``, ``<=``, ``>``, ``>=``)
of something that reads a clock (``time.monotonic/perf_counter/time/process_time`` and their
``_ns`` forms, ``loop.time()``, ``datetime.now()``), of a variable assigned from such a reading
in the same function (``start = time.perf_counter()``, ``took = time.perf_counter() - start``,
followed through further assignments), or of a name or attribute that says it holds a duration
(``elapsed``, ``duration``, ``took``, ``wall``: ``result.elapsed_s < 5`` is flagged too).
What it does not catch: ``unittest``-style ``assertLess``, a duration returned by a helper
function under another name, a comparison made outside an ``assert`` (``if elapsed > x:
pytest.fail()``), or a duration hidden in a dict key (``record["elapsed_s"]``). Bounded waits
(``event.wait(60)``, a poll with a hang guard such as ``conftest.until``) are allowed: they fail
only when something is stuck, never because it was slow.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
CLOCKS = {"monotonic", "perf_counter", "time", "process_time", "thread_time", "now"}
DURATION_NAME = re.compile(r"elapsed|duration|took|wall", re.IGNORECASE)


def _reads_clock(node: ast.AST) -> bool:
    """A call such as ``time.monotonic()``, ``perf_counter_ns()``, ``loop.time()``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.removesuffix("_ns") in CLOCKS


def _timed_names(function: ast.AST) -> set[str]:
    """Names assigned (directly or through other such names) from clock readings."""
    timed: set[str] = set()
    assignments = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign))]
    changed = True
    while changed:  # a fixpoint: ``took = end - start`` after ``end = perf_counter()``
        changed = False
        for node in assignments:
            if node.value is None or not _involves_time(node.value, timed):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in timed:
                        timed.add(name.id)
                        changed = True
    return timed


def _involves_time(node: ast.AST, timed: set[str]) -> bool:
    for sub in ast.walk(node):
        if _reads_clock(sub):
            return True
        if isinstance(sub, ast.Name) and (sub.id in timed or DURATION_NAME.search(sub.id)):
            return True
        if isinstance(sub, ast.Attribute) and DURATION_NAME.search(sub.attr):
            return True
    return False


def _orders_time(compare: ast.Compare, timed: set[str]) -> bool:
    """``a < b``-style (not ``==``: nobody asserts a measured duration equal to something)."""
    ordering = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    return any(isinstance(op, ordering) for op in compare.ops) and _involves_time(compare, timed)


def timing_asserts(source: str) -> list[int]:
    """Line numbers of asserts that compare a wall-clock duration."""
    tree = ast.parse(source)
    found: list[int] = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in [tree, *scopes]:
        timed = _timed_names(scope) if scope is not tree else set()
        body = scope.body
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if not isinstance(node, ast.Assert):
                continue
            compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]
            if any(_orders_time(c, timed) for c in compares):
                found.append(node.lineno)
    return sorted(set(found))


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name)


@pytest.mark.parametrize("path", _test_files(), ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_asserts_on_wall_clock_durations(path: Path) -> None:
    lines = timing_asserts(path.read_text(encoding="utf-8"))
    assert lines == [], (
        f"{path.name} asserts on a wall-clock duration at line(s) {lines}: move the speed "
        "figure to a bench/ script, or assert the behaviour (events, counters) instead"
    )


@pytest.mark.parametrize(
    "snippet",
    [
        "def t():\n    s = time.monotonic()\n    run()\n    assert time.monotonic() - s < 0.6\n",
        "def t():\n    s = perf_counter()\n    d = perf_counter() - s\n    assert d < 1\n",
        "def t():\n    a = time.time_ns()\n    b = a\n    assert ok and b > 5\n",
        "def t():\n    assert run().elapsed < 2\n",
        "def t():\n    elapsed = measure()\n    assert 0 < elapsed <= 3\n",
        "async def t():\n    s = loop.time()\n    await go()\n    assert loop.time() - s < 1\n",
    ],
)
def test_the_scan_catches_timing_asserts(snippet: str) -> None:
    assert timing_asserts(snippet) != []


@pytest.mark.parametrize(
    "snippet",
    [
        "def t():\n    assert done.wait(60)\n",  # a hang guard
        "def t():\n    start = time.monotonic()\n    assert result == 3\n",
        "def t():\n    assert record['elapsed_s'] is not None and count < 3\n",
        "def t():\n    assert policy.delay(1) > 0\n",
        "def t():\n    assert config.wall_clock_limit == 30\n",  # a setting, not a measurement
    ],
)
def test_the_scan_lets_behaviour_asserts_pass(snippet: str) -> None:
    assert timing_asserts(snippet) == []
