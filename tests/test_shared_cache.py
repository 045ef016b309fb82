"""The response cache by URL (--cache-url): Redis and SQL databases, the sqlite cache's semantics.

The contract runs on every backend: the sqlite file, SQLAlchemy over sqlite (always), and a real
redis-server and PostgreSQL (``services``, started by tests/services.py). Two runs in separate
run directories sharing one cache URL stand for two machines: the second pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_rows
from services import create_database, free_port

from reflex import PromptOptimizer
from reflex.errors import ConfigurationError, StorageError
from reflex.models.cache import CachedResponse, ResponseCache, cache_key
from reflex.models.shared_cache import RedisCache, SqlCache, open_cache
from reflex.testing import FakeModel

BACKENDS = [
    "sqlite",
    "sqlalchemy",
    pytest.param("redis", marks=pytest.mark.services),
    pytest.param("postgres", marks=pytest.mark.services),
]


@pytest.fixture(params=BACKENDS)
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty cache of each kind, as the URL --cache-url takes."""
    kind = request.param
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite'}"
    if kind == "sqlalchemy":
        pytest.importorskip("sqlalchemy")
        return f"sqlite+pysqlite:///{tmp_path / 'shared-sa.sqlite'}"
    if kind == "redis":
        url = str(request.getfixturevalue("redis_url"))
        import redis

        redis.Redis.from_url(url).flushdb()
        return url
    server = str(request.getfixturevalue("postgres_url"))
    return create_database(server, f"cache_{request.node.name.split('[')[0][-20:]}".lower())


@pytest.fixture
def cache(cache_url: str, tmp_path: Path) -> Iterator[ResponseCache]:
    opened = open_cache(cache_url, tmp_path / "unused.sqlite")
    yield opened
    opened.close()


def test_open_cache_picks_the_backend(tmp_path: Path) -> None:
    assert type(open_cache(None, tmp_path / "c.sqlite")) is ResponseCache
    assert open_cache(f"sqlite:///{tmp_path}/d.sqlite", tmp_path / "c.sqlite").path == (
        tmp_path / "d.sqlite"
    )
    with pytest.raises(ConfigurationError, match="is not a URL"):
        open_cache("localhost:6379", tmp_path / "c.sqlite")


def test_same_keys_and_semantics(cache: ResponseCache) -> None:
    key = cache_key("ns", "openai/m", {"temperature": 0.0}, [{"role": "user", "content": "hé"}])
    assert cache.get(key) is None and len(cache) == 0
    first = CachedResponse("réponse", 12, 3, None, "run-a")
    cache.put(key, first)
    assert cache.get(key) == first  # unknown cost stays None, the owner is kept
    cache.put(key, CachedResponse("second", 1, 2, 0.25, None))  # the last write wins
    assert cache.get(key) == CachedResponse("second", 1, 2, 0.25, None)
    assert len(cache) == 1


def test_two_runs_sharing_the_cache_pay_once(
    cache_url: str, fake_model: FakeModel, tmp_path: Path
) -> None:
    def run(name: str) -> dict[str, dict[str, float]]:
        result = (
            PromptOptimizer()
            .set_dataset(make_rows(20))
            .add_provider("fake/task")
            .add_metric("exact_match")
            .set_reasoning_model("fake/reasoner")
            .set_run_dir(tmp_path / name)  # another machine: its own run directory
            .set_cache_url(cache_url)
            .configure(max_iterations=1)
            .run("Classify the sentiment.")
        )
        return result.usage

    first = run("machine-a")
    paid = len(fake_model.calls_to("fake/task"))
    assert first["task"]["calls"] == paid > 0
    second = run("machine-b")
    assert len(fake_model.calls_to("fake/task")) == paid  # not one more task request
    asked = first["task"]["calls"] + first["task"]["cache_hits"]
    assert second["task"]["calls"] == 0 and second["task"]["cache_hits"] == asked
    assert not (tmp_path / "machine-b" / "cache.sqlite").exists()


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:{port}/0", "postgresql://x@127.0.0.1:{port}/db"]
)
def test_unreachable_cache_is_one_clear_line(url: str, tmp_path: Path) -> None:
    pytest.importorskip("redis" if url.startswith("redis") else "psycopg")
    pytest.importorskip("sqlalchemy")
    target = url.format(port=free_port())  # nothing listens there
    with pytest.raises(StorageError, match=r"response cache .* is unavailable") as caught:
        open_cache(target, tmp_path / "c.sqlite")
    assert "\n" not in str(caught.value) and "--cache-url" in str(caught.value)


def test_backends_are_response_caches() -> None:
    assert issubclass(RedisCache, ResponseCache) and issubclass(SqlCache, ResponseCache)


def test_export_reads_the_shared_cache_the_run_wrote(fake_model: FakeModel, tmp_path: Path) -> None:
    from reflex import load_dataset
    from reflex.run.export import plan_export

    pytest.importorskip("sqlalchemy")
    url = f"sqlite+pysqlite:///{tmp_path / 'team.sqlite'}"
    dataset = load_dataset(make_rows(20), name="reviews")
    result = (
        PromptOptimizer()
        .set_dataset(dataset)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "runs")
        .set_cache_url(url)
        .configure(max_iterations=1)
        .run("Classify the sentiment.")
    )
    assert result.run_dir is not None
    plan = plan_export(Path(result.run_dir), dataset, "test")
    assert plan.uncached == 0  # every test row's answer for the best prompt is in the shared cache
    assert isinstance(plan.evaluator.client.cache, SqlCache)
    plan.evaluator.client.cache.close()
