"""How an evaluation run ranks chunks: exact vector search, BM25, hybrid fusion, several chunk sizes fused, and
a reranker over the candidates.

Every ranking here is ``Index.search``'s: each query is ranked over a
:class:`~chunkwise.store.memory.MemoryStore` by :func:`chunkwise.retrieval.search.rank_candidates` (the fusion,
its candidate depths and the section-first pass of ``search``) and reranked through
:mod:`chunkwise.retrieval.rerank`, so ``eval`` measures what ``search`` returns (a test holds them equal). A ranking is a
``deep`` order (queries x depth chunk positions, best first) and the per-chunk scores documents are ranked by.

Several granularities (``granularities=[128, 512]``, after Bhat et al. 2025: small chunks for factoid
questions, large ones for narrative questions) are the run's strategy at each ``max_tokens``, each ranked on
its own, fused by reciprocal rank fusion into one ranking over all their chunks; the span metrics then read
each retrieved chunk's span, whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..document import Chunk
from ..pipeline.config import RRF_K, parse_rerank
from ..retrieval.fusion import reciprocal_rank_fusion
from ..retrieval.rerank import rerank_order, rerank_scores
from ..store.memory import MemoryStore
from .datasets import Dataset
from .spec import RunSpec


def top_indices(sims: np.ndarray, n: int) -> np.ndarray:
    """Per row, the indices of the ``n`` highest scores, best first; ties broken by index (stable) among the
    ``n`` kept (which of several scores tied at the ``n``-th place are kept is ``argpartition``'s choice)."""
    total = sims.shape[1]
    n = min(n, total)
    if n < total:
        part = np.argpartition(-sims, n - 1, axis=1)[:, :n]
        part.sort(axis=1)
        return np.take_along_axis(
            part, np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable"), axis=1
        )
    return np.argsort(-sims, axis=1, kind="stable")


# -- the evaluator ------------------------------------------------------------------------------------


def fuse_granularities(parts: list[tuple[list[Chunk], np.ndarray]]) -> tuple[list[Chunk], np.ndarray, np.ndarray]:
    """One ranking over the chunks of several chunkings of the same documents: each part's ``deep`` order
    (positions into its own chunks) fused by reciprocal rank fusion (constant :data:`RRF_K`). A span that
    several chunkings cut alike (a short document is one chunk at every size) is one candidate, at its first
    position, with its best copy's score: it is never retrieved twice, and never outvotes the spans only one
    size cut (summed votes would put every short document above the best chunk of every long one). Returns
    all chunks (part after part), the fused order (as deep as the deepest part) and the fused score of every
    chunk (0 for a chunk no part retrieved, and for the later copies of a span), which documents are ranked
    by."""
    chunks = [c for cs, _ in parts for c in cs]
    first: dict[tuple[str, int, int], int] = {}
    canonical = np.array([first.setdefault((c.source, c.start, c.end), i) for i, c in enumerate(chunks)])
    offsets = np.cumsum([0] + [len(cs) for cs, _ in parts])[:-1]
    n_queries = parts[0][1].shape[0]
    depth = min(len(first), max(order.shape[1] for _, order in parts))
    deep = np.zeros((n_queries, depth), dtype=np.int64)
    scores = np.zeros((n_queries, len(chunks)), dtype=np.float32)
    for qi in range(n_queries):
        fused = reciprocal_rank_fusion([(order[qi] + off).tolist() for (_, order), off in zip(parts, offsets)], RRF_K)
        best = dict.fromkeys(int(canonical[i]) for i, _ in fused)  # best first, so each span's first copy
        for i, score in fused:
            if best[int(canonical[i])] is None:
                best[int(canonical[i])] = score
        ids = list(best)
        deep[qi] = ids[:depth]
        scores[qi, ids] = list(best.values())
    return chunks, deep, scores


class RankingMixin:
    """The rankings of :class:`~.runner.Evaluator` (see the module docstring)."""

    dataset: Dataset
    embedder: Any
    progress: Callable[[str], None]

    @staticmethod
    def _similarities(store: MemoryStore, qv: np.ndarray) -> np.ndarray:
        """Every query's cosine similarity with every chunk, shape (queries, chunks) in chunk order: the
        store's exact vector search asked for all chunks (document ranking and z-scores need them all)."""
        positions, scores = store.search_vectors(qv, store.count())
        sims = np.empty_like(scores)
        np.put_along_axis(sims, positions, scores, axis=1)
        return sims

    def _rank(
        self, spec: RunSpec, store: MemoryStore, qv: np.ndarray, depth: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each query ranked by :func:`chunkwise.retrieval.search.rank_candidates`, the function
        ``Index.search`` ranks with (fusion over the candidates of both sides, the section-first pass when
        ``spec.sections``), asked for ``depth`` results. Returns the first ``depth`` chunk positions per query,
        their first-stage scores (what a reranker fuses with), and the per-chunk scores documents are ranked
        by: the ranked candidates in their order, above every other chunk, which follow by cosine similarity
        (so a document's place is its best chunk's place in what search returns)."""
        from ..retrieval.search import rank_candidates

        sims = self._similarities(store, qv)
        position = {chunk_id: n for n, chunk_id in enumerate(store.ids)}
        deep = np.zeros((len(qv), depth), dtype=np.int64)
        stage = np.zeros((len(qv), depth), dtype=np.float64)
        doc_scores = sims.astype(np.float64)
        for qi, q in enumerate(self.dataset.queries):
            ranking = rank_candidates(store, q.text, qv[qi], depth, None, spec)
            ids = [position[i] for i, _ in ranking.ranked]
            if len(ids) < depth:  # fewer candidates than asked (BM25 alone, a tiny corpus): pad by cosine
                taken = set(ids)
                ids += [int(i) for i in np.argsort(-sims[qi], kind="stable") if int(i) not in taken][: depth - len(ids)]
            deep[qi] = ids[:depth]
            stage[qi, : min(depth, len(ranking.ranked))] = [s for _, s in ranking.ranked[:depth]]
            doc_scores[qi, ids] = 2.0 + np.arange(len(ids), 0, -1)
        return deep, stage, doc_scores

    def _reranked(
        self, spec: RunSpec, chunks: list[Chunk], deep: np.ndarray, doc_scores: np.ndarray, stage: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``spec.rerank`` over each query's first ``rerank_depth`` candidates, as ``Index.search`` reranks
        (with the first-stage scores ``stage``, aligned with ``deep``). Documents are then ranked by their
        best chunk's place in the new order; those with no chunk in it follow, in first-stage order."""
        depth = min(spec.rerank_depth, deep.shape[1])
        client = None
        if parse_rerank(spec.rerank) == ("llm", None):
            from ..llm.client import ChatClient

            client = ChatClient(purpose="rerank=llm")
        order, scores = deep.copy(), doc_scores.astype(np.float64)
        places = np.arange(deep.shape[1], 0, -1, dtype=np.float64)
        for qi, q in enumerate(self.dataset.queries):
            cand = deep[qi, :depth]
            texts = [chunks[i].text for i in cand]
            new = rerank_scores(q.text, texts, stage[qi, :depth].tolist(), str(spec.rerank), self.embedder, client)
            order[qi, :depth] = cand[rerank_order(new)]
            finite = scores[qi][np.isfinite(scores[qi])]
            scores[qi, order[qi]] = (float(finite.max()) if finite.size else 0.0) + 1.0 + places
            if (qi + 1) % 50 == 0:
                self.progress(f"{spec.name}: reranked {qi + 1}/{len(self.dataset.queries)} queries")
        if client is not None:
            client.close()
        return order, scores


__all__ = ["RankingMixin", "top_indices", "fuse_granularities"]
