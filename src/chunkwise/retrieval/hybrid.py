"""Hybrid retrieval's two halves under their old names: BM25 (:mod:`chunkwise.store.bm25`, the one set-up
that stores and evaluation share) and the fusion of the two rankings (:mod:`.fusion`)."""

from __future__ import annotations

from ..store.bm25 import BM25Fallback
from .fusion import RRF_K, reciprocal_rank_fusion

__all__ = ["BM25Fallback", "RRF_K", "reciprocal_rank_fusion"]
