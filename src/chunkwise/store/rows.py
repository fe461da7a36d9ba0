"""How a :class:`~chunkwise.document.Chunk` is stored in Milvus: one typed row per chunk, and back.

The row mapping lives beside the schema (:mod:`chunkwise.store.milvus`) so retrieval never sees a row:
``Index`` hands a store documents, chunks and vectors, and gets chunks back. Milvus-specific limits are
applied here (VARCHAR byte caps, the section path joined with :data:`SECTION_SEPARATOR` for display and
``where`` filters); a video clip's frames, track IDs and classes travel in the row's ``metadata["video"]``.

A joined path does not always split back: a heading may itself contain ``" > "`` (``Input > Output``), or
the path may be over the column's byte cap. Such a row also keeps the exact list in
``metadata["section_path"]``, which reading prefers, so every chunk comes back with the section it had.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..document import Chunk, Document
from ..errors import ChunkwiseError

#: Milvus VARCHAR limit (bytes)
MAX_VARCHAR = 65535
SECTION_SEPARATOR = " > "
#: bytes of the ``section`` column
SECTION_BYTES = 8192
#: row metadata key of the exact section path, when the joined column cannot give it back
SECTION_PATH_KEY = "section_path"


def truncate_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (what a JSON field stores; unknown objects become their ``str``)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def video_meta(meta: dict[str, Any], c: Chunk) -> dict[str, Any]:
    """A video clip's row metadata: the document's plus its frames, track IDs and classes."""
    return {
        **meta,
        "video": {
            "start_frame": c.start_frame,
            "end_frame": c.end_frame,
            "track_ids": list(c.track_ids or []),
            "classes": list(c.classes or []),
        },
    }


def section_column(section: list[str]) -> tuple[str, list[str] | None]:
    """The ``section`` column's value, and the exact path to keep beside it when the column loses it."""
    joined = truncate_utf8(SECTION_SEPARATOR.join(section), SECTION_BYTES)
    back = joined.split(SECTION_SEPARATOR) if joined else []
    return joined, (None if back == list(section) else list(section))


def chunk_rows(doc: Document, chunks: list[Chunk], vectors: np.ndarray, embedder_id: str) -> list[dict]:
    """The rows of one document's chunks; a non-finite vector is refused (Milvus would store garbage)."""
    meta = jsonable({"document": doc.metadata, "title": doc.title})
    content_hash = doc.content_hash
    rows = []
    for c, v in zip(chunks, vectors):
        if not np.all(np.isfinite(v)):
            raise ChunkwiseError(f"embedder returned a non-finite vector for chunk {c.index}", source=doc.source)
        section, exact_path = section_column(c.section)
        row_meta = meta if c.track_ids is None else video_meta(meta, c)
        if exact_path is not None:
            row_meta = {**row_meta, SECTION_PATH_KEY: jsonable(exact_path)}
        rows.append(
            {
                "id": c.id,
                "doc_id": c.doc_id,
                "source": truncate_utf8(c.source, MAX_VARCHAR),
                "text": c.text,
                "context": truncate_utf8(c.context, MAX_VARCHAR) if c.context else None,
                "indexed_text": truncate_utf8(c.embed_text, MAX_VARCHAR),
                "start": c.start,
                "end": c.end,
                "chunk_index": c.index,
                "token_count": c.token_count,
                "page_start": c.page_start,
                "page_end": c.page_end,
                "section": section,
                "start_time": c.start_time,
                "end_time": c.end_time,
                "speakers": [truncate_utf8(s, 256) for s in c.speakers[:64]],
                "strategy": c.strategy,
                "embedder": embedder_id,
                "content_hash": content_hash,
                "metadata": row_meta,
                "vector": v.tolist(),
                "source_start": c.source_start,
                "source_end": c.source_end,
            }
        )
    return rows


def chunk_from_row(e: dict[str, Any]) -> tuple[Chunk, dict[str, Any]]:
    """The chunk a stored row (or search hit entity) holds, and the row's metadata."""
    metadata = dict(e.get("metadata") or {})
    exact_path = metadata.pop(SECTION_PATH_KEY, None)
    joined = e.get("section") or ""
    section = list(exact_path) if exact_path is not None else (joined.split(SECTION_SEPARATOR) if joined else [])
    video = metadata.get("video") or {}
    chunk = Chunk(
        text=e["text"],
        start=int(e["start"]),
        end=int(e["end"]),
        index=int(e["chunk_index"]),
        id=e["id"],
        doc_id=e["doc_id"],
        source=e["source"],
        token_count=int(e["token_count"]),
        strategy=e.get("strategy") or "",
        page_start=e.get("page_start"),
        page_end=e.get("page_end"),
        section=section,
        start_time=e.get("start_time"),
        end_time=e.get("end_time"),
        speakers=list(e.get("speakers") or []),
        context=e.get("context"),
        start_frame=video.get("start_frame"),
        end_frame=video.get("end_frame"),
        track_ids=video.get("track_ids") if video else None,
        classes=video.get("classes") if video else None,
        source_start=e.get("source_start"),
        source_end=e.get("source_end"),
    )
    return chunk, metadata


__all__ = [
    "chunk_rows",
    "chunk_from_row",
    "jsonable",
    "video_meta",
    "truncate_utf8",
    "section_column",
    "MAX_VARCHAR",
    "SECTION_SEPARATOR",
    "SECTION_BYTES",
    "SECTION_PATH_KEY",
]
