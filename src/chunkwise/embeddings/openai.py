"""``openai:MODEL``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, Azure-style
proxies, vLLM, llama.cpp, Ollama's ``/v1``, text-embeddings-inference...), with the standard library only.

Why it is built this way:

- **Batching by count and by tokens**: a request carries at most ``batch_size`` inputs and at most
  ``max_batch_tokens`` tokens (counted with ``cl100k``, OpenAI's tokenizer), the two limits OpenAI enforces.
- **Truncation, not failure**: inputs over ``model_window`` (8191 for OpenAI's models) are cut at a token
  boundary before sending and counted in ``truncated``; empty inputs (rejected by the API) are sent as a
  single space.
- **Retries**: HTTP 408/409/429/5xx, timeouts and connection errors are retried with exponential back-off
  and jitter (honouring ``Retry-After``); after ``max_retries`` the error says what the endpoint answered.
  401/403 fail at once with a message that names the key variable; other 4xx fail at once with the
  server's own message.
- The key comes from an environment variable (``OPENAI_API_KEY`` by default), never from the command line.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..deprecation import warn_renamed
from ..errors import ChunkwiseError, ConfigError
from ..security import redact, warn_plain_http
from ..segmentation.tokenizers import get_tokenizer
from .base import Embedder, check_texts, l2_normalize

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
#: output sizes of OpenAI's own models, so ``dim`` is known before the first request
KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class EndpointError(ChunkwiseError):
    """An embedding endpoint that failed, refused the key, or answered something unusable."""


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    model: the ``model`` field sent to the endpoint.
    base_url: up to and including ``/v1`` (default ``$OPENAI_BASE_URL`` or OpenAI's).
    api_key_env: the environment variable holding the key (optional for local servers).
    dimensions: ask for shortened vectors (text-embedding-3 models).
    batch_size / max_batch_tokens: per-request limits (inputs, cl100k tokens).
    model_window: per-input limit in cl100k tokens; longer inputs are truncated (old name ``max_tokens``,
        deprecated: ``max_tokens`` is the chunk cap only).
    timeout: seconds per request. max_retries, backoff, max_backoff: retry schedule (seconds).
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 dimensions: int | None = None, batch_size: int = 256, max_batch_tokens: int = 250_000,
                 model_window: int = 8191, timeout: float = 60.0, max_retries: int = 5, backoff: float = 1.0,
                 max_backoff: float = 60.0, max_tokens: int | None = None):
        if max_tokens is not None:
            warn_renamed("max_tokens", "model_window", "openai embedder")
            model_window = max_tokens
        if not model or not isinstance(model, str):
            raise ConfigError("openai embedder needs a model name: openai:MODEL")
        for label, value in (("batch_size", batch_size), ("max_batch_tokens", max_batch_tokens),
                             ("model_window", model_window)):
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{label} must be a positive integer, got {value!r}")
        if max_retries < 0 or timeout <= 0 or backoff < 0:
            raise ConfigError("max_retries must be >= 0, timeout > 0 and backoff >= 0")
        base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base URL must start with http:// or https://, got {base_url!r}")
        self.model = model
        self.base_url = base_url
        self.url = base_url if base_url.endswith("/embeddings") else base_url + "/embeddings"
        self.api_key_env = api_key_env
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.model_window = model_window
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.model_id = f"openai:{model}" + (f"/dim={dimensions}" if dimensions else "")
        #: cache namespace: the same model name on two servers may be two different models
        self.cache_key = f"{self.model_id}@{self.url}"
        self.dim = int(dimensions or KNOWN_DIMS.get(model, 0))
        self.truncated = 0
        self.texts_embedded = 0
        self.requests = 0
        self._tokenizer = get_tokenizer("cl100k")

    @property
    def tokenizer(self):
        return self._tokenizer

    # -- preparing inputs ---------------------------------------------------------------------------
    def _prepare(self, texts: list[str]) -> tuple[list[str], list[int]]:
        """Inputs as sent (truncated, empty -> " ") and their token counts."""
        counts = self._tokenizer.count_batch(texts)
        sent = []
        for i, (text, n) in enumerate(zip(texts, counts)):
            if n > self.model_window:
                end = self._tokenizer.offsets(text)[self.model_window - 1][1]
                text, counts[i] = text[:end], self.model_window
                self.truncated += 1
            sent.append(text if text.strip() else " ")
            counts[i] = max(counts[i], 1)
        return sent, counts

    def _batches(self, counts: list[int]):
        """Index ranges that respect both the count and the token limit per request."""
        start, tokens = 0, 0
        for i, n in enumerate(counts):
            if i > start and (i - start >= self.batch_size or tokens + n > self.max_batch_tokens):
                yield start, i
                start, tokens = i, 0
            tokens += n
        if start < len(counts):
            yield start, len(counts)

    # -- HTTP ---------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "chunkwise"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2 ** attempt) * (0.5 + random.random() / 2)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        time.sleep(min(delay, self.max_backoff))

    def _post(self, inputs: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": inputs, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        data = json.dumps(body).encode("utf-8")
        last, retry_after = "", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(attempt - 1, retry_after)
            retry_after = None
            headers = self._headers()
            warn_plain_http(self.url, "Authorization" in headers)
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = response.read()
            except urllib.error.HTTPError as exc:
                detail = redact(_error_detail(exc), os.environ.get(self.api_key_env))
                if exc.code in (401, 403):
                    raise EndpointError(
                        f"authentication failed (HTTP {exc.code}{': ' + detail if detail else ''}); "
                        f"set ${self.api_key_env} to a valid key", source=self.url) from None
                if exc.code not in RETRY_STATUS:
                    hint = " (is the base URL right? it should end in /v1)" if exc.code == 404 else ""
                    raise EndpointError(f"HTTP {exc.code}{': ' + detail if detail else ''}{hint}",
                                        source=self.url) from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                last = f"HTTP {exc.code}{': ' + detail if detail else ''}"
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"cannot reach the endpoint ({reason})"
                continue
            return self._parse(payload, len(inputs))
        raise EndpointError(f"{last}; gave up after {self.max_retries + 1} attempts", source=self.url)

    def _parse(self, payload: bytes, n: int) -> list[list[float]]:
        try:
            doc = json.loads(payload)
            items = sorted(doc["data"], key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in items]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EndpointError("the response is not an OpenAI embeddings response "
                                f"(first bytes: {redact(repr(payload[:120]), os.environ.get(self.api_key_env))})",
                                source=self.url) from None
        if len(vectors) != n or any(not isinstance(v, list) or not v for v in vectors):
            raise EndpointError(f"asked for {n} embeddings, got {len(vectors)}", source=self.url)
        return vectors

    # -- public API ---------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        sent, counts = self._prepare(texts)
        rows: list[np.ndarray] = []
        for a, b in self._batches(counts):
            vectors = np.asarray(self._post(sent[a:b]), dtype=np.float32)
            if vectors.ndim != 2 or (self.dim and vectors.shape[1] != self.dim):
                raise EndpointError(f"expected vectors of {self.dim} dimensions, got shape {vectors.shape}",
                                    source=self.url)
            self.dim = int(vectors.shape[1])
            rows.append(vectors)
        self.texts_embedded += len(texts)
        return l2_normalize(np.concatenate(rows))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's ``error.message`` (OpenAI style) or the start of the body."""
    try:
        raw = exc.read()[:2000]
    except Exception:
        return ""
    try:
        doc = json.loads(raw)
        err = doc.get("error", doc) if isinstance(doc, dict) else doc
        msg = err.get("message") if isinstance(err, dict) else err
        return str(msg)[:300]
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:300]
