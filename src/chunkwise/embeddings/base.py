"""The one narrow interface every embedding back-end implements (as sentence-transformers does for models).

Strategies, the index, evaluation and late chunking only ever see an :class:`Embedder`:

- ``embed(texts) -> float32 array (n, dim)``, rows L2-normalised (so a dot product is a cosine);
- ``dim``, ``model_id`` (recorded in indexes and cache keys);
- ``model_window``: how many content tokens (special tokens excluded) of ``tokenizer`` the model reads
  (``0``: no limit); longer texts are truncated by the back-end and counted in ``truncated``. Its old
  name ``max_tokens`` still works with a deprecation warning: ``max_tokens`` is the chunk cap only;
- ``tokenizer``: the :class:`~chunkwise.segmentation.tokenizers.Tokenizer` whose counts match the model;
- ``embed_tokens(text) -> (token vectors (t, dim), [(start, end)] character offsets)`` for late chunking.

Helpers shared by the back-ends live here too: :func:`check_texts` (one place that rejects non-text input)
and :meth:`Embedder.embed_stream` (bounded-memory embedding of an iterable of any length).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..deprecation import renamed_attribute
from ..errors import InputError
from ..segmentation.tokenizers import Tokenizer


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def check_texts(texts: Any) -> list[str]:
    """``texts`` as a list of ``str``, or an :class:`InputError` that says what was wrong.

    A bare string is rejected rather than embedded character by character (it is a ``Sequence[str]`` too,
    and silently returning one vector per character is the classic bug); ``None``, bytes and numbers are
    rejected with their position, so a caller with a million texts learns *which* one is bad.
    """
    if isinstance(texts, (str, bytes)):
        raise InputError(f"embed() expects a list of strings, got a single {type(texts).__name__} (wrap it in a list)")
    try:
        items = list(texts)
    except TypeError:
        raise InputError(f"embed() expects a list of strings, got {type(texts).__name__}") from None
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise InputError(f"embed() expects strings; item {i} is {type(t).__name__}")
    return items


class Embedder(ABC):
    model_id: str = ""
    dim: int = 0
    #: content tokens the model reads per text (0: no limit)
    model_window: int = 0
    #: texts truncated to ``model_window`` so far (a warning count, never an error)
    truncated: int = 0
    #: texts actually sent to the model so far (cache hits excluded): lets tests prove "embedded once"
    texts_embedded: int = 0

    #: the old name of :attr:`model_window` on instances, with a deprecation warning (``max_tokens`` is the
    #: chunk cap only); a subclass that defines ``max_tokens`` itself is not translated
    max_tokens = renamed_attribute("max_tokens", "model_window", "embedder")

    #: the tokenizer a back-end made for itself (what :attr:`tokenizer` returns unless it says otherwise)
    _tokenizer: Any

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer strategies should count with when they use this embedder."""
        return self._tokenizer

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a float32 ``(len(texts), dim)`` array with unit-length rows."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of search queries, in the same space as :meth:`embed`'s documents.

        Models trained with asymmetric prefixes (E5: ``query: `` / ``passage: ``) read a query differently
        from a document; search and evaluation embed queries here so such a back-end can tell them apart.
        Every other back-end reads both alike, so the default is :meth:`embed`.
        """
        return self.embed(texts)

    def embed_tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """Contextual token vectors of ``text`` (one window, up to ``model_window``) and their character spans.

        Back-ends that cannot expose token vectors (static, remote APIs) raise ``ConfigError``.
        """
        from ..errors import ConfigError

        raise ConfigError(f"embedder {self.model_id!r} cannot give token vectors (needed for late chunking)")

    def embed_stream(self, texts: Iterable[str], batch_size: int = 4096) -> Iterator[np.ndarray]:
        """Embed an iterable of any length, yielding one ``(<= batch_size, dim)`` array per batch.

        Memory stays bounded by one batch of texts and vectors, however many texts there are (the
        1,000,000-text benchmark in ``benchmarks/bench_embeddings.py`` runs through this).
        """
        batch: list[str] = []
        for t in texts:
            batch.append(t)
            if len(batch) >= batch_size:
                yield self.embed(batch)
                batch = []
        if batch:
            yield self.embed(batch)

    def close(self) -> None:  # noqa: B027 - a no-op by default: most back-ends hold nothing to release
        """Release files and connections (the cache's SQLite connection); safe to call twice."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, dim={self.dim})"


def distinct_queries(embedder: Embedder) -> bool:
    """Whether ``embedder`` (or the back-end under its wrappers) embeds queries unlike documents: a wrapper
    then has to keep the two apart (separate cache namespace, separate memo)."""
    if isinstance(embedder, WrappedEmbedder):
        return embedder.distinct_queries
    own = getattr(type(embedder), "embed_queries", None)
    return own is not None and own is not Embedder.embed_queries


class WrappedEmbedder(Embedder):
    """An embedder in front of another one (a cache, a memo): everything but ``embed`` is the inner one's.

    ``texts_embedded`` and ``truncated`` are the inner back-end's, so they keep counting only the texts
    actually sent to the model, however many layers sit in front of it.
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_id = inner.model_id

    @property
    def tokenizer(self) -> Tokenizer:
        return self.inner.tokenizer

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.inner.dim  # remote back-ends learn it from the first response

    @property
    def model_window(self) -> int:  # type: ignore[override]
        return self.inner.model_window

    @property
    def truncated(self) -> int:  # type: ignore[override]
        return self.inner.truncated

    @property
    def texts_embedded(self) -> int:  # type: ignore[override]
        return self.inner.texts_embedded

    def embed_tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        return self.inner.embed_tokens(text)

    @property
    def distinct_queries(self) -> bool:
        """Whether the back-end underneath embeds queries differently from documents."""
        return distinct_queries(self.inner)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Through this wrapper (its cache or memo) when queries read like documents; else the back-end's
        own query embedding (a wrapper that stores vectors overrides this to keep queries apart)."""
        if not self.distinct_queries:
            return self.embed(texts)
        return self.inner.embed_queries(texts)

    def close(self) -> None:
        self.inner.close()
