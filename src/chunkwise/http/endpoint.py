"""Where requests of :mod:`chunkwise.http` go and how far the server is trusted: :class:`Endpoint`, its
errors, and the retry rules (which statuses, how long ``Retry-After`` says to wait).
"""

from __future__ import annotations

import email.utils
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from ..errors import ChunkwiseError, ConfigError
from ..security import redact_url
from ..validation import Interval, check

#: statuses retried (besides every 5xx): request timeout, conflict, rate limit
RETRY_STATUS = frozenset({408, 409, 429})
#: a whole request (all attempts) ends after this many seconds unless told otherwise (or ``timeout`` is longer)
DEFAULT_DEADLINE = 300.0
#: the largest response read by default (a chat answer is kilobytes; see embeddings for larger ones)
DEFAULT_MAX_RESPONSE_BYTES = 16 * 2**20


def retried(status: int) -> bool:
    """Whether a response with ``status`` is worth another attempt (408, 409, 429, 5xx)."""
    return status in RETRY_STATUS or 500 <= status <= 599


class EndpointError(ChunkwiseError):
    """A request that failed (unreachable, timed out, past its deadline, 5xx after retries...); names the URL.
    ``past_deadline`` is true for a missed deadline (the endpoint is too slow for more requests)."""

    past_deadline: bool = False


class FatalEndpointError(EndpointError):
    """A request that cannot succeed by retrying (a redirect, 401, 404, an answer over the size cap...)."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and the limits the client holds the server to: the one connection type that chat
    (:class:`~chunkwise.llm.client.ChatClient`, :class:`~chunkwise.llm.openai.OpenAILLM`), embeddings
    (:class:`~chunkwise.embeddings.openai.OpenAIEmbedder`), contextual text
    (:class:`~chunkwise.context.llm.LLMContextualizer`) and ``rerank=llm`` all take as ``endpoint=``.
    Each use sets its own ``route`` and ``label`` (:meth:`for_use`); the settings mean the same everywhere.

    Parameters
    ----------
    base_url: up to and including ``/v1``; ``route`` (``/chat/completions``, ``/embeddings``) is appended
        to its path (before a query string such as ``?api-version=``) unless the path already ends with it.
        A user name or password in it (``user:pw@``) is refused: it would be neither sent nor hidden.
    model: the ``model`` field of every request.
    api_key: sent as ``Authorization: Bearer``; ``None``: read from the first set variable of ``key_envs``
        at each request (none set: no header, for local servers).
    timeout: seconds to connect, and the longest silence between two reads.
    deadline: seconds for the whole request, all attempts included; default the larger of
        :data:`DEFAULT_DEADLINE` and ``timeout``.
    retries: extra attempts; backoff: the first back-off in seconds (doubling, with jitter); max_backoff: the
        longest single wait, ``Retry-After`` included.
    max_response_bytes: the most bytes a response body may have (a stream's bytes all together).
    label: what the endpoint is for, in configuration errors (``"llm"``, ``"openai embedder"``).
    """

    base_url: str
    model: str
    route: str = ""
    api_key: str | None = field(default=None, repr=False)
    key_envs: tuple[str, ...] = ()
    timeout: float = 60.0
    deadline: float | None = None
    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    label: str = "endpoint"

    def __post_init__(self) -> None:
        base = self.base_url or ""
        parts = urlsplit(base)
        if not base.startswith(("http://", "https://")) or not parts.hostname:
            raise ConfigError(f"{self.label} base URL must start with http:// or https://, got {self.base_url!r}")
        if "@" in parts.netloc:  # never sent, never shown: refused
            raise ConfigError(
                f"{self.label} base URL must not carry a user name or password ({redact_url(base)}); "
                "give the key as an API key ($CHUNKWISE_LLM_API_KEY, $OPENAI_API_KEY)"
            )
        base = parts._replace(path=parts.path.rstrip("/"), fragment="").geturl()
        object.__setattr__(self, "base_url", base)
        if not self.model or not isinstance(self.model, str):
            raise ConfigError(f"{self.label} needs a model name")
        _number(self, "timeout", self.timeout, positive=True)
        if self.deadline is None:
            object.__setattr__(self, "deadline", max(DEFAULT_DEADLINE, float(self.timeout)))
        _number(self, "deadline", self.deadline, positive=True)
        check(self.retries, Interval(int, 0, None), "retries", self.label)
        _number(self, "backoff", self.backoff, positive=False)
        _number(self, "max_backoff", self.max_backoff, positive=False)
        check(self.max_response_bytes, Interval(int, 1, None), "max_response_bytes", self.label)

    def for_use(self, route: str, label: str, key_envs: tuple[str, ...] = ()) -> Endpoint:
        """This endpoint as one use sends to it: ``route`` appended, ``label`` in its errors, and ``key_envs``
        (the use's key variables) read when the endpoint names neither a key nor variables of its own."""
        return replace(self, route=route, label=label, key_envs=self.key_envs or key_envs)

    @property
    def url(self) -> str:
        """The URL requests are POSTed to: ``route`` appended to the base URL's path, before any query
        string (``.../deployments/d?api-version=1`` posts to ``.../deployments/d/chat/completions?api-version=1``)."""
        parts = urlsplit(self.base_url)
        if not self.route or parts.path.endswith(self.route):
            return self.base_url
        return parts._replace(path=parts.path + self.route).geturl()

    @property
    def shown(self) -> str:
        """:attr:`url` as it may be printed, logged or returned (:func:`~chunkwise.security.redact_url`)."""
        return redact_url(self.url)

    @property
    def origin(self) -> str:
        return _origin(self.url)

    def key(self) -> str | None:
        """The API key for the next request (``api_key``, else the first set variable of ``key_envs``)."""
        if self.api_key:
            return self.api_key
        return next((os.environ[e] for e in self.key_envs if os.environ.get(e)), None)


def _number(ep: Endpoint, name: str, value: Any, positive: bool) -> None:
    """Seconds: a number > 0 (``positive``) or >= 0."""
    check(value, Interval(float, 0, None, closed="right" if positive else "both"), name, ep.label)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date; ``None`` if absent
    or unreadable (then the client's own back-off applies)."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:  # an HTTP date is GMT by definition
            import datetime

            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
