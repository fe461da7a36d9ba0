"""Fusing a vector ranking with a BM25 ranking: reciprocal rank fusion and z-score fusion, written once.

Both ``Index.search(hybrid=True)`` and evaluation use these functions, so what ``chunkwise eval`` measures
is what ``chunkwise search`` does.

- **RRF** (Cormack, Clarke & Büttcher, 2009) uses ranks only: ``score(d) = sum 1 / (k + rank(d))``, ``k =
  60``. BM25 scores and cosine similarities live on unrelated scales, and ranks need no calibration.
- **z-score** (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023): each retriever's
  scores are z-normalised per query and combined as ``w * dense + (1 - w) * bm25``. Unlike RRF it keeps how
  far apart the scores are, so a chunk far ahead in one ranking is not pulled level with the runner-up; it
  measured 2-4 recall points better on Chroma's evaluation (docs/evaluation.md).

A vector database returns only the top candidates of each side, so :func:`fuse_candidates_zscore` normalises
over the union of the candidates (:data:`ZSCORE_DEPTH` per side), giving a candidate that one side did not
return that side's lowest candidate score (it ranked below every returned one), or 0 on the BM25 side when
BM25 returned every chunk it matches. Evaluation ranks with the same candidates
(:func:`chunkwise.retrieval.search.rank_candidates`); :func:`fuse_zscore` over every chunk is kept for
comparisons.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

# the settings (fusion modes, the RRF constant, the z-score weight) are defined with the run configuration
from ..pipeline.config import DENSE_WEIGHT, RRF_K, RRF_K_VALUES, SETTINGS
from ..validation import validated

#: candidates per side that ``Index.search`` z-normalises over. Measured on Chroma's evaluation with the tuned
#: configuration (benchmarks/bench_search_fusion.py): recall@5 80.9 at 50, 82.2 at 200, 82.9 at 1000, against
#: 83.7 for full-corpus z-scores and 79.9 for RRF; fetching 1000 ids per side costs a few milliseconds.
ZSCORE_DEPTH = 1000

K = TypeVar("K", bound=Hashable)


@validated(k=RRF_K_VALUES)
def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse ranked id lists (best first) into one ``[(id, score)]`` list, best first.

    Ties keep the order in which ids were first seen (the first ranking wins), so the result is
    deterministic.
    """
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[K, float] = {}
    for ranking, w in zip(rankings, weights):
        seen: set[K] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:  # a duplicate within one ranking counts once, at its best rank
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def zscore(scores: np.ndarray) -> np.ndarray:
    """Each row minus its mean, divided by its standard deviation (rows with no spread become 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    mu = scores.mean(axis=1, keepdims=True)
    sd = scores.std(axis=1, keepdims=True)
    return np.divide(scores - mu, sd, out=np.zeros_like(scores), where=sd > 1e-12)


def fuse_zscore(dense: np.ndarray, sparse: np.ndarray, dense_weight: float = DENSE_WEIGHT) -> np.ndarray:
    """Convex combination of row-wise z-normalised dense and sparse (BM25) scores, shape (queries, items)."""
    return (dense_weight * zscore(dense) + (1.0 - dense_weight) * zscore(sparse)).astype(np.float32)


def fuse_candidates_zscore(
    dense: Mapping[K, float],
    sparse: Mapping[K, float],
    dense_weight: float = DENSE_WEIGHT,
    sparse_floor: float | None = None,
) -> list[tuple[K, float]]:
    """z-score fusion over the union of two candidate sets (``id -> score``), best first.

    An id missing from one side gets that side's lowest returned score, or ``sparse_floor`` on the sparse
    side when the caller knows the missing ids' true score (BM25 returned every match: the others score 0;
    a lone match would otherwise tie with every chunk it does not match); ties keep dense order first.
    """
    ids = list(dict.fromkeys([*dense, *sparse]))
    if not ids:
        return []
    d_floor = min(dense.values()) if dense else 0.0
    s_floor = sparse_floor if sparse_floor is not None else min(sparse.values()) if sparse else 0.0
    d = np.array([[dense.get(i, d_floor) for i in ids]])
    s = np.array([[sparse.get(i, s_floor) for i in ids]])
    fused = fuse_zscore(d, s, dense_weight)[0]
    order = {doc: n for n, doc in enumerate(ids)}
    return sorted(zip(ids, fused.tolist()), key=lambda item: (-item[1], order[item[0]]))


def check_fusion(fusion: str, dense_weight: float) -> None:
    """One validation for the CLI, ``Index.search`` and evaluation."""
    SETTINGS["fusion"].check("fusion", fusion)
    SETTINGS["dense_weight"].check("dense_weight", dense_weight)


def candidate_zscore_matrix(
    dense: np.ndarray,
    sparse: np.ndarray,
    depth: int,
    dense_weight: float = DENSE_WEIGHT,
    sparse_depth: int | None = None,
) -> np.ndarray:
    """What ``Index.search(hybrid=True, fusion="zscore")`` scores, for every query row at once.

    Each row keeps only the ``depth`` best dense and the ``sparse_depth`` (default ``depth``) best positive
    sparse candidates (what a vector database returns), fused by :func:`fuse_candidates_zscore`; every
    other item scores ``-inf``. Evaluation uses it to measure how far search's candidate z-scores are from
    full-corpus z-scores; the two depths differ where one side costs more per candidate than the other.
    """
    out = np.full(dense.shape, -np.inf, dtype=np.float32)
    s_depth = min(depth if sparse_depth is None else sparse_depth, dense.shape[1])
    depth = min(depth, dense.shape[1])
    for q in range(dense.shape[0]):
        d_top = np.argsort(-dense[q], kind="stable")[:depth]
        s_top = [i for i in np.argsort(-sparse[q], kind="stable")[:s_depth] if sparse[q, i] > 0]
        fused = fuse_candidates_zscore(
            {int(i): float(dense[q, i]) for i in d_top}, {int(i): float(sparse[q, i]) for i in s_top}, dense_weight
        )
        for i, score in fused:
            out[q, i] = score
    return out
