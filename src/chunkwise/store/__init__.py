"""Where chunks are stored: the :class:`Store` protocol, Milvus (Milvus Lite by default, a server by URI) and
:class:`~.memory.MemoryStore` (exact search in process memory; evaluation retrieves through it).

The names are imported on first use, so that importing one store module (``chunkwise.store.milvus`` for a
search, ``chunkwise.store.memory`` for an evaluation) does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import lazy_module_getattr

if TYPE_CHECKING:
    from .base import Hit, Marker, Store
    from .memory import MemoryStore
    from .milvus import DEFAULT_COLLECTION, DEFAULT_DB, MilvusStore

#: each public name and the module that defines it
_HOMES = {
    "Store": "base",
    "Hit": "base",
    "Marker": "base",
    "MemoryStore": "memory",
    "MilvusStore": "milvus",
    "DEFAULT_COLLECTION": "milvus",
    "DEFAULT_DB": "milvus",
}


__getattr__ = lazy_module_getattr(__name__, _HOMES)


__all__ = ["Store", "Hit", "MilvusStore", "MemoryStore", "Marker", "DEFAULT_COLLECTION", "DEFAULT_DB"]
