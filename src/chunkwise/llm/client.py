"""One client for OpenAI-compatible ``/chat/completions`` endpoints, shared by contextual text and answers.

Contextual retrieval (:mod:`chunkwise.context.llm`), ``chunkwise ask`` and ``chunkwise summarize`` all talk
to a chat model through :class:`ChatClient`, so retries, caching, error handling and the care taken with
the API key exist once:

- **Retries** with exponential back-off (and ``Retry-After`` when given) on 429, 5xx, timeouts and dropped
  connections; other 4xx (bad key, unknown model) raise :class:`FatalLLMError` at once.
- **Streaming** (``stream=True``, server-sent events): retried only until the first token arrives; a stream
  that breaks after that raises, since repeating it would print the answer twice.
- **Disk cache** (SQLite in the embedding cache directory) keyed by a hash of the model and the whole
  request, so a repeated question or an unchanged chunk costs nothing. Failures are never cached.
- **The API key** (``$CHUNKWISE_LLM_API_KEY``, then ``$OPENAI_API_KEY``) is sent only in the
  ``Authorization`` header: it is not in ``repr``, and any error text that echoes it is redacted.

Only the standard library is used (``urllib``, ``sqlite3``).
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import re
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from ..document import stable_hash
from ..errors import ChunkwiseError, ConfigError

#: environment variables read when no argument is given
BASE_URL_ENV = "CHUNKWISE_LLM_BASE_URL"
MODEL_ENV = "CHUNKWISE_LLM_MODEL"
API_KEY_ENVS = ("CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY")
#: the default cache file (one table, any number of uses)
DEFAULT_CACHE_NAME = "llm_cache.sqlite3"

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


class LLMError(ChunkwiseError):
    """A request that failed after its retries (unreachable, timed out, 5xx...); the message names the URL."""


class FatalLLMError(LLMError):
    """A request that cannot succeed by retrying (401, 403, 404, a malformed answer...)."""


class EmptyAnswerError(LLMError):
    """The endpoint answered, with nothing usable."""


@dataclass
class ChatClient:
    """Sends chat completions to an OpenAI-compatible endpoint, with retries, streaming and a disk cache.

    Parameters
    ----------
    base_url: e.g. ``http://localhost:8000/v1`` (``/chat/completions`` is appended unless already there);
        default ``$CHUNKWISE_LLM_BASE_URL``.
    model: the model name the server expects; default ``$CHUNKWISE_LLM_MODEL``.
    api_key: default ``$CHUNKWISE_LLM_API_KEY``, then ``$OPENAI_API_KEY``; none means no Authorization header.
    timeout: seconds per request (for a stream: between two reads). retries: extra attempts on
        429/5xx/timeouts. backoff: first back-off in seconds (doubles each retry, with jitter, capped at 30 s).
    cache: use the disk cache; cache_dir: default the embedding cache directory; cache_name: its file name.
    purpose: what the client is for, in configuration error messages (``"llm context"``, ``"ask"``...).
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    cache: bool = True
    cache_dir: str | os.PathLike | None = None
    cache_name: str = DEFAULT_CACHE_NAME
    purpose: str = "llm"
    #: HTTP requests sent (retries included) / answers served from the cache
    requests_sent: int = field(default=0, init=False)
    cache_hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url or os.environ.get(BASE_URL_ENV)
        self.model = self.model or os.environ.get(MODEL_ENV)
        if not self.base_url:
            raise ConfigError(f"{self.purpose} needs an endpoint: --llm-base-url URL or ${BASE_URL_ENV} "
                              "(any OpenAI-compatible server, e.g. http://localhost:8000/v1)")
        if not re.match(r"^https?://", self.base_url):
            raise ConfigError(f"llm base URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"{self.purpose} needs a model name: --llm-model NAME or ${MODEL_ENV}")
        if self.api_key is None:
            self.api_key = next((os.environ[e] for e in API_KEY_ENVS if os.environ.get(e)), None)
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ConfigError(f"llm retries must be an integer >= 0, got {self.retries!r}")
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ConfigError(f"llm timeout must be a positive number of seconds, got {self.timeout!r}")
        url = self.base_url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        from ..security import warn_plain_http

        warn_plain_http(self.url, bool(self.api_key))
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- cache ---------------------------------------------------------------------------------------
    def cache_key(self, payload: dict[str, Any]) -> str:
        """A hash of everything that shapes the answer (the model and the whole request but ``stream``)."""
        body = {k: v for k, v in payload.items() if k not in ("stream", "stream_options")}
        return stable_hash(self.model, json.dumps(body, sort_keys=True, ensure_ascii=False), length=32)

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
                    db.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                               "answer TEXT NOT NULL, created INTEGER) WITHOUT ROWID")
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
            db.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)",
                       (self.cache_key(payload), self.model, answer, int(time.time())))
            db.commit()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- requests --------------------------------------------------------------------------------------
    def payload(self, messages: list[dict[str, str]], answer_tokens: int, temperature: float = 0.0,
                **extra: Any) -> dict[str, Any]:
        """The request body. ``answer_tokens`` goes out as ``max_tokens``, the API's name for it."""
        return {"model": self.model, "messages": messages, "max_tokens": int(answer_tokens),
                "temperature": temperature, **extra}

    def complete(self, messages: list[dict[str, str]], answer_tokens: int = 512, temperature: float = 0.0,
                 use_cache: bool = True, normalize: bool = False) -> str:
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

    def stream(self, messages: list[dict[str, str]], answer_tokens: int = 512, temperature: float = 0.0,
               on_token: Callable[[str], None] | None = None, use_cache: bool = True) -> str:
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

    def _request(self, payload: dict[str, Any]) -> urllib.request.Request:
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json",
                   "Accept": "text/event-stream" if payload.get("stream") else "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _open(self, payload: dict[str, Any]):
        """An open HTTP response, after retries; raises :class:`LLMError` / :class:`FatalLLMError`."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last))
            with self._lock:
                self.requests_sent += 1
            try:
                return urllib.request.urlopen(self._request(payload), timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                exc.close()
                if exc.code not in _RETRY_STATUS:
                    raise FatalLLMError(self.redact(f"HTTP {exc.code}{detail}"), source=self.url) from None
                last = exc
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = exc
        raise LLMError(self.redact(_describe(last)), source=self.url) from None

    def _post(self, payload: dict[str, Any], normalize: bool = False) -> str:
        """One completion with retries; returns the answer text or raises."""
        resp = self._open(payload)
        try:
            with resp:
                raw = resp.read()
        except (TimeoutError, ConnectionError, OSError) as exc:  # a body that never finished
            raise LLMError(f"the answer broke off ({exc.__class__.__name__})", source=self.url) from None
        try:
            return _answer_text(json.loads(raw.decode("utf-8")), normalize)
        except EmptyAnswerError as exc:
            raise EmptyAnswerError(exc.problem, source=self.url) from None
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
            raise FatalLLMError(f"malformed answer: {exc!r}"[:300], source=self.url) from None

    def _stream(self, payload: dict[str, Any]) -> Iterator[str]:
        """Text pieces of a streamed answer. Retries happen only before the first piece."""
        resp = self._open(payload)
        with resp:
            ctype = resp.headers.get("Content-Type", "") if resp.headers else ""
            if "event-stream" not in ctype:  # a server that does not stream: one JSON answer
                try:
                    yield _answer_text(json.loads(resp.read().decode("utf-8")))
                except EmptyAnswerError as exc:
                    raise EmptyAnswerError(exc.problem, source=self.url) from None
                except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
                    raise FatalLLMError(f"malformed answer: {exc!r}"[:300], source=self.url) from None
                return
            finished = False  # [DONE] or a finish_reason: a stream that just stops broke off
            try:
                for raw in resp:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        event = json.loads(data)
                    except json.JSONDecodeError:
                        raise FatalLLMError(f"malformed stream event: {data[:80]!r}", source=self.url) from None
                    if isinstance(event, dict) and event.get("error"):
                        raise FatalLLMError(self.redact(f"error in stream: {str(event['error'])[:200]}"),
                                            source=self.url)
                    piece = _delta_text(event)
                    if piece is None:
                        raise FatalLLMError(f"malformed stream event: {data[:80]!r}", source=self.url)
                    if piece:
                        yield piece
                    finished = finished or _finished(event)
            except (TimeoutError, ConnectionError, OSError) as exc:
                raise LLMError(f"the stream broke off ({exc.__class__.__name__})", source=self.url) from None
            if not finished:
                raise LLMError("the stream broke off before the answer was finished", source=self.url)

    def _delay(self, attempt: int, last: Exception | None) -> float:
        retry_after = None
        if isinstance(last, urllib.error.HTTPError) and last.headers is not None:
            retry_after = _parse_retry_after(last.headers.get("Retry-After"))
        base = self.backoff * (2 ** (attempt - 1))
        delay = retry_after if retry_after is not None else base * (1 + 0.25 * random.random())
        return min(30.0, max(0.0, delay))

    def redact(self, text: str) -> str:
        """``text`` with the API key, header values and bearer tokens redacted (servers sometimes echo the
        request headers in their error bodies); see :func:`chunkwise.security.redact`."""
        from ..security import redact

        return redact(text, self.api_key)


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
    return bool(choices) and isinstance(choices[0], dict) and bool(choices[0].get("finish_reason"))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(300).decode("utf-8", "replace").strip()
    except Exception:  # noqa: BLE001
        return ""
    return f": {' '.join(body.split())[:200]}" if body else ""


def _describe(exc: Exception | None) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} after retries"
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return "timed out after retries"
        return f"endpoint unreachable after retries ({reason})"
    if isinstance(exc, TimeoutError):
        return "timed out after retries"
    return f"request failed after retries ({exc!r})"


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


__all__ = ["ChatClient", "LLMError", "FatalLLMError", "EmptyAnswerError", "BASE_URL_ENV", "MODEL_ENV",
           "API_KEY_ENVS"]
