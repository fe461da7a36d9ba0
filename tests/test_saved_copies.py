"""The in-process search copies saved beside a Milvus Lite database (bm25s, vectors) are trusted only for
the files they were read from: a writer that does not know of them (the same chunk count after one chunk
deleted and another inserted), a copy of another dimension or with non-finite vectors, and the temporary
folder of a killed save are each caught, never a wrong answer or a traceback."""

from __future__ import annotations

import json
import shutil

import numpy as np
from conftest import FakeEmbedder
from index_data import docs, lines

from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store import milvus_search, snapshot
from chunkwise.store.milvus_search import BM25_FOLDER, VECTORS_FOLDER


def _built(tmp_path):
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        ix.search("conductor tickets", k=3)  # builds and saves the copies
    assert (db / BM25_FOLDER).is_dir() and (db / VECTORS_FOLDER).is_dir()
    return db


def test_a_write_that_keeps_the_count_is_not_missed(tmp_path):
    db = _built(tmp_path)
    kept = tmp_path / "kept"
    kept.mkdir()
    for folder in (BM25_FOLDER, VECTORS_FOLDER):  # hidden from a writer that would remove them
        shutil.move(str(db / folder), kept / folder)
    with Index(db, embedder=FakeEmbedder()) as ix:
        before = ix.count()
        ix.delete("kb/bees.txt")
        ix.add([Document("Penguins huddle.\nWalruses rest.\nSeals dive.", source="kb/sea.txt")], strategy=lines())
        assert ix.count() == before  # the same number of chunks: a count cannot tell
    for folder in (BM25_FOLDER, VECTORS_FOLDER):
        shutil.rmtree(db / folder, ignore_errors=True)
        shutil.move(str(kept / folder), db / folder)
    with Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search("penguins huddle", k=5)
        assert hits[0].text.startswith("Penguins huddle") and hits[0].bm25_rank == 1
        assert all(h.source != "kb/bees.txt" for h in hits)


def _replace_vectors(db, matrix):
    np.save(db / VECTORS_FOLDER / "vectors.npy", matrix, allow_pickle=False)
    milvus_search.write_key(db / VECTORS_FOLDER, "chunkwise", snapshot.fingerprint(db))


def test_saved_vectors_of_another_dimension_or_not_finite_are_rebuilt(tmp_path):
    db = _built(tmp_path)
    n = len(json.loads((db / VECTORS_FOLDER / "ids.json").read_text()))
    for bad in (np.ones((n, 3), np.float32), np.full((n, FakeEmbedder().dim), np.nan, np.float32)):
        _replace_vectors(db, bad)
        with Index(db, embedder=FakeEmbedder()) as ix:
            hit = ix.search("conductor tickets", k=1)[0]
            assert hit.text == "The conductor checks tickets twice." and hit.vector_rank == 1


def test_a_killed_save_leaves_nothing_a_later_run_keeps(tmp_path):
    db = _built(tmp_path)
    before = snapshot.fingerprint(db)
    for folder in (BM25_FOLDER, VECTORS_FOLDER):  # what replace_folder leaves when killed while filling
        (db / f"{folder}.k1ll3d").mkdir()
        (db / f"{folder}.k1ll3d" / "ids.json").write_text("[", encoding="utf-8")
    assert snapshot.fingerprint(db) == before  # the snapshot still matches
    shutil.rmtree(db / BM25_FOLDER)  # the next search rebuilds and saves a copy
    with Index(db, embedder=FakeEmbedder()) as ix:
        assert ix.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
    assert not list(db.glob("chunkwise-*.k1ll3d"))


def test_a_saved_copy_is_still_used_by_the_next_process(tmp_path):
    """Keyed on the files after the writer's close flushed them: the next process loads, not rebuilds."""
    db = _built(tmp_path)
    with Index(db, embedder=FakeEmbedder()) as ix:
        called = []
        real = milvus_search._build_client_indexes
        milvus_search._build_client_indexes = lambda *a: called.append(a) or real(*a)
        try:
            ix.search("conductor tickets", k=1)
        finally:
            milvus_search._build_client_indexes = real
        assert called == []
