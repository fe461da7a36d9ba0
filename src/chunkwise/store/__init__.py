"""Where chunks are stored: Milvus (Milvus Lite by default, a server by URI)."""

from .milvus import DEFAULT_COLLECTION, DEFAULT_DB, Marker, MilvusStore

__all__ = ["MilvusStore", "Marker", "DEFAULT_COLLECTION", "DEFAULT_DB"]
