"""Searching a :class:`~chunkwise.store.milvus.MilvusStore`: vectors, BM25, and what runs in process.

Milvus answers dense searches that return rows (``Index.search(hybrid=False)``), and BM25 on a server. On a
Milvus Lite directory, which one process at a time may open (so no other writer can make a copy in memory
stale), the two sides of a hybrid search run in process on the first query's copies instead: bm25s over
the stored texts (:mod:`chunkwise.store.bm25`; Milvus Lite scores BM25 in pure Python) and exact cosine
over the stored vectors (:mod:`chunkwise.store.vectors`; Milvus Lite turns every one of the 1,000 vector
candidates into a whole row). Both are read in one scan, saved in the directory for the next process, and
dropped by every write of the store; a hybrid query is then one fetch of the final chunks
(docs/scale.md#search-cost). With the rows a hit shows saved too (:mod:`~chunkwise.store.shown`), a search
whose copies are all current needs no engine at all (:func:`open_copies`).

Functions here take the store; its methods of the same names call them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ChunkwiseError
from . import snapshot
from .base import Hit
from .bm25 import BM25Postings, SpooledPostings
from .lite_memory import release_freed_memory
from .milvus_connection import quote
from .numbers import ChunkNumbers
from .places import ChunkPlaces
from .rows import chunk_from_row
from .shown import ROWS_FOLDER, SavedRows, SpooledRows
from .vectors import SpooledVectors, VectorCache

if TYPE_CHECKING:
    from .milvus import MilvusStore

#: where a Milvus Lite directory keeps its bm25s index between processes (dropped before every write)
BM25_FOLDER = "chunkwise-bm25"
#: where it keeps the vectors of :class:`~chunkwise.store.vectors.VectorCache` (the same life)
VECTORS_FOLDER = "chunkwise-vectors"
#: where it keeps the chunk ids by document and index (:mod:`~chunkwise.store.places`; the same life)
PLACES_FOLDER = "chunkwise-places"
#: every saved search copy beside a Milvus Lite database (the rows a hit shows: :mod:`~chunkwise.store.shown`)
COPY_FOLDERS = (BM25_FOLDER, VECTORS_FOLDER, PLACES_FOLDER, ROWS_FOLDER)
#: rows one plain query may return (Milvus caps offset + limit at 16384)
QUERY_LIMIT = 16384
#: the most memory the in-process vectors may take by default (about 700,000 chunks of 384 dimensions);
#: a larger index is searched by Milvus Lite, which holds its vectors in memory already
VECTORS_MAX_BYTES = 1 << 30


def as_scores(hits: list[dict]) -> dict[str, float]:
    """``id -> score`` (higher is better) from hits ranked best first. Milvus Lite reports BM25 as a
    negative distance (more negative is better) where a server may report the score itself: the ranking
    order tells which."""
    values = [float(h["distance"]) for h in hits]
    flip = values[0] < values[-1] if len(values) > 1 else bool(values and values[0] < 0)
    return {h["id"]: (-v if flip else v) for h, v in zip(hits, values)}


def search_vector(
    store: MilvusStore, vector: np.ndarray, limit: int, filter: str | None = None, ids_only: bool = False
) -> list[Hit]:
    """Nearest chunks by cosine similarity, best first (with the stored chunks unless ``ids_only``); ids
    only on a store with :attr:`~MilvusStore.uses_client_vectors` are ranked in process, exactly."""
    if ids_only and store.uses_client_vectors:
        load_client_indexes(store)
    if ids_only and isinstance(store._vectors, VectorCache):
        allowed = ids_matching(store, filter) if filter else None
        return [Hit(i, s) for i, s in store._vectors.search(vector, limit, allowed)]
    with store._filter_errors(filter, "search"):
        res = store.connect().search(
            store.collection,
            data=[np.asarray(vector, dtype=np.float32).tolist()],
            anns_field="vector",
            limit=limit,
            filter=filter or "",
            output_fields=["id"] if ids_only else store.output_fields,
            search_params={"metric_type": "COSINE"},
        )
    hits = list(res[0]) if res else []
    if ids_only:
        return [Hit(h["id"], float(h["distance"])) for h in hits]
    return [Hit(h["id"], float(h["distance"]), *chunk_from_row(store._decode(h.get("entity") or {}))) for h in hits]


def search_text(store: MilvusStore, query: str, limit: int, filter: str | None = None) -> list[Hit]:
    """Chunks by BM25 over ``indexed_text``, best first: ``bm25s`` over the stored texts where
    :attr:`~MilvusStore.uses_client_bm25` (no round trip per query without a filter, one with, shared with
    the vector side), else Milvus's own."""
    if not store.uses_client_bm25:
        scores = as_scores(search_bm25(store, query, limit, filter, fields=["id"]))
        return [Hit(i, s) for i, s in scores.items()]
    load_client_indexes(store)
    assert isinstance(store._bm25, BM25Postings), "load_client_indexes makes the postings"
    allowed = ids_matching(store, filter) if filter else None
    return [Hit(i, s) for i, s in store._bm25.search(query, limit, allowed)]


def _saveable(store: MilvusStore) -> bool:
    """Copies are saved beside a Milvus Lite database (keyed on its files), whether or not its collection
    has the engine's BM25 function (a default Lite index has none: see ``milvus_create.engine_bm25``)."""
    return store.db is not None


#: in a saved copy's folder: the collection it holds and the database files' fingerprint (store/snapshot.py)
#: it was read from (``null`` until the closing connection keys it: :func:`rekey_copies`)
DATA_KEY = "data-key.json"


def write_key(folder: Path, collection: str, files: list | None) -> None:
    """Key the copy in ``folder``: written last, so a copy is trusted only once it is whole."""
    (folder / DATA_KEY).write_text(json.dumps({"collection": collection, "files": files}), encoding="utf-8")


def copy_key(folder: Path, collection: str) -> list | None:
    """The fingerprint the copy in ``folder`` was keyed on, when it holds ``collection`` (the copies' folders
    are one per database directory, whichever collection was last written or read in it)."""
    with contextlib.suppress(OSError, ValueError):
        key = json.loads((folder / DATA_KEY).read_text(encoding="utf-8"))
        if isinstance(key, dict) and key.get("collection") == collection:
            return key.get("files")
    return None


def open_copies(store: MilvusStore) -> bool:
    """Ready a search of a Milvus Lite directory that does not start the engine: True when the snapshot
    (the configuration and the count, store/snapshot.py) and the saved BM25, vector and rows copies (and the
    places, where saved) were all read from the database's files as they are now, whole and covering the
    same rows. The store then holds them, and its first call that needs anything else (a filter, a dense
    search's rows, a write) starts the engine (``MilvusStore.connect``). Checked and opened under a shared
    lock on the database (no process has it open meanwhile); anything in doubt is False, and nothing is
    held: the search goes the engine's way."""
    if store._copies_files is not None and isinstance(store._rows, SavedRows):
        if snapshot.fingerprint(store._lite_db()) == store._copies_files:
            return True  # opened by an earlier search of this connection, and no run has finished since
        store._forget()  # a later run's copies: read again (a long-lived `ask` sees each finished run)
    if store.db is None or store._client is not None or store._will_write or store.snapshot_reads:
        return False
    if store.client_bm25 is not None or store.client_vectors is not None:
        return False  # ranked as the caller set, by the engine
    root = Path(store.db)
    if not (root / ROWS_FOLDER / DATA_KEY).is_file():
        return False
    with snapshot.files_at_rest(root) as free:
        if not free:  # another process has it open: the engine reads the copy of its last finished run
            return False
        files = snapshot.fingerprint(root)
        saved = snapshot.load(root, store.collection, files)
        keys = (BM25_FOLDER, VECTORS_FOLDER, ROWS_FOLDER)
        if saved is None or any(copy_key(root / f, store.collection) != files for f in keys):
            return False
        try:
            rows = SavedRows(root / ROWS_FOLDER)
        except (OSError, ValueError, KeyError, TypeError):
            return False
        facts = rows.facts
        try:
            store.nullable, store.bm25_builtin, store.dim = (
                bool(facts["nullable"]),
                bool(facts["bm25_builtin"]),
                int(facts["dim"]),
            )
            store.output_fields = list(rows.fields)
            sound = len(rows) == saved.count and saved.count * store.dim * 4 <= VECTORS_MAX_BYTES
            if sound:
                store._copies_files = files
                load_saved_copies(store, saved.count, store.uses_client_bm25, True)
                sound = store._vectors is not None and (store._bm25 is not None or not store.uses_client_bm25)
        except (KeyError, TypeError, ValueError):
            sound = False
        if not sound:
            rows.close()
            drop_copies(store)
            store._copies_files = None
            return False
        store._rows = rows
        store._config = dict(saved.config)
        store._opened = True
    return True


def drop_copies(store: MilvusStore) -> None:
    """Forget the in-process copies of the chunks (bm25s, vectors, rows, admitted ids), as after a write that
    changed them: spools removed, a saved rows copy closed."""
    for held in (store._bm25, store._vectors, store._rows):
        if isinstance(held, (SpooledPostings, SpooledVectors, SpooledRows)):
            held.discard()
        elif isinstance(held, SavedRows):
            held.close()
    store._rows = store._bm25 = store._vectors = store._places = store._admitted = None


def engine_after_copies(store: MilvusStore) -> None:
    """Where the saved copies answered without the engine (:func:`open_copies`) and it has just started (a
    filter, a dense search's rows, a damaged rows copy, a write): the copies stay only if the engine reads
    the files they were keyed on; a run finished by another process in between ends a search or question
    still in progress (``MilvusStore.one_state``) with one line, and is simply followed otherwise."""
    files, store._copies_files = store._copies_files, None
    if files is None:
        return
    if isinstance(store._rows, SavedRows):
        store._rows.close()
        store._rows = None
    if snapshot.files_read(store) != files:
        drop_copies(store)
        store._config = None
        if store._searching:
            store._opened = False
            raise ChunkwiseError("the index changed during this search; run it again", source=store.location)
    store._opened = False
    store.open()


@contextlib.contextmanager
def one_state(store: MilvusStore) -> Iterator[None]:
    """A search or a question: copies held from a run finished since are forgotten first; within it, the
    engine started after the copies answered ends it with one line if a run finished in between (its rows
    must come from one state); outside one, such a start forgets the copies and goes on."""
    follow_runs(store)
    outer, store._searching = store._searching, True
    try:
        yield
    finally:
        store._searching = outer


def follow_runs(store: MilvusStore) -> None:
    """Outside a search: forget the copies a search held without the engine when a run has finished since
    (the configuration and the count with them); the call goes on with the files as they are now."""
    if store._searching or store._client is not None or store._copies_files is None:
        return
    if snapshot.fingerprint(store._lite_db()) != store._copies_files:
        store._forget()


def fetch(store: MilvusStore, ids: list[str]) -> list[Hit]:
    """The stored chunks of ``ids`` (those that exist), as hits without a score: from the saved rows copy in a
    search without the engine, else from the engine."""
    if not ids:
        return []
    if (saved := saved_rows(store, ids)) is not None:
        return saved
    with store._errors("read chunks"):
        rows = store.connect().get(store.collection, ids=ids, output_fields=store.output_fields)
    return [Hit(r["id"], 0.0, *chunk_from_row(store._decode(r))) for r in rows]


def saved_rows(store: MilvusStore, ids: list[str]) -> list[Hit] | None:
    """The stored chunks of ``ids`` from the saved rows copy a search without the engine holds; ``None`` when
    it holds none, or the copy is damaged (then the engine is started and reads the copy again once)."""
    if not isinstance(store._rows, SavedRows):
        return None
    try:
        return [Hit(r["id"], 0.0, *chunk_from_row(store._decode(r))) for r in store._rows.get(ids)]
    except (OSError, ValueError, KeyError, TypeError):
        store._rows.close()
        store._rows = None
    with store._errors("read chunks"):
        store.connect()
        build_rows(store, damaged=True)
    return None


def load_client_indexes(store: MilvusStore) -> None:
    """Make the in-process indexes the store searches with ready: those an earlier process saved when the
    database's files are still those they were read from (every write, by anyone, changes the files; a
    count could not tell one chunk deleted and another inserted), with the store's dimension and finite
    vectors, else built from one scan of the collection and saved where they can be."""
    if isinstance(store._vectors, SpooledVectors):  # a build in this process: its vectors, read back once
        spool, store._vectors = store._vectors, None
        if len(spool) * spool.dim * 4 <= VECTORS_MAX_BYTES:
            store._vectors = spool.cache()
        spool.discard()
    if isinstance(store._bm25, SpooledPostings):  # the same for its postings
        postings, store._bm25 = store._bm25, None
        store._bm25 = postings.postings()
        postings.discard()
    need_bm25 = store.uses_client_bm25 and store._bm25 is None
    need_vectors = store.uses_client_vectors and store._vectors is None
    if not (need_bm25 or need_vectors):
        return
    count = store.count() if _saveable(store) or need_vectors else 0
    if need_vectors and store.client_vectors is None and count * store.dim * 4 > VECTORS_MAX_BYTES:
        store.client_vectors, need_vectors = False, False  # too large to copy: Milvus Lite answers
    if _saveable(store):
        load_saved_copies(store, count, need_bm25, need_vectors)
        need_bm25, need_vectors = need_bm25 and store._bm25 is None, need_vectors and store._vectors is None
        if not (need_bm25 or need_vectors):
            build_rows(store)
    if need_bm25 or need_vectors:
        _build_client_indexes(store, need_bm25, need_vectors)


def _rows_whole(root: Path, count: int) -> bool:
    """Whether the saved rows copy opens (its index and file as saved) and covers ``count`` rows."""
    try:
        rows = SavedRows(root / ROWS_FOLDER)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    rows.close()
    return len(rows) == count


def build_rows(store: MilvusStore, damaged: bool = False) -> None:
    """Where the other copies were found current and the rows copy was not (an index saved before it existed,
    a damaged copy): read the rows a hit shows in one scan and save them, keyed on the files they were read
    from, so the next search needs no engine. Once: a writer keeps the copy from then on. ``damaged``: a
    search found the saved copy keyed right but not readable; it is replaced."""
    if store.read_only or not store.nullable or store._rows is not None or store.client_vectors is False:
        return  # (no vectors copy, the engine's vector search: a search starts the engine anyway)
    root = Path(store._lite_db())
    files = snapshot.fingerprint(root)
    if not damaged and copy_key(root / ROWS_FOLDER, store.collection) == files and _rows_whole(root, store.count()):
        return
    from .milvus_connection import failures

    try:
        shown = SpooledRows(root / ROWS_FOLDER, store.output_fields, rows_facts(store))
    except OSError:
        return
    try:
        batch: list[dict] = []
        for row in store._scan(store.collection, ["id", *store.output_fields]):
            batch.append(row)
            if len(batch) >= 4096:
                shown.upsert(batch)
                batch = []
        shown.upsert(batch)
        remove_leftovers(root, keep=[shown.folder])
        shown.save(root / ROWS_FOLDER)
        write_key(root / ROWS_FOLDER, store.collection, files)  # last: trusted then
        store._bm25_saved_dropped = False  # the next write of this connection must remove it again
    except Exception as exc:  # searched by the engine, as before
        if not isinstance(exc, (OSError, *failures())):
            raise
    finally:
        shown.discard()


#: what reading a damaged saved copy raises (numpy: ``EOFError`` for an empty file, ``BadZipFile`` for a
#: garbled ``.npz``)
DAMAGED = (OSError, ValueError, EOFError, zipfile.BadZipFile)


def load_saved_copies(store: MilvusStore, count: int, bm25: bool = True, vectors: bool = True) -> None:
    """The copies an earlier process saved in the directory, those read from the database's files as they are
    now (every write, by anyone, changes the files; a count could not tell one chunk deleted and another
    inserted) that cover ``count`` chunks, vectors of the store's dimension and finite."""
    folder = Path(store._lite_db())
    files = snapshot.files_read(store)  # of the copy it reads, where it reads one
    if bm25 and store._bm25 is None and copy_key(folder / BM25_FOLDER, store.collection) == files:
        with contextlib.suppress(*DAMAGED, KeyError, TypeError):
            saved = BM25Postings.load(folder / BM25_FOLDER)
            store._bm25 = saved if len(saved) == count else None
    if vectors and store._vectors is None and copy_key(folder / VECTORS_FOLDER, store.collection) == files:
        with contextlib.suppress(*DAMAGED):
            matrix = VectorCache.load(folder / VECTORS_FOLDER)
            m = matrix.matrix
            sound = len(matrix) == count and m.shape[1:] == (store.dim,) and bool(np.isfinite(m).all())
            store._vectors = matrix if sound else None
    if store._places is None and copy_key(folder / PLACES_FOLDER, store.collection) == files:
        with contextlib.suppress(*DAMAGED):
            places = ChunkPlaces.load(folder / PLACES_FOLDER)
            store._places = places if len(places) == count else None


def hold_copies(store: MilvusStore) -> None:
    """Before the first write of a connection removes the saved copies: hold them in memory (read now if
    this process has not), so the writes update them and the connection saves them when it closes
    (:func:`save_copies`); a later search then starts from them instead of a scan of every chunk."""
    if not _saveable(store) or store.read_only:
        return
    held = (store._bm25, store._vectors, store._places, store._rows)
    if all(copy is not None for copy in held):
        return
    try:
        count = store.count()
    except Exception:  # no collection yet: nothing to hold
        return
    load_saved_copies(store, count, store.uses_client_bm25, store.uses_client_vectors)
    # the copies started here on an empty collection number the chunk ids once between them (store/numbers.py),
    # not a dict each; copies taken over from saved files keep a numbering each
    numbers = ChunkNumbers() if count == 0 else None
    hold_rows(store, count, numbers)
    if numbers is not None:
        # an empty collection's copies are known: held from the start and filled by the writes, so the run
        # that builds an index leaves them (the first search reads no row back), and a writer finds a
        # document's stored chunks without a query walking every row (MilvusStore.chunk_ids)
        if store._places is None:
            store._places = ChunkPlaces(numbers=numbers)
        if store.uses_client_bm25 and store._bm25 is None:
            store._bm25 = SpooledPostings(Path(store._lite_db()) / BM25_FOLDER, numbers)
        if store.uses_client_vectors and store._vectors is None and store.client_vectors is not False:
            # appended to a file as written, not held: the run's memory does not grow with its vectors
            store._vectors = SpooledVectors(Path(store._lite_db()) / VECTORS_FOLDER, numbers)


def rows_facts(store: MilvusStore) -> dict:
    """The collection's facts a search reads from the engine when it opens it (``milvus_create.open_collections``),
    kept with the rows copy for a search that does not start the engine."""
    return {"nullable": store.nullable, "bm25_builtin": store.bm25_builtin, "dim": store.dim}


def hold_rows(store: MilvusStore, count: int, numbers: ChunkNumbers | None = None) -> None:
    """The rows copy a writing connection keeps (:mod:`~chunkwise.store.shown`): a new one for an empty
    collection, else the saved one taken over when it was read from the database's files as they are now
    and covers ``count`` rows. Without one (an index saved before it existed, a damaged copy), the
    connection keeps none and searches start the engine."""
    if store._rows is not None or not store.nullable:  # a sentinel-encoded row is not worth a copy
        return
    folder = Path(store._lite_db()) / ROWS_FOLDER
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if count == 0:
            store._rows = SpooledRows(folder, store.output_fields, rows_facts(store), numbers)
        elif copy_key(folder, store.collection) == snapshot.files_read(store):
            rows = SpooledRows.adopt(folder)
            if len(rows) == count and rows.fields == store.output_fields and rows.facts == rows_facts(store):
                store._rows = rows
            else:
                rows.discard()


def save_copies(store: MilvusStore) -> None:
    """Write the copies this connection holds into the directory (while it still holds the database), as the
    connection closes. Their key is written unmatchable here and set by :func:`rekey_copies` once the closing
    connection has flushed (a process killed in between leaves copies no later one trusts).

    The BM25 copy's save is an indexing run's peak, so it comes last, on a heap given back
    (:func:`~chunkwise.store.lite_memory.release_freed_memory`) after the chunk places and the vectors are
    saved and let go (the close drops them anyway; the BM25 copy still answers :meth:`MilvusStore.count`)."""
    if not _saveable(store) or store.read_only:
        return
    root = Path(store._lite_db())
    spool = store._vectors if isinstance(store._vectors, SpooledVectors) else None
    spools = [
        s.folder
        for s in (spool, store._bm25, store._rows)
        if isinstance(s, (SpooledVectors, SpooledPostings, SpooledRows))
    ]
    remove_leftovers(root, keep=spools)
    if spool is not None and len(spool) * spool.dim * 4 > VECTORS_MAX_BYTES:
        spool.discard()  # too large to copy: searched by Milvus Lite (load_client_indexes)
        store._vectors = None
    del spool
    if store._vectors is None and isinstance(store._rows, SpooledRows):  # no search reads it without vectors
        store._rows.discard()
        store._rows = None
        shutil.rmtree(root / ROWS_FOLDER, ignore_errors=True)
    try:
        with contextlib.suppress(OSError):
            for name, attr in (
                (PLACES_FOLDER, "_places"),
                (VECTORS_FOLDER, "_vectors"),
                (ROWS_FOLDER, "_rows"),
                (BM25_FOLDER, "_bm25"),
            ):
                copy = getattr(store, attr)
                if copy is None or (attr == "_rows" and not isinstance(copy, SpooledRows)):
                    continue  # a rows copy only read (not spooled by this writer) is already in place
                copy.save(root / name)
                write_key(root / name, store.collection, None)
                if attr != "_bm25" and store._bm25 is not None:
                    setattr(store, attr, None)  # saved, and the connection closes: let go before the BM25 save
                del copy
                release_freed_memory()  # what this save freed (and the writes before it), given back
            store._copies_saved = True
    except BaseException:  # interrupted (Ctrl-C, no memory) with some copies let go: none may be keyed later
        drop_copies(store)
        for name in COPY_FOLDERS:
            shutil.rmtree(root / name, ignore_errors=True)
        raise


def follow_upsert(store: MilvusStore, rows: list[dict]) -> None:
    """The rows a write just stored, into the in-process copies the connection holds. A copy interrupted half
    way (Ctrl-C, a full disk) is dropped, never saved: its count could match while it lacks the batch."""
    try:
        if store._bm25 is not None:
            store._bm25.upsert((r["id"], r["indexed_text"]) for r in rows)
        if store._vectors is not None:
            store._vectors.upsert((r["id"], r["vector"]) for r in rows)
            spool = store._vectors
            if isinstance(spool, SpooledVectors) and len(spool) * spool.dim * 4 > VECTORS_MAX_BYTES:
                spool.discard()  # past what a copy may hold: no need to write the rest to disk
                store._vectors = None
        if store._places is not None:
            store._places.add((r["id"], r["doc_id"], r["chunk_index"]) for r in rows)
        if isinstance(store._rows, SpooledRows):
            store._rows.upsert(rows)
    except BaseException:
        drop_copies(store)  # spools removed; the next search reads the rows again
        raise


def follow_delete(store: MilvusStore, ids: list[str]) -> None:
    """The chunks a delete just removed, out of the in-process copies the connection holds."""
    for copy in (store._bm25, store._vectors, store._places):
        if copy is not None:
            copy.remove(ids)
    if isinstance(store._rows, SpooledRows):
        store._rows.remove(ids)


def load_places(store: MilvusStore) -> ChunkPlaces:
    """The chunk ids by document and index (:mod:`~chunkwise.store.places`): held, saved by an earlier process
    from the database's files as they are now, or read in one scan of three columns and saved where they
    can be."""
    if store._places is not None:
        return store._places
    count = store.count()
    if store.db is not None:
        load_saved_copies(store, count, bm25=False, vectors=False)
        if store._places is not None:
            return store._places
    files = snapshot.fingerprint(store._lite_db()) if store.db is not None else None
    store._places = _places_of(store._scan(store.collection, ["id", "doc_id", "chunk_index"]))
    if store.db is not None and not store.read_only:
        with contextlib.suppress(OSError):
            folder = Path(store._lite_db()) / PLACES_FOLDER
            store._places.save(folder)
            write_key(folder, store.collection, files)  # last: trusted then
            store._bm25_saved_dropped = False  # the next write of this connection must remove them again
            store._copies_saved = True
    return store._places


def _places_of(rows) -> ChunkPlaces:
    return ChunkPlaces((r["id"], r["doc_id"], r["chunk_index"]) for r in rows)


def _build_client_indexes(store: MilvusStore, bm25: bool, vectors: bool) -> None:
    fields = ["id", "doc_id", "chunk_index", *(["indexed_text"] if bm25 else []), *(["vector"] if vectors else [])]
    files = snapshot.fingerprint(store._lite_db()) if _saveable(store) else None  # what the rows are read from
    # the rows a hit shows, spooled from the same scan where they are saved (store/shown.py)
    shown = None
    if _saveable(store) and not store.read_only and store.nullable and store._rows is None:
        fields += [f for f in store.output_fields if f not in fields]
        with contextlib.suppress(OSError):
            shown = SpooledRows(Path(store._lite_db()) / ROWS_FOLDER, store.output_fields, rows_facts(store))
    # one pass over the rows, keeping only what each copy needs (a float32 row per vector, not the row's
    # list of Python floats): the rows of a large collection are never all held at once
    places: list[tuple[str, str, int]] = []
    texts: list[tuple[str, str]] = []
    vecs: list[tuple[str, np.ndarray]] = []
    for r in _rows_in_storage_order(store, fields):
        places.append((r["id"], r["doc_id"], r["chunk_index"]))
        if bm25:
            texts.append((r["id"], r["indexed_text"]))
        if vectors:
            vecs.append((r["id"], np.asarray(r["vector"], dtype=np.float32)))
        if shown is not None:
            shown.upsert([r])
    built: list[tuple[str, BM25Postings | VectorCache | ChunkPlaces | SpooledRows]] = []
    if shown is not None:
        built.append((ROWS_FOLDER, shown))
    if store._places is None:  # the same scan has them: neighbour expansion reads by id
        store._places = ChunkPlaces(places)
    built.append((PLACES_FOLDER, store._places))  # held ones too: saved with the others, keyed the same
    del places
    if bm25:  # in id order, as a scan reads them: the order bm25s breaks ties in
        texts.sort(key=lambda pair: pair[0])
        store._bm25 = BM25Postings(texts)
        built.append((BM25_FOLDER, store._bm25))
    del texts
    if vectors:
        store._vectors = VectorCache(vecs)  # type: ignore[arg-type]  # rows as arrays: the same matrix
        built.append((VECTORS_FOLDER, store._vectors))
    del vecs
    if _saveable(store) and not store.read_only:
        root = Path(store._lite_db())
        remove_leftovers(root, keep=[shown.folder] if shown is not None else [])
        with contextlib.suppress(OSError):
            for folder, index in built:
                index.save(root / folder)
                write_key(root / folder, store.collection, files)  # last: trusted then
            store._bm25_saved_dropped = False  # the next write of this connection must remove them again
            store._copies_saved = True
    if shown is not None:
        shown.discard()  # saved (renamed away) or not: nothing of the spool is kept


def rekey_copies(root: str | Path) -> None:
    """Key the copies saved in ``root`` on the database's files as the closing connection left them (read
    after it closed: closing may still write them), while no other process holds the database. A writer that
    slipped in between would have removed the copies before its first write, so only copies of this
    process's data can be keyed."""
    root = Path(root)
    with contextlib.suppress(OSError), open(root / "LOCK", "a") as lock:
        snapshot.lock_exclusive(lock, root)  # a reader comparing the files lets go in a moment
        files = snapshot.fingerprint(root)
        for folder in COPY_FOLDERS:
            with contextlib.suppress(OSError, ValueError):  # no copy there, or a damaged key
                key = json.loads((root / folder / DATA_KEY).read_text(encoding="utf-8"))
                if isinstance(key, dict) and isinstance(key.get("collection"), str):
                    write_key(root / folder, key["collection"], files)


def remove_leftovers(root: Path, keep: Iterable[Path] = ()) -> None:
    """Remove the temporary folders of a save (or a run's spools) that was killed (``chunkwise-bm25.XXXX``),
    but ``keep``: this process holds the database, so no other is saving into it. Paths are compared
    absolute (from Python 3.12 on ``mkdtemp`` names a spool absolutely under a relative ``--db``)."""
    kept = {os.path.abspath(k) for k in keep}
    for folder in (*COPY_FOLDERS, snapshot.READERS_FOLDER):
        for tmp in root.glob(folder + ".*"):
            if os.path.abspath(tmp) not in kept:
                shutil.rmtree(tmp, ignore_errors=True)


def _rows_in_storage_order(store: MilvusStore, fields: list[str]) -> Iterator[dict]:
    """Every chunk's ``fields``, in the order Milvus Lite stores them where one plain query can return them
    all: the order its search breaks ties in (equal cosines), so the in-process vector candidates tie as
    Milvus's did. A larger collection (or an answer too large for one message) is read by a scan, in id
    order, batch by batch as the caller consumes it."""
    from .milvus_connection import failures

    with contextlib.suppress(*failures()):  # e.g. over the message size: the scan reads in batches
        rows = store.connect().query(store.collection, filter="", output_fields=fields, limit=QUERY_LIMIT)
        if len(rows) < QUERY_LIMIT:
            return iter(rows)
        del rows  # not held while the scan reads everything again
    return store.scan_chunks(fields)


def ids_matching(store: MilvusStore, filter: str) -> set[str]:
    """The ids of the chunks ``filter`` admits: one plain query (an iterator only for a large answer),
    remembered for the filter until the next write where the store's sides run in process."""
    if store._admitted is not None and store._admitted[0] == filter:
        return store._admitted[1]
    with store._filter_errors(filter, "read chunks"):
        rows = store.connect().query(store.collection, filter=filter, output_fields=["id"], limit=QUERY_LIMIT)
        if len(rows) >= QUERY_LIMIT:
            rows = list(store._scan(store.collection, ["id"], filter))
    ids = {r["id"] for r in rows}
    if store.uses_client_vectors:
        store._admitted = (filter, ids)
    return ids


def search_bm25(
    store: MilvusStore, query: str, limit: int, filter: str | None = None, fields: list[str] | None = None
) -> list[dict]:
    """Chunks by Milvus's own BM25 over ``indexed_text`` (only when :attr:`~MilvusStore.bm25_builtin`)."""
    with store._filter_errors(filter, "full-text search"):
        res = store.connect().search(
            store.collection,
            data=[query],
            anns_field="sparse",
            limit=limit,
            filter=filter or "",
            output_fields=store.output_fields if fields is None else fields,
        )
    return list(res[0]) if res else []


__all__ = [
    "BM25_FOLDER",
    "COPY_FOLDERS",
    "PLACES_FOLDER",
    "load_places",
    "hold_copies",
    "save_copies",
    "VECTORS_FOLDER",
    "QUERY_LIMIT",
    "VECTORS_MAX_BYTES",
    "as_scores",
    "search_vector",
    "search_text",
    "search_bm25",
    "chunks_at",
    "ids_matching",
    "load_client_indexes",
    "open_copies",
    "build_rows",
    "ROWS_FOLDER",
]


def chunks_at(store: MilvusStore, wanted: dict[str, Iterable[int]]) -> list[Hit]:
    """The stored chunks of the given documents with the given chunk indexes (those that exist), as hits
    without a score. Milvus Lite reads them by id (the ids by place are held in process, store/places.py:
    it walks every row for a filter, but reads rows by id directly); a server answers one query whose filter
    names them."""
    if store.db is not None:
        return store.fetch(load_places(store).ids_at(wanted))
    clauses = []
    for doc_id, indexes in sorted(wanted.items()):
        idx = sorted({int(i) for i in indexes if int(i) >= 0})
        if idx:
            clauses.append(f"(doc_id == {quote(doc_id)} and chunk_index in [{', '.join(map(str, idx))}])")
    if not clauses:
        return []
    with store._errors("read chunks"):
        rows = store.connect().query(
            store.collection, filter=" or ".join(clauses), output_fields=store.output_fields, limit=QUERY_LIMIT
        )
    return [Hit(r["id"], 0.0, *chunk_from_row(store._decode(r))) for r in rows]
