"""The Milvus layout derived from the chunk field table is the layout indexes already have.

Rows, the chunk collection's schema and the fields every hit returns are derived from the chunk field table
(``store/rows.py``, ``store/milvus_schema.py``). The tables below are the layout as it was written by hand
before; an index made before the derivation must read and write exactly as it did.
"""

from __future__ import annotations

import numpy as np
import pytest

import chunkwise.store.milvus_schema as milvus_schema
from chunkwise.document import CHUNK_FIELDS, Chunk, Document, FieldSpec
from chunkwise.store.rows import CHUNK_COLUMNS, COLUMN_FIELDS, ROW_COLUMNS, VIDEO_FIELDS, chunk_rows

#: (column, DataType name, add_field arguments) of the chunk collection as written by hand before
HAND_WRITTEN = {
    "id": ("VARCHAR", {"is_primary": True, "max_length": 64}),
    "doc_id": ("VARCHAR", {"max_length": 64}),
    "source": ("VARCHAR", {"max_length": 65535}),
    "text": ("VARCHAR", {"max_length": 65535}),
    "context": ("VARCHAR", {"max_length": 65535, "nullable": True}),
    "indexed_text": ("VARCHAR", {"max_length": 65535, "enable_analyzer": True}),
    "start": ("INT64", {}),
    "end": ("INT64", {}),
    "chunk_index": ("INT64", {}),
    "token_count": ("INT64", {}),
    "page_start": ("INT64", {"nullable": True}),
    "page_end": ("INT64", {"nullable": True}),
    "section": ("VARCHAR", {"max_length": 8192}),
    "start_time": ("DOUBLE", {"nullable": True}),
    "end_time": ("DOUBLE", {"nullable": True}),
    "speakers": ("ARRAY", {"element_type": "VARCHAR", "max_capacity": 64, "max_length": 256}),
    "strategy": ("VARCHAR", {"max_length": 64}),
    "embedder": ("VARCHAR", {"max_length": 512}),
    "content_hash": ("VARCHAR", {"max_length": 64}),
    "metadata": ("JSON", {}),
    "vector": ("FLOAT_VECTOR", {"dim": 8}),
    "source_start": ("INT64", {"nullable": True}),
    "source_end": ("INT64", {"nullable": True}),
}
HAND_OUTPUT_FIELDS = {c for c in HAND_WRITTEN if c not in ("indexed_text", "vector")}


def test_every_chunk_field_is_a_column_or_video_metadata():
    assert set(COLUMN_FIELDS) | set(VIDEO_FIELDS) == set(CHUNK_FIELDS)
    assert not set(COLUMN_FIELDS) & set(VIDEO_FIELDS)
    assert "chunk_index" in CHUNK_COLUMNS and "index" not in CHUNK_COLUMNS


def test_the_derived_schema_is_the_hand_written_one():
    derived = {name: (dtype, params) for name, dtype, params in milvus_schema.column_types(8, True, True)}
    assert derived == HAND_WRITTEN
    assert milvus_schema.SCHEMA_VERSION == 2  # the table as it is: indexes made before are written into
    assert milvus_schema.NULL_SENTINELS == {
        "context": "",
        "page_start": -1,
        "page_end": -1,
        "start_time": -1.0,
        "end_time": -1.0,
        "source_start": -1,
        "source_end": -1,
    }
    assert set(milvus_schema.OUTPUT_FIELDS) == HAND_OUTPUT_FIELDS and len(milvus_schema.OUTPUT_FIELDS) == 21
    off = {name: params for name, _, params in milvus_schema.column_types(8, False, False)}
    assert off["indexed_text"]["enable_analyzer"] is False
    assert all(off[c]["nullable"] is False for c in milvus_schema.NULL_SENTINELS)


@pytest.mark.parametrize("build", ["to_pymilvus", "to_lite"])
def test_both_clients_schemas_have_every_column_and_the_bm25_function(build):
    fields = {f.name: f for f in getattr(milvus_schema.chunk_schema(8, True), build)().fields}
    assert set(fields) == set(HAND_WRITTEN) | {"sparse"}
    assert fields["id"].is_primary and fields["page_start"].nullable and not fields["text"].nullable
    without = {f.name for f in getattr(milvus_schema.chunk_schema(8, False), build)().fields}
    assert without == set(HAND_WRITTEN)


@pytest.mark.parametrize(
    ("spec", "missing"),
    [(FieldSpec("lang", "str"), "max_bytes"), (FieldSpec("tags", "strs", max_bytes=32), "max_items")],
)
def test_a_chunk_field_without_its_column_caps_is_refused(spec, missing):
    with pytest.raises(TypeError, match=f"'{spec.name}'.*{missing}"):
        milvus_schema.field_type(spec)


def test_a_row_has_exactly_the_columns():
    doc = Document("Bees make honey.", source="bees.txt")
    chunk = Chunk("Bees make honey.", 0, 16, 0, "c0", doc.id, "bees.txt", 3, "fixed", context="")
    (row,) = chunk_rows(doc, [chunk], np.ones((1, 8), dtype=np.float32), "fake")
    assert set(row) == set(CHUNK_COLUMNS) | set(ROW_COLUMNS) == set(HAND_WRITTEN)
    assert row["chunk_index"] == 0 and row["context"] is None and row["section"] == "" and row["embedder"] == "fake"
