"""The retrieval behind :meth:`~chunkwise.retrieval.index.Index.search`: the query checked, then vectors alone
or BM25 and vectors fused (:mod:`chunkwise.retrieval.fusion`), as :class:`~.results.SearchResult` s."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from ..pipeline.config import SETTINGS
from ..store.base import Store
from ..validation import Interval, check
from .fusion import ZSCORE_DEPTH, check_fusion, fuse_candidates_zscore, reciprocal_rank_fusion
from .results import SearchResult
from .sections import key_members, sections_first


def check_search(
    query: str, k: int, filter: str | None, where: Any, fusion: str, dense_weight: float, rrf_k: int
) -> tuple[str | None, int]:
    """Refuse a bad query or option before the store is opened; returns the one filter expression (the raw
    ``filter`` and the checked, quoted ``where`` joined) and the checked ``rrf_k``."""
    from .filters import build_filter

    safe = build_filter(where)
    if not isinstance(query, str) or not query.strip():
        raise InputError("the query is empty")
    check(k, Interval(int, 1, None), "k", "search")
    if filter is not None and not isinstance(filter, str):
        raise ConfigError("filter must be a string (a Milvus boolean expression)")
    check_fusion(fusion, dense_weight)
    rrf_k = SETTINGS["rrf_k"].check("rrf_k", rrf_k)
    filter = filter.strip() if filter else None
    if safe:
        filter = f"({filter}) and {safe}" if filter else safe
    return filter, rrf_k


def dense_results(
    store: Store, qvec: np.ndarray, k: int, filter: str | None, query: str | None = None
) -> list[SearchResult]:
    """The ``k`` chunks nearest to the query vector, by cosine similarity; given the ``query``, the chunks of
    the sections it names by a key come first (:mod:`chunkwise.retrieval.sections`)."""
    members = key_members(store, query, filter) if query else []
    if not members:
        hits = store.search_vector(qvec, k, filter)
        return [SearchResult.from_hit(r, h.score, h, vector_rank=r) for r, h in enumerate(hits, start=1)]
    ranked = [(h.id, h.score) for h in store.search_vector(qvec, max(ZSCORE_DEPTH, k), filter, ids_only=True)]
    vrank = {i: n for n, (i, _) in enumerate(ranked, start=1)}
    chosen = sections_first(ranked, members)[:k]
    stored = {h.id: h for h in store.fetch([i for i, _ in chosen])}
    return [
        SearchResult.from_hit(r, s, stored[i], vector_rank=vrank.get(i))
        for r, (i, s) in enumerate(chosen, start=1)
        if i in stored
    ]


def hybrid_results(
    store: Store,
    query: str,
    qvec: np.ndarray,
    k: int,
    filter: str | None,
    fusion: str,
    dense_weight: float,
    rrf_k: int,
    sections: bool = True,
) -> list[SearchResult]:
    """The ``k`` best chunks by BM25 and vectors fused (``fusion``: ``"zscore"`` or ``"rrf"``); with
    ``sections``, the chunks of the sections the query names by a key first
    (:mod:`chunkwise.retrieval.sections`)."""
    # Both rankings go deeper than k so fusion can promote a chunk that is, say, 12th by vectors and
    # 2nd by BM25; only ids and scores travel until the final k are known.
    depth = max(ZSCORE_DEPTH if fusion == "zscore" else 50, 4 * k)
    vector_hits = {h.id: h.score for h in store.search_vector(qvec, depth, filter, ids_only=True)}
    bm25_hits = {h.id: h.score for h in store.search_text(query, depth, filter)}
    if fusion == "zscore":
        fused = fuse_candidates_zscore(vector_hits, bm25_hits, dense_weight)
    else:
        fused = reciprocal_rank_fusion([list(vector_hits), list(bm25_hits)], k=rrf_k)
    if sections:
        fused = sections_first(fused, key_members(store, query, filter))
    fused = fused[:k]
    stored = {h.id: h for h in store.fetch([i for i, _ in fused])}
    vrank = {i: n for n, i in enumerate(vector_hits, start=1)}
    brank = {i: n for n, i in enumerate(bm25_hits, start=1)}
    return [
        SearchResult.from_hit(r, s, stored[i], vector_rank=vrank.get(i), bm25_rank=brank.get(i))
        for r, (i, s) in enumerate(fused, start=1)
        if i in stored
    ]


__all__ = ["check_search", "dense_results", "hybrid_results"]
