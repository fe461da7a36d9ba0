"""The Milvus schema of an index: the chunk collection's columns (from the chunk field table) and the state
collection's.

The chunk collection's columns are the row mapping's (:mod:`chunkwise.store.rows`: one column per chunk
field of :data:`~chunkwise.document.CHUNK_FIELD_TABLE` but the video ones, then :data:`~.rows.ROW_COLUMNS`).
A chunk field's column type is read off its row of the table: its kind (:data:`KIND_TYPES`), its byte and
item caps, whether it is the primary key, and its null value (:data:`NULL_SENTINELS`); this module holds
only how a kind maps to a Milvus type and the types of the row's own columns (:data:`ROW_COLUMN_TYPES`).
Schema facts the server decides (nullable fields, BM25 functions) come in as arguments.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..document import FieldSpec
from .rows import CHUNK_COLUMNS, COLUMN_SPECS, MAX_VARCHAR, ROW_COLUMNS, truncate_utf8

#: the chunk columns of schema version 2 (version 2 added source_start/source_end)
SCHEMA_2_COLUMNS = frozenset(
    ("id", "doc_id", "source", "chunk_index", "start", "end", "text", "token_count", "page_start", "page_end")
    + ("section", "strategy", "start_time", "end_time", "speakers", "context", "source_start", "source_end")
)
#: the schema version, recorded in the config row (adding to an index of another version is refused, since
#: its collection lacks a column): each chunk column added to the field table since version 2 counts one,
#: so a new chunk field makes a new version by itself; raise the 2 for any other incompatible change
SCHEMA_VERSION = 2 + len(set(CHUNK_COLUMNS) - SCHEMA_2_COLUMNS)
CONFIG_ID = "__config__"
#: collection property of the state collection: the fingerprint of the configuration it was created for
CONFIG_PROPERTY = "chunkwise.config"
STATE_SUFFIX = "__state"
#: the Milvus ``DataType`` of each kind of chunk field (``path``: the headings joined into one string)
KIND_TYPES = {"str": "VARCHAR", "path": "VARCHAR", "int": "INT64", "float": "DOUBLE", "strs": "ARRAY", "ints": "ARRAY"}
#: the element type of a list kind's ARRAY column
ELEMENT_TYPES = {"strs": "VARCHAR", "ints": "INT64"}
#: the columns a row has beside the chunk fields (:data:`~.rows.ROW_COLUMNS`): a ``DataType`` name and
#: its ``add_field`` arguments
ROW_COLUMN_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    "indexed_text": ("VARCHAR", {"max_length": MAX_VARCHAR}),
    "embedder": ("VARCHAR", {"max_length": 512}),
    "content_hash": ("VARCHAR", {"max_length": 64}),
    "metadata": ("JSON", {}),
    "vector": ("FLOAT_VECTOR", {}),
}


def field_type(spec: FieldSpec) -> tuple[str, dict[str, Any]]:
    """A chunk field's column: its ``DataType`` name and ``add_field`` arguments, from its row of the table."""
    dtype = KIND_TYPES[spec.kind]
    params: dict[str, Any] = {"is_primary": True} if spec.primary else {}
    if dtype == "ARRAY":
        if spec.max_items is None:
            raise TypeError(f"chunk field {spec.name!r} is a list: give its max_items in the field table")
        params.update(element_type=ELEMENT_TYPES[spec.kind], max_capacity=spec.max_items)
        if ELEMENT_TYPES[spec.kind] == "VARCHAR":
            params["max_length"] = spec.max_bytes or MAX_VARCHAR
    elif dtype == "VARCHAR":
        if spec.max_bytes is None:
            raise TypeError(f"chunk field {spec.name!r} is a string: give its max_bytes in the field table")
        params["max_length"] = spec.max_bytes
    return dtype, params


#: the type of every chunk collection column: a ``DataType`` name and its ``add_field`` arguments
COLUMN_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    **{spec.key: field_type(spec) for spec in COLUMN_SPECS},
    **ROW_COLUMN_TYPES,
}
#: the nullable columns, and how a server without nullable fields stores ``None`` there (real values are
#: never negative or empty)
NULL_SENTINELS = {spec.key: spec.null for spec in COLUMN_SPECS if spec.null is not None}
#: scalar columns returned with every search hit and fetch: the chunk fields and the row's provenance
OUTPUT_FIELDS = [*CHUNK_COLUMNS, *(c for c in ROW_COLUMNS if c not in ("indexed_text", "vector"))]


def column_types(dim: int, bm25: bool, nullable: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """``(column, DataType name, add_field arguments)`` of the chunk collection, in row order."""
    out = []
    for spec in COLUMN_SPECS:
        dtype, params = field_type(spec)
        if spec.null is not None:
            params["nullable"] = nullable
        out.append((spec.key, dtype, params))
    for name in ROW_COLUMNS:
        dtype, params = ROW_COLUMN_TYPES[name]
        params = dict(params)
        if name == "indexed_text":
            params["enable_analyzer"] = bm25
        if name == "vector":
            params["dim"] = dim
        out.append((name, dtype, params))
    return out


@dataclass
class CollectionSpec:
    """A collection's schema in neither client's types: ``(column, DataType name, add_field arguments)``
    fields and the BM25 functions ``(name, input column, output column)``. The pymilvus client gets
    :meth:`to_pymilvus` (a server), the in-process one :meth:`to_lite` (Milvus Lite,
    :class:`chunkwise.store.lite.LiteClient`), so a Milvus Lite index is created without importing pymilvus
    and is stored as pymilvus would have made it (tests/test_store_lite_client.py compares the two)."""

    fields: list[tuple[str, str, dict[str, Any]]]
    description: str = ""
    bm25: list[tuple[str, str, str]] = field(default_factory=list)

    def to_pymilvus(self):
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=self.description)
        for name, dtype, params in self.fields:
            params = dict(params)
            if "element_type" in params:
                params["element_type"] = DataType[params["element_type"]]
            s.add_field(name, DataType[dtype], **params)
        for name, source, target in self.bm25:
            s.add_function(
                Function(
                    name=name, function_type=FunctionType.BM25, input_field_names=[source], output_field_names=[target]
                )
            )
        return s

    def to_lite(self):
        from milvus_lite.schema.types import CollectionSchema, DataType, FieldSchema, Function, FunctionType

        outputs = {target for _, _, target in self.bm25}
        fields = []
        for name, dtype, params in self.fields:
            params = dict(params)
            if "element_type" in params:
                params["element_type"] = DataType[params["element_type"]]
                params.pop("max_length", None)  # Milvus Lite keeps no element length from pymilvus either
            fields.append(FieldSchema(name, DataType[dtype], is_function_output=name in outputs, **params))
        functions = [Function(name, FunctionType.BM25, [source], [target]) for name, source, target in self.bm25]
        return CollectionSchema(fields=fields, enable_dynamic_field=False, functions=functions)


def chunk_schema(dim: int, bm25: bool, nullable: bool = True) -> CollectionSpec:
    """The chunk collection's schema; with ``bm25``, the ``sparse`` field Milvus fills from ``indexed_text``."""
    fields = column_types(dim, bm25, nullable)
    if not bm25:
        return CollectionSpec(fields, "chunkwise chunks")
    return CollectionSpec(
        [*fields, ("sparse", "SPARSE_FLOAT_VECTOR", {})], "chunkwise chunks", [("bm25", "indexed_text", "sparse")]
    )


def state_schema(description: str = "") -> CollectionSpec:
    """The state collection: one config row and one marker row per completely indexed document."""
    return CollectionSpec(
        [
            ("id", "VARCHAR", {"is_primary": True, "max_length": 128}),
            ("kind", "VARCHAR", {"max_length": 16}),
            ("source", "VARCHAR", {"max_length": MAX_VARCHAR}),
            ("content_hash", "VARCHAR", {"max_length": 64}),
            ("chunks", "INT64", {}),
            ("data", "JSON", {}),
            # Milvus wants a vector field in every collection; this one is never searched.
            ("placeholder", "FLOAT_VECTOR", {"dim": 2}),
        ],
        description or "chunkwise index state",
    )


#: an index's indexes, in neither client's types (``field_name``, ``index_type``, ``metric_type``)
IndexSpec = list[dict[str, str]]


def state_index() -> IndexSpec:
    return [{"field_name": "placeholder", "index_type": "FLAT", "metric_type": "L2"}]


def chunk_index_params(bm25: bool) -> IndexSpec:
    """The chunk collection's indexes: cosine over the vectors, and BM25 over ``sparse`` where it exists."""
    out = [{"field_name": "vector", "index_type": "AUTOINDEX", "metric_type": "COSINE"}]
    if bm25:
        out.append({"field_name": "sparse", "index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25"})
    return out


def pymilvus_index_params(spec: IndexSpec):
    """``spec`` as pymilvus's ``IndexParams`` (for a server)."""
    from pymilvus import MilvusClient

    ip = MilvusClient.prepare_index_params()
    for index in spec:
        ip.add_index(**index)
    return ip


def state_row(id_: str, kind: str, source: str, content_hash: str, chunks: int, data: dict) -> dict:
    return {
        "id": id_,
        "kind": kind,
        "source": truncate_utf8(source, MAX_VARCHAR),
        "content_hash": content_hash,
        "chunks": int(chunks),
        "data": data,
        "placeholder": [0.0, 0.0],
    }


def encode_nulls(row: dict) -> dict:
    """A row as a collection without nullable fields stores it: ``None`` becomes a sentinel."""
    return {**row, **{k: v for k, v in NULL_SENTINELS.items() if row.get(k) is None}}


def decode_nulls(row: dict) -> dict:
    """The inverse of :func:`encode_nulls` on a row (or hit entity) read back, in place."""
    for k, v in NULL_SENTINELS.items():
        if k in row and row[k] == v:
            row[k] = None
    return row


def stable_config_hash(config: dict[str, Any]) -> str:
    """A fingerprint of a recorded configuration (key order does not matter)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:32]


__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_2_COLUMNS",
    "CONFIG_ID",
    "CONFIG_PROPERTY",
    "STATE_SUFFIX",
    "COLUMN_TYPES",
    "ROW_COLUMN_TYPES",
    "KIND_TYPES",
    "ELEMENT_TYPES",
    "field_type",
    "NULL_SENTINELS",
    "OUTPUT_FIELDS",
    "column_types",
    "CollectionSpec",
    "IndexSpec",
    "pymilvus_index_params",
    "chunk_schema",
    "chunk_index_params",
    "state_schema",
    "state_index",
    "state_row",
    "encode_nulls",
    "decode_nulls",
    "stable_config_hash",
]
