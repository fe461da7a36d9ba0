"""Milvus Lite's memory in a writing process, bounded: segments whose tables are read back when needed, and
merges of a bounded size.

Milvus Lite (3.x) keeps every sealed segment's whole Arrow table (texts, vectors, metadata) in memory for as
long as the database is open, and its size-tiered compaction reads up to 200,000 rows at once (concatenated,
sorted, deduplicated and written again: about five times the merged tables at its peak). Indexing public text
into it (``benchmarks/bench_index_memory.py``) peaked at 237 / 293 / 707 / 824 MB for 2 / 10 / 50 / 100 MB,
the peaks set by merges and flushes, the slope by the resident tables. Three changes, made where the engine
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
  memtable's 16 MB at each flush).
- **Merges of at most** :data:`MERGE_ROWS` **rows**: files of that many rows or more are left as they are
  (``MAX_SEGMENT_ROWS``), so the small files of incremental runs are still merged and a bulk run's flushed
  files are not; forced merges above 32 files (which, with segments this size, would rewrite the same files
  on every flush) are off (``MAX_DATA_FILES``). A corpus then keeps one file per memtable flush (16 MB of
  rows, about 4,000 chunks of 256 words): about 20 at 100 MB of text.

All three are installed by :func:`bound_engine_memory` when chunkwise opens a Milvus Lite database in process; a
milvus-lite without these internals is left as it is.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
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


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """A read of the engine (in this thread): tables it loads are kept by their segments (Milvus Lite's own behaviour)."""
    _reads.depth = getattr(_reads, "depth", 0) + 1
    try:
        yield
    finally:
        _reads.depth -= 1


def _make_lazy(segment_class: Any) -> type:
    from milvus_lite.storage import segment as segment_module

    class LazySegment(segment_class):
        """A Milvus Lite segment whose table is read back from its Parquet file when it is not held."""

        __slots__ = ("_held", "__weakref__")

        @property
        def table(self):
            held = getattr(self, "_held", None)
            if held is not None:
                return held
            with _lock:
                hit = _recent.get(id(self))
                if hit is not None and hit[0] is self:
                    _recent.move_to_end(id(self))
                    table = hit[1]
                    if _reading():
                        self._held = table
                    return table
            table = segment_module.read_data_file(self.file_path)
            self._keep(table)
            return table

        @table.setter
        def table(self, value) -> None:
            self._held = None
            self._keep(value)

        def _keep(self, table) -> None:
            with _lock:
                if _reading():
                    self._held = table
                    return
                _recent[id(self)] = (self, table)
                _recent.move_to_end(id(self))
                while len(_recent) > RECENT_TABLES:
                    _recent.popitem(last=False)

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
            return segment_module._extract_vector_array(self.table.column(field_name))

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            _segments.add(self)
            self._vector_data_by_field.clear()  # the engine caches each field's array: not kept here

    LazySegment.__name__ = LazySegment.__qualname__ = "LazySegment"
    return LazySegment


def _arrow_data_table(original: Any) -> Any:
    """Milvus Lite's ``MemTable._build_data_table`` (the live rows of a flush, in the order given) built with
    Arrow's ``take`` on each source batch instead of one Python object per cell: the same table, without a
    Python list of floats per vector and a ``str`` per text held at once (about four times the memtable's
    own size at the flush, the largest transient of an indexing run once the segments are not held)."""

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
                taken = batch.select(names).take(pa.array([r[1] for r in rows[start:end]], type=pa.int64()))
                pieces.append(pa.Table.from_batches([taken]))
                start = end
        if not pieces:
            return original(self, rows)
        table = pa.concat_tables(pieces)
        if table.schema != schema:
            try:
                table = table.cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                return original(self, rows)
        return table.combine_chunks()

    build.original = original  # type: ignore[attr-defined]
    return build


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
        return True
    base = getattr(segment, "Segment", None)
    needed = ("table", "vectors", "file_path", "_vector_field", "_vector_data_by_field")
    if current is not base or not isinstance(base, type) or not all(hasattr(base, n) for n in needed):
        return False
    if not all(hasattr(compaction, n) for n in ("MAX_SEGMENT_ROWS", "MAX_DATA_FILES")):
        return False
    collection.Segment = _make_lazy(base)  # type: ignore[attr-defined]
    compaction.MAX_SEGMENT_ROWS = MERGE_ROWS // 2  # type: ignore[attr-defined]
    compaction.MAX_DATA_FILES = MAX_FILES  # type: ignore[attr-defined]
    with contextlib.suppress(ImportError):
        memtable = importlib.import_module("milvus_lite.storage.memtable").MemTable
        current_build = getattr(memtable, "_build_data_table", None)
        if callable(current_build) and not hasattr(current_build, "original"):
            memtable._build_data_table = _arrow_data_table(current_build)
    return True


__all__ = ["MERGE_ROWS", "RECENT_TABLES", "TESTED_RELEASES", "bound_engine_memory", "reading", "writing"]
