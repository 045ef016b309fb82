"""What a dead or hanging MLflow tracking server costs one MLflow call, with the request limits
of reflex_mlflow (no retry, 3 s) and, with ``--defaults``, with MLflow's own (7 retries with
exponential back-off, 120 s timeout: minutes). The callback's circuit breaker stops after two
such calls, so a run pays at most twice the figure printed.

    python bench/tracker_outage.py [--defaults]

"dead": a port nobody listens on (connection refused). "hanging": a socket that accepts and
never answers.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import threading
import time

from mlflow import MlflowClient

from reflex_mlflow.connection import bounded_requests


def servers() -> dict[str, int]:
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)
    held: list[object] = []

    def accept() -> None:
        for _ in range(16):
            held.append(hang.accept())  # accepted, never answered

    threading.Thread(target=accept, daemon=True).start()
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = int(dead.getsockname()[1])
    dead.close()
    return {"dead": dead_port, "hanging": int(hang.getsockname()[1])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--defaults", action="store_true", help="also time MLflow's defaults")
    args = parser.parse_args()
    modes = ["reflex", "mlflow defaults"] if args.defaults else ["reflex"]
    for name, port in servers().items():
        for mode in modes:
            limits: contextlib.AbstractContextManager[object] = (
                bounded_requests() if mode == "reflex" else contextlib.nullcontext()
            )
            client = MlflowClient(tracking_uri=f"http://127.0.0.1:{port}")
            start = time.monotonic()
            with limits, contextlib.suppress(Exception):
                client.log_metric("0" * 32, "score", 1.0)
            seconds = time.monotonic() - start
            print(f"{name:8} {mode:16} one call {seconds:6.1f} s  run total <= {2 * seconds:.1f} s")


if __name__ == "__main__":
    main()
