"""The DSPy side of bench/quality.py: the same model behind an endpoint, DSPy in its own venv.

``run_dspy`` starts this file as a child process in ``--serve`` mode: an OpenAI-compatible
endpoint (``reflex.testing.endpoint``) whose answers come from the embedded model through
``reflex.models.local`` (the same weights, decoding and chat template as ``local/...`` runs), or
from the fake model with ``--fake``. It writes the seed's split to a file and runs
bench/quality_dspy.py with the DSPy interpreter; the endpoint counts every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _responder(model: str) -> Any:
    if model.startswith("fake/"):  # DSPy's chat format, right on every third input

        def fake(request: Any) -> str:
            label = "HassTurnOn" if len(request.user) % 3 == 0 else "unsure"
            # every field the system message names (MIPROv2's proposers ask for others)
            fields = dict.fromkeys(re.findall(r"\[\[ ## (\w+) ## \]\]", request.system))
            fields.pop("completed", None)
            text = "".join(f"[[ ## {f} ## ]]\n{label if f == 'answer' else f}\n\n" for f in fields)
            return text + "[[ ## completed ## ]]"

        return fake
    from reflex.models import local

    def answer(request: Any) -> str:
        messages = [dict(m) for m in request.messages]
        name = model.split("/", 1)[1]  # "local/<name>": the name llama.cpp's loader resolves
        result: Any = local._generate(name, messages, request.params)
        return str(result["choices"][0]["message"]["content"] or "")

    return answer


async def _serve(model: str) -> None:
    from reflex.testing.endpoint import EndpointServer

    server = EndpointServer(responder=_responder(model))
    port = await server.start("127.0.0.1", 0, 64)
    sys.stdout.write(f"listening on http://127.0.0.1:{port}/v1\n")
    sys.stdout.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


@contextlib.contextmanager
def model_endpoint(model: str) -> Iterator[str]:
    """The model behind an endpoint child process for the ``with`` block; yields its URL."""
    command = [sys.executable, str(Path(__file__)), "--serve", model]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().split()[-1]
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_dspy(
    python: str, model: str, task: Any, rows: list[dict[str, Any]], seed: int, budget: int
) -> list[tuple[str, float, int, dict[str, float]]]:
    """``(method, test score, search calls, per-row test scores)`` per DSPy optimizer."""
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "val": [], "test": []}
    for row in rows:
        splits[row["split"]].append(row)
    with tempfile.TemporaryDirectory() as tmp, model_endpoint(model) as url:
        split_file = Path(tmp) / "splits.json"
        # QUALITY_DSPY_OUT keeps DSPy's results (written after each optimizer) past a cut-off run.
        out = Path(os.environ.get("QUALITY_DSPY_OUT") or Path(tmp) / "out.json")
        split_file.write_text(json.dumps(splits), encoding="utf-8")
        command = [
            python,
            str(HERE / "quality_dspy.py"),
            *("--api-base", url, "--splits", str(split_file), "--start", task.start),
            *("--budget", str(budget), "--max-tokens", str(task.max_tokens)),
            *("--seed", str(seed), "--out", str(out)),
        ]
        subprocess.run(command, check=True)
        results = json.loads(out.read_text(encoding="utf-8"))
    return [(r["method"], r["score"], r["calls"], r["per_row"]) for r in results]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve(sys.argv[2]))
