"""What a cache backend is handed or finds never aborts the run (issue 29, items 8 and 10).

An answer holding NUL (PostgreSQL text cannot), a token count past any integer column, a Redis
value someone else wrote (not JSON, no ``text``): the answer is stored (escaped or clipped) or
the row is a miss with one warning; the database is never blamed for the data.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from services import create_database

from reflex.models.cache import CachedResponse, ResponseCache
from reflex.models.shared_cache import RedisCache, open_cache

BACKENDS = [
    "sqlite",
    "sqlalchemy",
    pytest.param("redis", marks=pytest.mark.services),
    pytest.param("postgres", marks=pytest.mark.services),
]


@pytest.fixture(params=BACKENDS)
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResponseCache]:
    kind = request.param
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'c.sqlite'}"
    elif kind == "sqlalchemy":
        pytest.importorskip("sqlalchemy")
        url = f"sqlite+pysqlite:///{tmp_path / 'c-sa.sqlite'}"
    elif kind == "redis":
        url = str(request.getfixturevalue("redis_url"))
        import redis

        redis.Redis.from_url(url).flushdb()
    else:
        url = create_database(str(request.getfixturevalue("postgres_url")), "h3_storage")
    opened = open_cache(url, tmp_path / "unused.sqlite")
    yield opened
    opened.close()


def test_an_answer_with_nul_is_stored_and_read_back_as_it_was(cache: ResponseCache) -> None:
    # The last two look like the escaped form: they must still read back as written.
    texts = ["before\x00after", "\x00", 'reflex-nul:"x"', "reflex-nul:not json"]
    for index, text in enumerate(texts):
        cache.put(f"{index:064d}", CachedResponse(text, 3, 4, 0.5, "run-a"))
    assert [cache.get(f"{i:064d}") for i in range(len(texts))] == [
        CachedResponse(text, 3, 4, 0.5, "run-a") for text in texts
    ]


def test_a_huge_token_count_never_overflows_a_column(cache: ResponseCache) -> None:
    cache.put("h" * 64, CachedResponse("ok", 10**30, 2**70, None, None))
    hit = cache.get("h" * 64)
    assert hit is not None and hit.text == "ok"
    assert hit.prompt_tokens > 0 and hit.completion_tokens > 0  # clipped, never negative


@pytest.mark.services
@pytest.mark.parametrize(
    "blob", [b"not json", b'{"prompt_tokens": 1}', b"[1, 2]", b'{"text": "a", "cost": "x"}']
)
def test_a_redis_value_that_is_not_a_row_is_a_miss_with_one_warning(
    redis_url: str, blob: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    cache = open_cache(redis_url, tmp_path / "unused.sqlite")
    redis.Redis.from_url(redis_url).set(RedisCache.PREFIX + "bad", blob)
    with caplog.at_level(logging.WARNING, logger="reflex"):
        assert cache.get("bad") is None
        assert cache.get("bad") is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "not a cached answer" in warnings[0].getMessage()
    cache.put("bad", CachedResponse("fixed", 1, 1, None, None))  # the next answer replaces it
    assert cache.get("bad") == CachedResponse("fixed", 1, 1, None, None)
    cache.close()
