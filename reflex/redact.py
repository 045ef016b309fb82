"""The one redactor: keep secrets out of everything a run writes, logs or hands to a tracker.

API keys belong in the environment. A URL may still carry one (``https://user:pass@host``,
``?api-key=...``, Azure's ``?sig=...``); the run needs the real URL for its calls, but
config.json, events, results, error lines, log records and tracker params, tags and traces only
ever see redacted forms:

* :func:`redact_url`: the URL with its credentials replaced by ``***``;
* :func:`scrub`: a text with the credentials of the given URLs, of every URL written in it
  and the value of every secret-named environment variable (``OPENAI_API_KEY``, ...) replaced
  by ``***``;
* :func:`redact_argv` and :func:`redacted_argv`: a command line with every URL's credentials
  (whatever option it is the value of) and every ``token=...`` value replaced by ``***``;
* :func:`redact_data`: the same for nested JSON-like data, where a string under a secret-named
  key is replaced whole;
* :class:`ScrubFilter` and :func:`scrubbed_logs`: the same for log records (message, arguments,
  traceback), per handler or for every record of every logger.

One name pattern (:func:`is_secret_name`) decides what is secret, for query parameters,
environment variables and tag or parameter keys alike.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

__all__ = [
    "REDACTED",
    "ScrubFilter",
    "env_secrets",
    "is_secret_name",
    "credential_urls",
    "data_secrets",
    "hidden_values",
    "redact_argv",
    "redact_data",
    "redact_url",
    "redacted_argv",
    "scrub",
    "scrubbed_logs",
    "url_secrets",
]

REDACTED = "***"
# Names whose values are credentials: ``?api-key=``, ``?token=``, Azure SAS ``?sig=``/``?code=``,
# ``OPENAI_API_KEY``, a ``x-signature`` tag. Parts are delimited, so ``tokens`` or ``keyword``
# are not secret.
_SECRET_NAME = re.compile(
    r"(?:^|[_\-.])(?:api[_-]?key|key|token|secret|password|passwd|auth|sig|signature|code"
    r"|credentials?)(?:$|[_\-.])",
    re.I,
)
_MIN_URL_SECRET = 3  # shorter values ("1", "ab") would redact ordinary text
_MIN_ENV_SECRET = 8  # likewise for environment values ("1", "true", "dev")


@functools.lru_cache(maxsize=4096)  # a run asks about the same few keys for every row
def is_secret_name(name: str) -> bool:
    """Whether a query parameter, environment variable or key named ``name`` holds a secret."""
    return _SECRET_NAME.search(name) is not None


# ``name=value`` after ``?``, ``&``, ``;`` or ``#``: a query parameter (``&`` or ``;``
# separated), a path parameter (``/v1;key=S``) or a fragment one (``#access_token=``). The value
# runs to the next separator.
_PARAM = re.compile(r"(?<=[?&;#])([^=&;#?/]+)=([^&;#]*)")
# What may follow the ``@`` that ends a userinfo: a host (a name, an IPv4 or an ``[IPv6]``),
# an optional port, then the path, query, fragment or the end.
_HOST = re.compile(r"(?:\[[^\]/?#@]*\]|[^\[\]/?#@:]*)(?::\d*)?(?=[/?#]|$)")


def _userinfos(url: str) -> list[tuple[str, str, str]]:
    """Every ``(scheme://, userinfo, @rest)`` reading of ``url``, the preferred one first.

    The userinfo ends at the last ``@`` of the URL that a host follows, not at the first ``/``,
    ``?`` or ``#`` as RFC 3986 parses it: a password may hold those unescaped
    (``redis://:pa/ss@h``, ``postgresql://u:p#w@h/db``; base64 passwords hold ``/``), and the
    RFC reading would show it as a path or fragment. An ``@`` in a path or query
    (``?user=a@b.example``) is then read as the end of a userinfo too: the redacted form loses
    its host, which is better than a password left in clear. The other readings (an earlier
    ``@`` a host follows) give :func:`url_secrets` the shorter passwords they imply.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or rest.startswith("/"):  # no authority (``sqlite:////abs/path``)
        return []
    ats = [i for i, c in enumerate(rest) if c == "@" and _HOST.match(rest, i + 1)]
    return [(scheme + sep, rest[:at], rest[at:]) for at in reversed(ats)]


def _secret_params(text: str) -> list[re.Match[str]]:
    """The ``name=value`` parameters of ``text`` whose (decoded) name is secret-named."""
    return [m for m in _PARAM.finditer(text) if is_secret_name(unquote(m.group(1)))]


def _redact_params(text: str) -> str:
    return _PARAM.sub(
        lambda m: f"{m.group(1)}={REDACTED}" if is_secret_name(unquote(m.group(1))) else m[0],
        text,
    )


def redact_url(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` and secret-named query and path parameter values
    (``?api-key=``, ``;key=``) replaced by ``***``; every other character kept as it is.

    Deterministic, so two redacted forms of the same URL compare equal (``--resume`` does).
    """
    if not url:
        return url
    readings = _userinfos(url)
    if not readings:
        return _redact_params(url)
    head, _, rest = readings[0]
    return f"{head}{REDACTED}{_redact_params(rest)}"


def url_secrets(url: str | None) -> list[str]:
    """The credential strings inside ``url`` (its password, or a user part without one, and
    secret query and path parameter values), raw and as they appear percent-encoded, longest
    first."""
    if not url:
        return []
    found: list[str] = []
    readings = _userinfos(url)
    for _, userinfo, _ in readings:
        # ``user:password@``: the password (a user name is an identity, and hiding a name like
        # "user" would blank that word in every text); a lone ``token@`` is the credential.
        user, colon, password = userinfo.partition(":")
        found.append(password if colon else user)
    found += [m.group(2) for m in _secret_params(readings[0][2] if readings else url)]
    decoded = {d for v in found for d in (v, unquote(v), unquote_plus(v))}
    variants = {f for d in decoded for f in (d, quote(d, safe=""), quote_plus(d))}
    return sorted((v for v in variants if len(v) >= _MIN_URL_SECRET), key=len, reverse=True)


# A URL written in a text: a scheme, ``://`` and everything up to the next white space (a
# password may hold quotes and brackets, so they do not end it).
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")


def _redact_urls_in(text: str) -> str:
    """``text`` with every URL written in it redacted (:func:`redact_url`)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: _redact_written_url(m[0]), text)


def _redact_written_url(url: str) -> str:
    """:func:`redact_url`, but a userinfo already scrubbed (``user:***@``) keeps its user."""
    readings = _userinfos(url)
    if readings and readings[0][1].partition(":")[2] == REDACTED:
        head, userinfo, rest = readings[0]
        return f"{head}{userinfo}{_redact_params(rest)}"
    return redact_url(url) or url


def credential_urls(texts: Iterable[str]) -> list[str]:
    """The URLs written in ``texts`` (e.g. a command line's tokens) that carry credentials."""
    return [m[0] for text in texts for m in _URL_IN_TEXT.finditer(text) if redact_url(m[0]) != m[0]]


# The NAME of a NAME=VALUE command-line token: an option or a plain name, never a URL.
_ARG_NAME = re.compile(r"-{0,2}[A-Za-z_][\w.-]*")


def redact_argv(argv: list[str], *urls: str | None) -> list[str]:
    """A command line safe to record: in every token, whatever the option (``--opt=value``,
    ``--opt value`` or a positional), every URL with credentials is redacted, the
    credentials of ``urls`` and secret environment values are scrubbed, and a
    ``NAME=VALUE`` token with a secret-named NAME (``token=...``) keeps only its name."""
    secrets = _secrets((*urls, *credential_urls(argv)))
    out = []
    for token in argv:
        name, eq, _ = token.partition("=")
        # A NAME=VALUE token (not a URL whose query holds "api-key=": its password is scrubbed)
        if eq and _ARG_NAME.fullmatch(name) and is_secret_name(name.lstrip("-")):
            out.append(f"{name}={REDACTED}")
        else:
            out.append(_replace(token, secrets))
    return out


@contextlib.contextmanager
def redacted_argv(*urls: str | None) -> Iterator[None]:
    """Inside the block ``sys.argv`` is :func:`redact_argv`'s form (for a tracker that records
    the command line when its run starts: W&B's ``args``, MLflow's ``mlflow.source.name``)."""
    saved = list(sys.argv)
    sys.argv[:] = redact_argv(saved, *urls)
    try:
        yield
    finally:
        sys.argv[:] = saved


def env_secrets() -> list[str]:
    """The values of secret-named environment variables (``OPENAI_API_KEY``, ...), longest
    first. Read on every call: a key exported after the run started is still hidden."""
    values = {
        value
        for name, value in os.environ.items()
        if is_secret_name(name) and len(value) >= _MIN_ENV_SECRET
    }
    return sorted(values, key=len, reverse=True)


# Literal secrets hidden while a :func:`hidden_values` block runs (a router config's API keys).
_HIDDEN: list[str] = []


@contextlib.contextmanager
def hidden_values(values: Iterable[str]) -> Iterator[None]:
    """Inside the block every scrub also hides ``values`` (secrets that are no URL and no
    environment value, e.g. a router config's literal ``api_key``)."""
    added = [v for v in dict.fromkeys(values) if len(v) >= _MIN_URL_SECRET]
    _HIDDEN.extend(added)
    try:
        yield
    finally:
        for value in added:
            _HIDDEN.remove(value)


def data_secrets(data: object) -> list[str]:
    """The credentials inside JSON-like ``data`` (a router config): every string under a
    secret-named key (``api_key``, ``redis_password``) and every URL's credentials."""
    found: list[str] = []

    def walk(key: str | None, value: object) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(str(k), v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(None, v)
        elif isinstance(value, str):
            if key is not None and is_secret_name(key):
                found.append(value)
            found.extend(s for m in _URL_IN_TEXT.finditer(value) for s in url_secrets(m[0]))

    walk(None, data)
    return found


def _secrets(urls: tuple[str | None, ...]) -> list[str]:
    found = {s for url in urls for s in url_secrets(url)} | set(env_secrets()) | set(_HIDDEN)
    return sorted(found, key=len, reverse=True)  # longest first: no half-replaced secret


def _replace(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return _redact_urls_in(text)  # a URL no caller named (a driver's message quoting its DSN)


def scrub(text: str, *urls: str | None) -> str:
    """``text`` with every credential of ``urls`` and every secret environment value replaced
    by ``***`` (for error messages, log lines and anything else that leaves the process)."""
    return _replace(text, _secrets(urls))


def redact_data(data: Mapping[str, object], *urls: str | None) -> dict[str, Any]:
    """A copy of JSON-like ``data`` that :func:`scrub` would pass: every string scrubbed, and a
    string or container under a secret-named key replaced by ``***`` whole. Numbers, booleans
    and None stay as they are (they carry no credential and keep the data's types)."""
    secrets = _secrets(urls)
    return {str(k): _redact_value(str(k), v, secrets) for k, v in data.items()}


def _redact_value(key: str | None, value: object, secrets: list[str]) -> object:
    if value is None or isinstance(value, bool | int | float):
        return value
    if key is not None and is_secret_name(key):
        return REDACTED
    if isinstance(value, str):
        return _replace(value, secrets)
    if isinstance(value, Mapping):
        return {str(k): _redact_value(str(k), v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(None, v, secrets) for v in value]
    return value  # another leaf (a Path, a datetime): its JSON writer decides


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record: its message (arguments merged in), its
    traceback and its stack (see :func:`scrub`)."""

    def __init__(self, *urls: str | None) -> None:
        super().__init__()
        self.urls = urls

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = _secrets(self.urls)
        try:
            message = record.getMessage()
        except (TypeError, ValueError, KeyError):
            # A malformed logging call: logging would print its raw arguments; drop them.
            message, record.args = str(record.msg), ()
        clean = _replace(message, secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text, so the scrubbed traceback is the one printed.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _replace(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = _replace(record.stack_info, secrets)
        return True


@contextlib.contextmanager
def scrubbed_logs(*urls: str | None) -> Iterator[None]:
    """Inside the block, every log record of every logger is scrubbed when it is created, and
    every warning when it is shown (``warnings.showwarning``).

    A filter on the root handlers is not enough: LiteLLM and MLflow log through handlers of
    their own (LiteLLM's DEBUG lines echo the request URL) and W&B writes its debug log files
    itself, so the records are cleaned at their source instead. Warnings may quote a model's
    answer (LiteLLM's pydantic serializer warnings print the response message).
    """
    previous = logging.getLogRecordFactory()
    scrubber = ScrubFilter(*urls)

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        scrubber.filter(record)
        return record

    logging.setLogRecordFactory(factory)
    shown = warnings.showwarning
    warnings.showwarning = _scrubbing_warnings(shown, urls)
    try:
        yield
    finally:
        logging.setLogRecordFactory(previous)
        warnings.showwarning = shown


def _scrubbing_warnings(show: Callable[..., None], urls: tuple[str | None, ...]) -> Any:
    """``warnings.showwarning`` that passes the warning on with its text scrubbed."""

    def scrubbed(
        message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any
    ) -> None:
        text = str(message)
        clean = _replace(text, _secrets(urls))
        show(message if clean == text else clean, category, *args, **kwargs)

    return scrubbed
