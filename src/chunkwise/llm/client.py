"""One client for OpenAI-compatible ``/chat/completions`` endpoints, shared by contextual text and answers.

Contextual retrieval (:mod:`chunkwise.context.llm`), ``chunkwise ask`` and ``chunkwise summarize`` all talk
to a chat model through :class:`ChatClient`; the HTTP side (no redirects, the deadline, the size cap,
retries, the care taken with the API key) is :mod:`chunkwise.http`, the same client the ``openai:``
embedder uses. What is chat-specific lives here:

- **Streaming** (``stream=True``, server-sent events): retried only until the response starts; a stream
  that breaks after that raises, since repeating it would print the answer twice.
- **Disk cache** (SQLite in the embedding cache directory) keyed by a hash of the endpoint URL, the model and
  the whole request, so a repeated question or an unchanged chunk costs nothing, and another endpoint
  serving the same model name is never answered from this one's answers. Only answers of requests that
  succeeded are stored.
- **The API key** (``$CHUNKWISE_LLM_API_KEY``, then ``$OPENAI_API_KEY``) is resolved once, at construction.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..document import stable_hash
from ..errors import ConfigError
from ..http import DEFAULT_MAX_RESPONSE_BYTES, Endpoint, EndpointError, FatalEndpointError, JSONClient
from ..validation import InstanceOf, check

#: environment variables read when no argument is given
BASE_URL_ENV = "CHUNKWISE_LLM_BASE_URL"
MODEL_ENV = "CHUNKWISE_LLM_MODEL"
API_KEY_ENVS = ("CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY")
#: the default cache file (one table, any number of uses)
DEFAULT_CACHE_NAME = "llm_cache.sqlite3"
#: the route appended to the base URL
ROUTE = "/chat/completions"

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


class LLMError(EndpointError):
    """A request that failed after its retries (unreachable, timed out, 5xx...); the message names the URL."""


class FatalLLMError(LLMError, FatalEndpointError):
    """A request that cannot succeed by retrying (a redirect, 401, 403, 404, a malformed answer...)."""


class EmptyAnswerError(LLMError):
    """The endpoint answered, with nothing usable."""


@dataclass
class ChatSettings:
    """The connection settings of a chat endpoint, declared once: :class:`ChatClient`,
    :class:`~chunkwise.context.llm.LLMContextualizer` and :class:`~chunkwise.llm.openai.OpenAILLM` take them.

    Parameters
    ----------
    base_url: e.g. ``http://localhost:8000/v1`` (``/chat/completions`` is appended unless already there);
        default ``$CHUNKWISE_LLM_BASE_URL``.
    model: the model name the server expects; default ``$CHUNKWISE_LLM_MODEL``.
    api_key: default ``$CHUNKWISE_LLM_API_KEY``, then ``$OPENAI_API_KEY``; none means no Authorization header.
    timeout: seconds to connect, and the longest silence between two reads (for a stream: between pieces).
    deadline: seconds for a whole request, retries and streaming included (default 300, or ``timeout`` if
        longer). retries: extra attempts on 408/409/429/5xx/timeouts. backoff: first back-off in seconds
        (doubles each retry, with jitter, capped at 30 s; ``Retry-After`` honoured).
    max_response_bytes: the largest answer read (a stream's bytes all together); larger ones are refused.
    cache: use the disk cache; cache_dir: default the embedding cache directory.
    endpoint: all of the connection settings above as one :class:`~chunkwise.http.Endpoint` (the type the
        embeddings, contextual text and ``rerank=llm`` take too); then ``base_url`` and ``model`` are not
        given separately.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    _: KW_ONLY
    timeout: float = 60.0
    deadline: float | None = None
    retries: int = 3
    backoff: float = 0.5
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    cache: bool = True
    cache_dir: str | os.PathLike | None = None
    endpoint: Endpoint | None = None


#: the ``--llm-*`` flags of the running command (:func:`command_endpoint`): a chat client built deep
#: inside a command (``search --rerank llm``, ``serve``'s ``/ask``) with no value of its own takes them
#: (before the environment), so every command that calls an endpoint honours the same flags
_command: dict[str, Any] = {}
_DEFAULTS = {"timeout": 60.0, "deadline": None, "retries": 3}


#: the fields of an :class:`Endpoint` a command's flags set, and that :class:`ChatSettings` spells the same
ENDPOINT_FIELDS = ("base_url", "model", "api_key", "timeout", "deadline", "retries", "backoff", "max_response_bytes")


@contextlib.contextmanager
def command_endpoint(endpoint: Endpoint | None = None, **settings: Any) -> Iterator[None]:
    """Within the block, chat clients without their own ``base_url``, ``model``, ``timeout``, ``deadline``
    or ``retries`` use these: ``endpoint``'s, or the loose ``settings`` of a command whose flags name no
    complete endpoint yet (``None`` values are ignored)."""
    if endpoint is not None:
        settings = {"base_url": endpoint.base_url, "model": endpoint.model, "timeout": endpoint.timeout}
        settings |= {"deadline": endpoint.deadline, "retries": endpoint.retries}
    old = dict(_command)
    _command.clear()
    _command.update({k: v for k, v in settings.items() if v is not None})
    try:
        yield
    finally:
        _command.clear()
        _command.update(old)


def command_base_url() -> str | None:
    """The endpoint a chat client would use: the running command's ``--llm-base-url``, else the environment's."""
    return _command.get("base_url") or os.environ.get(BASE_URL_ENV)


#: the names of the connection settings (for option checks and for handing them on)
SETTINGS = tuple(f.name for f in fields(ChatSettings))


def settings_of(obj: Any) -> dict[str, Any]:
    """The connection settings of ``obj`` (anything with those attributes), as keywords."""
    return {name: getattr(obj, name) for name in SETTINGS}


@dataclass
class ChatClient(ChatSettings):
    """Sends chat completions to an OpenAI-compatible endpoint, with retries, streaming and a disk cache.

    Takes the :class:`ChatSettings`, and: cache_name: the cache's file name; purpose: what the client is
    for, in configuration error messages (``"llm context"``, ``"ask"``...).
    """

    cache_name: str = field(default=DEFAULT_CACHE_NAME, kw_only=True)
    purpose: str = field(default="llm", kw_only=True)
    #: answers served from the cache
    cache_hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        given = self.endpoint
        if given is not None:  # one object says it all: neither the command's flags nor the environment apply
            self._take(given)
        self.base_url = self.base_url or command_base_url()
        self.model = self.model or _command.get("model") or os.environ.get(MODEL_ENV)
        for name, default in _DEFAULTS.items():
            if given is None and name in _command and getattr(self, name) == default:
                setattr(self, name, _command[name])
        if not self.base_url:
            raise ConfigError(
                f"{self.purpose} needs an endpoint: --llm-base-url URL or ${BASE_URL_ENV} "
                "(any OpenAI-compatible server, e.g. http://localhost:8000/v1)"
            )
        if not re.match(r"^https?://", self.base_url):
            raise ConfigError(f"llm base URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"{self.purpose} needs a model name: --llm-model NAME or ${MODEL_ENV}")
        if self.api_key is None:
            envs = (given.key_envs if given is not None else ()) or API_KEY_ENVS
            self.api_key = next((os.environ[e] for e in envs if os.environ.get(e)), None)
        settings = {n: getattr(self, n) for n in ENDPOINT_FIELDS}
        settings["api_key"] = self.api_key or None
        if given is not None:
            settings |= {"key_envs": given.key_envs, "max_backoff": given.max_backoff}
        self.endpoint = Endpoint(**settings, route=ROUTE, label="llm")
        self.deadline = self.endpoint.deadline
        self.url = self.endpoint.url
        self.http = JSONClient(
            self.endpoint,
            error=LLMError,
            fatal=FatalLLMError,
            deadline_hint="--llm-deadline SECONDS, or deadline= in Python",
            key_hint=f"set ${API_KEY_ENVS[0]} (or ${API_KEY_ENVS[1]}) to a valid key",
        )
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _take(self, endpoint: Endpoint) -> None:
        """The connection settings from ``endpoint`` (given as ``endpoint=``)."""
        check(endpoint, InstanceOf(Endpoint, "a chunkwise.http.Endpoint"), "endpoint", self.purpose)
        if self.base_url or self.model:
            raise ConfigError(f"{self.purpose}: give the endpoint as endpoint= or as base_url/model, not both")
        for name in ENDPOINT_FIELDS:
            setattr(self, name, getattr(endpoint, name))

    @property
    def requests_sent(self) -> int:
        """HTTP requests sent, retries included."""
        return self.http.requests_sent

    # -- cache ---------------------------------------------------------------------------------------
    def cache_key(self, payload: dict[str, Any]) -> str:
        """A hash of everything that shapes the answer: the endpoint's URL, the model and the whole request
        but ``stream`` (the same model name on another server may be another model, or a broken one)."""
        body = {k: v for k, v in payload.items() if k not in ("stream", "stream_options")}
        return stable_hash(self.url, self.model, json.dumps(body, sort_keys=True, ensure_ascii=False), length=32)

    def _conn(self) -> sqlite3.Connection | None:
        if not self.cache:
            return None
        with self._lock:
            if self._db is None:
                path = Path(self._cache_root()) / self.cache_name
                try:
                    from ..security import private_dir, private_file

                    private_dir(path.parent)  # cached answers are copies of the user's documents: 0700/0600
                    private_file(path)
                    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
                    db.execute("PRAGMA journal_mode=WAL")
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                        "answer TEXT NOT NULL, created INTEGER) WITHOUT ROWID"
                    )
                except (OSError, sqlite3.Error) as exc:
                    raise ConfigError(f"cannot open the llm cache {path}: {exc}") from None
                self._db = db
            return self._db

    def _cache_root(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        from ..embeddings.cache import default_cache_dir

        return default_cache_dir()

    def cached(self, payload: dict[str, Any]) -> str | None:
        """The cached answer to ``payload``, or ``None``."""
        db = self._conn()
        if db is None:
            return None
        with self._lock:
            row = db.execute("SELECT answer FROM completions WHERE key=?", (self.cache_key(payload),)).fetchone()
        if row is not None:
            with self._lock:
                self.cache_hits += 1
        return row[0] if row else None

    def store(self, payload: dict[str, Any], answer: str) -> None:
        db = self._conn()
        if db is None:
            return
        with self._lock:
            db.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)",
                (self.cache_key(payload), self.model, answer, int(time.time())),
            )
            db.commit()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- requests --------------------------------------------------------------------------------------
    def payload(
        self, messages: list[dict[str, str]], answer_tokens: int, temperature: float = 0.0, **extra: Any
    ) -> dict[str, Any]:
        """The request body. ``answer_tokens`` goes out as ``max_tokens``, the API's name for it."""
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": int(answer_tokens),
            "temperature": temperature,
            **extra,
        }

    def complete(
        self,
        messages: list[dict[str, str]],
        answer_tokens: int = 512,
        temperature: float = 0.0,
        use_cache: bool = True,
        normalize: bool = False,
    ) -> str:
        """One answer (reasoning blocks removed; ``normalize``: all whitespace runs made one space), from the
        cache or the endpoint."""
        payload = self.payload(messages, answer_tokens, temperature)
        if use_cache:
            hit = self.cached(payload)
            if hit is not None:
                return hit
        text = self._post(payload, normalize)
        if use_cache:
            self.store(payload, text)
        return text

    def stream(
        self,
        messages: list[dict[str, str]],
        answer_tokens: int = 512,
        temperature: float = 0.0,
        on_token: Callable[[str], None] | None = None,
        use_cache: bool = True,
    ) -> str:
        """The answer, streamed: ``on_token(piece)`` is called as pieces arrive; returns the whole text.

        A cached answer is passed to ``on_token`` in one piece. Servers that ignore ``stream`` and send
        one JSON answer are understood too."""
        payload = self.payload(messages, answer_tokens, temperature, stream=True)
        if use_cache:
            hit = self.cached(payload)
            if hit is not None:
                if on_token:
                    on_token(hit)
                return hit
        pieces: list[str] = []
        for piece in self._stream(payload):
            pieces.append(piece)
            if on_token:
                on_token(piece)
        text = _THINK.sub("", "".join(pieces)).strip()
        if not text:
            raise EmptyAnswerError("the endpoint returned an empty answer", source=self.url)
        if use_cache:
            self.store(payload, text)
        return text

    def _post(self, payload: dict[str, Any], normalize: bool = False) -> str:
        """One completion with retries; returns the answer text or raises."""
        data = self.http.post(payload)
        try:
            return _answer_text(data, normalize)
        except EmptyAnswerError as exc:
            raise EmptyAnswerError(exc.problem, source=self.url) from None
        except (KeyError, IndexError, TypeError) as exc:
            raise FatalLLMError(self.redact(f"malformed answer: {exc!r}"[:300]), source=self.url) from None

    def _stream(self, payload: dict[str, Any]) -> Iterator[str]:
        """Text pieces of a streamed answer. Retries happen only before the response starts."""
        with self.http.open(payload, accept="text/event-stream") as resp:
            if "event-stream" not in resp.content_type:  # a server that does not stream: one JSON answer
                data = self.http.decode(resp.read())
                try:
                    yield _answer_text(data)
                except EmptyAnswerError as exc:
                    raise EmptyAnswerError(exc.problem, source=self.url) from None
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise FatalLLMError(self.redact(f"malformed answer: {exc!r}"[:300]), source=self.url) from None
                return
            finished = False  # [DONE] or a finish_reason: a stream that just stops broke off
            for raw in resp.lines():
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except json.JSONDecodeError:
                    raise FatalLLMError(
                        self.redact(f"malformed stream event: {data[:80]!r}"), source=self.url
                    ) from None
                if isinstance(event, dict) and event.get("error"):
                    raise FatalLLMError(self.redact(f"error in stream: {str(event['error'])[:200]}"), source=self.url)
                piece = _delta_text(event)
                if piece is None:
                    raise FatalLLMError(self.redact(f"malformed stream event: {data[:80]!r}"), source=self.url)
                if piece:
                    yield piece
                finished = finished or _finished(event)
            if not finished:
                raise LLMError("the stream broke off before the answer was finished", source=self.url)

    def redact(self, text: str) -> str:
        """``text`` with the API key, header values and bearer tokens redacted (servers sometimes echo the
        request headers in their error bodies); see :func:`chunkwise.security.redact`."""
        return self.http.redact(text)


def _answer_text(data: Any, normalize: bool = False) -> str:
    """The assistant's text from a chat-completions answer, without reasoning blocks; empty is an error."""
    content = data["choices"][0]["message"]["content"]
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise TypeError("message content is not text")
    text = _THINK.sub("", content)
    text = " ".join(text.split()) if normalize else text.strip()
    if not text:
        raise EmptyAnswerError("the endpoint returned an empty answer")
    return text


def _delta_text(event: Any) -> str | None:
    """The text of one streamed chunk (``""`` for role-only or final chunks), ``None`` when malformed."""
    if not isinstance(event, dict) or not isinstance(event.get("choices"), list):
        return None
    if not event["choices"]:
        return ""  # usage-only chunk
    choice = event["choices"][0]
    if not isinstance(choice, dict):
        return None
    delta = choice.get("delta") or choice.get("message") or {}
    if not isinstance(delta, dict):
        return None
    content = delta.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else None


def _finished(event: dict) -> bool:
    """Whether a streamed chunk ends the answer (``finish_reason`` set)."""
    choices = event.get("choices") or []
    return bool(choices and isinstance(choices[0], dict) and choices[0].get("finish_reason"))


__all__ = [
    "command_endpoint",
    "command_base_url",
    "ChatClient",
    "ChatSettings",
    "SETTINGS",
    "settings_of",
    "LLMError",
    "FatalLLMError",
    "EmptyAnswerError",
    "BASE_URL_ENV",
    "MODEL_ENV",
    "API_KEY_ENVS",
]
