"""Retrieval: the :class:`Index` (add, search, delete) over a store (Milvus by default), and hybrid BM25 +
vector fusion.

The names are imported on first use, so that a module of this package that needs none of them does not bring
in the index, the stores and their engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import lazy_module_getattr

if TYPE_CHECKING:
    from ..store.bm25 import BM25Fallback
    from .fusion import reciprocal_rank_fusion
    from .index import Index, IndexReport, SearchResult

#: each public name and the module that defines it
_HOMES = {
    "Index": "index",
    "IndexReport": "index",
    "SearchResult": "index",
    "BM25Fallback": ".store.bm25",  # relative to the package: chunkwise.store.bm25
    "reciprocal_rank_fusion": "fusion",
}


__getattr__ = lazy_module_getattr(__name__, _HOMES)


__all__ = ["Index", "IndexReport", "SearchResult", "BM25Fallback", "reciprocal_rank_fusion"]
