"""The run that builds (or rebuilds) a Milvus Lite index leaves the in-process search copies (BM25 postings,
vectors, chunk places) it filled while writing, keyed on the database's files: the first search after it reads
no row back, and answers as a search whose copies are rebuilt from the stored rows. A run killed half-way
leaves no copy a later process trusts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEmbedder
from index_data import lines

import chunkwise.store.milvus_search as ms
from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store import snapshot
from chunkwise.store.bm25 import BM25Postings
from chunkwise.store.milvus_search import BM25_FOLDER, PLACES_FOLDER, VECTORS_FOLDER, copy_key
from chunkwise.store.places import ChunkPlaces
from chunkwise.store.vectors import SpooledVectors, VectorCache

HERE = Path(__file__).resolve().parent
FOLDERS = (BM25_FOLDER, VECTORS_FOLDER, PLACES_FOLDER)
QUERIES = ["keeper lamp", "storm at night", "tide 7", "the harbour rope signal", "light 13 lens"]
WORDS = ["lamp", "lens", "keeper", "tide", "harbour", "rope", "signal", "storm", "light", "night", "the", "a"]


def docs(n: int = 40, tag: str = "") -> list[Document]:
    out = []
    for i in range(n):
        body = "\n".join(
            " ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(5)) + f" {i}" for j in range(4)
        )
        out.append(Document(f"{tag}{body}", source=f"kb/{tag}{i}.txt"))
    return out


def build(db: Path, documents: list[Document], recreate: bool = False) -> None:
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(documents, strategy=lines(), recreate=recreate)


def answers(db: Path) -> list[list[tuple[str, float, int | None, int | None]]]:
    with Index(db, embedder=FakeEmbedder()) as ix:
        return [[(h.id, round(h.score, 9), h.bm25_rank, h.vector_rank) for h in ix.search(q, k=8)] for q in QUERIES]


@pytest.fixture
def no_full_read(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the copies were rebuilt from a read of every chunk")

    monkeypatch.setattr(ms, "_build_client_indexes", refuse)
    monkeypatch.setattr(ms, "_rows_in_storage_order", refuse)


def trusted(db: Path) -> list[str]:
    """The saved copies a later process would use: keyed on the database files as they are now."""
    files = snapshot.fingerprint(db)
    out = []
    for folder in FOLDERS:
        if copy_key(db / folder, "chunkwise") == files:
            out.append(folder)
    return out


def test_a_build_leaves_keyed_copies_and_the_first_search_reads_no_row(tmp_path, monkeypatch, no_full_read):
    db = tmp_path / "t.db"
    build(db, docs())
    assert trusted(db) == list(FOLDERS)
    assert not list(db.glob("chunkwise-vectors.*"))  # the spool was renamed into the copy, not left beside it
    first = answers(db)  # the full-read path refuses (fixture): the saved copies answer
    assert any(first)
    monkeypatch.undo()
    with_copies = {f: (db / f).exists() for f in FOLDERS}
    for folder in FOLDERS:  # the same database, its copies rebuilt by reading every chunk
        shutil.rmtree(db / folder)
    assert answers(db) == first, with_copies


def test_the_left_copies_equal_those_read_back_from_the_rows(tmp_path):
    db = tmp_path / "t.db"
    build(db, docs())
    left = (
        BM25Postings.load(db / BM25_FOLDER).canonical(),
        VectorCache.load(db / VECTORS_FOLDER),
        sorted(ChunkPlaces.load(db / PLACES_FOLDER).rows()),
    )
    for folder in FOLDERS:
        shutil.rmtree(db / folder)
    answers(db)  # rebuilt from a read of every chunk, saved
    read = (
        BM25Postings.load(db / BM25_FOLDER).canonical(),
        VectorCache.load(db / VECTORS_FOLDER),
        sorted(ChunkPlaces.load(db / PLACES_FOLDER).rows()),
    )
    assert left[0] == read[0] and left[2] == read[2]
    assert left[1].ids == read[1].ids  # the stored order: equal cosines tie as Milvus Lite ranks them
    np.testing.assert_array_equal(left[1].matrix, read[1].matrix)


def test_a_rebuild_leaves_copies_of_the_new_rows_only(tmp_path, no_full_read):
    db = tmp_path / "t.db"
    build(db, docs(30, "old-"))
    answers(db)
    build(db, docs(12, "new-"), recreate=True)
    assert trusted(db) == list(FOLDERS)
    with Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search("keeper lamp", k=50)
        assert hits and all(h.source.startswith("kb/new-") for h in hits)
        assert len(ix.store._bm25) == len(ix.store._vectors) == ix.count()


def test_a_second_run_into_a_built_index_keeps_the_copies_current(tmp_path, no_full_read):
    db = tmp_path / "t.db"
    build(db, docs(20))
    build(db, docs(5, "more-"))  # loads the left copies, updates them
    assert trusted(db) == list(FOLDERS)
    with Index(db, embedder=FakeEmbedder()) as ix:
        assert ix.search("more-keeper", k=1)[0].source.startswith("kb/more-")


KILLED = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from conftest import FakeEmbedder
from index_data import lines
from chunkwise import Document
from chunkwise.retrieval import Index
import chunkwise.store.milvus_search as ms
import chunkwise.store.milvus as milvus

when = sys.argv[2]
if when == "after-save":  # killed while closing: the copies written, not yet keyed
    save = ms.save_copies
    def save_then_die(store):
        save(store)
        os.kill(os.getpid(), signal.SIGKILL)
    milvus.milvus_search.save_copies = save_then_die
ix = Index(sys.argv[1], embedder=FakeEmbedder())
docs = [Document("storm lamp keeper %d\\nthe tide %d" % (i, i), source="kb/k%d.txt" % i) for i in range(60)]
ix.add(docs[:30], strategy=lines())
ix.add(docs[30:], strategy=lines())
if when == "mid-run":  # killed with every row written, nothing saved
    os.kill(os.getpid(), signal.SIGKILL)
ix.close()
"""


@pytest.mark.slow  # a crash campaign: a child with Milvus Lite killed twice (4-5 s under load)
@pytest.mark.timeout(300)
@pytest.mark.parametrize("when", ["mid-run", "after-save"])
def test_a_build_killed_half_way_leaves_no_trusted_copy(tmp_path, when):
    db = tmp_path / "t.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED.format(tests=str(HERE)), str(db), when],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == -9, proc.stderr
    if when == "after-save":
        assert (db / BM25_FOLDER).is_dir()  # written: what must not be trusted
    else:
        assert list(db.glob("chunkwise-vectors.*"))  # the spool of the killed run
    assert trusted(db) == []
    rebuilt = []
    real = ms._build_client_indexes

    def counted(*args, **kwargs):
        rebuilt.append(1)
        return real(*args, **kwargs)

    ms._build_client_indexes = counted
    try:
        with Index(db, embedder=FakeEmbedder()) as ix:
            hits = ix.search("storm lamp keeper 41", k=3)
            assert ix.count() == 120
    finally:
        ms._build_client_indexes = real
    assert rebuilt and hits[0].source == "kb/k41.txt"
    assert not list(db.glob("chunkwise-vectors.*"))  # the killed run's spool removed by the next save


@pytest.mark.parametrize("replaced", [False, True])
def test_spooled_vectors_save_what_a_vector_cache_holds(tmp_path, replaced):
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    spool = SpooledVectors(tmp_path / VECTORS_FOLDER)
    cache = VectorCache(())
    for a in range(0, 300, 70):
        batch = [(f"c{n}", vecs[n]) for n in range(a, min(a + 70, 300))]
        spool.upsert(batch)
        cache.upsert(batch)
    if replaced:
        for copy in (spool, cache):
            copy.upsert([("c5", vecs[5] * 3)])
            copy.remove(["c9", "c200"])
    assert len(spool) == len(cache) and spool.rows(["c1"]) is None
    in_memory = spool.cache()
    spool.save(tmp_path / VECTORS_FOLDER)
    assert not spool.folder.exists()
    saved = VectorCache.load(tmp_path / VECTORS_FOLDER)
    for copy in (in_memory, saved):
        assert copy.ids == cache.ids
        np.testing.assert_array_equal(copy.matrix, cache.matrix)


def test_chunkwise_index_on_the_cli_leaves_the_copies_for_chunkwise_search(tmp_path, monkeypatch, capsys, no_full_read):
    import chunkwise.embeddings
    from chunkwise.cli import main

    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    for doc in docs(6):
        (tmp_path / doc.source).write_text(doc.text, encoding="utf-8")
    assert main(["index", "kb", "--max-tokens", "16", "--tokenizer", "words"]) == 0
    assert trusted(tmp_path / "chunkwise.db") == list(FOLDERS)
    capsys.readouterr()
    assert main(["search", "keeper lamp 3", "-k", "1"]) == 0  # the full-read path refuses (fixture)
    assert "kb/3.txt" in capsys.readouterr().out


@pytest.mark.parametrize("replaced", [False, True])
def test_spooled_postings_save_what_bm25_postings_hold(tmp_path, monkeypatch, replaced):
    from chunkwise.store.bm25 import SpooledPostings

    monkeypatch.setattr(SpooledPostings, "PASS", 7)  # many passes over the spool, each a few terms
    rng = np.random.default_rng(2)
    texts = [
        " ".join(rng.choice(WORDS + [f"w{k}" for k in range(30)], size=int(rng.integers(1, 15)))) for _ in range(90)
    ]
    spool = SpooledPostings(tmp_path / BM25_FOLDER)
    held = BM25Postings()
    for a in range(0, 90, 25):
        batch = [(f"c{n:02d}", texts[n]) for n in range(a, min(a + 25, 90))]
        spool.upsert(batch)
        held.upsert(batch)
    if replaced:
        for copy in (spool, held):
            copy.upsert([("c05", "keeper keeper lamp w3"), ("c06", "storm"), ("c06", "tide tide")])
            copy.remove(["c09", "c70"])
    assert len(spool) == len(held)
    in_memory = spool.postings()
    spool.save(tmp_path / BM25_FOLDER)
    assert not spool.folder.exists()
    saved = BM25Postings.load(tmp_path / BM25_FOLDER)
    for copy in (in_memory, saved):
        assert copy.canonical() == held.canonical()
        for q in ("keeper lamp", "w3 tide", "storm w17 the"):
            got, want = copy.search(q, 10), held.search(q, 10)
            assert [i for i, _ in got] == [i for i, _ in want] and len(want) > 1
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


@pytest.mark.parametrize("other_searched_first", [False, True])
def test_the_copies_of_another_collection_in_the_same_database_are_not_used(tmp_path, other_searched_first):
    """The copies' folders are one per database directory: a collection of the same size built (or searched)
    in it since must not answer for this one."""
    db = tmp_path / "t.db"
    a = [Document(f"storm lamp keeper {i}\nthe tide {i}", source=f"a/{i}.txt") for i in range(10)]
    b = [Document(f"apple orange banana {i}\nfruit basket {i}", source=f"b/{i}.txt") for i in range(10)]
    with Index(db, embedder=FakeEmbedder(), collection="a") as ix:
        ix.add(a, strategy=lines())
    with Index(db, embedder=FakeEmbedder(), collection="b") as ix:
        ix.add(b, strategy=lines())
        if other_searched_first:
            assert ix.search("fruit basket 3", k=1)[0].source == "b/3.txt"
    with Index(db, embedder=FakeEmbedder(), collection="a") as ix:
        assert ix.count() == 20
        hits = ix.search("storm lamp keeper 3", k=2)
        assert hits and hits[0].source == "a/3.txt" and all(h.source.startswith("a/") for h in hits)


def test_a_copy_interrupted_while_following_a_write_is_dropped_not_saved(tmp_path, monkeypatch):
    """Ctrl-C while the copies take in a batch: none is saved with a count that matches but a batch missing;
    the next search reads the rows and answers right."""
    from chunkwise.store.bm25 import SpooledPostings

    db = tmp_path / "t.db"
    real = SpooledPostings.upsert
    calls = []

    def interrupted(self, items):  # the second batch taken in, then Ctrl-C: what it holds is not known
        real(self, items)
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(SpooledPostings, "upsert", interrupted)
    with pytest.raises(KeyboardInterrupt), Index(db, embedder=FakeEmbedder()) as ix:
        for doc in docs(6):
            ix.add([doc], strategy=lines())
    monkeypatch.setattr(SpooledPostings, "upsert", real)
    assert BM25_FOLDER not in trusted(db) and not list(db.glob("chunkwise-bm25.*"))
    with Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search(docs(6)[0].text.split("\n")[0], k=1)
        assert hits and hits[0].source == docs(6)[0].source


def test_a_spool_named_absolutely_is_kept_under_a_relative_database_path(tmp_path, monkeypatch):
    """From Python 3.12 on ``mkdtemp`` returns an absolute path even under a relative ``--db``: the cleanup of
    killed saves must still tell the run's own spools from leftovers (it removed them, and no copy was left)."""
    monkeypatch.chdir(tmp_path)
    root = Path("t.db")
    for name in ("chunkwise-bm25.spool-own", "chunkwise-bm25.k1ll3d"):
        (root / name).mkdir(parents=True)
    ms.remove_leftovers(root, keep=[tmp_path / "t.db" / "chunkwise-bm25.spool-own"])
    assert sorted(p.name for p in root.iterdir()) == ["chunkwise-bm25.spool-own"]
