"""Real Redis, PostgreSQL and an MLflow tracking server for the ``services`` tests.

Each is started from Debian's packages in a temporary directory on 127.0.0.1 and stopped at the
end of the session (``bash .ci/services`` installs the packages and runs these tests in CI). A
test skips, with the reason and the fix, only when a binary or client package is not installed.
tests/conftest.py loads this module as a plugin, so every test can ask for the fixtures.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL = "install it with `bash .ci/services` (apt-get install redis-server postgresql)"
# A hang guard for start-up, not a speed requirement: a service that never comes up fails.
START_POLLS = 1200  # x 0.1 s


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(ready: object, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    for _ in range(START_POLLS):
        with contextlib.suppress(Exception):
            if ready():  # type: ignore[operator]
                return
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before it was ready")
        time.sleep(0.1)
    pytest.fail(f"{what} never became ready")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A fresh redis-server on 127.0.0.1 (no persistence), as ``redis://127.0.0.1:PORT/0``."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(f"redis-server is not installed: {INSTALL}")
    redis = pytest.importorskip("redis", reason="pip install 'aevyra-reflex[redis]'")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", tmp]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
        client = redis.Redis(port=port)
        _wait(client.ping, "redis-server", proc)
        client.close()
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            _stop(proc)


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_postgres_user(args: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the ``postgres`` user then."""
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL cluster on 127.0.0.1 (trust auth), as ``postgresql://reflex@.../postgres``."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip(f"PostgreSQL (initdb) is not installed: {INSTALL}")
    pytest.importorskip("psycopg", reason="pip install 'aevyra-reflex[postgres]'")
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="reflex-pg-")
    data = Path(tmp) / "data"
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres", "postgres")
    initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "reflex", "--auth=trust", "-E", "UTF8"]
    subprocess.run(_as_postgres_user(initdb), check=True, capture_output=True)
    options = f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c max_connections=200"
    ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", f"{tmp}/log", "-w"]
    subprocess.run(_as_postgres_user([*ctl, "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql://reflex@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres_user([*ctl, "-m", "fast", "stop"]), capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def create_database(url: str, name: str) -> str:
    """A new database on ``url``'s server; returns its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def mlflow_server(postgres_url: str) -> Iterator[str]:
    """``mlflow server`` with its backend store on PostgreSQL; yields its http:// URI."""
    pytest.importorskip("mlflow", reason="pip install 'aevyra-reflex[mlflow]'")
    store = create_database(postgres_url, "mlflow")
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="reflex-mlflow-")
    args = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port)]
    backend = store.replace("postgresql://", "postgresql+psycopg://")  # psycopg 3, not psycopg2
    args += ["--backend-store-uri", backend]
    args += ["--artifacts-destination", f"{tmp}/artifacts", "--workers", "1"]
    # MLFLOW_TRACKING_URI too: the server's prompt registry looks runs up (to link a prompt
    # version to a run) in the process's tracking store, which is otherwise ./mlflow.db.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env["MLFLOW_TRACKING_URI"] = backend
    with open(f"{tmp}/server.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=log, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
            return bool(answer.status == 200)

    _wait(healthy, "mlflow server", proc)
    try:
        yield url
    finally:
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class RayCluster:
    address: str  # HOST:PORT of its GCS
    session: int  # the session ID (and process group) of all its processes
    log: Path  # what ``ray start`` printed


@pytest.fixture(scope="session")
def ray_address(ray_cluster: RayCluster) -> str:
    return ray_cluster.address


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """A local Ray cluster (``ray start --head --block`` on 127.0.0.1, 2 CPUs).

    Its processes share one session and process group, stopped at the end. Workers get the
    environment of the cluster, as on a real one: an API key for the local endpoint, LiteLLM's
    offline map.
    """
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'aevyra-reflex[ray]'")
    binary = Path(sys.executable).parent / "ray"
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="rr-")  # short: Ray's unix socket paths must stay < 108 chars
    args = [str(binary), "start", "--head", "--block", "--node-ip-address", "127.0.0.1"]
    args += ["--port", str(port), "--num-cpus", "2", "--include-dashboard", "false"]
    args += ["--disable-usage-stats", "--temp-dir", tmp, "--object-store-memory", "200000000"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-none", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Without it Ray rewrites --node-ip-address 127.0.0.1 to the machine's interface address
    # (services.resolve_ip_for_localhost): the head would advertise and listen there.
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    with open(f"{tmp}/start.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=log, env=env, start_new_session=True)

    def listening() -> bool:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True

    _wait(listening, "ray start --head", proc)
    try:
        yield RayCluster(f"127.0.0.1:{port}", proc.pid, Path(tmp) / "start.log")
    finally:
        with contextlib.suppress(Exception):
            import ray

            ray.shutdown()
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
