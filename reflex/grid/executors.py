"""Where a compare grid's cells run: one after another here, or as tasks on a Ray cluster.

Each cell is a normal run (its own run directory and record) of a configured builder; the Ray
executor ships the builder to a worker (cloudpickle), runs it there and brings back the cell's
summary, so the table is the same whichever executor ran it. Run directories, a ``--cache-url``
and a Router's Redis must be reachable from every worker (the same paths on a shared file
system, or one machine, and network URLs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from reflex.errors import ConfigurationError, ReflexError

if TYPE_CHECKING:
    from reflex.callbacks import AnyCallback
    from reflex.data.prompts import PromptLike
    from reflex.optimizer import PromptOptimizer
    from reflex.result import OptimizationResult

__all__ = ["EXECUTORS", "Cell", "Executor", "run_cells"]

Executor = Literal["local", "ray"]
EXECUTORS: tuple[Executor, ...] = ("local", "ray")
# What a worker needs in its environment besides the builder (LiteLLM reads this at import).
_WORKER_ENV = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_OFFLINE_MODE")
_LOOPBACK = ("localhost", "::1")
_LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@dataclass(frozen=True)
class Cell:
    """One run of the grid: a strategy at a seed on a dataset, its builder configured for it."""

    strategy: str
    seed: int
    builder: PromptOptimizer
    dataset: str = "dataset"  # the dataset's label in the grid


Prompt: TypeAlias = "PromptLike"
Summarize = Callable[[Cell, "OptimizationResult"], Any]


def _run_cell(
    cell: Cell, prompt: Prompt, callbacks: Sequence[AnyCallback], summarize: Summarize
) -> Any:
    return summarize(cell, cell.builder.run(prompt, callbacks))


def run_cells(
    cells: Sequence[Cell],
    prompt: Prompt,
    callbacks: Sequence[AnyCallback],
    summarize: Summarize,
    *,
    executor: Executor = "local",
    address: str | None = None,
) -> list[Any]:
    """Each cell's summary, in the order given."""
    if executor == "local":
        return [_run_cell(c, prompt, callbacks, summarize) for c in cells]
    if executor == "ray":
        return _on_ray(cells, prompt, callbacks, summarize, address)
    raise ConfigurationError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")


def _on_ray(
    cells: Sequence[Cell],
    prompt: Prompt,
    callbacks: Sequence[AnyCallback],
    summarize: Summarize,
    address: str | None,
) -> list[Any]:
    ray = _ray()
    if _on_this_machine(address):
        _keep_loopback()
    env = {name: os.environ[name] for name in _WORKER_ENV if name in os.environ}
    try:
        ray.init(
            address=address,
            ignore_reinit_error=True,
            log_to_driver=False,
            runtime_env={"env_vars": env},
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigurationError(
            f"cannot reach the Ray cluster at {address or '(a new local one)'}: "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; start it with "
            "`ray start --head` or fix --ray-address"
        ) from exc
    task = ray.remote(num_cpus=1)(_run_cell)
    pending = [task.remote(c, prompt, callbacks, summarize) for c in cells]
    try:
        return list(ray.get(pending))
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, ReflexError) else None
        if cause is not None:
            raise cause from exc
        raise


def _on_this_machine(address: str | None) -> bool:
    """Whether ``address`` names a cluster on this machine: a loopback host, or a new local one."""
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address == "local":
        return True
    host = address.rsplit(":", 1)[0].strip("[]") if ":" in address else address
    return host in _LOOPBACK or host.startswith("127.")


def _keep_loopback() -> None:
    """Stop Ray rewriting a loopback address to the machine's interface address.

    Ray (2.x) turns ``127.0.0.1:P`` into ``<default-route address>:P`` before it dials
    (``services.resolve_ip_for_localhost`` -> ``get_node_ip_address``), and a new local cluster
    would advertise that address too; only its "no multi-machine cluster" switch, which
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` sets at import, keeps ``127.0.0.1``. The switch is
    read at each call, so setting it here also covers a Ray imported before this ran; the
    environment variable is for the processes a new local cluster starts.
    """
    from ray._private import ray_constants

    os.environ.setdefault(_LOOPBACK_SWITCH, "0")
    ray_constants.ENABLE_RAY_CLUSTER = False


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigurationError(
            f"--executor ray needs Ray ({exc}): pip install 'aevyra-reflex[ray]'"
        ) from exc
    return ray
