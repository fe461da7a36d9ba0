"""Retrieval: the :class:`Index` (add, search, delete) over a store (Milvus by default), and hybrid BM25 +
vector fusion."""

from .hybrid import BM25Fallback, reciprocal_rank_fusion
from .index import Index, IndexReport, SearchResult

__all__ = ["Index", "IndexReport", "SearchResult", "BM25Fallback", "reciprocal_rank_fusion"]
