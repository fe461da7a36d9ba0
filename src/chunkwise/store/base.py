"""The store protocol: what :class:`~chunkwise.retrieval.index.Index` needs from wherever chunks are kept.

:class:`~chunkwise.store.milvus.MilvusStore` implements it (Milvus Lite or a server); any object with these
members works, e.g. :class:`~chunkwise.store.memory.MemoryStore` (exact, in process memory). A store sees documents, chunks and
vectors and answers with :class:`Hit` objects; how it lays out rows is its own business.

The crash-safe replace sequence (*unmark -> upsert -> delete stale -> mark*) is run by ``Index`` over these
primitives, so every store gets it by construction: a store only has to make each call durable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..document import Chunk, Document


@dataclass
class Marker:
    """A document that is completely indexed: its source, content hash and number of chunks."""

    doc_id: str
    source: str
    content_hash: str
    chunks: int
    #: False when the document was written without everything it asked for (e.g. ``--context llm`` failed
    #: for some chunks): the next run redoes it even though its content is unchanged
    complete: bool = True


@dataclass
class Hit:
    """One search or fetch answer: a chunk id, its score (higher is better) and, when asked for, the
    stored chunk and the row's metadata (``chunk`` is ``None`` for id-only searches)."""

    id: str
    score: float = 0.0
    chunk: Chunk | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Store(Protocol):
    """Where an index keeps its configuration, its chunks and the markers of completely indexed documents."""

    collection: str

    @property
    def location(self) -> str:
        """Where the store is, for messages (a path or a URI)."""

    @property
    def missing(self) -> bool:
        """True when nothing exists yet and reading must not create it."""

    @property
    def hybrid_note(self) -> str | None:
        """One line for the user when text search is weaker than usual here (else ``None``)."""

    # -- configuration and lifecycle
    def read_config(self) -> dict[str, Any] | None: ...
    def create(self, config: dict[str, Any], dim: int, replace: bool = False) -> None: ...
    def open(self) -> None: ...
    def close(self) -> None: ...

    # -- document markers (the last step of writing a document)
    def markers(self) -> dict[str, Marker]: ...
    def mark(self, markers: Iterable[Marker]) -> None: ...
    def unmark(self, doc_ids: Iterable[str]) -> None: ...

    # -- chunks
    def upsert(self, items: list[tuple[Document, list[Chunk], np.ndarray]], embedder_id: str) -> list[str]:
        """Write every document's chunks with their vectors; returns the chunk ids written."""

    def chunk_ids(self, doc_ids: Iterable[str]) -> dict[str, set[str]]: ...
    def chunk_documents(self) -> dict[str, str]: ...
    def delete_chunks(self, ids: Iterable[str]) -> int: ...
    def delete_documents(self, doc_ids: Iterable[str]) -> int: ...
    def flush(self) -> None: ...
    def count(self) -> int: ...

    # -- reading
    def fetch(self, ids: list[str]) -> list[Hit]: ...
    def chunks_at(self, wanted: dict[str, Iterable[int]]) -> list[Hit]:
        """The stored chunks of documents (``doc_id -> chunk indexes``) that exist, as hits without a score:
        what neighbour expansion reads instead of whole documents."""

    def search_vector(
        self, vector: np.ndarray, limit: int, filter: str | None = None, ids_only: bool = False
    ) -> list[Hit]:
        """Nearest chunks by cosine similarity, best first."""

    def search_text(self, query: str, limit: int, filter: str | None = None) -> list[Hit]:
        """Chunks by BM25 over their indexed text (context + text), best first, ids and scores only."""


__all__ = ["Store", "Hit", "Marker"]
