"""How a :class:`~chunkwise.document.Chunk` is stored in Milvus: one typed row per chunk, and back.

The row mapping lives beside the schema (:mod:`chunkwise.store.milvus`) so retrieval never sees a row:
``Index`` hands a store documents, chunks and vectors, and gets chunks back. Milvus-specific limits are
applied here (VARCHAR byte caps, the section path joined with :data:`SECTION_SEPARATOR` for display and
``where`` filters); a video clip's frames, track IDs and classes travel in the row's ``metadata["video"]``.

A joined path does not always split back: a heading may itself contain ``" > "`` (``Input > Output``), or
the path may be over the column's byte cap. Such a row also keeps the exact list in
``metadata["section_path"]``, which reading prefers, so every chunk comes back with the section it had.

Which fields become columns is derived from the chunk field table :data:`~chunkwise.document.CHUNK_FIELDS`:
every chunk field has a column of its name (:data:`COLUMN_NAMES` lists the one renamed) except the video
fields (:data:`VIDEO_FIELDS`), and the row adds :data:`ROW_COLUMNS`. A new chunk field is therefore stored
and read back without a line here; the schema (:mod:`chunkwise.store.milvus_schema`) refuses to build until
the field's column type is declared.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..document import CHUNK_FIELDS, Chunk, Document
from ..errors import ChunkwiseError

#: Milvus VARCHAR limit (bytes)
MAX_VARCHAR = 65535
SECTION_SEPARATOR = " > "
#: bytes of the ``section`` column
SECTION_BYTES = 8192
#: row metadata key of the exact section path, when the joined column cannot give it back
SECTION_PATH_KEY = "section_path"
#: the column of a chunk field whose name differs from the field's
COLUMN_NAMES = {"index": "chunk_index"}
#: chunk fields kept in the row's ``metadata["video"]`` instead of columns (only clips have them)
VIDEO_FIELDS = ("start_frame", "end_frame", "track_ids", "classes")
#: chunk fields with a column of their own, in :data:`CHUNK_FIELDS` order
COLUMN_FIELDS = tuple(f for f in CHUNK_FIELDS if f not in VIDEO_FIELDS)
#: the columns of the chunk fields, in the same order
CHUNK_COLUMNS = tuple(COLUMN_NAMES.get(f, f) for f in COLUMN_FIELDS)
#: columns a row has beside the chunk fields: what BM25 indexes, provenance of the row, the vector
ROW_COLUMNS = ("indexed_text", "embedder", "content_hash", "metadata", "vector")
#: chunk fields a row always has (every other column may be missing in an older collection)
_REQUIRED = ("id", "doc_id", "source", "text")


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
    video = {f: getattr(c, f) for f in VIDEO_FIELDS}
    video.update(track_ids=list(c.track_ids or []), classes=list(c.classes or []))
    return {**meta, "video": video}


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
        row = {COLUMN_NAMES.get(f, f): getattr(c, f) for f in COLUMN_FIELDS}
        row.update(
            source=truncate_utf8(c.source, MAX_VARCHAR),
            context=truncate_utf8(c.context, MAX_VARCHAR) if c.context else None,
            section=section,
            speakers=[truncate_utf8(s, 256) for s in c.speakers[:64]],
            indexed_text=truncate_utf8(c.embed_text, MAX_VARCHAR),
            embedder=embedder_id,
            content_hash=content_hash,
            metadata=row_meta,
            vector=v.tolist(),
        )
        rows.append(row)
    return rows


def chunk_from_row(e: dict[str, Any]) -> tuple[Chunk, dict[str, Any]]:
    """The chunk a stored row (or search hit entity) holds, and the row's metadata."""
    metadata = dict(e.get("metadata") or {})
    exact_path = metadata.pop(SECTION_PATH_KEY, None)
    joined = e.get("section") or ""
    section = list(exact_path) if exact_path is not None else (joined.split(SECTION_SEPARATOR) if joined else [])
    video = metadata.get("video") or {}
    values: dict[str, Any] = {f: e.get(COLUMN_NAMES.get(f, f)) for f in COLUMN_FIELDS}
    values.update({f: e[f] for f in _REQUIRED})
    values.update({f: int(e[COLUMN_NAMES.get(f, f)]) for f in ("start", "end", "index", "token_count")})
    values.update(strategy=e.get("strategy") or "", section=section, speakers=list(e.get("speakers") or []))
    values.update(start_frame=video.get("start_frame"), end_frame=video.get("end_frame"))
    values.update(track_ids=video.get("track_ids") if video else None, classes=video.get("classes") if video else None)
    chunk = Chunk(**values)
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
    "COLUMN_NAMES",
    "VIDEO_FIELDS",
    "COLUMN_FIELDS",
    "CHUNK_COLUMNS",
    "ROW_COLUMNS",
]
