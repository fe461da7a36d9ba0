"""Retrieval: the :class:`Index` (add, search, delete) over a store (Milvus by default), and hybrid BM25 +
vector fusion.

The names are imported on first use, so that a module of this package that needs none of them (the progress
line ``chunkwise chunk`` prints) does not bring in the index, the stores and their engines.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .hybrid import BM25Fallback, reciprocal_rank_fusion
    from .index import Index, IndexReport, SearchResult

#: each public name and the module that defines it
_HOMES = {
    "Index": "index",
    "IndexReport": "index",
    "SearchResult": "index",
    "BM25Fallback": "hybrid",
    "reciprocal_rank_fusion": "hybrid",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Index", "IndexReport", "SearchResult", "BM25Fallback", "reciprocal_rank_fusion"]
