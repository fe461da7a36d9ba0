"""Chunking many documents at once: one embedding stream for a folder or a corpus, then per-document cuts.

The semantic strategies embed the sentences of one document per call; on thousands of short documents
that is thousands of tiny, padded batches. :func:`chunk_documents` hands whole groups of documents to a
strategy's ``chunk_many`` (:meth:`chunkwise.strategies.embedding.EmbeddingStrategy.chunk_many`), which plans the
units of every document, embeds all distinct unit texts in one length-sorted stream and then decides each
document on its own, so the result is the same as chunking document by document. Strategies without an
embedding pass are simply called per document.

Groups are bounded (``group_chars`` characters of text) so a folder of any size streams with bounded
memory and results come out in input order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..document import Chunk, Document
from ..errors import ChunkwiseError

#: characters of document text gathered before one embedding stream runs (about 40k sentences: ~60 MB of MiniLM vectors)
GROUP_CHARS = 5_000_000


def chunk_many(
    strategy, docs: Sequence[Document], *, progress: bool = False, return_exceptions: bool = False
) -> list[list[Chunk] | ChunkwiseError]:
    """``[strategy.chunk(d) for d in docs]``, with one embedding stream when the strategy has one.

    ``return_exceptions``: a document that fails gets its :class:`~chunkwise.errors.ChunkwiseError` in its
    slot and the others are still chunked.
    """
    if hasattr(strategy, "chunk_many"):
        return strategy.chunk_many(docs, progress=progress, return_exceptions=return_exceptions)
    out: list[list[Chunk] | ChunkwiseError] = []
    for doc in docs:
        try:
            out.append(strategy.chunk(doc))
        except ChunkwiseError as exc:
            if not return_exceptions:
                raise
            out.append(exc)
    return out


def chunk_documents(
    strategy, items: Iterable[tuple[str, Any]], *, progress: bool = False, group_chars: int = GROUP_CHARS
) -> Iterator[tuple[str, Any, list[Chunk] | ChunkwiseError | None]]:
    """``(source, item, chunks or exception)`` for every ``(source, item)`` of ``items``, in order.

    ``item`` is what a loader yields: a :class:`Document` is chunked (in groups of up to ``group_chars``
    characters, see :func:`chunk_many`); anything else (an :class:`~chunkwise.errors.InputError`, a video
    with ready-made chunks) is passed through with ``None`` for the caller to handle.
    """
    batched = hasattr(strategy, "chunk_many")
    group: list[tuple[str, Any]] = []
    size = 0

    def flush() -> Iterator[tuple[str, Any, list[Chunk] | ChunkwiseError | None]]:
        docs = [it for _, it in group if _is_text_doc(it)]
        results = iter(chunk_many(strategy, docs, progress=progress, return_exceptions=True))
        for source, it in group:
            yield source, it, (next(results) if _is_text_doc(it) else None)

    for source, item in items:
        if not batched:
            if _is_text_doc(item):
                try:
                    yield source, item, strategy.chunk(item)
                except ChunkwiseError as exc:
                    yield source, item, exc
            else:
                yield source, item, None
            continue
        group.append((source, item))
        size += len(item.text) if _is_text_doc(item) else 0
        if size >= group_chars:
            yield from flush()
            group, size = [], 0
    if group:
        yield from flush()


def _is_text_doc(item: object) -> bool:
    """A document the strategy chunks (a video document brings its own chunks)."""
    return isinstance(item, Document) and getattr(item, "chunks", None) is None


__all__ = ["chunk_many", "chunk_documents", "GROUP_CHARS"]
