"""The in-process Milvus Lite client answers every call the store makes as pymilvus does (store/lite.py).

Two databases are created and filled with the same rows and calls: one through :class:`LiteClient` (the
engine in this process), one through pymilvus's ``MilvusClient`` (the same engine served over gRPC, as
pymilvus serves a ``.db`` path). Every answer chunkwise reads is compared: collection facts, rows (JSON,
arrays, nulls, hostile text), key lookups, counts, paged scans, dense and BM25 searches, errors.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from chunkwise.document import Chunk, Document
from chunkwise.store import lite
from chunkwise.store.milvus_connection import failures, message
from chunkwise.store.milvus_schema import (
    CONFIG_PROPERTY,
    chunk_index_params,
    chunk_schema,
    pymilvus_index_params,
    state_index,
    state_row,
    state_schema,
)
from chunkwise.store.rows import chunk_rows

DIM = 8
HOSTILE = [
    'quote " and backslash \\ and newline\nand tab\t',
    "emoji 🐝🍯 and CJK 蜜蜂 and RTL עברית",
    "zero\u200bwidth and combining e\u0301",
    "pump impeller coolant pump inspection",
    "the keeper lit the lamp in the storm",
]


def _rows(seed: int, n: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for d in range(n // 4):
        text = " ".join(rnd.choice(HOSTILE) for _ in range(4))
        doc = Document(text, source=f"kb/{d}-{rnd.choice(HOSTILE)[:12]}.txt", metadata={"n": d, "tags": ["a", "ß"]})
        chunks = []
        for i in range(4):
            page = None if i % 2 else i + 1
            piece = rnd.choice(HOSTILE)
            chunks.append(
                Chunk(
                    piece,
                    0,
                    len(piece),
                    i,
                    f"c{d}-{i}",
                    doc.id,
                    doc.source,
                    5,
                    "fixed",
                    page_start=page,
                    page_end=page,
                    section=rnd.choice(["", "Intro > Pumps", 'Quote "x"']),
                    context=None if i % 3 else "Part of the pump manual.",
                    speakers=["Ann", "Bo"] if i == 2 else [],
                )
            )
        vectors = np.asarray([[rnd.uniform(-1, 1) for _ in range(DIM)] for _ in chunks], dtype=np.float32)
        rows.extend(chunk_rows(doc, chunks, vectors, "fake"))
    return rows


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    pytest.importorskip("pymilvus")
    from milvus_lite.server_manager import server_manager_instance
    from pymilvus import MilvusClient

    base = tmp_path_factory.mktemp("pair")
    ours = lite.open_client(str(base / "ours.db"))
    if ours is None:
        pytest.skip("this milvus-lite has no in-process engine")
    path = str(base / "theirs.db")
    theirs = MilvusClient(uri=path)
    rows = _rows(7, 40)
    for client, native in ((ours, False), (theirs, True)):
        state = state_schema("chunkwise-config:abc")
        client.create_collection(
            "c__state", schema=state.to_pymilvus() if native else state, properties={CONFIG_PROPERTY: "fp"}
        )
        client.create_index("c__state", pymilvus_index_params(state_index()) if native else state_index())
        chunks = chunk_schema(DIM, True)
        client.create_collection("c", schema=chunks.to_pymilvus() if native else chunks, consistency_level="Strong")
        indexes = chunk_index_params(True)
        client.create_index("c", pymilvus_index_params(indexes) if native else indexes)
        for name in ("c", "c__state"):
            client.load_collection(name)
        client.upsert("c", rows[:30])
        client.upsert("c", rows[25:])  # five rows replaced
        client.delete("c", ids=[rows[0]["id"], rows[1]["id"]])
        client.upsert("c__state", [state_row("__config__", "config", "", "", 0, {"a": [1, {"b": None}], "é": "ü"})])
        client.flush("c")
    yield ours, theirs, rows, base
    ours.close()
    theirs.close()
    server_manager_instance.release_server(path)


def _by_id(rows):
    return sorted((dict(r) for r in rows), key=lambda r: r["id"])


def _same_rows(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x) == set(y), (x, y)
        for k in x:
            if k == "vector":
                assert np.allclose(x[k], y[k], atol=1e-6)
            else:
                assert x[k] == y[k], (k, x[k], y[k])


def test_collection_facts_are_the_same(clients):
    ours, theirs, *_ = clients
    assert sorted(ours.list_collections()) == sorted(theirs.list_collections()) == ["c", "c__state"]
    assert ours.has_collection("c") and not ours.has_collection("nope") and not theirs.has_collection("nope")
    for name in ("c", "c__state"):
        a, b = ours.describe_collection(name), theirs.describe_collection(name)
        fa = {f["name"]: f for f in a["fields"]}
        fb = {f["name"]: f for f in b["fields"]}
        assert set(fa) == set(fb)
        for field in fa:
            assert bool(fa[field].get("nullable")) == bool(fb[field].get("nullable")), field
            assert int(fa[field]["params"].get("dim") or 0) == int((fb[field].get("params") or {}).get("dim") or 0)
        assert a["properties"].get(CONFIG_PROPERTY) == b["properties"].get(CONFIG_PROPERTY)


@pytest.mark.parametrize("name", ["c", "c__state"])
def test_a_collection_made_in_process_is_stored_as_pymilvus_makes_it(clients, name):
    """The same schema and indexes on disk: an index made either way opens the same in both."""
    *_, base = clients
    stored = {}
    for db in ("ours.db", "theirs.db"):
        folder = base / db / "collections" / name
        manifest = json.loads((folder / "manifest.json").read_text())
        stored[db] = (json.loads((folder / "schema.json").read_text()), manifest["index_specs"])
    assert stored["ours.db"] == stored["theirs.db"]


def test_rows_keys_and_counts_are_the_same(clients):
    ours, theirs, rows, _ = clients
    fields = [c for c in rows[0] if c != "vector"]
    for expr in ("", f'doc_id in ["{rows[8]["doc_id"]}"]', "page_start >= 2", 'section == "Quote \\"x\\""'):
        a = ours.query("c", filter=expr, output_fields=fields, limit=16384)
        b = theirs.query("c", filter=expr, output_fields=fields, limit=16384)
        _same_rows(_by_id(a), _by_id(b))
        assert a or expr == 'section == "Quote \\"x\\""'
        assert ours.query("c", filter=expr, output_fields=["count(*)"]) == theirs.query(
            "c", filter=expr, output_fields=["count(*)"]
        )
    ids = [rows[5]["id"], "missing", rows[0]["id"], rows[33]["id"]]
    _same_rows(
        ours.get("c", ids=ids, output_fields=[*fields, "vector"]),
        theirs.get("c", ids=ids, output_fields=[*fields, "vector"]),
    )
    config = ours.get("c__state", ids=["__config__"], output_fields=["data"])
    assert config == [dict(r) for r in theirs.get("c__state", ids=["__config__"], output_fields=["data"])]
    assert config[0]["data"] == {"a": [1, {"b": None}], "é": "ü"}


@pytest.mark.parametrize("batch", [1, 7, 4096])
def test_a_paged_scan_reads_every_row_once(clients, batch):
    ours, theirs, rows, _ = clients
    got = {}
    for client in (ours, theirs):
        it = client.query_iterator("c", batch_size=batch, filter="chunk_index >= 1", output_fields=["id", "metadata"])
        seen = []
        while True:
            page = it.next()
            if not page:
                break
            assert len(page) <= batch
            seen.extend(page)
        it.close()
        got[client is ours] = _by_id(seen)
    assert got[True] == got[False]
    live = [r for r in rows[2:] if r["chunk_index"] >= 1]  # rows[0] and rows[1] were deleted
    assert [r["id"] for r in got[True]] == sorted(r["id"] for r in live)


def test_searches_are_the_same(clients):
    ours, theirs, rows, _ = clients
    fields = ["id", "text", "metadata", "speakers", "page_start", "context"]
    for vector in (rows[3]["vector"], [0.1] * DIM):
        for expr in ("", "chunk_index < 3"):
            ask = dict(anns_field="vector", limit=5, filter=expr, output_fields=fields)
            a, b = (
                c.search("c", data=[vector], search_params={"metric_type": "COSINE"}, **ask)[0] for c in (ours, theirs)
            )
            assert [h["id"] for h in a] == [h["id"] for h in b]
            assert all(math.isclose(x["distance"], y["distance"], abs_tol=1e-6) for x, y in zip(a, b))
            assert [h["entity"] for h in a] == [dict(h["entity"]) for h in b]
    for query in ("pump impeller", "蜜蜂", "lamp storm keeper"):
        a = ours.search("c", data=[query], anns_field="sparse", limit=6, output_fields=["id"])[0]
        b = theirs.search("c", data=[query], anns_field="sparse", limit=6, output_fields=["id"])[0]
        assert [(h["id"], round(h["distance"], 6)) for h in a] == [(h["id"], round(h["distance"], 6)) for h in b]
        assert [h["entity"] for h in a] == [dict(h["entity"]) for h in b]


@pytest.mark.parametrize("expr", ["doc_id == ", "nosuchfield > 1", "source like 3", "((("])
def test_a_bad_filter_fails_the_same_way(clients, expr):
    ours, theirs, *_ = clients
    caught = []
    for client in (ours, theirs):
        with pytest.raises(failures()) as err:
            client.query("c", filter=expr, output_fields=["id"], limit=5)
        caught.append(message(err.value))
    assert all(caught) and caught[0] in caught[1], caught


def test_a_milvus_lite_without_the_in_process_engine_is_reached_through_pymilvus(tmp_path, monkeypatch):
    """Another milvus-lite (no ``milvus_lite.db``): pymilvus serves the directory, writes and searches work,
    closing releases it, and a read-only directory is refused with one line (no private copy there)."""
    from conftest import FakeEmbedder

    import chunkwise.store.milvus as milvus
    from chunkwise.errors import InputError
    from chunkwise.retrieval.index import Index

    monkeypatch.setattr(lite, "open_client", lambda path, read_only=False: None)
    db = tmp_path / "x.db"
    with Index(db=db, embedder=FakeEmbedder()) as index:
        index.add([Document("The keeper lit the lamp. The ships were safe.", source="a.txt")])
        assert not isinstance(index.store.connect(), lite.LiteClient)
        assert [h.source for h in index.search("lamp keeper", k=1)] == ["a.txt"]
    with Index(db=db, embedder=FakeEmbedder()) as index:  # released: the directory opens again
        assert index.count() >= 1
    monkeypatch.setattr(milvus, "_writable", lambda path: False)
    with pytest.raises(InputError) as err:
        with Index(db=db, embedder=FakeEmbedder()) as index:
            index.search("lamp", k=1)
    assert "cannot open a private copy" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("given", "expected"), [(None, 8 << 20), ("33554432", 33554432)])
def test_milvus_lite_flushes_its_memtable_at_the_measured_budget_unless_told(tmp_path, given, expected):
    """Milvus Lite reads its memtable budget when first imported: chunkwise gives it 8 MB (measured:
    benchmarks/results/store.md) unless the user set the variable."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\nfrom chunkwise.store.lite import open_client\n"
        "c = open_client(sys.argv[1])\nimport milvus_lite.engine.collection as col\n"
        "print(col.MEMTABLE_MEMORY_LIMIT)\nc.close()"
    )
    env = {k: v for k, v in os.environ.items() if k != "MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES"}
    if given is not None:
        env["MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES"] = given
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m.db")], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split()[-1] == str(expected)


def test_the_vector_reader_gives_the_engines_array_without_to_numpy():
    """chunkwise's reader of a segment's vector column (np.frombuffer, no pandas) returns what Milvus Lite's
    own returns; columns it does not handle (nulls, several chunks, slices) go to the engine's."""
    pa = pytest.importorskip("pyarrow")
    from milvus_lite.storage.segment import _extract_vector_array

    original = getattr(_extract_vector_array, "original", _extract_vector_array)  # the engine's own
    calls = []

    def engine(arr):
        calls.append(arr)
        return original(arr)

    read = lite._vector_reader(engine)
    rng = np.random.default_rng(0)
    flat = rng.standard_normal(5 * 4).astype(np.float32)
    col = pa.chunked_array([pa.FixedSizeListArray.from_arrays(pa.array(flat), 4)])
    vectors, mask = read(col)
    want, want_mask = original(col)
    assert not calls and mask is want_mask is None
    assert vectors.shape == (5, 4) and np.array_equal(vectors, want) and np.array_equal(vectors.ravel(), flat)
    for other in (
        pa.chunked_array([pa.FixedSizeListArray.from_arrays(pa.array(flat[:8]), 4)] * 2),  # two chunks
        pa.array([[1.0, 2.0], None], type=pa.list_(pa.float32(), 2)),  # a null vector
    ):
        got, got_mask = read(other)
        want, want_mask = original(other)
        assert calls[-1] is other and np.array_equal(got, want)


@pytest.mark.slow
@pytest.mark.timeout(700)
def test_a_search_imports_neither_pandas_nor_the_dataset_layer_nor_bm25s(tmp_path):
    """A cold ``chunkwise search`` of a Milvus Lite index needs the engine, numpy, tokenizers and
    onnxruntime; not pandas (pyarrow would import it where installed), pyarrow.dataset, bm25s or scipy."""
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Lamp\n\nThe keeper trims the wick of the harbor lamp.\n", encoding="utf-8")
    (docs / "b.md").write_text("# Bread\n\nFeed the sourdough starter twice a day.\n", encoding="utf-8")
    db = str(tmp_path / "x.db")
    code = (
        "import sys, io, contextlib\nfrom chunkwise.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    rc = main(sys.argv[1:])\n"
        "heavy = ('pandas', 'pyarrow.dataset', 'bm25s', 'scipy')\n"
        "print(rc, 'keeper' in out.getvalue(), sorted(m for m in heavy if m in sys.modules))"
    )
    run = [sys.executable, "-c", code]
    subprocess.run(
        [*run, "-q", "index", str(docs), "--db", db], capture_output=True, text=True, timeout=300, check=True
    )
    out = subprocess.run(
        [*run, "-q", "search", "harbor lamp wick", "--db", db, "-k", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.splitlines()[-1] == "0 True []", out
