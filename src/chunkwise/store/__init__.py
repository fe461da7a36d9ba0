"""Where chunks are stored: the :class:`Store` protocol, and Milvus (Milvus Lite by default, a server by URI)."""

from .base import Hit, Marker, Store
from .milvus import DEFAULT_COLLECTION, DEFAULT_DB, MilvusStore

__all__ = ["Store", "Hit", "MilvusStore", "Marker", "DEFAULT_COLLECTION", "DEFAULT_DB"]
