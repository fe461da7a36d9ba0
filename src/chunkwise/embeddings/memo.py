"""An in-memory memo in front of an embedder (:class:`MemoEmbedder`): each distinct text is embedded once.

Evaluation puts it on top of the persistent cache so a grid search shares the chunk, query and sentence
vectors of all its configurations; the report (:mod:`chunkwise.viz.model`) puts it in front of a semantic
strategy so ``chunk`` and ``explain`` on one document embed each sentence once even without the cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from .base import Embedder, WrappedEmbedder


class MemoEmbedder(WrappedEmbedder):
    """An in-memory memo in front of another embedder: each distinct text goes to it at most once.

    Also keeps the wall time spent in the wrapped embedder (``seconds``), so a run can report what
    embedding cost it (close to zero when the persistent cache is warm).
    """

    #: texts per call to the wrapped embedder
    batch = 512

    def __init__(self, inner: Embedder, progress: Callable[[str], None] | None = None):
        super().__init__(inner)
        self.progress = progress
        self._memo: dict[str, np.ndarray] = {}
        self._query_memo: dict[str, np.ndarray] = {}
        self._tokens: dict[str, tuple[np.ndarray, list]] = {}
        self._token_bytes = 0
        self.seconds = 0.0
        self.requested = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._memoised(texts, self._memo, self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries, memoised apart from documents when the back-end reads them differently (E5)."""
        if not self.distinct_queries:
            return self.embed(texts)
        return self._memoised(texts, self._query_memo, self.inner.embed_queries)

    def _memoised(self, texts: Sequence[str], memo: dict[str, np.ndarray], compute) -> np.ndarray:
        texts = list(texts)
        self.requested += len(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        # in batches: the persistent cache is written batch by batch (an interrupted cold run keeps what it
        # paid for) and long runs can report progress
        for a in range(0, len(missing), self.batch):
            part = missing[a : a + self.batch]
            t0 = time.perf_counter()
            vecs = compute(part)
            self.seconds += time.perf_counter() - t0
            for t, v in zip(part, vecs):
                memo[t] = v
            if self.progress and len(missing) > self.batch:
                self.progress(
                    f"embedded {min(a + self.batch, len(missing))}/{len(missing)} texts "
                    f"({self.seconds:.0f} s embedding so far)"
                )
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([memo[t] for t in texts]).astype(np.float32, copy=False)

    #: memory allowed for memoised token vectors (late chunking), stored as float16
    token_memo_bytes = 768 * 2**20

    def embed_tokens(self, text: str):
        """Token vectors, memoised (as float16, within :attr:`token_memo_bytes`): late chunking embeds the
        same document windows for every configuration of a grid, so a search pays for them once."""
        hit = self._tokens.get(text)
        if hit is not None:
            return hit[0].astype(np.float32), list(hit[1])
        t0 = time.perf_counter()
        try:
            vecs, spans = self.inner.embed_tokens(text)
        finally:
            self.seconds += time.perf_counter() - t0
        half = np.asarray(vecs, dtype=np.float16)
        if self._token_bytes + half.nbytes <= self.token_memo_bytes:
            self._tokens[text] = (half, list(spans))
            self._token_bytes += half.nbytes
        return half.astype(np.float32), list(spans)

    def __getattr__(self, name: str):  # anything else a back-end offers (window, batch_size...)
        if name in ("inner", "_memo", "_query_memo", "_tokens", "progress"):
            raise AttributeError(name)
        return getattr(self.inner, name)


__all__ = ["MemoEmbedder"]
