"""Index: add / search / delete against a real Milvus Lite database, with the dependency-free FakeEmbedder.

A small line-based strategy keeps these tests independent of the chunking strategies; the CLI and
acceptance tests use the real ones.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import FakeEmbedder
from index_data import BEES, LAMP, TRAINS, LineStrategy, docs, lines  # noqa: F401 (names the tests use)

from chunkwise import Document, Page, Section
from chunkwise.errors import ChunkwiseError, ConfigError, InputError
from chunkwise.retrieval import Index, reciprocal_rank_fusion
from chunkwise.store import MilvusStore
from chunkwise.store.bm25 import BM25Fallback


def stored(index: Index) -> set[tuple[str, str]]:
    return {(r["id"], r["text"]) for r in index.store.scan_chunks(["id", "text"])}


@pytest.fixture
def index(tmp_path):
    ix = Index(tmp_path / "t.db", embedder=FakeEmbedder())
    yield ix
    ix.close()


def test_add_search_count_and_provenance(tmp_path):
    text = "# Guide\nBees make honey.\n## Hive\nThe queen lays eggs.\nDrones do not sting."
    doc = Document(
        text,
        source="<guide>",
        metadata={"lang": "en"},
        pages=[Page(1, 0, 25), Page(2, 25, len(text))],
        sections=[Section(0, len(text), ("Guide",), 1), Section(25, len(text), ("Guide", "Hive"), 2)],
    )
    with Index(tmp_path / "p.db", embedder=FakeEmbedder()) as ix:
        report = ix.add([doc, *docs()], strategy=lines())
        assert (report.documents, report.indexed, report.skipped, report.failed) == (4, 4, 0, [])
        assert report.chunks == ix.count() == 5 + 9 == report.total_chunks
        hits = ix.search("queen eggs", k=3)
        assert [h.rank for h in hits] == [1, 2, 3]
        assert hits[0].score >= hits[1].score >= hits[2].score
        top = next(h for h in hits if h.source == "<guide>")
        assert top.text == "The queen lays eggs."
        assert doc.text[top.start : top.end] == top.text
        assert (top.page_start, top.page_end, top.section) == (2, 2, ["Guide", "Hive"])
        assert top.metadata["document"] == {"lang": "en"} and top.strategy == "lines"
        assert top.doc_id == doc.id and top.vector_rank == 1


def test_unchanged_rerun_embeds_nothing_and_edit_replaces_only_that_document(index):
    emb = index.embedder()
    index.add(docs(), strategy=lines())
    before = stored(index)
    emb.texts_embedded = 0
    report = index.add(docs(), strategy=lines())
    assert (report.skipped, report.indexed, report.chunks) == (3, 0, 0)
    assert emb.texts_embedded == 0 and stored(index) == before

    edited = docs()
    edited[1] = Document("The lighthouse lamp turns every ten seconds.\nA new keeper arrived.", source="kb/lamp.txt")
    report = index.add(edited, strategy=lines())
    assert (report.indexed, report.skipped, report.chunks, report.removed) == (1, 2, 2, 2)
    assert emb.texts_embedded == 2
    after = stored(index)
    lamp_id = edited[1].id
    others_before = {(i, t) for i, t in before if not any(t in d.text for d in [docs()[1]])}
    assert others_before <= after
    lamp_now = {t for (i, t) in after} - {t for _, t in others_before}
    assert lamp_now == {"The lighthouse lamp turns every ten seconds.", "A new keeper arrived."}
    assert index.count() == 8
    assert {m.doc_id: m.chunks for m in index.documents()}[lamp_id] == 2


def test_configuration_is_recorded_and_a_mismatch_refused(tmp_path):
    db = tmp_path / "c.db"
    with Index(db, embedder=FakeEmbedder(dim=64)) as ix:
        ix.add(docs()[:1], strategy=lines(max_tokens=50))
        assert ix.config["embedder"]["model_id"] == "fake-bow-64"
        assert ix.config["strategy"]["params"]["max_tokens"] == 50
    with Index(db, embedder=FakeEmbedder(dim=32)) as ix:
        with pytest.raises(ConfigError, match="embedder 'fake-bow-64'"):
            ix.add(docs(), strategy=lines(max_tokens=50))
        with pytest.raises(ConfigError, match="fake-bow-64"):
            ix.search("bees")
    with Index(db, embedder=FakeEmbedder(dim=64)) as ix:
        with pytest.raises(ConfigError, match=r"max_tokens=50 \(now 40\)"):
            ix.add(docs(), strategy=lines(max_tokens=40))
        with pytest.raises(ConfigError, match="context"):
            ix.add(docs(), strategy=lines(max_tokens=50), context="headings")
        assert ix.count() == 3  # nothing was written by the refused runs
    with Index(db, embedder=FakeEmbedder(dim=32)) as ix:
        report = ix.add(docs(), strategy=lines(max_tokens=40), recreate=True)
        assert report.indexed == 3 and ix.count() == 9
        assert ix.config["embedder"]["dim"] == 32


def test_delete_by_source_and_doc_id(index):
    ds = docs()
    index.add(ds, strategy=lines())
    assert index.delete("kb/bees.txt") == 3
    assert index.delete(ds[1].id) == 3
    assert index.count() == 3 and {m.source for m in index.documents()} == {"kb/trains.txt"}
    with pytest.raises(InputError, match="no such document"):
        index.delete("kb/bees.txt")
    # a deleted document comes back in full when added again
    assert index.add(ds, strategy=lines()).indexed == 2 and index.count() == 9


def test_prune_removes_documents_whose_files_are_gone(index, tmp_path):
    files = []
    for name, text in (("a.txt", BEES), ("b.txt", LAMP)):
        p = tmp_path / name
        p.write_text(text)
        files.append(p)
    index.add(
        [
            Document(BEES, source=str(files[0])),
            Document(LAMP, source=str(files[1])),
            Document(TRAINS, source="<trains>"),
        ],
        strategy=lines(),
    )
    files[0].unlink()
    report = index.add([], strategy=lines(), prune=False)
    assert report.pruned == 0 and index.count() == 9
    report = index.add([], strategy=lines(), prune=True)
    assert report.pruned == 1 and index.count() == 6
    assert str(files[0]) not in {m.source for m in index.documents()}


class Boom(Exception):
    pass


@pytest.mark.parametrize("fail_at", range(7))
def test_interrupted_replacement_then_rerun_equals_clean_run(tmp_path, fail_at):
    """Fail at every step of the write protocol (unmark, upsert, read ids, delete stale, mark), then run
    again, including with the *old* content back: the result is always exactly a clean run's."""
    v1 = docs()
    v2 = [
        Document(BEES.replace("honey", "wax"), source="kb/bees.txt"),
        Document("Short lamp text.", source="kb/lamp.txt"),
        v1[2],
    ]
    with Index(tmp_path / "clean1.db", embedder=FakeEmbedder()) as ix:
        ix.add(v1, strategy=lines())
        clean_v1 = stored(ix)
    with Index(tmp_path / "clean2.db", embedder=FakeEmbedder()) as ix:
        ix.add(v2, strategy=lines())
        clean_v2 = stored(ix)

    with Index(tmp_path / "x.db", embedder=FakeEmbedder()) as ix:
        ix.add(v1, strategy=lines())
        store = ix.store
        calls = {"n": 0}
        for name in ("unmark", "upsert_chunks", "chunk_ids", "delete_chunks", "mark"):
            original = getattr(store, name)

            def wrapped(*a, _original=original, **kw):
                calls["n"] += 1
                if calls["n"] == fail_at + 1:
                    raise Boom()
                return _original(*a, **kw)

            setattr(store, name, wrapped)
        try:
            ix.add(v2, strategy=lines(), batch_size=1)
        except Boom:
            pass
        for name in ("unmark", "upsert_chunks", "chunk_ids", "delete_chunks", "mark"):
            delattr(store, name)
        # the user reverts the files: the rerun must not trust markers of half-written documents
        ix.add(v1, strategy=lines())
        assert stored(ix) == clean_v1
        ix.add(v2, strategy=lines())
        assert stored(ix) == clean_v2


def test_pool_mode_reuses_sentence_vectors(index):
    class PooledLines(LineStrategy):
        name = "pooled-lines"

        def chunk(self, doc):
            chunks = super().chunk(doc)
            for c in chunks:
                c.sentence_vectors = FakeEmbedder().embed(c.text.split(". "))
            return chunks

    strat = PooledLines(tokenizer="words")
    strat.embedder = index.embedder()  # same model as the index: its vectors may be reused
    emb = index.embedder()
    emb.texts_embedded = 0
    report = index.add(docs(), strategy=strat, vectors="pool")
    assert (report.reused, report.embedded, emb.texts_embedded) == (9, 0, 0)
    hit = index.search("Beekeepers wear veils and gloves.", k=1, hybrid=False)[0]  # the cosine itself
    assert hit.text == "Beekeepers wear veils and gloves." and hit.score == pytest.approx(1.0, abs=1e-5)


def test_text_mode_embeds_each_chunk_once(index):
    emb = index.embedder()
    emb.texts_embedded = 0
    emb.calls.clear()
    index.add(docs(), strategy=lines())
    embedded = [t for call in emb.calls for t in call]
    assert sorted(embedded) == sorted(t for d in docs() for t in d.text.split("\n"))


def test_context_is_embedded_and_indexed_but_text_stays_exact(index):
    doc = Document(
        "# Bees\nThey make honey.\n# Trains\nThey run at night.",
        source="<ctx>",
        sections=[Section(0, 23, ("Bees",), 1), Section(23, 50, ("Trains",), 1)],
        title="Notes",
    )
    index.add([doc], strategy=lines(), context="headings")
    hits = index.search("Notes Trains", k=4, hybrid=True)
    run = next(h for h in hits if h.text == "They run at night.")
    assert run.context == "Notes > Trains" and doc.text[run.start : run.end] == run.text
    assert run.bm25_rank is not None  # the context words are BM25-indexed


def test_late_chunking_vectors_are_used(index):
    from chunkwise.context import late_chunk_vectors

    ds = docs()
    index.add(ds, strategy=lines(), late=True)
    chunks = lines().chunk(ds[0])
    expected = late_chunk_vectors(ds[0], chunks, index.embedder())
    got = index.store.connect().get(index.store.collection, ids=[chunks[0].id], output_fields=["vector"])[0]
    assert np.allclose(got["vector"], expected[0], atol=1e-5)


def test_a_default_lite_index_leaves_out_the_engines_bm25(index):
    """Milvus Lite in process ranks BM25 with chunkwise's own postings: its chunk collection has no BM25
    function (no sparse field to fill on every write), and hybrid search still ranks by BM25."""
    index.add(docs(), strategy=lines())
    assert not index.store.bm25_builtin and index.store.uses_client_bm25
    fields = {f["name"] for f in index.store.connect().describe_collection(index.store.collection)["fields"]}
    assert "sparse" not in fields and "indexed_text" in fields
    hits = index.search("conductor tickets", k=3, hybrid=True, fusion="rrf")
    assert hits[0].text == "The conductor checks tickets twice." and hits[0].bm25_rank == 1


def test_hybrid_search_builtin_bm25_and_bm25s_fallback_agree(tmp_path):
    index = Index(store=MilvusStore(db=tmp_path / "b.db", client_bm25=False), embedder=FakeEmbedder())
    index.add(docs(), strategy=lines())
    assert index.store.bm25_builtin
    builtin = index.search("conductor tickets", k=3, hybrid=True, fusion="rrf")
    assert builtin[0].text == "The conductor checks tickets twice."
    assert builtin[0].bm25_rank == 1 and builtin[0].score == pytest.approx(2 / 61)
    index.store.bm25_builtin = False  # as against a Milvus server without BM25 functions
    fallback = index.search("conductor tickets", k=3, hybrid=True, fusion="rrf")
    assert fallback[0].text == builtin[0].text and fallback[0].bm25_rank == 1
    filtered = index.search("conductor tickets", k=3, hybrid=True, filter='source == "kb/bees.txt"')
    assert filtered and all(h.source == "kb/bees.txt" for h in filtered)
    # the default is the same hybrid search, z-score fused, on the client-side BM25 too
    default = index.search("conductor tickets", k=3)
    assert default[0].text == builtin[0].text and (default[0].vector_rank, default[0].bm25_rank) == (1, 1)
    assert [h.id for h in default] == [h.id for h in index.search("conductor tickets", k=3, fusion="zscore")]
    dense = index.search("conductor tickets", k=3, hybrid=False)
    assert all(h.bm25_rank is None for h in dense) and dense[0].score <= 1.0
    index.close()


def test_search_default_is_hybrid(index):
    """Without arguments a search fuses BM25 and vectors; hybrid=False is vector search alone. The fake
    embedder gives an exact-text query a cosine of 1, so only the hybrid score can exceed it."""
    index.add(docs(), strategy=lines())
    default = index.search("The conductor checks tickets twice.", k=2)
    assert default[0].bm25_rank == 1 and default[0].vector_rank == 1 and default[0].score > 1.0
    dense = index.search("The conductor checks tickets twice.", k=2, hybrid=False)
    assert dense[0].bm25_rank is None and dense[0].score == pytest.approx(1.0, abs=1e-5)


def test_filter_and_bad_queries(index):
    index.add(docs(), strategy=lines())
    hits = index.search("honey", k=5, filter='source == "kb/lamp.txt" and chunk_index >= 1')
    assert len(hits) == 2 and {h.chunk_index for h in hits} == {1, 2}
    with pytest.raises(InputError, match=r"invalid filter expression 'source ==': .+"):
        index.search("honey", filter="source ==")
    with pytest.raises(InputError, match="empty"):
        index.search("   ")
    for k in (0, -1):
        with pytest.raises(ConfigError, match="k must be"):
            index.search("honey", k=k)


def test_rrf():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]])
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert reciprocal_rank_fusion([[], []]) == []


def test_bm25_fallback_ranks_and_masks():
    bm = BM25Fallback([("1", "the cat sat on the mat"), ("2", "dogs chase cats"), ("3", "a cat and a cat")])
    assert bm.search("cat", 3)[0][0] == "3"
    assert [i for i, _ in bm.search("cat", 3, allowed={"1"})] == ["1"]
    assert bm.search("zebra", 3) == [] and BM25Fallback([]).search("cat", 3) == []


def test_bad_store_locations(tmp_path):
    f = tmp_path / "file.db"
    f.write_text("x")
    with pytest.raises(InputError, match="is a file"):
        Index(f, embedder=FakeEmbedder()).add(docs(), strategy=lines())
    with pytest.raises(ConfigError, match=r"must end in '\.db'"):
        Index(tmp_path / "plain", embedder=FakeEmbedder()).add(docs(), strategy=lines())
    with pytest.raises(InputError, match="cannot create"):
        Index(f / "sub.db", embedder=FakeEmbedder()).add(docs(), strategy=lines())
    assert Index(tmp_path / "none.db").count() == 0 and not (tmp_path / "none.db").exists()
    with pytest.raises(ConfigError, match="collection name"):
        Index(tmp_path / "ok.db", collection="bad-name")
    with pytest.raises(ConfigError, match="either"):
        Index(tmp_path / "ok.db", uri="http://127.0.0.1:1")
    ix = Index(tmp_path / "ok.db", embedder=FakeEmbedder())
    with pytest.raises(InputError, match="expected paths or Documents, got int"):
        ix.add([docs()[0], 3], strategy=lines())
    with pytest.raises(ConfigError, match="late chunking has no option size"):
        ix.add(docs(), strategy=lines(), late=True, late_options={"size": 3})
    with pytest.raises(ConfigError, match="has no option neighbours"):
        ix.add(docs(), strategy=lines(), context="neighbors", context_options={"neighbours": 3})
    with pytest.raises(ConfigError, match="vectors must be"):
        ix.add(docs(), strategy=lines(), vectors="mean")
    assert ix.config is None  # none of the refused calls created anything
    ix.close()


@pytest.mark.timeout(60)  # a 3 s connect timeout with its retries; a hang fails here
def test_unreachable_server_fails_fast_without_state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ix = Index(uri="http://127.0.0.1:9", embedder=FakeEmbedder(), timeout=3)
    with pytest.raises(ChunkwiseError, match="cannot reach the Milvus server"):
        ix.add(docs(), strategy=lines())
    assert list(tmp_path.iterdir()) == []


def test_database_in_use_by_another_process(tmp_path):
    db = tmp_path / "busy.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]).list_collections(); "
            "print('ready', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(InputError, match="in use by another process"):
            Index(db, embedder=FakeEmbedder()).count()
    finally:
        holder.kill()
        holder.wait()


def test_store_refuses_a_foreign_collection(tmp_path):
    from pymilvus import MilvusClient

    db = tmp_path / "f.db"
    c = MilvusClient(str(db))
    c.create_collection("chunkwise", dimension=4)
    c.close()
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(db))
    store = MilvusStore(db=db)
    with pytest.raises(ConfigError, match="not made by chunkwise"):
        store.read_config()
    store.close()


def test_server_uri_runs_the_same_code(tmp_path):
    """``uri=`` against a Milvus gRPC server (Milvus Lite's standalone server stands in for a Milvus
    deployment): index, incremental re-run, hybrid search and a filter all work unchanged."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(tmp_path / "srv"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        with Index(uri=f"http://127.0.0.1:{port}", embedder=FakeEmbedder(), collection="kb") as ix:
            assert ix.add(docs(), strategy=lines()).indexed == 3
            assert ix.add(docs(), strategy=lines()).skipped == 3 and ix.count() == 9
            assert ix.search("conductor tickets", k=1, hybrid=True)[0].text == "The conductor checks tickets twice."
            assert {h.source for h in ix.search("honey", k=9, filter='source == "kb/lamp.txt"')} == {"kb/lamp.txt"}
        assert not (tmp_path / "chunkwise.db").exists()
    finally:
        server.kill()
        server.wait()


def test_creation_interrupted_half_way_is_redone(tmp_path, monkeypatch):
    ix = Index(tmp_path / "h.db", embedder=FakeEmbedder())
    original = ix.store._create_chunks

    def fail(dim):
        original(dim)
        raise Boom()  # killed after both collections exist but before the configuration is recorded

    monkeypatch.setattr(ix.store, "_create_chunks", fail)
    with pytest.raises(Boom):
        ix.add(docs(), strategy=lines())
    monkeypatch.setattr(ix.store, "_create_chunks", original)
    assert ix.config is None
    assert ix.add(docs(), strategy=lines()).indexed == 3 and ix.count() == 9
    ix.close()


def test_llm_context_mode_goes_through_contextualize(index):
    class FakeLLM:
        """Stands in for LLMContextualizer (the HTTP side is tested in test_context_llm.py)."""

        def __init__(self):
            self.docs = 0

        def contextualize(self, doc, chunks):
            self.docs += 1
            for c in chunks:
                c.context = f"From the notes on {doc.source.split('/')[-1][:-4]}."
            return chunks

        def close(self):
            pass

    llm = FakeLLM()
    report = index.add(docs(), strategy=lines(), context="llm", context_options={"contextualizer": llm})
    assert llm.docs == 3 and report.timings["context"] > 0
    hit = index.search("notes on trains", k=1, hybrid=True)[0]
    assert hit.context == "From the notes on trains." and hit.source == "kb/trains.txt"
    assert hit.text in TRAINS
    assert index.config["context"] == "llm"
