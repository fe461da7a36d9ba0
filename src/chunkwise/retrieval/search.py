"""The retrieval behind :meth:`~chunkwise.retrieval.index.Index.search`: the query checked, then vectors alone
or BM25 and vectors fused (:mod:`chunkwise.retrieval.fusion`), as :class:`~.results.SearchResult` s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..pipeline.config import PipelineConfig
from ..store.base import Hit, Store
from ..validation import InstanceOf, Interval, check
from .fusion import ZSCORE_DEPTH, fuse_candidates_zscore, reciprocal_rank_fusion
from .results import SearchResult
from .sections import key_members, sections_first


def check_search(query: str, k: int, filter: str | None, where: Any) -> str | None:
    """Refuse a bad query, ``k`` or filter before the store is opened (the retrieval settings are the
    :class:`~chunkwise.pipeline.PipelineConfig`'s to check); returns the one filter expression (the raw
    ``filter`` and the checked, quoted ``where`` joined)."""
    from .filters import build_filter

    safe = build_filter(where)
    if not isinstance(query, str) or not query.strip():
        raise InputError("the query is empty")
    check(k, Interval(int, 1, None), "k", "search")
    check(filter, [InstanceOf(str, "a Milvus boolean expression"), None], "filter", "search")
    filter = filter.strip() if filter else None
    if safe:
        filter = f"({filter}) and {safe}" if filter else safe
    return filter


@dataclass
class Ranking:
    """What the first stage of a search found, before it is cut to ``k``: every candidate ``(id, score)``,
    best first (with ``sections``, the named sections' chunks ahead), and each candidate's place in the
    vector and the BM25 ranking."""

    ranked: list[tuple[str, float]]
    vector_rank: dict[str, int] = field(default_factory=dict)
    bm25_rank: dict[str, int] = field(default_factory=dict)
    #: the stored rows where the first stage read them already (vectors alone: one round trip, no fetch)
    hits: dict[str, Hit] = field(default_factory=dict)


def rank_candidates(
    store: Store, query: str, qvec: np.ndarray, k: int, filter: str | None, run: PipelineConfig
) -> Ranking:
    """The one ranking behind ``Index.search`` and ``chunkwise eval`` (so what ``eval`` measures is what
    ``search`` returns), as the retrieval settings of ``run`` (a checked configuration) say: vectors alone, or
    BM25 and vectors fused (``fusion``: ``"zscore"`` with ``dense_weight`` or ``"rrf"`` with ``rrf_k``); with
    ``sections`` and a query, the chunks of the sections the query names by a key first
    (:mod:`chunkwise.retrieval.sections`). How deep each side is read depends on ``k`` as in ``search``."""
    hybrid, fusion, dense_weight, rrf_k = run.hybrid, run.fusion, run.dense_weight, run.rrf_k
    members = key_members(store, query, filter) if run.sections and query else []
    if not hybrid:
        if not members:
            hits = store.search_vector(qvec, k, filter)
            return Ranking(
                [(h.id, h.score) for h in hits],
                {h.id: r for r, h in enumerate(hits, start=1)},
                {},
                {h.id: h for h in hits},
            )
        ranked = [(h.id, h.score) for h in store.search_vector(qvec, max(ZSCORE_DEPTH, k), filter, ids_only=True)]
        vrank = {i: n for n, (i, _) in enumerate(ranked, start=1)}
        return Ranking(sections_first(ranked, members), vrank)
    # Both rankings go deeper than k so fusion can promote a chunk that is, say, 12th by vectors and
    # 2nd by BM25; only ids and scores travel until the final k are known.
    depth = max(ZSCORE_DEPTH if fusion == "zscore" else 50, 4 * k)
    vector_hits = {h.id: h.score for h in store.search_vector(qvec, depth, filter, ids_only=True)}
    bm25_hits = {h.id: h.score for h in store.search_text(query, depth, filter)}
    if fusion == "zscore":
        # fewer BM25 hits than asked for: every match came back, and every other chunk scores 0
        floor = 0.0 if len(bm25_hits) < depth else None
        fused = fuse_candidates_zscore(vector_hits, bm25_hits, dense_weight, floor)
    else:
        fused = reciprocal_rank_fusion([list(vector_hits), list(bm25_hits)], k=rrf_k)
    return Ranking(
        sections_first(fused, members),
        {i: n for n, i in enumerate(vector_hits, start=1)},
        {i: n for n, i in enumerate(bm25_hits, start=1)},
    )


def _results(store: Store, ranking: Ranking, k: int) -> list[SearchResult]:
    """The first ``k`` of a ranking as search results (their chunks read from the store)."""
    chosen = ranking.ranked[:k]
    missing = [i for i, _ in chosen if i not in ranking.hits]
    stored = {**ranking.hits, **({h.id: h for h in store.fetch(missing)} if missing else {})}
    return [
        SearchResult.from_hit(
            r, s, stored[i], vector_rank=ranking.vector_rank.get(i), bm25_rank=ranking.bm25_rank.get(i)
        )
        for r, (i, s) in enumerate(chosen, start=1)
        if i in stored
    ]


def ranked_results(
    store: Store, query: str, qvec: np.ndarray, k: int, filter: str | None, run: PipelineConfig
) -> list[SearchResult]:
    """The ``k`` best chunks as ``run``'s retrieval settings rank them (:func:`rank_candidates`)."""
    return _results(store, rank_candidates(store, query, qvec, k, filter, run), k)


__all__ = ["check_search", "ranked_results", "rank_candidates", "Ranking"]
