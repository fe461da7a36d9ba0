"""How a :class:`~chunkwise.document.Chunk` is stored in Milvus: one typed row per chunk, and back.

The row mapping lives beside the schema (:mod:`chunkwise.store.milvus`) so retrieval never sees a row:
``Index`` hands a store documents, chunks and vectors, and gets chunks back. Milvus-specific limits are
applied here (VARCHAR byte caps, the section path joined with :data:`SECTION_SEPARATOR` for display and
``where`` filters); a video clip's frames, track IDs and classes travel in the row's ``metadata["video"]``.

A joined path does not always split back: a heading may itself contain ``" > "`` (``Input > Output``), or
the path may be over the column's byte cap. Such a row also keeps the exact list in
``metadata["section_path"]``, which reading prefers, so every chunk comes back with the section it had.

How each field is stored is read off the chunk field table :data:`~chunkwise.document.CHUNK_FIELD_TABLE`:
its column (:attr:`~chunkwise.document.FieldSpec.key`), or the video metadata; whether it is cut to its
byte cap; its null value; how a missing column reads. The row adds :data:`ROW_COLUMNS`. A new chunk field is
therefore stored and read back without a line here, and its column typed by
:mod:`chunkwise.store.milvus_schema` from its kind.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..document import CHUNK_FIELD_TABLE, MAX_VARCHAR, PATH_SEPARATOR, Chunk, Document, FieldSpec
from ..errors import ChunkwiseError

SECTION_SEPARATOR = PATH_SEPARATOR
#: bytes of the ``section`` column
SECTION_BYTES = next(f.max_bytes for f in CHUNK_FIELD_TABLE if f.name == "section")
#: row metadata key of the exact section path, when the joined column cannot give it back
SECTION_PATH_KEY = "section_path"
#: the chunk fields with a column of their own, in table order
COLUMN_SPECS = tuple(f for f in CHUNK_FIELD_TABLE if not f.video)
#: the chunk fields kept in the row's ``metadata["video"]`` (only clips have them)
VIDEO_SPECS = tuple(f for f in CHUNK_FIELD_TABLE if f.video)
#: the column of a chunk field whose name differs from the field's
COLUMN_NAMES = {f.name: f.key for f in COLUMN_SPECS if f.key != f.name}
VIDEO_FIELDS = tuple(f.name for f in VIDEO_SPECS)
#: chunk fields with a column of their own, in table order
COLUMN_FIELDS = tuple(f.name for f in COLUMN_SPECS)
#: the columns of the chunk fields, in the same order
CHUNK_COLUMNS = tuple(f.key for f in COLUMN_SPECS)
#: columns a row has beside the chunk fields: what BM25 indexes, provenance of the row, the vector
ROW_COLUMNS = ("indexed_text", "embedder", "content_hash", "metadata", "vector")


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
    video = {f.name: (list(getattr(c, f.name) or []) if f.is_list else getattr(c, f.name)) for f in VIDEO_SPECS}
    return {**meta, "video": video}


def column_value(spec: FieldSpec, value: Any) -> Any:
    """A field's value as its column stores it (not the ``path`` kind: :func:`section_column`): ``None``
    for the field's null value, cut to its byte and item caps where the table says so."""
    if spec.nullable and value == spec.null:
        return None
    if not spec.clip or value is None:
        return value
    if spec.kind == "strs":
        return [truncate_utf8(s, spec.max_bytes or MAX_VARCHAR) for s in value[: spec.max_items]]
    return truncate_utf8(value, spec.max_bytes or MAX_VARCHAR)


def read_column(spec: FieldSpec, e: dict[str, Any]) -> Any:
    """A field's value from a stored row's column (not the ``path`` kind); a column an older collection
    lacks reads as the field's empty value (a required one is a ``KeyError``)."""
    value = e[spec.key] if spec.required else e.get(spec.key)
    if value is None:
        return spec.empty()
    if spec.kind == "int":
        return int(value)
    if spec.is_list:
        return list(value)
    return value if value or spec.nullable else spec.empty()


def path_key(spec: FieldSpec) -> str:
    """The row metadata key of a ``path`` field's exact list (``section_path``)."""
    return f"{spec.name}_path"


def section_column(section: list[str], max_bytes: int | None = SECTION_BYTES) -> tuple[str, list[str] | None]:
    """A heading path's column value (joined, cut to ``max_bytes``), and the exact path to keep beside it
    when the column loses it."""
    joined = truncate_utf8(PATH_SEPARATOR.join(section), max_bytes or MAX_VARCHAR)
    back = joined.split(PATH_SEPARATOR) if joined else []
    return joined, (None if back == list(section) else list(section))


def chunk_rows(doc: Document, chunks: list[Chunk], vectors: np.ndarray, embedder_id: str) -> list[dict]:
    """The rows of one document's chunks; a non-finite vector is refused (Milvus would store garbage)."""
    meta = jsonable({"document": doc.metadata, "title": doc.title})
    content_hash = doc.content_hash
    rows = []
    for c, v in zip(chunks, vectors):
        if not np.all(np.isfinite(v)):
            raise ChunkwiseError(f"embedder returned a non-finite vector for chunk {c.index}", source=doc.source)
        row_meta = meta if c.track_ids is None else video_meta(meta, c)
        row: dict[str, Any] = {}
        for spec in COLUMN_SPECS:
            if spec.kind == "path":
                row[spec.key], exact_path = section_column(getattr(c, spec.name), spec.max_bytes)
                if exact_path is not None:
                    row_meta = {**row_meta, path_key(spec): jsonable(exact_path)}
            else:
                row[spec.key] = column_value(spec, getattr(c, spec.name))
        row.update(
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
    video = metadata.get("video") or {}
    values: dict[str, Any] = {f.name: video.get(f.name) if video else None for f in VIDEO_SPECS}
    for spec in COLUMN_SPECS:
        if spec.kind == "path":
            exact_path = metadata.pop(path_key(spec), None)
            joined = e.get(spec.key) or ""
            values[spec.name] = (
                list(exact_path) if exact_path is not None else (joined.split(PATH_SEPARATOR) if joined else [])
            )
        else:
            values[spec.name] = read_column(spec, e)
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
    "COLUMN_SPECS",
    "VIDEO_SPECS",
    "column_value",
    "read_column",
    "path_key",
    "CHUNK_COLUMNS",
    "ROW_COLUMNS",
]
