"""Peak memory of a run's client when every answer is huge (issue 29 item 6).

Each configuration runs in its own process: ``--calls`` calls, ``--max-workers`` at once, to a
local endpoint whose every answer is ``--mb`` MiB (streamed), on the lean transport and on
LiteLLM's path, with ``--max-response-mb`` at its default (16: each call fails at the cap) and
raised above the answer (every answer read whole, as before the cap). Prints peak RSS per case.

    python bench/big_answers.py --mb 100 --calls 8 --max-workers 4
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys


def one(args: argparse.Namespace, lean: str, cap: float) -> dict[str, object]:
    from reflex.models.client import ClientSettings, ProviderClient
    from reflex.models.retry import RetryPolicy
    from reflex.models.runner import LoopRunner
    from reflex.models.spec import ModelSpec
    from reflex.testing.endpoint import FaultPlan, serve

    os.environ["REFLEX_LEAN_TRANSPORT"] = lean
    runner = LoopRunner()
    failed = 0
    with serve(faults=FaultPlan(rate=1.0, kinds=["huge"], huge_mb=args.mb)) as url:
        client = ProviderClient(
            ClientSettings(
                max_workers=args.max_workers, retry=RetryPolicy(max_retries=0), max_response_mb=cap
            )
        )
        spec = ModelSpec("openai/gpt-4o-mini", api_base=url, extra={"api_key": "sk-bench"})

        async def all_calls() -> list[object]:
            import asyncio

            calls = [
                client.complete(spec, [{"role": "user", "content": f"q{i}"}])
                for i in range(args.calls)
            ]
            return await asyncio.gather(*calls, return_exceptions=True)

        results = runner.run(all_calls())
        failed = sum(isinstance(r, BaseException) for r in results)
    runner.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"lean": lean, "max_response_mb": cap, "failed": failed, "peak_rss_mb": round(peak)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--max-workers", type=int, default=4)
    parser.add_argument("--case", nargs=2, metavar=("LEAN", "CAP"))
    args = parser.parse_args()
    if args.case:
        print(json.dumps(one(args, args.case[0], float(args.case[1]))))
        return
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for lean in ("1", "0"):
        for cap in (16.0, args.mb * 2):
            cmd = [sys.executable, __file__, "--mb", str(args.mb), "--calls", str(args.calls)]
            cmd += ["--max-workers", str(args.max_workers), "--case", lean, str(cap)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
