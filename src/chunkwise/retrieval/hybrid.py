"""An old import path: BM25 now lives in :mod:`chunkwise.store.bm25` and fusion in :mod:`.fusion`. Its names
still import from here, with a deprecation warning (``chunkwise.deprecation.MOVED``)."""

from __future__ import annotations

from ..deprecation import moved_getattr

__getattr__ = moved_getattr(__name__)
