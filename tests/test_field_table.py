"""Adding a chunk field is one row of the chunk field table (``CHUNK_FIELD_TABLE`` in ``document.py``).

The main test edits nothing but that table: it inserts a row into the source of ``document.py`` and runs a
fresh interpreter on the edited module, where the new field must be a ``Chunk`` attribute, a JSONL key, a
typed Milvus column, a stored and read-back value (Milvus Lite and the in-memory store), a search result's
JSON key that reads back, a filterable field and adapter metadata.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import chunkwise.document as document
from chunkwise.document import CHUNK_FIELD_TABLE, CHUNK_FIELDS, Chunk

MARKER = "    # a new chunk field goes above this line\n"
NEW_ROW = '    FieldSpec("language", "str", max_bytes=16, null="", filter=True),\n'

#: run in a fresh interpreter, after ``chunkwise.document`` is replaced by the edited module
FLOW = """
import json
import numpy as np
from chunkwise.document import CHUNK_FIELDS, Chunk, Document
from chunkwise.integrations._shared import METADATA_KEYS, chunk_metadata
from chunkwise.retrieval.filters import build_filter
from chunkwise.retrieval.results import RESULT_FIELDS, SearchResult
from chunkwise.store import milvus_schema
from chunkwise.store.memory import MemoryStore
from chunkwise.store.milvus import MilvusStore
from chunkwise.store.rows import chunk_from_row, chunk_rows

out = {"fields": list(CHUNK_FIELDS), "result_fields": list(RESULT_FIELDS)}
doc = Document("Les abeilles font du miel.", source="abeilles.txt")
chunk = Chunk(doc.text, 0, len(doc.text), 0, "c0", doc.id, doc.source, 6, "fixed", language="fr")
plain = Chunk(doc.text, 0, len(doc.text), 1, "c1", doc.id, doc.source, 6, "fixed")
out["default"] = plain.language
out["jsonl"] = chunk.to_dict()["language"]
out["jsonl_back"] = Chunk.from_dict(json.loads(json.dumps(chunk.to_dict()))) == chunk
vec = np.ones((2, 4), dtype=np.float32) / 2
rows = chunk_rows(doc, [chunk, plain], vec, "test")
out["row"] = [r["language"] for r in rows]
out["row_back"] = [chunk_from_row(r)[0] == c for r, c in zip(rows, [chunk, plain])]
out["column"] = [c for c in milvus_schema.column_types(4, True, True) if c[0] == "language"]
out["sentinel"] = milvus_schema.encode_nulls(rows[1])["language"]
out["version"] = milvus_schema.SCHEMA_VERSION
out["filter"] = build_filter([("language", "==", "fr")])
out["metadata"] = "language" in METADATA_KEYS and chunk_metadata(chunk)["language"]
stored = {}
for name, store in (("memory", MemoryStore()), ("lite", MilvusStore(db=DB, collection="fields"))):
    store.create({"embedder": "test", "dim": 4}, dim=4)
    store.open()
    store.upsert([(doc, [chunk, plain], vec)], "test")
    store.flush()
    hits = {h.id: h for h in store.fetch(["c0", "c1"])}
    result = SearchResult.from_hit(1, 0.5, hits["c0"])
    text = json.dumps(result.to_dict())
    back = SearchResult.from_dict(json.loads(text))
    stored[name] = {
        "got": [hits["c0"].chunk.language, hits["c1"].chunk.language],
        "json": json.loads(text)["language"],
        "json_back": back.chunk == chunk and back.language == "fr",
    }
    if name == "lite":
        stored[name]["hit"] = [h.chunk.language for h in store.search_vector(vec[0], 2, 'language == "fr"')]
    store.close()
out["stored"] = stored
print(json.dumps(out))
"""


def run_with_new_row(tmp_path: Path) -> dict:
    source = Path(document.__file__).read_text(encoding="utf-8")
    assert source.count(MARKER) == 1, "the table's end marker moved: update MARKER"
    edited = tmp_path / "document.py"
    edited.write_text(source.replace(MARKER, NEW_ROW + MARKER), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("chunkwise.document", {str(edited)!r})
        module = importlib.util.module_from_spec(spec)
        sys.modules["chunkwise.document"] = module  # what every `from ..document import` now finds
        spec.loader.exec_module(module)
        DB = {str(tmp_path / "fields.db")!r}
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script + FLOW], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_new_row_of_the_field_table_flows_everywhere(tmp_path):
    out = run_with_new_row(tmp_path)
    assert out["fields"] == [*CHUNK_FIELDS, "language"]
    assert out["result_fields"][-4] == "language"  # after the other chunk fields, before metadata and ranks
    assert out["default"] is None and out["jsonl"] == "fr" and out["jsonl_back"]
    assert out["row"] == ["fr", None] and out["row_back"] == [True, True]
    assert out["column"] == [["language", "VARCHAR", {"max_length": 16, "nullable": True}]]
    assert out["sentinel"] == ""  # a server without nullable fields stores the table's null value
    assert out["version"] == 3  # a new column is a new schema: an older index is not written into
    assert out["filter"] == '(language == "fr")'
    assert out["metadata"] == "fr"
    for name in ("memory", "lite"):
        got = out["stored"][name]
        assert got["got"] == ["fr", None], name
        assert got["json"] == "fr" and got["json_back"], name
    assert out["stored"]["lite"]["hit"] == ["fr"]


def test_the_declared_chunk_attributes_are_the_table():
    """``Chunk``'s typed attributes and the table agree: the same fields, the table's empty value as the
    default, in the order JSON writes them."""
    declared = {f.name: f for f in dataclasses.fields(Chunk)}
    for spec in CHUNK_FIELD_TABLE:
        f = declared[spec.name]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            continue  # a required argument
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert default == spec.empty(), spec.name
    serialised = {f.name for f in dataclasses.fields(Chunk) if f.compare}
    assert serialised == set(CHUNK_FIELDS)
    c = Chunk("a", 0, 1, 0, "i", "d", "s", 1, "fixed")
    assert list(c.to_dict()) == list(CHUNK_FIELDS)


def test_the_required_fields_are_the_positional_ones():
    """A stored row always has the fields the table calls required; each is a required ``Chunk`` argument
    (``strategy`` too, though a row of an older collection may lack it and reads as "")."""
    required = [f.name for f in dataclasses.fields(Chunk) if f.default is f.default_factory is dataclasses.MISSING]
    assert set(required) - {"strategy"} == {s.name for s in CHUNK_FIELD_TABLE if s.required}
