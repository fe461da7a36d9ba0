"""Milvus Lite's engine in this process, called directly: no pymilvus, no gRPC, no port or socket.

milvus-lite 3 is a Python engine (``milvus_lite.db.MilvusLite``) that pymilvus reaches through a gRPC server
it starts in process on ``127.0.0.1`` and a free TCP port, with no authentication (any local user could read
and write the index for the whole run). :class:`LiteClient` answers the calls
:class:`~chunkwise.store.milvus.MilvusStore` makes of a ``MilvusClient`` (the same names, arguments and
answers) by calling the engine itself, so a Milvus Lite index needs neither a listening socket nor pymilvus:
importing pymilvus and serialising every call into protobuf and back cost about 0.3 of the 1.0-1.1 CPU-s
the store took of a first ``chunkwise index`` of 24 chunks (benchmarks/bench_first_run.py). What crosses no
wire any more is made to look as it did: JSON fields come back parsed, every engine failure is one
:class:`LiteCallError` with the engine's message (what the gRPC server sent as the status reason).

A database this user may read but not write (another user's index shared read-only, a read-only mount, an
archive) is opened as a copy: Milvus Lite has no read-only mode (opening takes a lock file inside the
directory, tidies its staging folder and may replay its write-ahead log), so ``open_client(path,
read_only=True)`` copies the directory into a fresh ``0700`` folder (``tempfile.mkdtemp``), holding a shared
lock on the original's ``LOCK`` meanwhile (a process writing it holds that lock exclusively, so the copy is
never of a half-written state), and opens the copy; :meth:`LiteClient.close` removes it. The original is
never written.

This uses one internal of milvus-lite 3, ``milvus_lite.db.MilvusLite``; where it is missing (another
milvus-lite version), :func:`open_client` returns ``None`` and the caller falls back to pymilvus. It also
gives the engine a reader of its Parquet files that does not import ``pyarrow.dataset`` (and pandas with
it): see :func:`_read_parquet_files_directly`; and, in a process that writes, bounds what the engine holds
(segment tables read back when needed, flushes built with Arrow, merges of a bounded size:
:mod:`chunkwise.store.lite_memory`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from .lite_memory import bound_engine_memory, reading, writing

#: the version :meth:`LiteClient.get_server_version` reports
LITE_VERSION = "milvus-lite"
#: Milvus Lite's memtable budget (its default is 128 MB), given through the variable it reads when first
#: imported unless the user set it. Each flush's transient (the memtable, its table, the Parquet write) is
#: the peak of an indexing run once segments are not held (store/lite_memory.py). Measured on public text
#: (benchmarks/results/store.md), interleaved: 100 MB peaked at 265 MB with 8 MB against 296 MB with
#: 16 MB (50 MB: 241 against 277 MB; 2 MB: the same), for 9-14 % more CPU (more segments, each with its
#: flush and vector index)
MEMTABLE_VARIABLE = "MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES"
MEMTABLE_BYTES = 8 << 20


class ReadOnlyCopyError(OSError):
    """A read-only database could not be copied (in use by its writer, unreadable, no space)."""


class LiteCallError(Exception):
    """A call Milvus Lite refused or failed, with the engine's message on one line (``message``, as on
    pymilvus's ``MilvusException``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def open_client(path: str, read_only: bool = False) -> LiteClient | None:
    """A client of the Milvus Lite database at ``path`` (of a private copy of it with ``read_only``);
    ``None`` when this milvus-lite has no in-process engine. Errors opening the database (locked,
    unreadable) raise; a failed copy raises :class:`ReadOnlyCopyError`."""
    os.environ.setdefault(MEMTABLE_VARIABLE, str(MEMTABLE_BYTES))  # read once, when milvus_lite is imported
    try:
        from milvus_lite.db import MilvusLite
    except ImportError:
        return None
    _read_parquet_files_directly()
    bound_engine_memory()  # segments read back when needed, merges of a bounded size (store/lite_memory.py)
    folder = None
    try:
        if read_only:
            folder = tempfile.mkdtemp(prefix="chunkwise-milvus-")  # created 0700 by mkdtemp
            path = _private_copy(path, os.path.join(folder, "copy.db"))
        return LiteClient(MilvusLite(os.path.abspath(path)), folder)
    except BaseException:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _read_one_file(path: str):
    """One Parquet file read as ``pyarrow.parquet.read_table(path)`` reads it (the same table), through
    ``ParquetFile`` instead of ``pyarrow.dataset``, which imports pandas wherever it is installed."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        return handle.read()


def _vector_reader(original):
    """Milvus Lite's ``_extract_vector_array`` for the common column (one chunk of ``FixedSizeList<float32>``
    without nulls, offset 0): the same read-only ``(n, dim)`` view of the Arrow buffer, made with
    ``np.frombuffer`` instead of ``to_numpy``, whose converter imports pandas. Anything else goes to
    ``original``."""

    def extract(arr):
        import numpy as np
        import pyarrow as pa

        col = arr.chunk(0) if isinstance(arr, pa.ChunkedArray) and arr.num_chunks == 1 else arr
        kind = col.type
        if (
            not isinstance(col, pa.FixedSizeListArray)
            or kind.value_type != pa.float32()
            or col.offset
            or col.null_count
            or not len(col)
        ):
            return original(arr)
        values = col.values
        n, dim = len(col), kind.list_size
        if values.null_count or len(values) < n * dim:
            return original(arr)
        flat = np.frombuffer(values.buffers()[1], dtype=np.float32, count=n * dim, offset=values.offset * 4)
        return flat.reshape(n, dim), None

    extract.original = original
    return extract


def _read_parquet_files_directly() -> None:
    """Milvus Lite reads each segment and delete file with ``pq.read_table``; a single file does not need the
    dataset layer, whose import (with pandas's) cost about 0.28 CPU-s of every cold search. Its vectors are
    then taken from the Arrow buffer (:func:`_vector_reader`), so a search imports no pandas where pandas
    is installed. The engine's readers are replaced where they are bound; a milvus-lite without them is
    left as it is."""
    import importlib

    try:
        segment = importlib.import_module("milvus_lite.storage.segment")
    except ImportError:
        segment = None
    original = getattr(segment, "_extract_vector_array", None)
    if callable(original) and not hasattr(original, "original"):
        segment._extract_vector_array = _vector_reader(original)  # type: ignore[union-attr]

    for module_name, attr in (
        ("milvus_lite.storage.data_file", "read_data_file"),
        ("milvus_lite.storage.segment", "read_data_file"),
        ("milvus_lite.engine.compaction", "read_data_file"),
        ("milvus_lite.storage.delta_file", "read_delta_file"),
        ("milvus_lite.storage.delta_index", "read_delta_file"),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if callable(getattr(module, attr, None)):
            setattr(module, attr, _read_one_file)


def _private_copy(path: str, target: str) -> str:
    """Copy the database directory ``path`` to ``target`` (owner-only permissions), under a shared lock on its
    ``LOCK`` file; ``target``."""
    import fcntl

    lock = os.path.join(path, "LOCK")
    fd = None
    try:
        try:
            fd = os.open(lock, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            pass  # no LOCK (never opened by a writer) or one this user cannot open: nothing to wait on
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ReadOnlyCopyError(
                    "the database is in use by another process (Milvus Lite allows one at "
                    "a time), and it is not writable here to wait for it"
                ) from None
            except OSError:
                pass  # a file system without locks
        shutil.copytree(
            path,
            target,
            symlinks=True,
            copy_function=shutil.copyfile,
            ignore=lambda folder, names: ["LOCK"] if folder == path else [],
        )
    except ReadOnlyCopyError:
        raise
    except (OSError, shutil.Error) as exc:
        raise ReadOnlyCopyError(f"cannot copy it to open it read-only ({_first_problem(exc)})") from None
    finally:
        if fd is not None:
            os.close(fd)
    for root, _dirs, files in os.walk(target):  # copytree copied the read-only modes of the folders
        os.chmod(root, 0o700)
        for name in files:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, name), 0o600)
    return target


def _first_problem(exc: BaseException) -> str:
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        return str(exc.args[0][0][-1])  # (source, target, why) of the first file that failed
    return getattr(exc, "strerror", None) or str(exc)


class LiteClient:
    """The ``MilvusClient`` calls chunkwise makes, answered by an in-process Milvus Lite database.

    Calls are serialised by one lock (the gRPC server ran them on a thread pool, but the engine is Python
    under one interpreter lock either way); every failure is a :class:`LiteCallError`. ``folder`` is a
    private copy's folder, removed by :meth:`close`."""

    def __init__(self, db: Any, folder: str | None = None):
        self._db = db
        self._folder = folder
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def _call(self) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except LiteCallError:
                raise
            except Exception as exc:  # noqa: BLE001 - what the gRPC server turned into a status reason
                raise LiteCallError(" ".join(str(exc).split()) or type(exc).__name__) from exc

    @contextlib.contextmanager
    def _read(self) -> Iterator[None]:
        """A call that reads rows: the segment tables it loads stay loaded (store/lite_memory.py)."""
        with self._call(), reading():
            yield

    @property
    def folder(self) -> str | None:
        """The private folder of a read-only database's copy (``None`` for a database opened in place)."""
        return self._folder

    def _collection(self, name: str):
        return self._db.get_collection(name)

    # -- collections
    def has_collection(self, collection_name: str, timeout: float | None = None) -> bool:
        with self._call():
            return bool(self._db.has_collection(collection_name))

    def list_collections(self, timeout: float | None = None) -> list[str]:
        with self._call():
            return list(self._db.list_collections())

    def get_server_version(self, timeout: float | None = None) -> str:
        return LITE_VERSION

    def create_collection(
        self,
        collection_name: str,
        schema: Any = None,
        consistency_level: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        """Create ``collection_name`` from a :class:`~chunkwise.store.milvus_schema.CollectionSpec` (every
        read is strongly consistent in process: ``consistency_level`` is accepted and needs nothing)."""
        with self._call():
            self._db.create_collection(collection_name, schema.to_lite(), properties=dict(properties or {}))

    def create_index(self, collection_name: str, index_params: Iterable[dict], sync: bool = False) -> None:
        """Indexes from an :data:`~chunkwise.store.milvus_schema.IndexSpec`."""
        with self._call():
            col = self._collection(collection_name)
            for index in index_params:
                params = {k: v for k, v in index.items() if k != "field_name"}
                col.create_index(index["field_name"], {"params": {}, **params})

    def load_collection(self, collection_name: str) -> None:
        with self._call():
            self._collection(collection_name).load()

    def drop_collection(self, collection_name: str) -> None:
        with self._call():
            self._db.drop_collection(collection_name)

    def describe_collection(self, collection_name: str) -> dict[str, Any]:
        """What pymilvus's ``describe_collection`` answers, as far as chunkwise reads it: the fields (name,
        type, nullable, ``params``) and the collection's properties."""
        with self._call():
            schema = self._collection(collection_name).schema
            fields = []
            for f in schema.fields:
                params = {k: getattr(f, k) for k in ("dim", "max_length", "max_capacity") if getattr(f, k)}
                fields.append({"name": f.name, "type": f.dtype.name, "nullable": f.nullable, "params": params})
            return {"collection_name": collection_name, "fields": fields, "properties": dict(schema.properties)}

    # -- rows
    def upsert(self, collection_name: str, data: list[dict], timeout: float | None = None) -> None:
        """Write rows, replacing those with the same keys. Rows that give every field are inserted: Milvus
        Lite's upsert reads each key's stored row first to fill the fields a row leaves out (a table read per
        key already stored), and the newest write of a key is the one every read sees either way."""
        writing()  # from now on this process holds only the segment tables its reads use
        with self._call():
            col = self._collection(collection_name)
            rows = list(data)
            schema = col.schema
            generated = {name for fn in getattr(schema, "functions", None) or () for name in fn.output_field_names}
            fields = [f.name for f in schema.fields if f.name not in generated]
            if rows and all(all(name in row for name in fields) for row in rows):
                col.insert(rows)
            else:
                col.upsert(rows)

    def delete(self, collection_name: str, ids: Iterable[Any], timeout: float | None = None) -> None:
        writing()
        with self._call():
            self._collection(collection_name).delete(list(ids))

    def flush(self, collection_name: str, timeout: float | None = None) -> None:
        with self._call():
            self._collection(collection_name).flush()

    def settle(self, collection_name: str, timeout: float | None = None) -> None:
        """Wait for the merges a flush started in the engine's background thread: until they end, the
        collection's files keep changing (a snapshot's fingerprint taken before would not match them). The
        engine's close waits for the same work, so a caller about to close loses no time."""
        with self._call():
            wait = getattr(self._collection(collection_name), "_wait_for_bg", None)
        if wait is not None:  # a milvus-lite without it merges in the flush itself, or not at all
            try:
                wait(timeout)
            except Exception as exc:  # noqa: BLE001 - a timeout, or the engine's own failure
                raise LiteCallError(" ".join(str(exc).split()) or type(exc).__name__) from exc

    def get(self, collection_name: str, ids: Iterable[Any], output_fields: list[str] | None = None) -> list[dict]:
        with self._read():
            col = self._collection(collection_name)
            return self._parsed(col, col.get(list(ids), output_fields=output_fields))

    def query(
        self,
        collection_name: str,
        filter: str = "",
        output_fields: list[str] | None = None,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> list[dict]:
        """Rows matching ``filter`` (all with an empty one); ``output_fields=["count(*)"]`` counts them."""
        with self._read():
            col = self._collection(collection_name)
            if output_fields and "count(*)" in output_fields:
                count = len(col.query(filter, output_fields=[col.pk_field])) if filter else col.num_entities
                return [{"count(*)": int(count)}]
            return self._parsed(col, col.query(filter or None, output_fields=output_fields, limit=limit))

    def query_iterator(
        self, collection_name: str, batch_size: int = 1000, filter: str = "", output_fields: list[str] | None = None
    ) -> _QueryIterator:
        """Every row matching ``filter`` in batches, in primary-key order (a cursor on the key, as
        pymilvus's iterator pages)."""
        with self._call():
            col = self._collection(collection_name)
        return _QueryIterator(self, col, batch_size, filter, output_fields)

    def search(
        self,
        collection_name: str,
        data: list,
        anns_field: str,
        limit: int = 10,
        filter: str = "",
        output_fields: list[str] | None = None,
        search_params: dict | None = None,
        timeout: float | None = None,
    ) -> list[list[dict]]:
        """Per query (a vector, or the text of a BM25 field's query): hits ``{"id", "distance", "entity"}``
        best first."""
        with self._read():
            col = self._collection(collection_name)
            metric = col.resolve_search_metric(anns_field, (search_params or {}).get("metric_type"))
            results = col.search(
                query_vectors=list(data),
                top_k=limit,
                metric_type=metric,
                expr=filter or None,
                output_fields=output_fields,
                anns_field=anns_field,
            )
            pk = col.pk_field
            for hits in results:
                for hit in hits:  # pymilvus's entities hold every output field asked for, the key too
                    entity = hit.setdefault("entity", {})
                    if output_fields is None or pk in output_fields:
                        entity.setdefault(pk, hit["id"])
                self._parsed(col, [hit["entity"] for hit in hits])
            return results

    def close(self) -> None:
        """Release the database (its ``LOCK``) and remove a private copy."""
        with self._lock:
            with contextlib.suppress(Exception):
                self._db.close()
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None

    @staticmethod
    def _parsed(col: Any, rows: list[dict]) -> list[dict]:
        """``rows`` with their JSON fields parsed, in place (the engine keeps JSON as text; pymilvus answered
        with the values)."""
        names = [f.name for f in col.schema.fields if f.dtype.name == "JSON"]
        for row in rows:
            for name in names:
                value = row.get(name)
                if isinstance(value, (str, bytes)):
                    row[name] = json.loads(value)
        return rows


class _QueryIterator:
    """Pages of a query in primary-key order: each page asks for keys after the last one it returned."""

    def __init__(self, client: LiteClient, col: Any, batch_size: int, filter: str, output_fields: list[str] | None):
        self._client, self._col, self._batch = client, col, max(1, int(batch_size))
        self._filter, self._fields = filter, output_fields
        self._last: Any = None
        self._done = False

    def next(self) -> list[dict]:
        if self._done:
            return []
        pk = self._col.pk_field
        parts = [f"({self._filter})"] if self._filter else []
        if self._last is not None:
            parts.append(f"{pk} > {json.dumps(self._last, ensure_ascii=False)}")
        with self._client._read():
            rows = self._col.query(
                " and ".join(parts) or None, output_fields=self._fields, limit=self._batch, order_by_pk=True
            )
            rows = self._client._parsed(self._col, rows)
        if len(rows) < self._batch:
            self._done = True
        if rows:
            self._last = rows[-1][pk]
        return rows

    def close(self) -> None:
        self._done = True


__all__ = ["LiteCallError", "LiteClient", "ReadOnlyCopyError", "open_client"]
