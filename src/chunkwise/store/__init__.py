"""Where chunks are stored: the :class:`Store` protocol, Milvus (Milvus Lite by default, a server by URI) and
:class:`~.memory.MemoryStore` (exact search in process memory; evaluation retrieves through it).

The names are imported on first use, so that importing one store module (``chunkwise.store.milvus`` for a
search, ``chunkwise.store.memory`` for an evaluation) does not import the others.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Store", "Hit", "MilvusStore", "MemoryStore", "Marker", "DEFAULT_COLLECTION", "DEFAULT_DB"]
