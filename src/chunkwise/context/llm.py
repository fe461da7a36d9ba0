"""LLM-written context (Anthropic's "contextual retrieval") from any OpenAI-compatible chat endpoint.

For every chunk an LLM reads the whole document and writes 50–100 tokens that situate the chunk in it
("This section of ACME's Q2 2023 report covers revenue growth..."); that text becomes :attr:`Chunk.context`
and is embedded and BM25-indexed with the chunk. Anthropic measured 35% fewer top-20 retrieval failures
with contextual embeddings, 49% with contextual BM25 as well.

Engineering choices, each for a reason:

- **Shared prompt prefix.** The system message and the document come first and are byte-identical for
  every chunk of a document; the chunk comes last. Servers that cache prompt prefixes (vLLM, SGLang,
  llama.cpp, OpenAI, DeepSeek...) then process the document once, not once per chunk.
- **Concurrency limit** (``concurrency`` threads) so a local server is not flooded.
- **Retries** with exponential back-off (and ``Retry-After`` when given) on 429, 5xx, timeouts and dropped
  connections; other 4xx (bad key, unknown model) are not retried, and after one such answer the rest of
  the document's chunks fail fast instead of repeating a request that cannot succeed.
- **Disk cache** (SQLite, ``llm_context.sqlite3`` beside the embedding cache) keyed by model, document hash,
  chunk id and a hash of the prompt, so re-indexing costs nothing and a changed prompt is not served stale
  answers. Failures are never cached.
- **Failures never stop a run.** A chunk whose request fails keeps its plain text (``context`` stays
  ``None``); the failures are counted (:attr:`LLMContextualizer.failures`) and reported in one
  :class:`ContextWarning` per document.

Only the standard library is used (``urllib``, ``sqlite3``, ``concurrent.futures``).
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
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..document import Chunk, Document, stable_hash
from ..errors import ConfigError
from ..security import redact

#: environment variables read when no argument is given, in order
BASE_URL_ENV = "CHUNKWISE_LLM_BASE_URL"
MODEL_ENV = "CHUNKWISE_LLM_MODEL"
API_KEY_ENVS = ("CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY")
DB_NAME = "llm_context.sqlite3"

SYSTEM_PROMPT = (
    "You write short context for chunks of a document so that a search engine can find them. "
    "Answer with the context only."
)
#: the document part of the prompt: identical for every chunk of a document (the cacheable prefix)
DOCUMENT_TEMPLATE = "<document>\n{document}\n</document>\n"
#: the chunk part, appended after the document (Anthropic's wording)
CHUNK_TEMPLATE = (
    "Here is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\n"
    "Please give a short succinct context (50-100 tokens) to situate this chunk within the overall document "
    "for the purposes of improving search retrieval of the chunk. Answer only with the succinct context and "
    "nothing else."
)

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


class ContextWarning(UserWarning):
    """Some chunks got no LLM context (they keep their plain text); the message says how many and why."""


class _Fatal(Exception):
    """A request that cannot succeed by retrying (401, 403, 404, a malformed answer...)."""


class _EmptyAnswer(Exception):
    """The endpoint answered, with nothing usable (this chunk fails; the others still try)."""


@dataclass
class LLMContextualizer:
    """Writes situating context for chunks with an OpenAI-compatible ``/chat/completions`` endpoint.

    Construct once, call :meth:`contextualize` per document; counters accumulate over calls.

    Parameters
    ----------
    base_url: e.g. ``http://localhost:8000/v1`` (``/chat/completions`` is appended unless already there);
        default ``$CHUNKWISE_LLM_BASE_URL``.
    model: the model name the server expects; default ``$CHUNKWISE_LLM_MODEL``.
    api_key: default ``$CHUNKWISE_LLM_API_KEY``, then ``$OPENAI_API_KEY``; none means no Authorization header
        (local servers).
    concurrency: requests in flight at once. timeout: seconds per request. retries: extra attempts on
        429/5xx/timeouts. backoff: first back-off in seconds (doubles each retry, with jitter, capped at 30 s).
    max_tokens: the answer's token limit. max_document_chars: longer documents are cut to this many
        characters in the prompt (the chunk itself is always sent whole).
    cache: use the disk cache; cache_dir: default the embedding cache directory.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in repr(), logs or tracebacks
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    max_tokens: int = 200
    temperature: float = 0.0
    max_document_chars: int = 100_000
    cache: bool = True
    cache_dir: str | os.PathLike | None = None
    #: chunks that got context from the endpoint / from the cache / got none (over all calls)
    requested: int = field(default=0, init=False)
    cached: int = field(default=0, init=False)
    failures: int = field(default=0, init=False)
    #: HTTP requests sent, retries included
    requests_sent: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url or os.environ.get(BASE_URL_ENV)
        self.model = self.model or os.environ.get(MODEL_ENV)
        if not self.base_url:
            raise ConfigError(f"llm context needs an endpoint: --llm-base-url URL or ${BASE_URL_ENV} "
                              "(any OpenAI-compatible server, e.g. http://localhost:8000/v1)")
        if not re.match(r"^https?://", self.base_url):
            raise ConfigError(f"llm base URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ConfigError(f"llm context needs a model name: --llm-model NAME or ${MODEL_ENV}")
        if self.api_key is None:
            self.api_key = next((os.environ[e] for e in API_KEY_ENVS if os.environ.get(e)), None)
        for name in ("concurrency", "max_tokens", "max_document_chars"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"llm {name} must be an integer >= 1, got {v!r}")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigError(f"llm retries must be an integer >= 0, got {self.retries!r}")
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ConfigError(f"llm timeout must be a positive number of seconds, got {self.timeout!r}")
        url = self.base_url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        from ..security import warn_plain_http

        warn_plain_http(self.url, bool(self.api_key))
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- prompt -------------------------------------------------------------------------------------
    def messages(self, doc: Document, chunk: Chunk) -> list[dict[str, str]]:
        """The chat messages for one chunk: system + (document, then chunk) in one user message, so the
        document part is a byte-identical prefix for every chunk of ``doc``."""
        document = doc.text[: self.max_document_chars]
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": DOCUMENT_TEMPLATE.format(document=document)
             + CHUNK_TEMPLATE.format(chunk=chunk.text)},
        ]

    def prompt_id(self) -> str:
        """Changes whenever anything that shapes the answer changes (part of the cache key)."""
        return stable_hash(SYSTEM_PROMPT, DOCUMENT_TEMPLATE, CHUNK_TEMPLATE, self.max_tokens, self.temperature,
                           self.max_document_chars)

    # -- cache ---------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if not self.cache:
            return None
        if self._db is None:
            path = Path(self._cache_root()) / DB_NAME
            try:
                from ..security import private_dir, private_file

                private_dir(path.parent)
                private_file(path)
                db = sqlite3.connect(str(path), timeout=30)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS context (model TEXT NOT NULL, doc_hash TEXT NOT NULL, "
                    "chunk_id TEXT NOT NULL, prompt TEXT NOT NULL, context TEXT NOT NULL, created INTEGER, "
                    "PRIMARY KEY (model, doc_hash, chunk_id, prompt)) WITHOUT ROWID"
                )
            except (OSError, sqlite3.Error) as exc:
                raise ConfigError(f"cannot open the llm context cache {path}: {exc}") from None
            self._db = db
        return self._db

    def _cache_root(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        try:
            from ..embeddings.cache import default_cache_dir
        except ImportError:  # pragma: no cover - the embeddings package is part of chunkwise
            env = os.environ.get("CHUNKWISE_CACHE_DIR")
            if env:
                return Path(env).expanduser()
            import platformdirs

            return Path(platformdirs.user_cache_dir("chunkwise", appauthor=False))
        return default_cache_dir()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- HTTP ------------------------------------------------------------------------------------------
    def _post(self, payload: dict[str, Any]) -> str:
        """One completion with retries; returns the answer text or raises (``_Fatal`` when hopeless)."""
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last))
            with self._lock:
                self.requests_sent += 1
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    data = json.loads(resp.read().decode("utf-8"))
                return _answer_text(data)
            except urllib.error.HTTPError as exc:
                detail = redact(_error_detail(exc), self.api_key)
                exc.close()
                if exc.code not in _RETRY_STATUS:
                    raise _Fatal(f"HTTP {exc.code} from {self.url}{detail}") from None
                last = exc
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = exc
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
                raise _Fatal(f"malformed answer from {self.url}: {type(exc).__name__}") from None
        raise RuntimeError(_describe(last)) from None

    def _delay(self, attempt: int, last: Exception | None) -> float:
        retry_after = None
        if isinstance(last, urllib.error.HTTPError) and last.headers is not None:
            retry_after = _parse_retry_after(last.headers.get("Retry-After"))
        base = self.backoff * (2 ** (attempt - 1))
        delay = retry_after if retry_after is not None else base * (1 + 0.25 * random.random())
        return min(30.0, max(0.0, delay))

    # -- the work ------------------------------------------------------------------------------------
    def contextualize(self, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        """Set ``context`` on every chunk (from the cache or the endpoint); failures keep ``None``."""
        chunks = list(chunks)
        if not chunks:
            return chunks
        doc_hash = doc.content_hash
        prompt = self.prompt_id()
        db = self._conn()
        todo: list[Chunk] = []
        for c in chunks:
            row = None
            if db is not None:
                row = db.execute("SELECT context FROM context WHERE model=? AND doc_hash=? AND chunk_id=? "
                                 "AND prompt=?", (self.model, doc_hash, c.id, prompt)).fetchone()
            if row is not None:
                c.context = row[0]
                self.cached += 1
            else:
                todo.append(c)
        if not todo:
            return chunks
        state = {"fatal": None}

        def work(c: Chunk) -> str:
            if state["fatal"]:
                raise _Fatal(state["fatal"])
            payload = {"model": self.model, "messages": self.messages(doc, c), "max_tokens": self.max_tokens,
                       "temperature": self.temperature}
            try:
                return self._post(payload)
            except _Fatal as exc:
                state["fatal"] = str(exc)
                raise

        failed: list[str] = []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
            futures = [(c, pool.submit(work, c)) for c in todo]
            for c, fut in futures:
                try:
                    text = fut.result()
                except Exception as exc:  # noqa: BLE001 - every failure is counted and reported, never raised
                    c.context = None
                    failed.append(str(exc))
                    continue
                c.context = text
                self.requested += 1
                if db is not None:
                    db.execute("INSERT OR REPLACE INTO context VALUES (?, ?, ?, ?, ?, ?)",
                               (self.model, doc_hash, c.id, prompt, text, int(time.time())))
        if db is not None:
            db.commit()
        if failed:
            self.failures += len(failed)
            warnings.warn(
                f"{doc.source}: llm context failed for {len(failed)} of {len(chunks)} chunks "
                f"({failed[-1]}); those chunks keep their plain text", ContextWarning, stacklevel=3)
        return chunks


def _answer_text(data: Any) -> str:
    """The assistant's text from a chat-completions answer, without reasoning blocks; empty is an error."""
    content = data["choices"][0]["message"]["content"]
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise TypeError("message content is not text")
    text = " ".join(_THINK.sub("", content).split())
    if not text:
        raise _EmptyAnswer("the endpoint returned an empty answer")
    return text


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
