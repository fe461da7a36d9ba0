"""The one-call Python API: ``chunkwise.chunk(text_or_path, strategy=..., **params)``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .document import Chunk, Document
from .strategies import Strategy, get_strategy


def _as_document(obj: str | os.PathLike | Document) -> Document:
    """A Document from a Document, a path (``Path`` or a string naming an existing file), or raw text."""
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, os.PathLike) or (
        isinstance(obj, str) and obj and len(obj) < 4096 and "\n" not in obj and Path(obj).is_file()
    ):
        from .formats import load

        return load(obj)
    return Document(str(obj))


def chunk(text_or_path: str | os.PathLike | Document, strategy: str | Strategy = "auto",
          **params: Any) -> list[Chunk]:
    """Chunk a text, a file or a :class:`Document`.

    A string is read as a path when it names an existing file (use ``Document(text)`` to be explicit);
    ``strategy`` is ``"auto"`` (the default: chosen per document by format, see
    :mod:`chunkwise.strategies.auto`), another name from :data:`chunkwise.strategies.STRATEGY_NAMES` or a strategy object, and
    ``params`` are its parameters (``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``, ...).
    """
    strat = strategy if isinstance(strategy, Strategy) else get_strategy(strategy, **params)
    return strat.chunk(_as_document(text_or_path))
