"""The response cache shared across processes and machines, selected by URL (``--cache-url``).

``redis://host:6379/0`` (Redis) or a SQL database URL (``postgresql://user@host/db``, any
SQLAlchemy URL) hold the same rows as the default sqlite file (``reflex.models.cache``): the same
keys (sha256 of namespace, model, decoding parameters, messages and the endpoint the call goes
to: ``reflex.models.target``), only successful responses, the owner run, the last write winning.
Two machines evaluating the same prompts pay once. ``sqlite:///path`` opens the sqlite cache at
``path``. A URL is checked (:func:`check_cache_url`) and the cache opened before a run folder is
made; what a backend cannot hold as it is (NUL in PostgreSQL text, a count past a column) is
escaped or clipped, never blamed on the database.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reflex.errors import ConfigurationError, StorageError
from reflex.models.cache import MAX_COUNT, CachedResponse, ResponseCache, clip_count
from reflex.redact import redact_url

__all__ = ["RedisCache", "SqlCache", "check_cache_url", "open_cache"]

logger = logging.getLogger(__name__)

_SCHEMES = (
    "redis://, rediss://, unix://, postgresql://, mysql://, sqlite:///, or any SQLAlchemy URL"
)


def open_cache(url: str | None, default: Path, *, read_only: bool = False) -> ResponseCache:
    """The cache ``url`` names, or the run directory's sqlite file ``default`` when None.

    ``read_only``: a sqlite file is read and never written (see ``ResponseCache``); a shared
    cache (Redis, a SQL server) lives outside the run directory and is opened as usual."""
    if not url:
        return ResponseCache(default, read_only=read_only)
    scheme = check_cache_url(url)
    if scheme == "sqlite":
        return ResponseCache(Path(url.partition(":///")[2]), read_only=read_only)
    if scheme in ("redis", "rediss", "unix"):
        return RedisCache(url)
    return SqlCache(url)


def check_cache_url(url: str) -> str:
    """The scheme of ``url``, or ConfigurationError (one line, the fix) for a URL that cannot
    name a cache: no scheme, ``sqlite://x`` (two slashes), a sqlite file in a folder that does
    not exist (no folder is made outside the run directory), a Redis or SQLAlchemy URL their
    own parsers refuse (a bad port, ``?socket_timeout=abc``), an unknown database scheme.
    Makes no connection."""
    shown = str(redact_url(url))
    scheme = url.partition("://")[0].lower()
    if not scheme or "://" not in url or not scheme.replace("+", "").isalnum():
        raise ConfigurationError(f"--cache-url {shown!r} is not a URL; use {_SCHEMES}")
    if scheme == "sqlite":
        path = url.partition("://")[2]
        if not path.startswith("/") or not path.strip("/"):
            raise ConfigurationError(
                f"--cache-url {shown!r}: write sqlite:///relative/file.db (three slashes) or "
                "sqlite:////absolute/file.db (four)"
            )
        _folder_exists(Path(path[1:]), shown)
    elif scheme in ("redis", "rediss", "unix"):
        _parse_redis(url, shown)
    else:
        _parse_sql(url, shown)
    return scheme


def _folder_exists(path: Path, shown: str) -> None:
    if not path.parent.is_dir():
        raise ConfigurationError(
            f"--cache-url {shown!r}: the folder {path.parent} does not exist; create it first "
            "(a cache outside the run directory gets no folder made for it)"
        )


def _parse_redis(url: str, shown: str) -> None:
    try:
        from redis import connection
    except ImportError as exc:
        raise ConfigurationError(
            "--cache-url redis://... needs the redis client: pip install 'aevyra-reflex[redis]'"
        ) from exc
    try:
        parse: Any = connection.parse_url  # untyped in redis
        parse(url)
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(f"--cache-url {shown!r}: {_first_line(exc)}") from None


def _parse_sql(url: str, shown: str) -> None:
    try:
        import sqlalchemy as sa
    except ImportError as exc:
        raise ConfigurationError(
            f"--cache-url {shown}: an unknown scheme, or a SQL database URL, which needs "
            f"SQLAlchemy and the database's driver: pip install 'aevyra-reflex[postgres]' "
            f"(the schemes: {_SCHEMES})"
        ) from exc
    try:
        parsed = sa.engine.make_url(_driver_url(url))
        parsed.get_dialect()
    except sa.exc.NoSuchModuleError:
        raise ConfigurationError(
            f"--cache-url {shown!r}: no database dialect {url.partition('://')[0]!r}; use "
            f"{_SCHEMES}"
        ) from None
    except (sa.exc.ArgumentError, ValueError, TypeError) as exc:
        raise ConfigurationError(f"--cache-url {shown!r}: {_first_line(exc)}") from None
    except ImportError:  # the dialect's driver: SqlCache says which extra to install
        return
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        _folder_exists(Path(parsed.database), shown)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _unavailable(url: str, exc: BaseException, what: str) -> StorageError:
    first = _first_line(exc)
    return StorageError(
        f"response cache {redact_url(url)} is unavailable: {first}; start {what} or fix "
        "--cache-url (or leave it out for the run directory's sqlite file)"
    )


# A SQL INTEGER column is 32 bits in PostgreSQL and MySQL: larger token counts are clipped.
_SQL_COUNT = 2**31 - 1
# PostgreSQL text cannot hold NUL: such an answer (and one that starts with the marker, so
# reading back is unambiguous) is stored as the marker + its JSON string, which escapes NUL.
_ESCAPED = "reflex-nul:"


def _row(response: CachedResponse, limit: int = MAX_COUNT) -> dict[str, Any]:
    return {
        "text": response.text,
        "prompt_tokens": clip_count(response.prompt_tokens, limit),
        "completion_tokens": clip_count(response.completion_tokens, limit),
        "cost": response.cost,
        "owner": response.owner,
    }


def _response(row: Mapping[str, Any]) -> CachedResponse:
    cost = row.get("cost")
    owner = row.get("owner")
    return CachedResponse(
        str(row["text"]),
        int(row.get("prompt_tokens") or 0),
        int(row.get("completion_tokens") or 0),
        None if cost is None else float(cost),
        None if owner is None else str(owner),
    )


def _escape(text: str) -> str:
    if "\x00" in text or text.startswith(_ESCAPED):
        return _ESCAPED + json.dumps(text, ensure_ascii=False)
    return text


def _unescape(text: str) -> str:
    return str(json.loads(text.removeprefix(_ESCAPED))) if text.startswith(_ESCAPED) else text


class RedisCache(ResponseCache):
    """Rows as JSON strings under ``reflex:cache:<key>`` (no expiry: a cache, not a session)."""

    PREFIX = "reflex:cache:"

    def __init__(self, url: str) -> None:
        try:
            import redis
        except ImportError as exc:
            raise ConfigurationError(
                "--cache-url redis://... needs the redis client: pip install 'aevyra-reflex[redis]'"
            ) from exc
        self.path = None
        self.url = url
        self._closing = False
        self._warned = False
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        try:
            self._db: Any = redis.Redis.from_url(url)
            self._db.ping()
        except self._errors as exc:
            raise _unavailable(url, exc, "redis-server") from exc
        except (ValueError, TypeError) as exc:  # a URL option redis refuses only when used
            shown = redact_url(url)
            raise ConfigurationError(f"--cache-url {shown!r}: {_first_line(exc)}") from None

    def get(self, key: str) -> CachedResponse | None:
        try:
            blob = self._db.get(self.PREFIX + key)
        except self._errors as exc:
            raise _unavailable(self.url, exc, "redis-server") from exc
        if blob is None:
            return None
        try:
            row = json.loads(blob)
            return _response(row)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Someone else's value under our prefix (or a damaged one): a miss, said once; the
            # answer paid for next replaces it.
            if not self._warned:
                self._warned = True
                logger.warning(
                    "response cache %s: the value under %s%s is not a cached answer (%s: %s); "
                    "treating it and any like it as a miss (the new answer replaces it)",
                    redact_url(self.url),
                    self.PREFIX,
                    key,
                    type(exc).__name__,
                    str(exc)[:80],
                )
            return None

    def _put(self, key: str, response: CachedResponse) -> None:
        try:
            self._db.set(self.PREFIX + key, json.dumps(_row(response), ensure_ascii=False))
        except self._errors as exc:
            raise _unavailable(self.url, exc, "redis-server") from exc

    def __len__(self) -> int:
        return sum(1 for _ in self._db.scan_iter(match=self.PREFIX + "*", count=1000))

    def close(self) -> None:
        self._closing = True
        self._db.close()


class SqlCache(ResponseCache):
    """The sqlite table's rows in any SQL database SQLAlchemy reaches (PostgreSQL, MySQL...)."""

    def __init__(self, url: str) -> None:
        try:
            import sqlalchemy as sa
        except ImportError as exc:
            raise ConfigurationError(
                f"--cache-url {redact_url(url)} needs SQLAlchemy and the database's driver: "
                "pip install 'aevyra-reflex[postgres]'"
            ) from exc
        self.path = None
        self.url = url
        self._closing = False
        self._lock = threading.Lock()
        self._sa = sa
        self._errors = (sa.exc.SQLAlchemyError, OSError)
        meta = sa.MetaData()
        self._table = sa.Table(
            "reflex_responses",
            meta,
            sa.Column("key", sa.String(64), primary_key=True),
            sa.Column("text", sa.Text, nullable=False),
            sa.Column("prompt_tokens", sa.Integer),
            sa.Column("completion_tokens", sa.Integer),
            sa.Column("cost", sa.Float),
            sa.Column("owner", sa.String(200)),
        )
        try:
            self._engine = sa.create_engine(_driver_url(url), pool_pre_ping=True)
            meta.create_all(self._engine, checkfirst=True)
        except ImportError as exc:  # the dialect's driver (psycopg, pymysql...) is missing
            raise ConfigurationError(
                f"--cache-url {redact_url(url)}: {exc}; pip install 'aevyra-reflex[postgres]' "
                "or the database's driver"
            ) from exc
        except self._errors as exc:
            if not _exists_race(exc):
                raise _unavailable(url, exc, "the database") from exc

    def get(self, key: str) -> CachedResponse | None:
        table = self._table
        try:
            with self._engine.connect() as db:
                row = db.execute(table.select().where(table.c.key == key)).mappings().first()
        except self._errors as exc:
            raise _unavailable(self.url, exc, "the database") from exc
        if row is None:
            return None
        found = dict(row)
        return _response({**found, "text": _unescape(str(found["text"]))})

    def _put(self, key: str, response: CachedResponse) -> None:
        table, values = self._table, _row(response, _SQL_COUNT)
        values["text"] = _escape(response.text)
        try:
            with self._engine.begin() as db:
                done = db.execute(table.update().where(table.c.key == key).values(**values))
                if done.rowcount == 0:
                    db.execute(table.insert().values(key=key, **values))
        except self._sa.exc.IntegrityError:  # another process inserted it meanwhile: overwrite
            with self._engine.begin() as db:
                db.execute(table.update().where(table.c.key == key).values(**values))
        except self._errors as exc:
            raise _unavailable(self.url, exc, "the database") from exc

    def __len__(self) -> int:
        sa = self._sa
        with self._engine.connect() as db:
            return int(db.execute(sa.select(sa.func.count()).select_from(self._table)).scalar_one())

    def close(self) -> None:
        self._closing = True
        self._engine.dispose()


def _driver_url(url: str) -> str:
    """``postgresql://`` through psycopg 3 (the ``postgres`` extra), not SQLAlchemy's psycopg2."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url.removeprefix(plain)
    return url


def _exists_race(exc: BaseException) -> bool:
    """Two processes creating the table at once: the loser's error is harmless."""
    text = str(exc).lower()
    return "already exists" in text or "duplicate key" in text
