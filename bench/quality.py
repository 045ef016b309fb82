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

``--accept any,significant`` runs every strategy cell once per acceptance rule (rows ``METHOD
accept=RULE``; without it, the product's default rule and plain rows).

``--dspy-python`` runs ``bench/quality_dspy.py`` with that interpreter (a venv with DSPy 3.x):
``LabeledFewShot`` and ``BootstrapFewShotWithRandomSearch`` on the same splits and model,
served by an OpenAI-compatible endpoint that counts the calls. ``--readme`` rewrites the table
between the markers in bench/README.md. ``--fake`` smoke-tests the script on the fake model of
``reflex.testing`` (its numbers mean nothing). Asserts nothing: machines and models differ.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex import BudgetExhausted, PromptOptimizer
from reflex.checks.stats import paired_test

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LABEL_FORMAT = "Answer with only the label, exactly as written, nothing else."
MARK = ("<!-- quality:begin -->", "<!-- quality:end -->")
MARK_OBJECTIVE = ("<!-- quality-tools:begin -->", "<!-- quality-tools:end -->")  # issue 31's

Rows = list[dict[str, Any]]
TOOL_CHOICE: list[str] = []  # --tool-choice, for every run of this process
ACCEPT: list[str] = []  # the acceptance rule of the current strategy run (--accept)


@dataclass(frozen=True)
class Task:
    name: str
    file: str
    start: str
    sizes: tuple[int, int, int]  # train, val, test
    max_tokens: int = 16
    labels: int | None = None  # keep the most frequent labels only
    reference: str | None = ""  # the hand-written prompt; "" builds a label-list one, None: none
    metric: str = "exact_match"
    options: tuple[tuple[str, str], ...] = ()  # the metric's options, (key, value) pairs
    objective: str | None = None  # the metric's objective reported as the test figure
    response_format: str | None = None  # a file under examples/ sent with every request
    stratify: bool = True  # by reference; False: a seeded shuffle (every reference differs)

    def rows(self) -> Rows:
        lines = (EXAMPLES / self.file).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if self.labels:
            counts: dict[str, int] = {}
            for row in rows:
                counts[row["ideal"]] = counts.get(row["ideal"], 0) + 1
            keep = set(sorted(counts, key=lambda k: (-counts[k], k))[: self.labels])
            rows = [r for r in rows if r["ideal"] in keep]
        return rows

    def hand_written(self, rows: Rows) -> str | None:
        if self.reference is None or self.reference:
            return self.reference
        labels = ", ".join(sorted({r["ideal"] for r in rows}))
        return f"{self.start} The answer is one of: {labels}. {LABEL_FORMAT}"


TASKS = {
    "intents7": Task(
        "intents7",
        "home_assistant_intents/dataset.jsonl",
        "Classify the intent.",
        (40, 40, 100),
        labels=7,
    ),
    "intents14": Task(
        "intents14", "home_assistant_intents/dataset.jsonl", "Classify the intent.", (40, 40, 100)
    ),
    "arithmetic": Task(
        "arithmetic",
        "arithmetic/dataset.jsonl",
        "Answer the question.",
        (40, 40, 100),
        reference="Answer the question. Answer with only the number, nothing else.",
    ),
    "acronyms": Task(
        "acronyms",
        "acronyms/dataset.jsonl",
        "Give the acronym.",
        (10, 10, 12),
        reference="Give the acronym: the capital letters of the phrase, in order, nothing else.",
    ),
    # Issue 31. Rows carry their own `tools`; the figure is the `exact` objective (the name and
    # every argument acceptable: BFCL's accuracy), the metric's partial credit beside it.
    "bfcl": Task(
        "bfcl",
        "tool_calls/dataset.jsonl",
        "Call the right function.",
        (20, 8, 20),
        max_tokens=150,
        reference=(
            "Call the right function. Answer with only the call, in exactly this form and "
            'nothing else, no code block: <tool_call>{"name": "<function name>", "arguments": '
            "{<every argument the request gives, by name>}}</tool_call>"
        ),
        metric="tool_call",
        options=(("strings", "bfcl"),),
        objective="exact",
        stratify=False,
    ),
    # Sent with the strict `json_schema` response format (the embedded model: a grammar); the
    # figure is json_match's `fields` (the share of reference leaves matched).
    "extraction": Task(
        "extraction",
        "extraction/dataset.jsonl",
        "Extract the quantities.",
        (30, 10, 25),
        max_tokens=120,
        reference=(
            "Extract every quantity in the sentence, in order: its value as a number (words and "
            "fractions as numbers) and its unit's full singular name (metre, not m or meters; "
            'dimensionless for a count without unit). No quantity: {"quantities": []}.'
        ),
        metric="json_match",
        options=(("schema", str(EXAMPLES / "extraction/response_format.json")),),
        objective="fields",
        response_format="extraction/response_format.json",
        stratify=False,
    ),
}


def stratified(
    rows: Rows, sizes: tuple[int, int, int], seed: int, by_reference: bool = True
) -> Rows:
    """``rows`` with a ``split`` field: labels interleaved after a seeded shuffle, then cut
    (``by_reference=False``: one group, a plain seeded shuffle)."""
    rng = random.Random(seed)
    groups: dict[str, Rows] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        groups.setdefault(row["ideal"] if by_reference else "", []).append(row)
    ranked: list[tuple[float, float, dict[str, Any]]] = []
    for members in groups.values():
        rng.shuffle(members)
        ranked += [
            ((i + rng.random()) / len(members), rng.random(), r) for i, r in enumerate(members)
        ]
    ordered = [r for _, _, r in sorted(ranked, key=lambda t: (t[0], t[1]))]
    train, val, test = sizes
    cut = {"train": ordered[:train], "val": ordered[train : train + val]}
    cut["test"] = ordered[train + val : train + val + test]
    return [{**r, "split": name} for name, part in cut.items() for r in part]


@dataclass
class Cell:
    """One (task, method, budget) row of the table, over seeds."""

    task: str
    method: str
    budget: int | None
    scores: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # the seed of each score
    per_row: dict[str, float] = field(default_factory=dict)  # "seed:id" -> test score
    # With a task objective, per_row holds the objective and this the metric's score (partial
    # credit), "seed:id" -> score; its mean per seed in partials.
    partial: dict[str, float] = field(default_factory=dict)
    partials: list[float] = field(default_factory=list)


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
    budget: int,
    rows: Rows,
    seed: int,
    patience: int | None = None,
) -> Any:
    """One search; ``patience``: early stopping's (None: the product's default)."""
    test = sum(1 for r in rows if r["split"] == "test")
    run_dir = tempfile.mkdtemp(prefix="reflex-quality-")
    name, options = strategy_spec(strategy)
    builder = _builder(model, rows, Path(run_dir), task, seed).set_strategy(name, **options)
    builder = builder.set_budget(max_calls=budget + 2 * test)
    if patience is not None:
        builder = builder.configure(early_stopping_patience=patience)
    try:
        return builder.configure(allow_degenerate_seed=True).run(task.start)
    except BudgetExhausted as exc:
        if exc.partial is None:
            raise
        return exc.partial


def _versus(best: Cell | None, cell: Cell) -> str:
    """``cell`` minus ``best`` on the rows both scored (paired by seed and id), with p."""
    if best is None or cell is best or not set(cell.per_row) & set(best.per_row):
        return "-"
    test = paired_test(best.per_row, cell.per_row)
    return f"{test.mean_diff:+.3f} p={test.p_value:.3g}"


def _best(cells: Sequence[Cell]) -> Cell | None:
    return max(cells, key=lambda c: statistics.fmean(c.scores), default=None)


def _order(cell: Cell) -> tuple[int, int, str]:
    """References first, then ours by budget, then DSPy's."""
    group = 0 if cell.budget is None else 2 if cell.method.startswith("DSPy") else 1
    return group, cell.budget or 0, cell.method


def _summary(cells: Sequence[Cell], task: str) -> list[str]:
    mine = sorted((c for c in cells if c.task == task and c.scores), key=_order)
    best = _best([c for c in mine if c.budget is None])
    dspy = _best([c for c in mine if c.method.startswith("DSPy")])
    objective = task in TASKS and TASKS[task].objective is not None
    lines = []
    for cell in mine:
        mean = statistics.fmean(cell.scores)
        sd = statistics.stdev(cell.scores) if len(cell.scores) > 1 else 0.0
        ours = cell.budget is not None and not cell.method.startswith("DSPy")
        versus_dspy = _versus(dspy, cell) if ours else "-"
        budget = "-" if cell.budget is None else str(cell.budget)
        calls = f"{statistics.fmean(cell.calls):.0f}" if cell.calls else "-"
        seeds = len(cell.scores)
        if objective:  # the partial credit instead of DSPy (which runs no tool or JSON task)
            partial = f"{statistics.fmean(cell.partials):.3f}" if cell.partials else "-"
            lines.append(
                f"| {task} | {cell.method} | {budget} | {mean:.3f} | {sd:.3f} | {partial} | "
                f"{seeds} | {calls} | {_versus(best, cell)} |"
            )
            continue
        lines.append(
            f"| {task} | {cell.method} | {budget} | {mean:.3f} | {sd:.3f} | {seeds} | "
            f"{calls} | {_versus(best, cell)} | {versus_dspy} |"
        )
    return lines


HEADER = [
    "| task | method | search budget | test mean | sd | seeds | search calls | vs best reference "
    "| vs best DSPy (same seeds) |",
    "|---|---|---|---|---|---|---|---|---|",
]


HEADER_OBJECTIVE = [
    "| task | method | search budget | test figure | sd | partial credit | seeds | search calls "
    "| vs best reference |",
    "|---|---|---|---|---|---|---|---|---|",
]


def table(cells: Sequence[Cell], tasks: Sequence[str], objective: bool = False) -> str:
    """The table of ``tasks``; ``objective``: issue 31's tasks, whose figure is an objective."""
    lines = list(HEADER_OBJECTIVE if objective else HEADER)
    for task in tasks:
        lines += _summary(cells, task)
    return "\n".join(lines)


def _has_objective(task: str) -> bool:
    return task in TASKS and TASKS[task].objective is not None


def write_readme(text: str, note: str, mark: tuple[str, str] = MARK) -> None:
    path = ROOT / "bench" / "README.md"
    readme = path.read_text(encoding="utf-8")
    block = f"{mark[0]}\n{note}\n\n{text}\n{mark[1]}"
    if mark[0] in readme:
        head, rest = readme.split(mark[0], 1)
        readme = head + block + rest.split(mark[1], 1)[1]
    else:
        readme = readme.rstrip() + "\n\n" + block + "\n"
    path.write_text(readme, encoding="utf-8")


def merge(paths: Sequence[str]) -> dict[tuple[str, str, int | None], Cell]:
    """Cells from earlier ``--json`` files, one score per (cell, seed): the first file wins.

    ``FILE:nocalls`` keeps that file's scores but not its call counts (a file written before
    the table counted search calls only held every task call). ``FILE:skip=auto+fewshot``
    leaves out those methods' cells (measured with code that has since changed);
    ``FILE:rename=OLD/NEW`` shows OLD's cells as NEW (a setting that is no longer the default).
    """
    cells: dict[tuple[str, str, int | None], Cell] = {}
    for spec in paths:
        path, *flags = spec.split(":")
        with_calls = "nocalls" not in flags  # its call counts mean something else
        skip = {m for f in flags if f.startswith("skip=") for m in f[5:].split("+")}
        names = dict(f[7:].split("/", 1) for f in flags if f.startswith("rename="))
        for data in json.loads(Path(path).read_text(encoding="utf-8")):
            if data["method"] in skip:
                continue
            key = (data["task"], names.get(data["method"], data["method"]), data["budget"])
            cell = cells.setdefault(key, Cell(*key))
            seeds = data.get("seeds") or sorted({int(k.split(":")[0]) for k in data["per_row"]})
            for i, seed in enumerate(seeds):
                if seed in cell.seeds:
                    continue
                cell.seeds.append(seed)
                cell.scores.append(data["scores"][i])
                if i < len(data.get("partials", [])):
                    cell.partials.append(data["partials"][i])
                if with_calls and i < len(data["calls"]):
                    cell.calls.append(data["calls"][i])
                prefix = f"{seed}:"
                cell.per_row.update(
                    {k: v for k, v in data["per_row"].items() if k.startswith(prefix)}
                )
                cell.partial.update(
                    {k: v for k, v in data.get("partial", {}).items() if k.startswith(prefix)}
                )
    return cells


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
        help="A,B or with options NAME:KEY=JSON (several: separated with ;)",
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
    budgets = _split_list(args.budgets, int)
    cells = {}

    if args.tool_choice:
        TOOL_CHOICE[:] = [args.tool_choice]
    mark = f" [{args.tool_choice}]" if args.tool_choice else ""

    def cell(task: str, method: str, budget: int | None) -> Cell:
        method += mark
        return cells.setdefault((task, method, budget), Cell(task, method, budget))

    for name in tasks:
        task = TASKS[name]
        for seed in seeds:
            rows = stratified(task.rows(), task.sizes, seed, task.stratify)
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
                _save(args, cells.values())
            for budget, strategy, accept in _grid(budgets, args):
                ACCEPT[:] = [accept] if accept else []
                result = run_strategy(model, task, strategy, budget, rows, seed, args.patience)
                method = strategy if args.patience is None else f"{strategy} p{args.patience}"
                method += f" accept={accept}" if accept else ""
                done = cell(name, method, budget)
                _record(done, seed, result, task)
                if from_baseline and not args.no_references and seed not in bare.seeds:
                    _record(bare, seed, result, task, final=False)
                _save(args, cells.values())  # each cell as it ends: a long grid loses none
                print(
                    f"{name} seed {seed} {method}@{budget}: {done.scores[-1]:.3f} "
                    f"(score {result.final.mean_score:.3f}, run {result.run_dir})",
                    file=sys.stderr,
                    flush=True,
                )
            if args.dspy_python:
                from quality_dspy_driver import run_dspy  # bench/ is on sys.path

                for budget in budgets:
                    for method, score, calls, per_row in run_dspy(
                        args.dspy_python, model, task, rows, seed, budget
                    ):
                        target = cell(name, method, budget)
                        target.scores.append(score)
                        target.seeds.append(seed)
                        target.calls.append(calls)
                        target.per_row.update({f"{seed}:{k}": v for k, v in per_row.items()})
    _report(args, list(cells.values()), tasks, argv, model)


def _grid(budgets: Sequence[int], args: argparse.Namespace) -> list[tuple[int, str, str | None]]:
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
    for objective, mark in ((False, MARK), (True, MARK_OBJECTIVE)):
        mine = [t for t in tasks if _has_objective(t) == objective]
        if not mine:
            continue
        text = table(cells, mine, objective)
        print(text)
        if args.readme and not args.fake:
            write_readme(text, note, mark)


if __name__ == "__main__":
    main()
