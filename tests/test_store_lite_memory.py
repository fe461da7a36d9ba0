"""A process that writes a Milvus Lite index holds a bounded part of it (store/lite_memory.py): segments give
their tables back and read them again from their files when needed, a writer finds a document's stored chunks
in the places it holds. The index and every answer must be what the engine as it ships gives."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from index_data import lines

from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store import lite_memory
from chunkwise.store.milvus_search import COPY_FOLDERS
from chunkwise.store.places import ChunkPlaces

ROOT = Path(__file__).resolve().parents[1]
WORDS = "lamp lens keeper tide harbour rope signal storm light night bee honey wax queen train ticket".split()


def corpus(batch: int) -> list[Document]:
    """Eight documents of twelve lines per batch; batch 2 rewrites two documents of batch 0."""
    out = []
    for n in range(8):
        doc = batch * 8 + n if batch < 2 or n >= 2 else n
        text = "\n".join(
            " ".join(WORDS[(doc * 7 + line * 3 + k + batch) % len(WORDS)] for k in range(5 + line % 4))
            for line in range(12)
        )
        out.append(Document(text, source=f"kb/{doc}.txt"))
    return out


BUILD = r"""
import json, sys
sys.path.insert(0, sys.argv[3])
from conftest import FakeEmbedder
from index_data import lines
from test_store_lite_memory import corpus, dump
from chunkwise.retrieval import Index
if sys.argv[2] == "plain":  # the engine as it ships: every table held, its own merges
    import chunkwise.store.lite as lite
    lite.bound_engine_memory = lambda: False
with Index(sys.argv[1], embedder=FakeEmbedder()) as ix:
    for batch in range(3):
        ix.add(corpus(batch), strategy=lines())  # each add ends with a flush: a segment per batch
print(json.dumps(dump(sys.argv[1])))
"""


def dump(db: str) -> dict:
    """Every stored row (sorted) and the answers of a few searches, hybrid and dense."""
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix._open_existing()
        scanned = ix.store.scan_chunks(["id", "doc_id", "chunk_index", "text", "vector"])
        rows = sorted((r | {"vector": [round(x, 6) for x in r["vector"]]} for r in scanned), key=lambda r: r["id"])
        searches = [
            ranked([(h.id, round(h.score, 9)) for h in ix.search(q, k=5, hybrid=hybrid)])
            for q in ("keeper lamp", "honey queen bee", "night train ticket")
            for hybrid in (True, False)
        ]
    return {"rows": rows, "searches": searches}


def ranked(hits: list[tuple[str, float]]) -> list:
    """The scores in order, and the hits of each score but the lowest (which k may cut) as a set: hits of
    equal score have no order, and the layout of the files (which merges and rewrites change) picks one."""
    scores = [score for _, score in hits]
    return [scores, [sorted(i for i, s in hits if s == score) for score in sorted(set(scores))[1:]]]


def build(db: Path, mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(db), mode, str(ROOT / "tests")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two indexing processes
@pytest.mark.timeout(600)
def test_bounded_engine_writes_the_index_the_plain_engine_writes(tmp_path):
    plain = build(tmp_path / "plain.db", "plain")
    bounded = build(tmp_path / "bounded.db", "bounded")
    assert len(plain["rows"]) == 8 * 3 * 12 - 2 * 12  # batch 2 rewrote two documents of batch 0
    assert bounded == plain


def test_a_writer_holds_no_segment_tables_and_reads_give_the_same_rows(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        for batch in range(3):
            ix.add(corpus(batch), strategy=lines())
        client = ix.store.connect()
        col = client._db.get_collection(ix.store.collection)
        col._wait_for_bg()
        segments = list(col._segment_cache.values())
        assert len(segments) >= 3 and type(segments[0]).__name__ == "LazySegment"
        assert all(s._held is None for s in segments)  # the writes kept none of them
        assert len(lite_memory._recent) <= lite_memory.RECENT_TABLES
        ids = [r["id"] for r in ix.store.scan_chunks(["id"])]  # a read: it loads the tables and keeps them
        assert all(s._held is not None for s in segments)
        assert len(ids) == len(set(ids)) == ix.count() == 8 * 3 * 12 - 2 * 12
        got = {r["id"]: r["text"] for r in client.get(ix.store.collection, ids=ids, output_fields=["id", "text"])}
        assert set(got) == set(ids) and all(got.values())


def test_a_writer_asks_the_engine_no_filtered_query_on_the_chunks(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        client = ix.store.connect()
        queries: list[str] = []
        real = client.query

        def query(collection_name, filter="", **kwargs):
            if collection_name == ix.store.collection and filter:
                queries.append(filter)
            return real(collection_name, filter=filter, **kwargs)

        client.query = query
        ix.add(corpus(1) + corpus(2), strategy=lines())  # new documents and rewritten ones
        assert queries == []
        assert ix.count() == 8 * 3 * 12 - 2 * 12  # the rewritten documents' old chunks were found and removed


def test_places_give_every_chunk_of_a_document_while_it_is_rewritten():
    places = ChunkPlaces([("a0", "a", 0), ("a1", "a", 1), ("b0", "b", 0)])
    places.add([("a0-new", "a", 0)])  # the new chunk at index 0 before the old ones are deleted
    assert places.ids_of(["a", "c"]) == {"a": {"a0", "a1", "a0-new"}, "c": set()}
    places.remove(["a0", "a1"])
    assert places.ids_of(["a"]) == {"a": {"a0-new"}}


def test_a_flush_builds_the_table_the_engine_builds(tmp_path, monkeypatch):
    from milvus_lite.storage.memtable import MemTable

    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0)[:1], strategy=lines())
        built = MemTable._build_data_table
        assert hasattr(built, "original")  # installed by the bounded engine
        compared: list[tuple[int, int, bool]] = []
        shared: list[bool] = []

        def both(self, rows):
            ours, theirs = built(self, rows), built.original(self, rows)
            compared.append(
                (len(rows), len({b for b, _ in rows}), ours.schema == theirs.schema and ours.equals(theirs))
            )
            texts = {b.column("text").buffers()[2].address for b in self._insert_batches}
            shared.append(any(c.buffers()[2].address in texts for c in ours.column("text").chunks))
            return ours

        monkeypatch.setattr(MemTable, "_build_data_table", both)
        for batch in range(3):  # rewrites too: keys written twice, stale rows left in the memtable's batches
            ix.add(corpus(batch), strategy=lines(), batch_size=16)
    assert compared and all(same for _, _, same in compared)
    assert any(shared)  # a batch written whole, not rewritten since: its buffers used as they are, not copied
    assert max(n for n, _, _ in compared) > 12 and max(b for _, b, _ in compared) > 1


READER = r"""
import collections, json, sys
sys.path.insert(0, sys.argv[2])
import chunkwise.store.lite as lite
from conftest import FakeEmbedder
from chunkwise.retrieval import Index
reads = collections.Counter()
plain = lite._read_one_file
def counted(path):
    reads[path] += 1
    return plain(path)
lite._read_one_file = counted  # installed as the engine's reader when the database opens
with Index(sys.argv[1], embedder=FakeEmbedder()) as ix:
    for q in ("keeper lamp", "honey queen bee", "night train ticket"):
        ix.expand(ix.search(q, k=3), "neighbors:1")
        ix.search(q, k=3, hybrid=False)
print(json.dumps(reads))
"""


def test_a_process_that_only_searches_reads_each_file_once(tmp_path):
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        for batch in range(3):
            ix.add(corpus(batch), strategy=lines())
    out = subprocess.run(
        [sys.executable, "-c", READER, str(db), str(ROOT / "tests")], capture_output=True, text=True, check=True
    )
    reads = json.loads(out.stdout.strip().splitlines()[-1])
    data = [p for p in reads if "/data/" in p]
    assert len(data) >= 3 and all(reads[p] == 1 for p in data), reads


def test_a_milvus_lite_release_it_was_not_tested_against_is_left_as_it_ships(monkeypatch):
    import milvus_lite
    import milvus_lite.engine.collection as collection

    before = collection.Segment
    monkeypatch.setattr(milvus_lite, "__version__", "9.0.0")
    monkeypatch.setattr(collection, "Segment", before.__mro__[1] if before.__name__ == "LazySegment" else before)
    shipped = collection.Segment
    assert lite_memory.bound_engine_memory() is False
    assert collection.Segment is shipped


def collection_of(ix: Index):
    return ix.store.connect()._db.get_collection(ix.store.collection)


def test_a_read_that_holds_segments_a_merge_replaces_still_reads_them(tmp_path):
    # Milvus Lite reads its snapshot of the segments outside its lock: a merge may delete their files meanwhile
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        for batch in range(3):
            ix.add(corpus(batch), strategy=lines())
        col = collection_of(ix)
        col._wait_for_bg()
        col.flush()
        snapshot = col._segments_snapshot()  # what a search takes under the lock
        assert all(s._held is None for s in snapshot)  # the writes kept no table: each is read back from its file
        keys = [list(s.pks) for s in snapshot]
        for batch in range(3, 6):  # more flushes: the merge replaces the snapshot's segments, deletes their files
            ix.add(corpus(batch), strategy=lines())
        col._wait_for_bg()
        replaced = [s for s in snapshot if s not in col._segment_cache.values()]
        assert replaced and not any(Path(s.file_path).exists() for s in replaced)
        assert [s.table.column("id").to_pylist() for s in snapshot] == keys


def versions(v: int) -> list[Document]:
    """The same eight documents, their text changed in every version."""
    return [
        Document(
            "\n".join(f"{WORDS[(n + line + v) % len(WORDS)]} version {v} line {line}" for line in range(12)),
            source=f"kb/{n}.txt",
        )
        for n in range(8)
    ]


def rows_on_disk(col) -> int:
    import pyarrow.parquet as pq

    return sum(
        pq.ParquetFile(Path(col._data_dir) / "partitions" / partition / rel).metadata.num_rows
        for partition, rels in col._manifest.get_all_data_files().items()
        for rel in rels
    )


def test_rows_re_indexing_deletes_leave_the_disk_and_their_tombstones_go(tmp_path, monkeypatch):
    import milvus_lite.engine.compaction as compaction

    assert lite_memory.bound_engine_memory()
    # scaled down: files of 32 rows or more are not merged (as files of a flush are, with MERGE_ROWS rows)
    monkeypatch.setattr(compaction, "MAX_SEGMENT_ROWS", 16)
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        on_disk = []
        for v in range(8):
            ix.add(versions(v), strategy=lines())  # each version deletes the last one's 96 chunks
            col = collection_of(ix)
            col._wait_for_bg()
            on_disk.append((rows_on_disk(col), len(col._delta_index)))
        live = ix.count()
        assert live == 8 * 12
        texts = [r["text"] for r in ix.store.scan_chunks(["text"])]
        assert len(texts) == live and all("version 7 " in t for t in texts)
    assert max(rows for rows, _ in on_disk) <= 2 * live, on_disk  # never more than one dead version on disk
    assert max(tombstones for _, tombstones in on_disk) <= 2 * live, on_disk


def test_a_writer_reads_no_whole_table_and_holds_no_vector_index(tmp_path, monkeypatch):
    """Each flush makes a segment: a writer reads its keys (and, for the vector index, its vectors) but not
    its whole table, and keeps only where the index it built is saved; a search in the same process then
    reads the index back and finds what a fresh process finds."""
    from milvus_lite.storage import segment as segment_module

    db = tmp_path / "t.db"
    whole: list[str] = []
    read = segment_module.read_data_file

    def counted(path, *args, **kwargs):
        whole.append(path)
        return read(path, *args, **kwargs)

    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.store.connect()  # opening binds chunkwise's reader there: count what is read after it
        monkeypatch.setattr(segment_module, "read_data_file", counted)
        for batch in range(3):
            ix.add(corpus(batch), strategy=lines())
        col = ix.store.connect()._db.get_collection(ix.store.collection)
        col._wait_for_bg()
        segments = list(col._segment_cache.values())
        assert len(segments) >= 3
        assert whole == []  # no flush, vector index build or count read a whole table
        import pyarrow.parquet as pq

        for s in segments:  # the keys held as one array each, read back as the file's keys
            assert isinstance(s.pks, lite_memory.KeyColumn)
            keys = pq.read_table(s.file_path, columns=["id"]).column("id").to_pylist()
            assert list(s.pks) == keys and [s.pks[i] for i in range(len(keys))] == keys == s.pks[:]
        indexes = [i for s in segments for i in s.indexes.values()]
        assert indexes and all(isinstance(i, lite_memory.IndexOnDisk) and i._index is None for i in indexes)
        here = [h.id for h in ix.search("keeper lamp", k=5, hybrid=False)]
        assert any(i._index is not None for i in indexes)  # the search read them back
    fresh = subprocess.run(
        [sys.executable, "-c", SEARCH, str(db), str(ROOT / "tests")], capture_output=True, text=True, check=True
    )
    assert here == json.loads(fresh.stdout.strip().splitlines()[-1])


SEARCH = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from conftest import FakeEmbedder
from chunkwise.retrieval import Index
with Index(sys.argv[1], embedder=FakeEmbedder()) as ix:
    print(json.dumps([h.id for h in ix.search("keeper lamp", k=5, hybrid=False)]))
"""


def test_an_index_left_on_disk_whose_file_a_merge_deleted_is_built_again(tmp_path):
    """A read may still hold a segment a merge replaced, whose saved index went with its file."""
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        col = ix.store.connect()._db.get_collection(ix.store.collection)
        col._wait_for_bg()
        segment = next(s for s in col._segment_cache.values() if s.indexes)
        field, on_disk = next(iter(segment.indexes.items()))
        assert isinstance(on_disk, lite_memory.IndexOnDisk)
        saved = on_disk.loaded()
        gone = lite_memory.IndexOnDisk(on_disk._spec, str(tmp_path / "gone.idx"), on_disk._dim, segment)
        queries = segment.vector_data(field)[0][:3]
        assert gone.num_vectors == saved.num_vectors == len(segment.pks)
        assert (gone.search(queries, 2)[0] == saved.search(queries, 2)[0]).all()


class Trims:
    """Stands for glibc's ``malloc_trim``: records each call and the point of the run it came at."""

    def __init__(self, where=lambda: None):
        self.calls: list = []
        self._where = where

    def __call__(self, pad: int) -> int:
        self.calls.append((pad, self._where()))
        return 1


def test_a_flush_and_the_engines_work_after_it_give_freed_memory_back(tmp_path, monkeypatch):
    import threading

    trims = Trims(where=lambda: threading.current_thread() is threading.main_thread())
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        col = collection_of(ix)
        col._wait_for_bg()
        monkeypatch.setattr(lite_memory, "_trim", trims)
        col.insert([dict(r, id=r["id"] + "-again") for r in col.query(None, limit=4)])
        col.flush()  # the flush schedules the engine's merges and index builds in its background thread
        # what the flush freed, given back in this thread as it returns (the background work it started may
        # already have ended and given back its own, first: the two threads race)
        assert (0, True) in trims.calls
        col._wait_for_bg()
        # and what the background work freed, in its own thread, once it ended: one trim each
        assert sorted(trims.calls) == [(0, False), (0, True)]


def test_the_bm25_copy_is_saved_last_on_a_trimmed_heap_without_the_other_copies(tmp_path, monkeypatch):
    from chunkwise.store import milvus_search

    events: list = []
    held: list = []
    copies = (milvus_search.SpooledPostings, milvus_search.SpooledVectors, milvus_search.ChunkPlaces)
    for copy in (*copies, milvus_search.SpooledRows):
        real = copy.save

        def save(self, folder, *a, _real=real, _name=copy.__name__, **k):
            if _name == "SpooledPostings":
                held.append((ix.store._vectors, ix.store._places))
            events.append(_name)
            return _real(self, folder, *a, **k)

        monkeypatch.setattr(copy, "save", save)
    monkeypatch.setattr(lite_memory, "_trim", Trims(lambda: events.append("trim")))
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        events.clear()
    saves = [e for e in events if e != "trim"]
    assert saves == ["ChunkPlaces", "SpooledVectors", "SpooledRows", "SpooledPostings"]
    bm25 = events.index("SpooledPostings")
    assert events[bm25 - 1] == "trim"  # the heap given back right before the BM25 copy's save
    assert held == [(None, None)]  # the saved vectors and places were let go before it
    for name in COPY_FOLDERS:
        assert milvus_search.copy_key(tmp_path / "t.db" / name, ix.store.collection) is not None  # saved, keyed


def test_a_close_interrupted_while_saving_the_copies_leaves_none_a_later_close_could_key(tmp_path, monkeypatch):
    """Ctrl-C (or no memory) during the BM25 save, when the other copies are saved and let go: the same Index
    then rewrites two documents (same count) and closes. No copy of the interrupted close may be keyed on
    the new files: a search answers as the engine does."""
    from chunkwise.store import milvus_search

    db = tmp_path / "t.db"
    ix = Index(db, embedder=FakeEmbedder())
    ix.add(corpus(0), strategy=lines())
    real = milvus_search.SpooledPostings.save

    def interrupted(self, folder, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(milvus_search.SpooledPostings, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ix.close()
    assert not any((db / name).exists() for name in COPY_FOLDERS)
    monkeypatch.setattr(milvus_search.SpooledPostings, "save", real)
    rewritten = corpus(2)[:2]
    ix.add(rewritten, strategy=lines())
    ix.close()
    queries = rewritten[0].text.split("\n")[:4]
    with Index(db, embedder=FakeEmbedder()) as fresh:
        found = [[(h.chunk.source, h.chunk.text) for h in fresh.search(q, k=3)] for q in queries]
    for name in COPY_FOLDERS:
        shutil.rmtree(db / name, ignore_errors=True)
    with Index(db, embedder=FakeEmbedder()) as engine:
        assert found == [[(h.chunk.source, h.chunk.text) for h in engine.search(q, k=3)] for q in queries]


def test_no_trim_where_the_c_library_is_not_glibc(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert lite_memory._libc_trim() is None
    monkeypatch.setattr(lite_memory, "_trim", None)
    lite_memory.release_freed_memory()  # Arrow's pool released, nothing else: no error


def test_a_writer_holds_no_key_map_until_a_read_by_key_asks_for_one(tmp_path):
    from milvus_lite.storage.segment import Segment

    slot = Segment.pk_to_row  # the engine's own attribute, under the lazy segment's property
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        for batch in range(2):
            ix.add(corpus(batch), strategy=lines())
        col = collection_of(ix)
        col._wait_for_bg()
        segments = list(col._segment_cache.values())
        assert len(segments) >= 2

        def held(segment) -> bool:
            try:
                slot.__get__(segment)
            except AttributeError:
                return False
            return True

        assert not any(held(s) for s in segments)  # the bulk writes made none
        wanted = [s.pks[-1] for s in segments]
        got = ix.store.connect().get(ix.store.collection, ids=wanted, output_fields=["id"])
        assert sorted(r["id"] for r in got) == sorted(wanted)  # a read by key finds every row
        assert all(held(s) and s.find_row(s.pks[-1]) == len(s.pks) - 1 for s in segments)


def test_a_flush_waits_for_the_background_work_of_the_one_before(tmp_path, monkeypatch):
    import threading
    import time

    from milvus_lite.engine import collection as engine

    events: list[str] = []
    write = engine.execute_flush
    monkeypatch.setattr(engine, "execute_flush", lambda *a, **k: (events.append("flush"), write(*a, **k))[1])
    index = engine.Collection._ensure_loaded_segments_indexed
    monkeypatch.setattr(
        engine.Collection, "_ensure_loaded_segments_indexed", lambda self: (time.sleep(0.3), index(self))[1]
    )
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        col = collection_of(ix)
        col._wait_for_bg()
        rows = col.query(None, limit=4)
        main = threading.main_thread()
        where = lambda: events.append("trim here" if threading.current_thread() is main else "trim behind")  # noqa: E731
        monkeypatch.setattr(lite_memory, "_trim", Trims(where))
        events.clear()
        for n in range(2):
            col.insert([dict(r, id=f"{r['id']}-{n}") for r in rows])
            col.flush()  # its background work sleeps: the next flush would otherwise start before it ends
        col._wait_for_bg()
    # each flush gives back what it freed, then the next waits for the background work and its release
    assert events[:6] == ["flush", "trim here", "trim behind", "flush", "trim here", "trim behind"]


@pytest.mark.parametrize(
    "keys, compact",
    [
        (["a1", "b22", "0087db748cf7790"], True),
        (["é1", "a"], False),
        (["a\0", "b"], False),
        ([1, 2], False),
        ([], False),
    ],
)
def test_segment_keys_are_held_compactly_only_where_they_read_back_unchanged(keys, compact):
    held = lite_memory.KeyColumn.of(keys)
    assert isinstance(held, lite_memory.KeyColumn) == compact
    assert list(held) == keys and len(held) == len(keys) and [held[i] for i in range(len(keys))] == keys
    assert list(enumerate(held)) == list(enumerate(keys))


def test_a_writer_reads_its_flushed_files_in_its_own_thread(tmp_path, monkeypatch):
    """The keys a flush's segment is made from and the vectors its index is built from are read without
    Arrow's reader threads, whose memory pools the releases after a flush do not reach."""
    import pyarrow.parquet as pq

    asked: list[object] = []
    read = pq.ParquetFile.read

    def recorded(self, *args, **kwargs):
        if kwargs.get("columns") is not None:  # a read of some columns: keys, or vectors for an index build
            asked.append(kwargs.get("use_threads", True))
        return read(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", recorded)
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(corpus(0), strategy=lines())
        collection_of(ix)._wait_for_bg()
    assert asked and all(threads is False for threads in asked)
