"""chunkwise: chunk documents where the meaning changes, index them, and measure whether it retrieves better."""

from __future__ import annotations

__version__ = "0.1.0"

from .api import chunk
from .document import Chunk, Cue, Document, Page, Section
from .errors import ChunkwiseError, ConfigError, InputError

__all__ = ["chunk", "Chunk", "Cue", "Document", "Page", "Section", "ChunkwiseError", "ConfigError",
           "InputError", "__version__"]
