"""How the MLflow adapter talks to a tracking server (reflex_mlflow/connection.py): a server that
is down is refused at once with its URI redacted, MLflow's retries are bounded only around the
callback's own calls, and where a run went is printed without credentials."""

from __future__ import annotations

import os
import socket

import pytest

from reflex_mlflow.connection import (
    REQUEST_LIMITS,
    bounded_requests,
    check_reachable,
    shown,
    where_lines,
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_is_down_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    uri = f"http://user:s3cret@127.0.0.1:{_free_port()}"
    with pytest.raises(ConnectionError, match="is unreachable") as info:
        check_reachable(uri)
    assert "s3cret" not in str(info.value) and "127.0.0.1" in str(info.value)
    with socket.socket() as server:  # a listening one passes
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_reachable(f"http://127.0.0.1:{server.getsockname()[1]}")
    check_reachable("sqlite:///mlflow.db")  # a local store: nothing to reach


def test_mlflow_s_retries_are_bounded_only_inside_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in REQUEST_LIMITS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")  # the user's own setting wins
    with bounded_requests():
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "0"
        assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "30"
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "30"


def test_where_a_run_went_is_said_without_credentials() -> None:
    uri = shown("postgresql://reflex:s3cret@db/mlflow")
    assert "s3cret" not in uri and shown("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"
    local = where_lines(shown("sqlite:///mlflow.db"), "reflex", "1", "abc")
    assert local[1] == "  open: mlflow ui --backend-store-uri sqlite:///mlflow.db"
    assert local[2].endswith("#/experiments/1/runs/abc")
    remote = where_lines("http://127.0.0.1:5000/", "reflex", "1", "abc")
    assert remote[1] == "  open http://127.0.0.1:5000/#/experiments/1/runs/abc"
