"""An old import path: the progress of long runs now lives in :mod:`chunkwise.progress` (``chunk`` prints it
too, and imports nothing of the retrieval package). Its names still import from here, with a deprecation
warning (``chunkwise.deprecation.MOVED``)."""

from __future__ import annotations

from ..deprecation import moved_getattr

__getattr__ = moved_getattr(__name__)
