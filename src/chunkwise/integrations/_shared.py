"""What both adapters need: a strategy built once from a name or object, and a chunk's metadata."""

from __future__ import annotations

from typing import Any

from ..document import CHUNK_FIELDS, Chunk, Document
from ..errors import MissingDependencyError
from ..strategies import Strategy, get_strategy

#: Chunk fields that are the chunk itself, not metadata about it
_NOT_METADATA = ("text", "context")


def build_strategy(strategy: str | Strategy, params: dict[str, Any]) -> Strategy:
    """A strategy object: the given one, or one built by name (unknown parameters are a ConfigError)."""
    if isinstance(strategy, Strategy):
        if params:
            raise TypeError("pass parameters to the strategy object, not to the adapter, when giving one")
        return strategy
    strat = get_strategy(strategy, **params)
    strat.validate()
    return strat


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """The chunk's provenance under its own field names (``start``, ``end``, ``page_start``, ...)."""
    d = chunk.to_dict()
    return {k: d[k] for k in CHUNK_FIELDS if k not in _NOT_METADATA and k in d}


def chunks_of(strategy: Strategy, text: str, source: str | None = None) -> list[Chunk]:
    """Chunk a plain text as a :class:`Document` (offsets index into ``text`` itself).

    ``source`` (the framework document's file path or id) makes chunk ids differ between documents
    that happen to share a text; without it the id comes from the text alone.
    """
    return strategy.chunk(Document(text, source=str(source) if source else "<text>"))


def require(module: str, extra: str, what: str):
    """Import ``module`` or raise the one-line error naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(what, extra) from None
