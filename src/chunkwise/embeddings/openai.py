"""``openai:MODEL``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, Azure-style
proxies, vLLM, llama.cpp, Ollama's ``/v1``, text-embeddings-inference...), through :mod:`chunkwise.http`.

Why it is built this way:

- **Batching by count and by tokens**: a request carries at most ``batch_size`` inputs and at most
  ``max_batch_tokens`` tokens (counted with ``cl100k``, OpenAI's tokenizer), the two limits OpenAI enforces.
- **Truncation, not failure**: inputs over ``model_window`` (8191 for OpenAI's models) are cut at a token
  boundary before sending and counted in ``truncated``; empty inputs (rejected by the API) are sent as a
  single space.
- **The HTTP policy is the chat client's** (:mod:`chunkwise.http`): no redirects, a whole-request deadline,
  a response size cap, the same retried statuses (408/409/429/5xx, timeouts, dropped connections) with
  back-off and ``Retry-After`` (seconds or an HTTP date); after ``retries`` the error says what the
  endpoint answered. 401/403 fail at once with a message that names the key variable; other 4xx fail at
  once with the server's own message.
- The key comes from an environment variable (``OPENAI_API_KEY`` by default), read at each request, never
  from the command line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..deprecation import renamed, renamed_attribute, warn_renamed
from ..errors import ConfigError
from ..http import Endpoint, FatalEndpointError, JSONClient
from ..http import EndpointError as _HTTPEndpointError
from ..security import redact_url
from ..segmentation.tokenizers import get_tokenizer
from ..validation import InstanceOf, Interval, check
from .base import Embedder, check_texts, l2_normalize

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
#: the variable the key is read from unless told otherwise
KEY_ENV = "OPENAI_API_KEY"
#: extra attempts (a batch of embeddings is worth more patience than a chat turn)
DEFAULT_RETRIES = 5
#: old keyword names, still taken (with a deprecation warning)
OLD_NAMES = {"max_tokens": "model_window", "max_retries": "retries", "api_key_env": "key_envs"}
#: the largest response read by default: 256 vectors of 3072 floats as JSON text is about 16 MB
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20
#: output sizes of OpenAI's own models, so ``dim`` is known before the first request
KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class EndpointError(_HTTPEndpointError):
    """An embedding endpoint that failed, refused the key, or answered something unusable."""


class FatalEmbeddingError(EndpointError, FatalEndpointError):
    """An embedding request that cannot succeed by retrying (a redirect, 401, 404, an oversized answer...)."""


def _check_settings(model: str, batch_size: int, max_batch_tokens: int, model_window: int) -> None:
    """The embedder's settings checked before any client is made: one ConfigError naming the bad one."""
    if not model or not isinstance(model, str):
        raise ConfigError("openai embedder needs a model name: openai:MODEL")
    for name, value in (("batch_size", batch_size), ("max_batch_tokens", max_batch_tokens)):
        check(value, Interval(int, 1, None), name, "openai embedder")
    check(model_window, Interval(int, 1, None), "model_window", "openai embedder")


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    model: the ``model`` field sent to the endpoint.
    endpoint: the connection as one :class:`~chunkwise.http.Endpoint` (the type chat, contextual text and
        ``rerank=llm`` take too); its model is ``model`` when given. Without it, the keywords below build one:
    base_url: up to and including ``/v1`` (default ``$OPENAI_BASE_URL`` or OpenAI's).
    api_key: the key; else key_envs: the environment variables holding it, first set wins (read at each
        request; optional for local servers). Old name ``api_key_env`` (one variable), deprecated.
    dimensions: ask for shortened vectors (text-embedding-3 models).
    batch_size / max_batch_tokens: per-request limits (inputs, cl100k tokens).
    model_window: per-input limit in cl100k tokens; longer inputs are truncated (old name ``max_tokens``,
        deprecated: ``max_tokens`` is the chunk cap only).
    timeout: seconds to connect and the longest silence between two reads; deadline: seconds for a whole
        request, retries included (default 300, or ``timeout`` if longer). retries, backoff, max_backoff:
        retry schedule (seconds; old name of ``retries``: ``max_retries``, deprecated). max_response_bytes:
        the largest response read (default 64 MiB).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        endpoint: Endpoint | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        key_envs: tuple[str, ...] | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        max_batch_tokens: int = 250_000,
        model_window: int = 8191,
        timeout: float = 60.0,
        retries: int | None = None,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        deadline: float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_tokens: int | None = None,
        max_retries: int | None = None,
        api_key_env: str | None = None,
    ):
        given: dict[str, Any] = {"max_tokens": max_tokens, "max_retries": max_retries, "api_key_env": api_key_env}
        given |= {"model_window": model_window, "retries": retries, "key_envs": key_envs}
        if model_window == 8191:
            del given["model_window"]  # (the default: an old max_tokens may stand in for it)
        kw = renamed({k: v for k, v in given.items() if v is not None}, OLD_NAMES, "openai embedder")
        model_window = kw.get("model_window", 8191)
        retries = kw.get("retries", DEFAULT_RETRIES)
        key_envs = kw.get("key_envs", (KEY_ENV,))
        key_envs = (key_envs,) if isinstance(key_envs, str) else key_envs
        if endpoint is None:
            base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
            _check_settings(model or "", batch_size, max_batch_tokens, model_window)
            limits: dict[str, Any] = {"timeout": timeout, "deadline": deadline, "retries": retries, "backoff": backoff}
            limits |= {"max_backoff": max_backoff, "max_response_bytes": max_response_bytes}
            key: dict[str, Any] = {"api_key": api_key, "key_envs": tuple(key_envs)}
            endpoint = Endpoint(base_url, model or "", label="openai embedder", **key, **limits)
        else:
            check(endpoint, InstanceOf(Endpoint, "a chunkwise.http.Endpoint"), "endpoint", "openai embedder")
            endpoint = replace(endpoint, model=model or endpoint.model)
            _check_settings(endpoint.model, batch_size, max_batch_tokens, model_window)
        self.endpoint = endpoint.for_use("/embeddings", "openai embedder", (KEY_ENV,))
        key_hint = f"set ${' or $'.join(self.endpoint.key_envs)} to a valid key" if self.endpoint.key_envs else ""
        self.http = JSONClient(self.endpoint, error=EndpointError, fatal=FatalEmbeddingError, key_hint=key_hint)
        ep = self.endpoint
        self.model, self.base_url, self.url = ep.model, ep.base_url, ep.url
        self.key_envs = ep.key_envs
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.model_window = model_window
        self.timeout, self.deadline, self.max_response_bytes = ep.timeout, ep.deadline, ep.max_response_bytes
        self.retries, self.backoff, self.max_backoff = ep.retries, ep.backoff, ep.max_backoff
        self.model_id = f"openai:{self.model}" + (f"/dim={dimensions}" if dimensions else "")
        #: cache namespace: the same model name on two servers may be two different models
        self.cache_key = f"{self.model_id}@{redact_url(self.url)}"  # shown by `cache stats`: no key in it
        self.dim = int(dimensions or KNOWN_DIMS.get(self.model, 0))
        self.truncated = 0
        self.texts_embedded = 0
        self._tokenizer = get_tokenizer("cl100k")

    #: old attribute names
    max_retries = renamed_attribute("max_retries", "retries", "openai embedder")

    @property
    def api_key_env(self) -> str:
        """Deprecated: the first of :attr:`key_envs`."""
        warn_renamed("api_key_env", "key_envs", "openai embedder")
        return self.key_envs[0] if self.key_envs else ""

    @property
    def requests(self) -> int:
        """HTTP requests sent, retries included."""
        return self.http.requests_sent

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
    def _post(self, inputs: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": inputs, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return self._parse(self.http.post(body), len(inputs))

    def _parse(self, doc: Any, n: int) -> list[list[float]]:
        try:
            items = sorted(doc["data"], key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in items]
        except (ValueError, KeyError, TypeError, AttributeError):
            start = self.http.redact(repr(doc)[:120])
            raise FatalEmbeddingError(
                f"malformed answer: not an OpenAI embeddings response ({start})", source=self.url
            ) from None
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
                raise EndpointError(
                    f"expected vectors of {self.dim} dimensions, got shape {vectors.shape}", source=self.url
                )
            self.dim = int(vectors.shape[1])
            rows.append(vectors)
        self.texts_embedded += len(texts)
        return l2_normalize(np.concatenate(rows))


__all__ = ["OpenAIEmbedder", "EndpointError", "FatalEmbeddingError", "KNOWN_DIMS", "DEFAULT_BASE_URL"]
