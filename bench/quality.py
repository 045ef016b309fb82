"""Quality per call: strategies x shipped tasks x seeds at fixed search budgets, on one model.

    python bench/quality.py [--tasks intents7,intents14,arithmetic,acronyms,bfcl,extraction]
        [--strategies auto,instructions,fewshot] [--budgets 150,450] [--seeds 0,1,2]
        [--model local/qwen2.5-coder-0.5b] [--dspy-python PATH] [--fake] [--readme]
        [--accept any,significant]

Each task is split per seed (stratified by reference, train / val / test sizes below; the same
split for every strategy of that seed). A run gets ``--max-calls = budget + 2 * len(test)``:
the budget is the search (preflight, val baseline, candidates), the two test evaluations
(baseline and final) come on top, so every strategy and DSPy search on the same number of
calls. Two reference rows per task cost no search: the bare start prompt and a hand-written
label-list prompt, both measured on the same test rows. For every row the table prints the
test mean and sd over seeds, the task calls actually made (mean), and the paired sign-flip p
against the best reference row (per-row scores pooled over seeds, paired by seed and id).

``bfcl`` and ``extraction`` (issue 31) are scored by ``tool_call`` / ``json_match``: their
figure is the metric's objective (``exact``: name and every argument acceptable; ``fields``),
printed beside the metric's own score (partial credit) in a table of their own, written between
other markers; their bare row is the first run's baseline, and ``--tool-choice`` sets the tool
choice of every request (rows ``METHOD [CHOICE]``).

``--budgets`` may name presets (``--budgets 450,light,medium,heavy``): a preset cell runs with
``set_budget(PRESET)`` (the product's own sizing, not ``budget + 2 * test``) and is a row
``METHOD budget=PRESET`` with the calls it made.

``--split-seed N`` pins every seed's split to seed ``N``'s: only the search's seed differs, so
the sd over seeds is the search's own spread (the issue-33 measurement), not the split's (100
test rows at 0.85 differ by ~0.035 from split to split however stable the search); rows
``METHOD split=N``.

``--accept any,significant`` runs every strategy cell once per acceptance rule (rows ``METHOD
accept=RULE``; without it, the product's default rule and plain rows). A strategy written
``NAME+race`` (``auto+race``) runs with ``--race`` (candidates raced on growing val rungs).

``--dspy-python`` runs ``bench/quality_dspy.py`` with that interpreter (a venv with DSPy 3.x):
``LabeledFewShot`` and ``BootstrapFewShotWithRandomSearch`` on the same splits and model,
served by an OpenAI-compatible endpoint that counts the calls. ``--readme`` rewrites the table
between the markers in bench/README.md (``--readme-section NAME``: a table of its own, between
``<!-- quality-NAME:begin -->`` markers, appended when absent). ``--fake`` smoke-tests the
script on the fake model of ``reflex.testing`` (its numbers mean nothing). Asserts nothing:
machines and models differ.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# Its sibling modules, also when it is loaded from its file (the tests), not run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from quality_table import MARK, MARK_OBJECTIVE, Cell, has_objective, merge, table, write_readme
from quality_tasks import EXAMPLES, TASKS, Rows, Task, stratified

from reflex import BudgetExhausted, PromptOptimizer

TOOL_CHOICE: list[str] = []  # --tool-choice, for every run of this process
ACCEPT: list[str] = []  # the acceptance rule of the current strategy run (--accept)


def _builder(model: str, rows: Rows, run_dir: Path, task: Task, seed: int) -> PromptOptimizer:
    builder = (
        PromptOptimizer()
        .set_dataset(rows)
        .add_provider(*model.split("/", 1))
        .add_metric(task.metric, **dict(task.options))
        .set_seed(seed)
        .set_run_dir(run_dir)
        .configure(max_tokens=task.max_tokens)
    )
    if task.response_format:
        builder = builder.set_response_format(EXAMPLES / task.response_format)
    if TOOL_CHOICE:  # the rows offer their own tools
        builder = builder.set_tools(None, choice=TOOL_CHOICE[0])
    if ACCEPT:
        builder = builder.set_accept(ACCEPT[0])
    return builder


def search_calls(run_dir: str) -> int:
    """Task calls the run paid for outside its two test evaluations (counted in its events)."""
    lines = (Path(run_dir) / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return sum(
        int(e.get("calls", 0))
        for e in events
        if e.get("type") == "evaluation" and not str(e.get("label", "")).startswith("test:")
    )


def _record(cell: Cell, seed: int, result: Any, task: Task, final: bool = True) -> None:
    snapshot = result.final if final else result.baseline
    cell.seeds.append(seed)
    if final:  # a reference row makes no search call
        cell.calls.append(search_calls(str(result.run_dir)))
    scored = [s for s in snapshot.samples if s.score is not None]
    if task.objective is None:
        cell.scores.append(snapshot.mean_score)
        cell.per_row.update({f"{seed}:{s.example_id}": s.score for s in scored})
        return
    key = f"{task.metric}.{task.objective}"
    figures = {f"{seed}:{s.example_id}": s.objectives.get(key, 0.0) for s in scored}
    cell.per_row.update(figures)
    cell.partial.update({f"{seed}:{s.example_id}": s.score for s in scored})
    cell.scores.append(statistics.fmean(figures.values()) if figures else 0.0)
    cell.partials.append(snapshot.mean_score)


def run_reference(model: str, task: Task, prompt: str, rows: Rows, seed: int, out: Cell) -> None:
    """A prompt measured on test only (its baseline run: no search)."""
    with tempfile.TemporaryDirectory() as tmp:
        builder = _builder(model, rows, Path(tmp), task, seed).set_strategy("instructions")
        builder = builder.configure(max_iterations=0)
        result = builder.configure(allow_degenerate_seed=True).run(prompt)
    _record(out, seed, result, task, final=False)


def strategy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME:KEY=JSON:KEY=JSON`` (e.g. ``fewshot:num_candidates=16``, ``auto:fewshot=
    {"num_candidates":16}``): the strategy and its options; the whole spec names the table row."""
    name, *pairs = re.split(r":(?=\w+=)", spec)
    options = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return name, options


def run_strategy(
    model: str,
    task: Task,
    strategy: str,
    budget: int | str,
    rows: Rows,
    seed: int,
    patience: int | None = None,
) -> Any:
    """One search at ``budget`` search calls or a preset's (``"medium"``); ``patience``: early
    stopping's (None: the product's default)."""
    test = sum(1 for r in rows if r["split"] == "test")
    run_dir = tempfile.mkdtemp(prefix="reflex-quality-")
    raced = strategy.endswith("+race")  # ``auto+race``: the strategy with --race
    name, options = strategy_spec(strategy.removesuffix("+race"))
    builder = _builder(model, rows, Path(run_dir), task, seed).set_strategy(name, **options)
    if isinstance(budget, str):  # a preset: the product sizes the whole run
        builder = builder.set_budget(budget).configure(race=raced)  # type: ignore[arg-type]
    else:
        builder = builder.set_budget(max_calls=budget + 2 * test).configure(race=raced)
    if patience is not None:
        builder = builder.configure(early_stopping_patience=patience)
    try:
        return builder.configure(allow_degenerate_seed=True).run(task.start)
    except BudgetExhausted as exc:
        if exc.partial is None:
            raise
        return exc.partial


def _fake_model() -> str:
    from reflex.testing import FakeModel, FakeRequest

    def answer(request: FakeRequest) -> str:
        words = request.user.split()
        right = "one of:" in request.system or len(words) % 3 == 0
        tools = request.params.get("tools")
        if isinstance(tools, list) and tools:  # a call (no argument) to the row's function
            call = {"name": tools[0]["function"]["name"], "arguments": {}}
            return f"<tool_call>{json.dumps(call)}</tool_call>" if right else "unsure"
        if request.params.get("response_format"):
            return '{"quantities": []}'
        return "HassTurnOn" if right else "unsure"

    FakeModel(answer).install()
    return "fake/task"


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="intents7,intents14,arithmetic,acronyms")
    parser.add_argument(
        "--strategies",
        default="auto,instructions,fewshot",
        help="A,B or with options NAME:KEY=JSON (several: separated with ;); NAME+race races",
    )
    parser.add_argument("--budgets", default="150,450")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--dspy-python", default=None)
    parser.add_argument(
        "--patience", type=int, default=None, help="early stopping's patience (row: NAME pN)"
    )
    parser.add_argument("--fake", action="store_true")
    parser.add_argument("--readme", action="store_true")
    parser.add_argument(
        "--versus", default=None, help="a column pairing each row with this method's (same budget)"
    )
    parser.add_argument(
        "--readme-section",
        default=None,
        help="--readme writes between <!-- quality-NAME:begin/end --> (default: the main table)",
    )
    parser.add_argument(
        "--no-references", action="store_true", help="skip the reference rows (merge them)"
    )
    parser.add_argument("--no-bare", action="store_true", help="skip the bare reference row")
    parser.add_argument(
        "--tool-choice", default=None, help="sent with every request (rows: METHOD [CHOICE])"
    )
    parser.add_argument(
        "--no-hand-written", action="store_true", help="skip the hand-written reference row"
    )
    parser.add_argument(
        "--accept", default=None, help="acceptance rules, each a row: any,significant,margin:0.02"
    )
    parser.add_argument(
        "--split-seed",
        type=int,
        default=None,
        help="every seed searches on this seed's split (rows: METHOD split=N)",
    )
    parser.add_argument("--json", default=None, help="also write every cell here")
    parser.add_argument(
        "--merge",
        default=None,
        help="A.json,B.json:nocalls,C.json:skip=auto+fewshot: a table of earlier runs (merge())",
    )
    return parser.parse_args(argv)


def _split_list(text: str, cast: Callable[[str], Any] = str, sep: str = ",") -> list[Any]:
    """``text`` cut at ``sep``; ``sep=";"`` only when ``text`` holds one (``--strategies``: a
    spec with options may hold commas, so several are then separated with ``;``)."""
    if sep != "," and sep not in text and "{" not in text:
        sep = ","
    return [cast(x) for x in text.split(sep) if x.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    args = _args(argv)
    if args.merge:
        cells = merge(_split_list(args.merge))
        tasks = sorted({task for task, _, _ in cells}, key=lambda t: ([*TASKS, t].index(t), t))
        _report(args, list(cells.values()), tasks, argv, args.model)
        return
    model = _fake_model() if args.fake else args.model
    tasks, seeds = _split_list(args.tasks), _split_list(args.seeds, int)
    cells = {}

    if args.tool_choice:
        TOOL_CHOICE[:] = [args.tool_choice]
    mark = f" [{args.tool_choice}]" if args.tool_choice else ""

    def cell(task: str, method: str, budget: int | None) -> Cell:
        method += mark
        return cells.setdefault((task, method, budget), Cell(task, method, budget))

    for name in tasks:
        for seed in seeds:
            _run_seed(args, model, TASKS[name], seed, cell, lambda: _save(args, cells.values()))
    _report(args, list(cells.values()), tasks, argv, model)


CellOf = Callable[[str, str, "int | None"], Cell]  # the table's cell of (task, method, budget)


def _run_seed(
    args: argparse.Namespace,
    model: str,
    task: Task,
    seed: int,
    cell: CellOf,
    save: Callable[[], None],
) -> None:
    """One seed's split of ``task``: the reference rows, every strategy at every budget, DSPy."""
    name, budgets = task.name, _split_list(args.budgets, _budget)
    pinned = args.split_seed is not None
    rows = stratified(task.rows(), task.sizes, args.split_seed if pinned else seed, task.stratify)
    bare = cell(name, "bare prompt", None)
    # Without a hand-written row, the bare row is the first run's baseline (the same
    # start prompt on the same test rows): a BFCL test pass is minutes on one core.
    from_baseline = task.objective is not None and bool(budgets and args.strategies)
    if not args.no_references:
        if not from_baseline and not args.no_bare:
            run_reference(model, task, task.start, rows, seed, bare)
        prompt = task.hand_written(rows)
        if prompt is not None and not args.no_hand_written:
            run_reference(model, task, prompt, rows, seed, cell(name, "hand-written", None))
        save()
    for budget, strategy, accept in _grid(budgets, args):
        ACCEPT[:] = [accept] if accept else []
        result = run_strategy(model, task, strategy, budget, rows, seed, args.patience)
        method = strategy if args.patience is None else f"{strategy} p{args.patience}"
        method += f" accept={accept}" if accept else ""
        if isinstance(budget, str):  # a preset: its name in the row, the calls it made
            method += f" budget={budget}"
        method += f" split={args.split_seed}" if pinned else ""
        done = cell(name, method, budget if isinstance(budget, int) else None)
        _record(done, seed, result, task)
        if from_baseline and not args.no_references and seed not in bare.seeds:
            _record(bare, seed, result, task, final=False)
        save()  # each cell as it ends: a long grid loses none
        print(
            f"{name} seed {seed} {method}@{budget}: {done.scores[-1]:.3f} "
            f"(score {result.final.mean_score:.3f}, run {result.run_dir})",
            file=sys.stderr,
            flush=True,
        )
    if args.dspy_python:
        numbers = [b for b in budgets if isinstance(b, int)]  # DSPy has no presets
        _run_dspy(args.dspy_python, model, task, rows, seed, numbers, cell)


def _run_dspy(
    python: str, model: str, task: Task, rows: Rows, seed: int, budgets: list[int], cell: CellOf
) -> None:
    """DSPy's optimizers on the same split and model, at every budget (bench/quality_dspy.py)."""
    from quality_dspy_driver import run_dspy  # bench/ is on sys.path

    for budget in budgets:
        for method, score, calls, per_row in run_dspy(python, model, task, rows, seed, budget):
            target = cell(task.name, method, budget)
            target.scores.append(score)
            target.seeds.append(seed)
            target.calls.append(calls)
            target.per_row.update({f"{seed}:{k}": v for k, v in per_row.items()})


def _budget(text: str) -> int | str:
    """A search budget in calls, or a preset's name."""
    return text if text in ("light", "medium", "heavy") else int(text)


def _grid(
    budgets: Sequence[int | str], args: argparse.Namespace
) -> list[tuple[int | str, str, str | None]]:
    """(budget, strategy, acceptance rule or None) of every strategy run of one seed."""
    accepts = _split_list(args.accept) if args.accept else [None]
    strategies = _split_list(args.strategies, sep=";")
    return [(b, s, a) for b in budgets for s in strategies for a in accepts]


def _save(args: argparse.Namespace, cells: Iterable[Cell]) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps([c.__dict__ for c in cells], indent=1), "utf-8")


def _report(
    args: argparse.Namespace,
    cells: list[Cell],
    tasks: Sequence[str],
    argv: Sequence[str] | None,
    model: str,
) -> None:
    _save(args, cells)
    note = (
        f"`python bench/quality.py {' '.join(argv or sys.argv[1:])}` "
        f"(model {model}, seeds {args.seeds}):"
    )
    marks: Sequence[tuple[str, str]] = (MARK, MARK_OBJECTIVE)
    if args.readme_section:  # a table of its own, between its own markers
        name = f"quality-{args.readme_section}"
        marks = [(f"<!-- {name}{k}:begin -->", f"<!-- {name}{k}:end -->") for k in ("", "-tools")]
    for objective, mark in zip((False, True), marks, strict=True):
        mine = [t for t in tasks if has_objective(t) == objective]
        if not mine:
            continue
        text = table(cells, mine, objective, args.versus)
        print(text)
        if args.readme and not args.fake:
            write_readme(text, note, mark)


if __name__ == "__main__":
    main()
