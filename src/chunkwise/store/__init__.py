"""Where chunks are stored: the :class:`Store` protocol, Milvus (Milvus Lite by default, a server by URI) and
:class:`~.memory.MemoryStore` (exact search in process memory; evaluation retrieves through it)."""

from .base import Hit, Marker, Store
from .memory import MemoryStore
from .milvus import DEFAULT_COLLECTION, DEFAULT_DB, MilvusStore

__all__ = ["Store", "Hit", "MilvusStore", "MemoryStore", "Marker", "DEFAULT_COLLECTION", "DEFAULT_DB"]
