"""Hybrid retrieval: BM25 and vector rankings fused by reciprocal rank fusion (RRF).

Why RRF: BM25 scores and cosine similarities live on unrelated scales (Milvus even reports BM25 as a
negative distance), so adding or averaging them needs per-corpus tuning. RRF (Cormack, Clarke & Büttcher,
2009) uses ranks only: ``score(d) = sum over rankings of 1 / (k + rank(d))`` with ``k = 60``. A chunk that
both retrievers like rises to the top; one that only one of them finds still appears.

BM25 itself comes from Milvus (a BM25 function over ``indexed_text``) wherever the store supports it. For a
Milvus server without BM25 functions, :class:`BM25Fallback` builds a ``bm25s`` index from the stored texts
(read back from the collection, so there is no second copy to keep in sync).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

#: the constant of Cormack et al.; larger values flatten the difference between ranks
RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into one ``[(id, score)]`` list, best first.

    Ties keep the order in which ids were first seen (the first ranking wins), so the result is
    deterministic.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:  # a duplicate within one ranking counts once, at its best rank
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


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
