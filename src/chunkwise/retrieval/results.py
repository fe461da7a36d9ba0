"""What :class:`~chunkwise.retrieval.index.Index` hands back: a :class:`SearchResult` per retrieved chunk
(its JSON is every chunk field, from :data:`~chunkwise.document.CHUNK_FIELD_TABLE`) and an :class:`IndexReport`
per :meth:`~chunkwise.retrieval.index.Index.add`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..document import CHUNK_FIELD_TABLE, Chunk
from ..store.base import Hit

#: the chunk's fields a result answers for itself (``hit.text``, ``hit.page_start``...): every field of
#: :data:`~chunkwise.document.CHUNK_FIELD_TABLE` under its own name (``index`` is ``chunk_index`` here,
#: the field's key)
_CHUNK_ATTRS = tuple(spec.name for spec in CHUNK_FIELD_TABLE if spec.key == spec.name)
#: the result's own fields: rank and score first, then the chunk's, then these
_HEAD = ("rank", "score")
_TAIL = ("metadata", "vector_rank", "bm25_rank")
#: what :meth:`SearchResult.to_dict` writes, in order: rank and score, every chunk field (under its key),
#: then the row's metadata and where each retriever ranked the hit
RESULT_FIELDS = (*_HEAD, *(spec.key for spec in CHUNK_FIELD_TABLE), *_TAIL)


@dataclass
class SearchResult:
    """One retrieved :class:`~chunkwise.document.Chunk`. ``score`` is the cosine similarity, or the fusion
    score with ``hybrid=True`` (then ``vector_rank``/``bm25_rank`` say where each retriever placed it,
    ``None`` = not in its list). The chunk's fields read through: ``hit.text``, ``hit.page_start``,
    ``hit.chunk_index`` (the chunk's ``index``)..."""

    rank: int
    score: float
    chunk: Chunk
    metadata: dict[str, Any] = field(default_factory=dict)
    vector_rank: int | None = None
    bm25_rank: int | None = None

    @classmethod
    def from_hit(cls, rank: int, score: float, hit: Hit, **extra: Any) -> SearchResult:
        assert hit.chunk is not None, "results are made from full hits, never from an ids_only search"
        return cls(rank=rank, score=float(score), chunk=hit.chunk, metadata=dict(hit.metadata), **extra)

    @property
    def chunk_index(self) -> int:
        return self.chunk.index

    def __getattr__(self, name: str) -> Any:
        if name in _CHUNK_ATTRS and "chunk" in self.__dict__:
            return getattr(self.__dict__["chunk"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": self.rank, "score": self.score}
        out.update((spec.key, spec.copy(getattr(self.chunk, spec.name))) for spec in CHUNK_FIELD_TABLE)
        out.update(metadata=dict(self.metadata), vector_rank=self.vector_rank, bm25_rank=self.bm25_rank)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """The result :meth:`to_dict` wrote (a server's ``/search`` JSON)."""
        return cls(
            rank=data["rank"],
            score=data["score"],
            chunk=Chunk.from_dict(data, by_column=True),
            metadata=data.get("metadata") or {},
            vector_rank=data.get("vector_rank"),
            bm25_rank=data.get("bm25_rank"),
        )


@dataclass
class IndexReport:
    """What one :meth:`Index.add` did. ``timings`` splits ``seconds`` into setup (connecting, creating or
    checking the collection, reading the document list), load, chunk, context, embed and write (the rest
    is pruning and the final count)."""

    documents: int = 0
    indexed: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    pruned: int = 0
    total_chunks: int = 0
    seconds: float = 0.0
    #: ``(source, message)``: documents indexed with a problem (undecodable bytes, failed llm context...)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    #: documents written without everything asked for (e.g. failed llm context); retried by the next run
    incomplete: int = 0
    timings: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("setup", "load", "chunk", "context", "embed", "write"), 0.0)
    )
    #: one-line notes for the user (e.g. the server has no BM25, so hybrid search runs client-side)
    notes: list[str] = field(default_factory=list)
    #: one line when documents look like a language the embedder does not read (embeddings.language)
    language_warning: str | None = None

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        parts = [
            f"{self.documents} documents ({self.indexed} indexed, {self.skipped} unchanged and skipped), "
            f"{len(self.failed)} failed"
        ]
        if self.pruned:
            parts.append(f"{self.pruned} pruned")
        if self.incomplete:
            parts.append(f"{self.incomplete} incomplete (retried next run)")
        parts.append(
            f"{self.chunks} chunks written ({self.embedded} embedded, {self.reused} pooled), "
            f"{self.removed} stale removed"
        )
        parts.append(f"{self.seconds:.1f} s, {self.chunks_per_second:.1f} chunks/s")
        parts.append(f"collection holds {self.total_chunks} chunks")
        return "; ".join(parts)


__all__ = ["RESULT_FIELDS", "IndexReport", "SearchResult"]
