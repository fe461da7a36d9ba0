"""How an evaluation run ranks chunks: exact vector search, BM25, hybrid fusion, several chunk sizes fused, and
a reranker over the candidates.

Every ranking here is what ``Index.search`` does, computed for all queries at once over a
:class:`~chunkwise.store.memory.MemoryStore`: fusion through :mod:`chunkwise.retrieval.fusion` and reranking
through :mod:`chunkwise.retrieval.rerank`, so ``eval`` measures the code ``search`` runs. A ranking is a
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
from ..retrieval.fusion import fuse_zscore, reciprocal_rank_fusion
from ..retrieval.rerank import rerank_order, rerank_scores
from ..store.memory import MemoryStore
from .datasets import Dataset
from .spec import DEFAULT_RRF_K, RunSpec

#: candidates taken from each ranking before reciprocal rank fusion (hybrid runs)
HYBRID_CANDIDATES = 100


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

    def _rank(self, spec: RunSpec, store: MemoryStore, sims: np.ndarray, top_n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``top_n`` chunks per query, best first, and the per-chunk scores documents are ranked by
        (the similarities; the fused z-scores; for RRF, ``top_n .. 1`` on the retrieved chunks, else 0)."""
        if spec.hybrid and spec.fusion == "zscore":
            fused = self._zscore_fused(spec, store, sims)
            return top_indices(fused, top_n), fused
        if spec.hybrid:
            order = self._hybrid_order(store, sims, top_n, spec.rrf_k)
            rank_scores = np.zeros_like(sims)
            ranks = np.arange(order.shape[1], 0, -1, dtype=np.float32)
            np.put_along_axis(rank_scores, order, ranks[None, :], axis=1)
            return order, rank_scores
        return top_indices(sims, top_n), sims

    def _bm25_scores(self, store: MemoryStore) -> np.ndarray:
        """BM25 score of every chunk for every query, shape (queries, chunks); 0 where no term matches."""
        position = {chunk_id: n for n, chunk_id in enumerate(store.ids)}
        out = np.zeros((len(self.dataset.queries), store.count()), dtype=np.float32)
        for qi, q in enumerate(self.dataset.queries):
            for hit in store.search_text(q.text, store.count()):
                out[qi, position[hit.id]] = hit.score
        return out

    def _zscore_fused(self, spec: RunSpec, store: MemoryStore, sims: np.ndarray) -> np.ndarray:
        """``fusion=zscore``: per query, the dense similarities and the BM25 scores of *all* chunks are each
        z-normalised (mean 0, standard deviation 1; a constant row becomes 0), then combined as
        ``dense_weight * dense + (1 - dense_weight) * bm25``. Unlike RRF it keeps how far apart the scores
        are, so a chunk far ahead in one ranking is not pulled level with the runner-up."""
        return fuse_zscore(sims, self._bm25_scores(store), spec.dense_weight)

    def _hybrid_order(self, store: MemoryStore, sims: np.ndarray, top_n: int, rrf_k: int = DEFAULT_RRF_K) -> np.ndarray:
        """Top chunks by reciprocal rank fusion (constant ``rrf_k``) of the dense ranking and BM25 over
        ``embed_text`` (what the index's ``hybrid=True`` search does), each ranking cut at
        :data:`HYBRID_CANDIDATES`."""
        n_chunks = store.count()
        cand = min(n_chunks, max(HYBRID_CANDIDATES, top_n))
        dense = top_indices(sims, cand)
        position = {chunk_id: n for n, chunk_id in enumerate(store.ids)}
        order = np.zeros((len(sims), top_n), dtype=np.int64)
        for qi, q in enumerate(self.dataset.queries):
            bm25_ranking = [position[hit.id] for hit in store.search_text(q.text, cand)]
            fused = dict(reciprocal_rank_fusion([dense[qi].tolist(), bm25_ranking], k=rrf_k))
            best = list(fused)[:top_n]
            if len(best) < top_n:  # pad with the next dense hits (only when BM25 and dense agree a lot)
                rest = [
                    i
                    for i in top_indices(sims[qi : qi + 1], min(n_chunks, 2 * top_n + cand))[0].tolist()
                    if i not in fused
                ]
                best += rest[: top_n - len(best)]
            order[qi] = best
        return order

    def _reranked(
        self, spec: RunSpec, chunks: list[Chunk], deep: np.ndarray, doc_scores: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``spec.rerank`` over each query's first ``rerank_depth`` candidates, as ``Index.search`` reranks
        (the first-stage scores are the ones documents were ranked by). Documents are then ranked by their
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
            new = rerank_scores(q.text, texts, doc_scores[qi, cand], str(spec.rerank), self.embedder, client)
            order[qi, :depth] = cand[rerank_order(new)]
            finite = scores[qi][np.isfinite(scores[qi])]
            scores[qi, order[qi]] = (float(finite.max()) if finite.size else 0.0) + 1.0 + places
            if (qi + 1) % 50 == 0:
                self.progress(f"{spec.name}: reranked {qi + 1}/{len(self.dataset.queries)} queries")
        if client is not None:
            client.close()
        return order, scores


__all__ = ["RankingMixin", "top_indices", "fuse_granularities", "HYBRID_CANDIDATES"]
