"""Milvus Lite's memory in a writing process, bounded: segments whose tables are read back when needed, and
merges of a bounded size.

Milvus Lite (3.x) keeps every sealed segment's whole Arrow table (texts, vectors, metadata) in memory for as
long as the database is open, and its size-tiered compaction reads up to 200,000 rows at once (concatenated,
sorted, deduplicated and written again: about five times the merged tables at its peak). Indexing public text
into it (``benchmarks/bench_index_memory.py``) peaked at 237 / 293 / 707 / 824 MB for 2 / 10 / 50 / 100 MB,
the peaks set by merges and flushes, the slope by the resident tables. Four changes, made where the engine
reads them:

- **Segments held lazily in a process that writes** (:class:`LazySegment`): once the process writes
  (:func:`writing`, called by the client's upsert and delete), a segment keeps its keys, sequence numbers and
  key map (what a write's point lookups and a count need) and gives its table back to a small cache of
  recently used tables (:data:`RECENT_TABLES`); a read of the engine (``query``, ``search``, ``get``:
  :func:`reading`) keeps the tables it loads, as Milvus Lite always did. A process that only searches never
  writes, so it holds every table and reads each file once. The data, and every answer, are the same: a
  table is read back from its immutable Parquet file.
- **Flushes built with Arrow**: the memtable's live rows are taken from its batches with Arrow's ``take``
  instead of one Python object per cell (the same table; the Python objects were about four times the
  memtable's budget at each flush), and a batch written whole is used as it is, not copied.
- **Merges of at most** :data:`MERGE_ROWS` **rows**: files of that many rows or more are left as they are
  (``MAX_SEGMENT_ROWS``), so the small files of incremental runs are still merged and a bulk run's flushed
  files are not; forced merges above 32 files (which, with segments this size, would rewrite the same files
  on every flush) are off (``MAX_DATA_FILES``). A corpus then keeps one file per memtable flush (8 MB of
  rows, about 2,400 chunks of 256 words): 29 at 100 MB of text. Since those files are not merged, a
  file whose rows are :data:`DEAD_SHARE` or more dead (deleted, or replaced by a newer row: what re-indexing
  leaves) is rewritten alone without them, so the disk and the tombstones do not grow with every re-index.
  A merge hands the tables it reads to the segments it replaces (:func:`_handing`): a read holding those
  segments in its snapshot reads them after their files are deleted.

- **Freed memory given back** (:func:`release_freed_memory`) after each flush, after the engine's background
  work that follows it (merges, vector index builds; the next flush waits for it) and between the copies' saves
  at the close (:func:`~chunkwise.store.milvus_search.save_copies`): Arrow's allocator releases its unused pages
  and glibc's ``malloc_trim(0)`` returns the free pages of every arena. The engine's background thread
  allocates in an arena of its own, whose free pages the main thread cannot reuse, so what a flush freed
  there stayed resident under the next peak. With the key maps below, 100 MB of public text peaked at
  262-265 MB against 292-296 MB without, for no measurable CPU (benchmarks/results/store.md). A writer's
  segments also hold their keys as one bytes array (:class:`KeyColumn`) without the engine's ``key -> row``
  dict until a read by key asks for it, and it reads a flushed file's columns without Arrow's reader threads
  (whose own allocator heaps no release reaches).

All four are installed by :func:`bound_engine_memory` when chunkwise opens a Milvus Lite database in process; a
milvus-lite without these internals is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

#: tables kept by the cache of recently used segments outside reads (a write's point lookups, index builds)
RECENT_TABLES = 2
#: the most rows a merge reads (Milvus Lite's default: 200,000); files of half as many are left alone
MERGE_ROWS = 4096
#: the Milvus Lite releases whose internals this module was written and tested against (``major.minor``): any
#: other release is left as it is, since a same-named internal may mean something else there
TESTED_RELEASES = ("3.2",)
#: forced merges above this many files (Milvus Lite: 32) are off: with small merges they would rewrite the
#: same full files on every flush
MAX_FILES = 1 << 20
#: a file whose rows are this share dead (deleted, or replaced by a newer row of the same key) is rewritten
#: alone, without them: what re-indexing deletes leaves the disk, and its tombstones can be dropped
DEAD_SHARE = 0.25

_lock = threading.RLock()
_recent: OrderedDict[int, tuple[Any, Any]] = OrderedDict()  # id(segment) -> (segment, table)
_reads = threading.local()  # engine reads in progress in this thread (they keep what they load)


_segments: weakref.WeakSet = weakref.WeakSet()  # every lazy segment alive (a first write lets go of their tables)
_writing = False  # set by this process's first write: until then segments hold their tables as the engine does


def _reading() -> bool:
    return not _writing or bool(getattr(_reads, "depth", 0))


def writing() -> None:
    """This process writes: from now on tables are held only by reads, and those held so far are let go (a
    process that only searches never gets here, and reads each file once, as Milvus Lite always did)."""
    global _writing
    if _writing:
        return
    with _lock:
        _writing = True
        for segment in list(_segments):
            segment._held = None
            _drop_key_map(segment)


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """A read of the engine (in this thread): tables it loads are kept by their segments (Milvus Lite's own behaviour)."""
    _reads.depth = getattr(_reads, "depth", 0) + 1
    try:
        yield
    finally:
        _reads.depth -= 1


def _recent_table(segment: Any) -> Any:
    with _lock:
        hit = _recent.get(id(segment))
        if hit is None or hit[0] is not segment:
            return None
        _recent.move_to_end(id(segment))
        if _reading():
            segment._held = hit[1]
        return hit[1]


def _read_back(segment: Any, read: Any) -> Any:
    try:
        return read(segment.file_path)
    except FileNotFoundError:
        # a merge deleted the file after this read looked for its table: it handed the table over first
        kept = getattr(segment, "_kept", None)
        if kept is None:
            raise
        return kept


class IndexOnDisk:
    """A segment's saved vector index, read from its file by the first use (then held, as Milvus Lite holds
    the indexes it loads). In a writing process the indexes built after each flush would otherwise stay in
    memory, one per segment, though only a search reads them."""

    def __init__(self, spec: Any, path: str, dim: int, segment: Any = None) -> None:
        self._spec, self._path, self._dim = spec, path, dim
        self._segment = None if segment is None else weakref.ref(segment)
        self._index: Any = None

    def loaded(self) -> Any:
        if self._index is None:
            from milvus_lite.index import factory

            with _lock:
                if self._index is None:
                    try:
                        self._index = factory.load_index_from_spec(self._spec, self._path, self._dim)
                    except FileNotFoundError:
                        # a merge replaced the segment (a read still holds it) and its index file went with
                        # it: built again from the segment's vectors (the table the merge handed over)
                        segment = None if self._segment is None else self._segment()
                        if segment is None:
                            raise
                        vectors = segment.vector_data(self._spec.field_name)[0]
                        self._index = factory.build_index_from_spec(self._spec, vectors)
        return self._index

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loaded(), name)


def _read_columns(path: str, columns: list[str]) -> Any:
    """Some columns of one Parquet file, read in this thread (a writer reads a flushed file's keys and its
    vectors, a few MB: Arrow's reader threads would each keep memory of their own for it)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        return handle.read(columns=columns, use_threads=False)


def _vector_table(segment: Any, field_name: str) -> Any:
    """The table a segment's vectors are read from: its own if it is held, else (a writer building the vector
    index after a flush) a table of that one column, a twentieth of the whole at 64 dimensions."""
    table = getattr(segment, "_held", None)
    if table is None:
        table = getattr(segment, "_kept", None)
    if table is None:
        table = _recent_table(segment)
    if table is None and not _reading():
        with contextlib.suppress(FileNotFoundError):  # a merge deleted it: the table handed over is read
            table = _read_columns(segment.file_path, [field_name])
    return segment.table if table is None else table


def _table_of(segment: Any, read: Any) -> Any:
    """A lazy segment's table: held by a read, or handed over by the merge that replaced it (its file gone or
    going), or recently used, or read back from its file."""
    held = getattr(segment, "_held", None)
    if held is None:
        held = getattr(segment, "_kept", None)
    if held is not None:
        return held
    table = _recent_table(segment)
    if table is None:
        table = _read_back(segment, read)
        segment._keep(table)
    return table


class KeyColumn(Sequence[str]):
    """A segment's keys as one array of fixed-width ASCII bytes, read back as ``str``: what the engine asks of
    its ``pks`` list (length, index, iteration) for about a quarter of the memory (16-character chunk ids: 16
    bytes each against a 65-byte ``str`` and its list slot). A writer holds one per flushed file, so a bulk
    run's keys would otherwise grow by about 75 bytes a chunk."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Any) -> None:
        self._keys = keys

    @classmethod
    def of(cls, keys: list[Any]) -> Sequence[Any]:
        """``keys`` as a :class:`KeyColumn` where each is an ASCII ``str`` without NUL (what fixed-width bytes
        give back unchanged), else the list itself."""
        import numpy as np

        if not keys or not all(type(k) is str and k.isascii() and "\0" not in k for k in keys):
            return keys
        return cls(np.array([k.encode() for k in keys], dtype=bytes))

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [k.decode() for k in self._keys[at].tolist()]
        return self._keys[at].decode()

    def __iter__(self) -> Iterator[str]:
        for k in self._keys.tolist():
            yield k.decode()


def _keys_only(cls: Any, file_path: str, partition: str, pk_field: str, vector_field: str | None) -> Any:
    """A segment of *cls* with the keys (as a :class:`KeyColumn`) and sequence numbers of its file, its table
    not read."""
    import numpy as np

    keys = _read_columns(file_path, [pk_field, "_seq"])
    pks = KeyColumn.of(keys.column(pk_field).to_pylist())
    return cls(
        file_path=file_path,
        partition=partition,
        pk_field=pk_field,
        vector_field=vector_field or "",
        pks=pks,
        seqs=np.asarray(keys.column("_seq").to_pylist(), dtype=np.uint64),
        vectors=np.zeros((len(pks), 0), dtype=np.float32),
        table=None,
        vector_null_mask=None,
    )


def _leave_index_on_disk(segment: Any, spec: Any, index_dir: str) -> None:
    """Replace the vector index a writer just built (and saved) by where it is saved (a read keeps it)."""
    held = segment.indexes.get(spec.field_name)
    if _reading() or held is None or isinstance(held, IndexOnDisk):
        return
    path = segment.index_file_path(index_dir, spec.index_type, spec.field_name)
    if os.path.exists(path):
        segment.attach_index(IndexOnDisk(spec, path, int(held.dim), segment), field_name=spec.field_name)


_key_maps: dict[type, Any] = {}  # the engine's ``pk_to_row`` slot, by lazy segment class


def _drop_key_map(segment: Any) -> None:
    slot = _key_maps.get(type(segment))
    if slot is not None:
        with contextlib.suppress(AttributeError):
            slot.__delete__(segment)


def _lazy_key_map(slot: Any) -> property:
    """The engine's ``key -> row`` map of a segment (``slot``), for point reads by key (``get``, an upsert's
    lookups): in a writing process made when first asked for, then kept; a bulk write that only inserts and
    deletes never asks, and holds its keys without a dict of them per segment (~80 bytes a chunk)."""

    def get(segment: Any) -> Any:
        try:
            return slot.__get__(segment)
        except AttributeError:
            with _lock:
                rows = {pk: i for i, pk in enumerate(segment.pks)}
                slot.__set__(segment, rows)
            return rows

    def put(segment: Any, value: Any) -> None:
        if _reading():
            slot.__set__(segment, value)
        else:  # the engine's constructor in a writer: not kept until a point read asks for it
            _drop_key_map(segment)

    return property(get, put)


def _make_lazy(segment_class: Any) -> type:
    from milvus_lite.storage import segment as segment_module

    key_map = segment_class.pk_to_row  # the engine's slot, behind the property below

    class LazySegment(segment_class):
        """A Milvus Lite segment whose table is read back from its Parquet file when it is not held."""

        __slots__ = ("_held", "_kept", "__weakref__")

        @property
        def table(self):
            return _table_of(self, segment_module.read_data_file)

        @table.setter
        def table(self, value) -> None:
            self._held = None
            if value is not None:  # None: a segment loaded by a writer (``load``), its table not read yet
                self._keep(value)

        @classmethod
        def load(cls, file_path: str, partition: str, pk_field: str, vector_field: str | None):
            """In a writing process, only the keys and sequence numbers of a new file are read (what a
            write's point lookups and a count need): a whole table read at each flush cost about five times
            the table in resident memory (Arrow's allocator keeps what a read used), and the table is read back
            only when something asks for it. A read of the engine loads it whole, as Milvus Lite does."""
            load = segment_class.load.__func__ if _reading() else _keys_only
            return load(cls, file_path, partition, pk_field, vector_field)

        def _keep(self, table) -> None:
            with _lock:
                if _reading():
                    self._held = table
                    return
                _recent[id(self)] = (self, table)
                _recent.move_to_end(id(self))
                while len(_recent) > RECENT_TABLES:
                    _recent.popitem(last=False)

        pk_to_row = _lazy_key_map(key_map)

        @property
        def vectors(self):
            if not self._vector_field:
                return segment_class.vectors.__get__(self)
            return self.vector_data(self._vector_field)[0]

        @vectors.setter
        def vectors(self, value) -> None:
            if not self._vector_field:  # a collection without vectors: the (n, 0) array the engine made
                segment_class.vectors.__set__(self, value)

        def vector_data(self, field_name: str):
            # a view of the table's buffer (lite._vector_reader), so it costs what the table costs; never
            # cached apart from the table
            return segment_module._extract_vector_array(_vector_table(self, field_name).column(field_name))

        def build_or_load_index(self, spec: Any, index_dir: str) -> None:
            # a writer builds each new segment's vector index (and saves it beside the file) but keeps only
            # where it is: the first search that needs it reads it back (:class:`IndexOnDisk`)
            super().build_or_load_index(spec, index_dir)
            _leave_index_on_disk(self, spec, index_dir)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            _segments.add(self)
            self._vector_data_by_field.clear()  # the engine caches each field's array: not kept here

    LazySegment.__name__ = LazySegment.__qualname__ = "LazySegment"
    _key_maps[LazySegment] = key_map
    return LazySegment


def _arrow_data_table(original: Any) -> Any:
    """Milvus Lite's ``MemTable._build_data_table`` (the live rows of a flush, in the order given) built with
    Arrow's ``take`` on each source batch instead of one Python object per cell: the same table, without a
    Python list of floats per vector and a ``str`` per text held at once (about four times the memtable's
    own size at the flush, the largest transient of an indexing run once the segments are not held). A batch
    whose rows are all live, in order (what a bulk write leaves), is used as it is, and the pieces are not
    concatenated: the table shares the memtable's buffers instead of copying them once or twice."""

    def build(self: Any, rows: list[tuple[int, int]]) -> Any:
        import pyarrow as pa

        schema = self._data_schema
        names = schema.names
        pieces = []
        start = 0
        for end in range(1, len(rows) + 1):  # runs of rows from one batch, in the order given
            if end == len(rows) or rows[end][0] != rows[start][0]:
                batch = self._insert_batches[rows[start][0]]
                if not all(name in batch.schema.names for name in names):
                    return original(self, rows)
                at = [r[1] for r in rows[start:end]]
                taken = batch.select(names)
                if at != list(range(batch.num_rows)):  # all of a batch, in order (a bulk write): not copied
                    taken = taken.take(pa.array(at, type=pa.int64()))
                pieces.append(pa.Table.from_batches([taken]))
                start = end
        if not pieces:
            return original(self, rows)
        # the batches' columns as they are, not concatenated into one more copy: the flush only writes them
        table = pa.concat_tables(pieces)
        if table.schema != schema:
            try:
                table = table.cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                return original(self, rows)
        return table

    build.original = original  # type: ignore[attr-defined]
    return build


def _handing(read: Any) -> Any:
    """The merge's reader of the files it replaces: each table read is handed to the segments of that file
    before the merge deletes it, since a read may hold them in a snapshot taken before the merge (Milvus Lite
    reads its snapshot outside its lock) and read their tables after the file is gone. A merge reads at most
    :data:`MERGE_ROWS` rows, or one file, so what is handed over is bounded; it lives as long as the replaced
    segments do (until the reads that hold them end)."""

    def read_data_file(path: str, *args: Any, **kwargs: Any) -> Any:
        table = read(path, *args, **kwargs)
        target = os.path.normpath(path)
        with _lock:
            for segment in list(_segments):
                if getattr(segment, "_kept", None) is None and os.path.normpath(segment.file_path) == target:
                    segment._kept = table
        return table

    read_data_file.handing = read  # type: ignore[attr-defined]
    return read_data_file


def _hand_over_merged_tables(compaction: Any) -> None:
    """The merge's reader wrapped by :func:`_handing`, whatever reader is bound there now (``store/lite.py``
    binds its own each time it opens a database, before this is called)."""
    if not hasattr(compaction.read_data_file, "handing"):
        compaction.read_data_file = _handing(compaction.read_data_file)


class _DeadRows:
    """Milvus Lite's tombstones, and rows a newer row of the same key replaced (what a merge of one file
    cannot see by itself): the rows a rewrite drops. Only ``__len__`` and ``is_deleted`` are asked by a merge."""

    def __init__(self, tombstones: Any, newest: dict[Any, int]) -> None:
        self._tombstones = tombstones
        self._newest = newest

    def __len__(self) -> int:
        return 1

    def is_deleted(self, key: Any, seq: int) -> bool:
        return self._newest.get(key, -1) > seq or self._tombstones.is_deleted(key, seq)


def _file_keys(manager: Any, path: str, held: dict[str, Any]) -> tuple[list[Any], list[int]]:
    segment = held.get(os.path.normpath(path))
    if segment is not None:
        return list(segment.pks), [int(s) for s in segment.seqs]
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=[manager._pk_name, "_seq"])
    return table.column(manager._pk_name).to_pylist(), table.column("_seq").to_pylist()


def _rewrite_dead_files(manager: Any, partition: str, manifest: Any, tombstones: Any) -> bool:
    """Rewrite alone each file of *partition* whose share of dead rows (deleted, or replaced by a newer row)
    has reached :data:`DEAD_SHARE`: merges leave files of :data:`MERGE_ROWS` // 2 rows or more as they are, so
    without this the rows that re-indexing deletes or replaces would stay on disk, and their tombstones with
    them. One file at a time: the memory of a flush."""
    files = list(manifest.get_data_files(partition))
    if not files:
        return False
    partition_dir = os.path.join(manager._data_dir, "partitions", partition)
    with _lock:
        held = {os.path.normpath(s.file_path): s for s in list(_segments) if getattr(s, "_kept", None) is None}
    keys: dict[str, tuple[list[Any], list[int]]] = {}
    newest: dict[Any, int] = {}
    for rel in files:
        path = os.path.join(partition_dir, rel)
        try:
            pks, seqs = keys[rel] = _file_keys(manager, path, held)
        except OSError:
            return False
        for key, seq in zip(pks, seqs):
            if newest.get(key, -1) < seq:
                newest[key] = seq
    dead = _DeadRows(tombstones, newest)
    rewritten = False
    for rel in files:
        pks, seqs = keys[rel]
        gone = sum(1 for key, seq in zip(pks, seqs) if dead.is_deleted(key, seq))
        if gone and gone >= DEAD_SHARE * len(pks):
            manager._compact_files(partition, partition_dir, [rel], manifest, dead)
            rewritten = True
    if rewritten:
        manager._gc_tombstones(manifest, tombstones)
    return rewritten


def _bounded_compaction(manager_class: Any) -> None:
    """Merges that hand the tables they read to the segments they replace, and rewrite files full of dead rows."""
    compact_files = manager_class._compact_files
    maybe_compact = manager_class.maybe_compact

    def _compact_files(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return compact_files(self, *args, **kwargs)
        finally:  # a merge that failed, or a file pinned by a snapshot: the segment reads its file again
            with _lock:
                for segment in list(_segments):
                    if getattr(segment, "_kept", None) is not None and os.path.exists(segment.file_path):
                        segment._kept = None

    def _maybe_compact(self: Any, partition: str, manifest: Any, delta_index: Any) -> bool:
        if maybe_compact(self, partition, manifest, delta_index):
            return True
        return _rewrite_dead_files(self, partition, manifest, delta_index)

    _compact_files.original = compact_files  # type: ignore[attr-defined]
    _maybe_compact.original = maybe_compact  # type: ignore[attr-defined]
    manager_class._compact_files = _compact_files
    manager_class.maybe_compact = _maybe_compact


def _libc_trim() -> Any:
    """glibc's ``malloc_trim`` (``None`` on another C library or system, where nothing is trimmed)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the C library this process already runs on
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl and others have no malloc_trim)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_trim: Any = False  # found by the first release: not yet looked for


def release_freed_memory() -> None:
    """Give the memory freed by a flush, a merge or an index build back to the system: Arrow's allocator
    (mimalloc) frees its unused pages, and glibc's ``malloc_trim(0)`` returns the free pages of every arena
    (the engine's background thread allocates in an arena of its own, whose free pages the main thread
    cannot reuse). Neither changes what is allocated; a no-op where neither is present."""
    import sys

    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        with contextlib.suppress(Exception):
            pyarrow.default_memory_pool().release_unused()
    global _trim
    if _trim is False:
        _trim = _libc_trim()
    if _trim is not None:
        _trim(0)


def _releasing(work: Any) -> Any:
    """``work`` (the engine's background work after a flush: merges, vector index builds; or the flush
    itself), then :func:`release_freed_memory`, whatever ``work`` raised."""

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return work(self, *args, **kwargs)
        finally:
            release_freed_memory()

    run.original = work  # type: ignore[attr-defined]
    return run


def _after_background(flush: Any) -> Any:
    """The engine's flush, once the background work the previous flush started (merges, the new segment's
    vector index) has ended and given back what it freed: without the wait, a flush's transient (its table,
    the Parquet write) could come on top of an index build's, the peak of a bulk run. Not where this thread
    holds the engine's maintenance lock (the background work needs it). After the flush, what it freed in
    this thread (the frozen memtable, its table, the Parquet writer's buffers) is given back too: otherwise
    it stays resident until the close, under the writes that follow."""

    releasing = _releasing(flush)

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = getattr(self, "_maintenance_lock", None)
        owned = getattr(lock, "_is_owned", None)
        wait = getattr(self, "_wait_for_bg", None)
        if callable(owned) and not owned() and callable(wait):
            wait()
        return releasing(self, *args, **kwargs)

    run.original = flush  # type: ignore[attr-defined]
    return run


def bound_engine_memory() -> bool:
    """Install the lazy segments and the bounded merges in this process's Milvus Lite (once); ``False`` where
    its internals are not those this was written for."""
    import importlib

    try:
        collection = importlib.import_module("milvus_lite.engine.collection")
        compaction = importlib.import_module("milvus_lite.engine.compaction")
        segment = importlib.import_module("milvus_lite.storage.segment")
    except ImportError:
        return False
    release = ".".join(str(getattr(importlib.import_module("milvus_lite"), "__version__", "")).split(".")[:2])
    if release not in TESTED_RELEASES:
        return False
    current = getattr(collection, "Segment", None)
    if getattr(current, "__name__", "") == "LazySegment":
        _hand_over_merged_tables(compaction)  # again: opening a database may have bound another reader
        return True
    base = getattr(segment, "Segment", None)
    needed = ("table", "vectors", "file_path", "_vector_field", "_vector_data_by_field", "pk_to_row")
    if current is not base or not isinstance(base, type) or not all(hasattr(base, n) for n in needed):
        return False
    manager: Any = getattr(compaction, "CompactionManager", None)
    needed_compaction = ("MAX_SEGMENT_ROWS", "MAX_DATA_FILES", "read_data_file")
    if not all(hasattr(compaction, n) for n in needed_compaction) or not all(
        hasattr(manager, n) for n in ("_compact_files", "maybe_compact", "_gc_tombstones")
    ):
        return False
    collection.Segment = _make_lazy(base)  # type: ignore[attr-defined]
    compaction.MAX_SEGMENT_ROWS = MERGE_ROWS // 2  # type: ignore[attr-defined]
    compaction.MAX_DATA_FILES = MAX_FILES  # type: ignore[attr-defined]
    _hand_over_merged_tables(compaction)
    if not hasattr(manager.maybe_compact, "original"):
        _bounded_compaction(manager)
    collection_class: Any = getattr(collection, "Collection", None)
    background = getattr(collection_class, "_bg_compact_and_index", None)
    if callable(background) and not hasattr(background, "original"):
        collection_class._bg_compact_and_index = _releasing(background)
    trigger = getattr(collection_class, "_trigger_flush", None)
    if callable(trigger) and not hasattr(trigger, "original"):
        collection_class._trigger_flush = _after_background(trigger)
    with contextlib.suppress(ImportError):
        memtable = importlib.import_module("milvus_lite.storage.memtable").MemTable
        current_build = getattr(memtable, "_build_data_table", None)
        if callable(current_build) and not hasattr(current_build, "original"):
            memtable._build_data_table = _arrow_data_table(current_build)
    return True


__all__ = [
    "DEAD_SHARE",
    "IndexOnDisk",
    "MERGE_ROWS",
    "RECENT_TABLES",
    "TESTED_RELEASES",
    "bound_engine_memory",
    "reading",
    "writing",
]
