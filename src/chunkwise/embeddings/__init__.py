"""Embedding back-ends behind one interface (see :mod:`chunkwise.embeddings.base`)."""

from .base import Embedder, l2_normalize

__all__ = ["Embedder", "l2_normalize"]
