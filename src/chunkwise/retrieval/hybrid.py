"""Hybrid retrieval: the BM25 side (the fusion of the two rankings is in :mod:`.fusion`).

BM25 itself comes from Milvus (a BM25 function over ``indexed_text``) wherever the store supports it. For a
Milvus server without BM25 functions, :class:`BM25Fallback` builds a ``bm25s`` index from the stored texts
(read back from the collection, so there is no second copy to keep in sync).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .fusion import RRF_K, reciprocal_rank_fusion  # noqa: F401  (re-exported: the public names)


class BM25Fallback:
    """An in-memory ``bm25s`` index over ``(id, text)`` pairs, for stores without built-in BM25.

    English stop words are removed and tokens lower-cased (bm25s's scikit-learn style tokenizer); scoring is
    Lucene's BM25 with ``k1=1.5, b=0.75``, the same variant Milvus uses.
    """

    def __init__(self, items: Iterable[tuple[str, str]]):
        import bm25s

        pairs = list(items)
        self.ids = [i for i, _ in pairs]
        self._index_of = {doc: n for n, doc in enumerate(self.ids)}
        self._retriever = None
        if pairs:
            tokens = bm25s.tokenize([t for _, t in pairs], stopwords="en", show_progress=False)
            self._retriever = bm25s.BM25(k1=1.5, b=0.75)
            self._retriever.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query: str, limit: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` best ``(id, score)`` pairs with a positive score, restricted to ``allowed`` ids."""
        import bm25s

        if self._retriever is None or limit <= 0:
            return []
        q = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)
        if not q or not q[0]:
            return []
        mask = None
        if allowed is not None:
            mask = np.zeros(len(self.ids), dtype=np.float32)
            for doc in allowed:
                n = self._index_of.get(doc)
                if n is not None:
                    mask[n] = 1.0
            if not mask.any():
                return []
        limit = min(limit, len(self.ids))
        try:
            docs, scores = self._retriever.retrieve(q, k=limit, show_progress=False, weight_mask=mask)
        except (ValueError, KeyError):  # every query token is unknown to the vocabulary
            return []
        out = []
        for n, s in zip(docs[0], scores[0]):
            if s > 0:
                out.append((self.ids[int(n)], float(s)))
        return out
