"""The architecture figures of issue 30's note: ``Any`` per 1,000 lines, p90 function length,
modules without a same-named test file. Usage: python .ci/arch_figures.py [ROOT] (module and
function sizes: shared/tools/size_report.py; rings: tests/test_architecture.py; duplicates:
the ``duplicates`` tool)."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

# folder -> the prefix of its modules' test files (CONTRIBUTING.md: tests mirror the modules)
PACKAGES = {"reflex": "", "strategies": "", "metrics": "metric_"} | {
    "reflex_mlflow": "mlflow_",
    "reflex_wandb": "wandb_",
}


def main(root: Path) -> None:
    for scope in (["reflex"], ["strategies"], ["metrics"], list(PACKAGES)):
        lines = tokens = mentions = 0
        for path in _files(root, scope):
            text = path.read_text(encoding="utf-8")
            lines += text.count("\n")
            words = tokenize.generate_tokens(io.StringIO(text).readline)
            tokens += sum(t.type == tokenize.NAME and t.string == "Any" for t in words)
            mentions += len(re.findall(r"\bAny\b", text))
        print(
            f"Any in {'+'.join(scope)}: {1000 * tokens / lines:.1f} per 1,000 lines in code "
            f"({tokens} / {lines}); {1000 * mentions / lines:.1f} counting every mention"
        )
    lengths = sorted(
        (node.end_lineno or node.lineno) - node.lineno + 1
        for path in _files(root, list(PACKAGES))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )
    print(f"functions: {len(lengths)}, p90 {lengths[int(0.9 * len(lengths))]} lines")
    tests = {p.name for p in (root / "tests").glob("test_*.py")}
    for scope in (["reflex"], list(PACKAGES)):
        modules = [p for p in _files(root, scope) if p.name != "__init__.py"]
        lacking = [p for p in modules if _test_name(root, p) not in tests]
        print(f"{'+'.join(scope)}: {len(lacking)} of {len(modules)} modules lack a test file")


def _files(root: Path, folders: list[str]) -> list[Path]:
    return [p for folder in folders for p in sorted((root / folder).rglob("*.py"))]


def _test_name(root: Path, module: Path) -> str:
    prefix = PACKAGES[module.relative_to(root).parts[0]]
    return f"test_{prefix}{module.stem.lstrip('_')}.py"


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("."))
