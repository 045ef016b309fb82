"""How long one call against a trickling provider takes: the per-call deadline's bound.

The local endpoint's ``trickle`` fault sends the headers at once, then the answer one byte every
``--drip`` seconds. Without a total deadline the call lasts as long as the drip (forever, for a
provider that never finishes); with it, the first attempt ends at ``--timeout`` seconds and the
retry is answered at once. Prints the call's wall time, its attempts and the retries.

    python bench/hang_bound.py --timeout 2 --drip 0.05
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, load_litellm
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing.endpoint import FaultPlan, serve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=2.0, help="the call's timeout (s)")
    parser.add_argument("--drip", type=float, default=0.05, help="seconds per answer byte")
    parser.add_argument("--words", type=int, default=60, help="answer length in words")
    args = parser.parse_args()
    load_litellm()  # its import is not part of the call
    question = [{"role": "user", "content": " ".join(["word"] * args.words)}]
    with serve(faults=FaultPlan(script=["trickle"], drip=args.drip)) as url:
        client = ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=3, base_delay=0.01)))
        spec = ModelSpec("openai/m", api_base=url, timeout=args.timeout, extra={"api_key": "x"})
        started = time.perf_counter()
        out = LoopRunner.shared().run(client.complete(spec, question))
        took = time.perf_counter() - started
    body = len(question[0]["content"]) + 300  # about: the answer's JSON around the text
    print(f"drip {args.drip:g}s/byte over ~{body} bytes (~{body * args.drip:.0f}s to finish)")
    print(
        f"call took {took:.2f}s, attempts {out.attempts}, retries {client.ledger.total().retries}"
    )


if __name__ == "__main__":
    main()
