"""What a Milvus Lite index holds, kept beside it in a small JSON file, so that a re-index in which nothing
changed is decided without starting Milvus Lite (importing pymilvus and milvus_lite costs a no-op run most of
its time).

``<db>/chunkwise-snapshot-<collection>.json`` (0600, like the database) records the collection's configuration,
its document markers, its chunk count and a *fingerprint* of the database's own files: the relative path,
size and ``mtime_ns`` of every file under the directory except chunkwise's own caches (``chunkwise-bm25/``,
``chunkwise-vectors/``, ``chunkwise-places/`` and their temporary folders), the snapshots and the segment indexes Milvus Lite builds in the background from the
data files (:data:`DERIVED_FOLDER`). It is written when a connection that wrote (or that an add run
read) is closed, from what the database says then, and only while this process holds the database's
``LOCK`` (so no other writer can slip in between the reads and the fingerprint). It is trusted only when its
fingerprint equals the files as they are now: any write by anyone changes them. It is removed before the
first write of every connection (:meth:`MilvusStore._writer`), so a process killed while writing never
leaves one that matches; one killed after writing and before the new snapshot leaves none.

Only for a local database (``--db``): a server's files are not ours to look at.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Marker

if TYPE_CHECKING:
    from .milvus import MilvusStore

#: bumped when what a snapshot holds, or how it is read, changes (an older one is then not trusted)
SNAPSHOT_VERSION = 1
PREFIX = "chunkwise-snapshot-"
#: chunkwise's own folders in the database directory (store/milvus_search.py), not the database's files
CACHE_FOLDERS = ("chunkwise-bm25", "chunkwise-vectors", "chunkwise-places", "chunkwise-readers")
#: a copy of the database as of its last finished run, made by a writer before its first write and removed
#: when it closes: what searches read while the database is being written (Milvus Lite allows one process)
READERS_FOLDER = "chunkwise-readers"
#: a database larger than this gets no readers' copy (the copy costs its size in time and disk per run)
READERS_MAX_BYTES = 2 << 30
#: Milvus Lite's segment indexes, built in the background after a flush (even after the connection closed):
#: derived from the data files, which every write changes (the write-ahead log, the manifest)
DERIVED_FOLDER = "indexes"


@dataclass
class Snapshot:
    """The collection as its snapshot records it."""

    config: dict[str, Any]
    markers: dict[str, Marker]
    count: int
    note: str | None


def snapshot_path(db: str | os.PathLike, collection: str) -> Path:
    return Path(db) / f"{PREFIX}{collection}.json"


def fingerprint(db: str | os.PathLike) -> list[list]:
    """``[relative path, size, mtime_ns]`` of every file of the database itself, sorted."""
    root = os.fspath(db)
    out: list[list] = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel == ".":  # chunkwise's copies, and the temporary folders of a save that was killed
            dirs[:] = [d for d in dirs if d.split(".")[0] not in CACHE_FOLDERS]
            files = [f for f in files if not f.startswith(PREFIX)]
        dirs[:] = [d for d in dirs if d != DERIVED_FOLDER]
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            out.append([os.path.normpath(os.path.join(rel, name)), st.st_size, st.st_mtime_ns])
    return sorted(out)


def save_readers_copy(db: str | os.PathLike) -> bool:
    """Copy the database files (as :func:`fingerprint` lists them, without ``LOCK``) into
    :data:`READERS_FOLDER`, whole or not at all; False when there is nothing to copy or it is too large.
    Called by the process that holds the database, before its first write: the files are those of the last
    finished run."""
    from ..security import replace_folder

    files = [f for f in fingerprint(db) if f[0] != "LOCK"]
    if not files or sum(f[1] for f in files) > READERS_MAX_BYTES:
        return False
    root = Path(db)

    def fill(tmp: Path) -> None:
        import shutil

        for rel, _size, _mtime in files:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, tmp / rel)

    try:
        replace_folder(root / READERS_FOLDER, fill)
    except OSError:
        return False
    return True


def drop_readers_copy(db: str | os.PathLike) -> None:
    """Remove the readers' copy (the database is free again: readers open it directly)."""
    import shutil

    shutil.rmtree(Path(db) / READERS_FOLDER, ignore_errors=True)


def closing(store: MilvusStore) -> tuple[dict[str, Any] | None, bool]:
    """Read while ``store`` is still connected: the snapshot state a connection that wrote leaves, and whether
    it saved copies since its last write (keyed once the directory is released, :func:`closed`)."""
    live = bool(store.db) and store._client is not None and not store.read_only
    state = capture(store) if store.keep_snapshot and live else None
    return state, bool(store._copies_saved and live)


def closed(store: MilvusStore, leave: tuple[dict[str, Any] | None, bool]) -> None:
    """Once the directory is released: save the snapshot, key the saved copies on the files as the closed
    connection left them, remove the readers' copy."""
    from .milvus_search import rekey_copies

    state, rekey = leave
    if store.db is None:
        return
    if state is not None:
        save(store.db, store.collection, state)
    if store._readers_copy:
        drop_readers_copy(store.db)
        store._readers_copy = False
    if rekey:
        rekey_copies(store.db)


def drop(db: str | os.PathLike, collection: str) -> None:
    """Remove the snapshot before a write begins (a write killed half-way must leave none that matches)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(snapshot_path(db, collection))


def capture(store: MilvusStore) -> dict[str, Any] | None:
    """What the connected ``store`` holds now (``None`` when the collection does not exist or a read fails):
    read before the connection is closed, saved by :func:`save` after."""
    try:
        config = store.read_config()
        if config is None:
            return None
        client = store.connect()
        for name in (store.collection, store.state_collection):  # sealed now, not by the close (it would
            client.flush(name)  # change the files after the fingerprint below)
        markers = [[m.doc_id, m.source, m.content_hash, m.chunks, m.complete] for m in store.markers().values()]
        count, note = store.count(), store.hybrid_note
        return {
            "config": config,
            "markers": markers,
            "count": count,
            "note": note,
            "files": fingerprint(store._lite_db()),
        }
    except Exception:  # a snapshot is an optimisation: without one the next run reads the database
        return None


def save(db: str | os.PathLike, collection: str, state: dict[str, Any]) -> None:
    """Write ``state`` atomically, only while this process can take the database's ``LOCK`` (another process
    that holds it may be writing) and the files are still those ``state`` was read from (``files``, taken
    while the connection was open: a process that opened the database in between changed them)."""
    import fcntl

    from ..security import private_file

    path = snapshot_path(db, collection)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(Path(db) / "LOCK", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if state["files"] != fingerprint(db):
                return
            data = dict(state, version=SNAPSHOT_VERSION, collection=collection)
            private_file(tmp)
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
    except (OSError, TypeError, ValueError):  # locked, unwritable, or a value JSON cannot hold: no snapshot
        with contextlib.suppress(OSError):
            tmp.unlink()


def load(db: str | os.PathLike, collection: str) -> Snapshot | None:
    """The snapshot of ``collection`` in the database directory ``db``, or ``None`` unless it exists, parses,
    has this version and its fingerprint equals the database's files now."""
    try:
        data = json.loads(snapshot_path(db, collection).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            return None
        if data.get("collection") != collection or data.get("files") != fingerprint(db):
            return None
        config, count, note = data["config"], data["count"], data["note"]
        markers = {m[0]: Marker(m[0], m[1], m[2], int(m[3]), bool(m[4])) for m in data["markers"]}
        if not isinstance(config, dict) or not isinstance(count, int) or not isinstance(note, (str, type(None))):
            return None
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return Snapshot(config, markers, count, note)


def local_snapshot(store: Any) -> Snapshot | None:
    """The trusted snapshot of ``store`` when it is a writable Milvus Lite directory not yet opened by this
    process; ``None`` for anything else (a server, another kind of store, a read-only directory)."""
    from .milvus import MilvusStore

    if type(store) is not MilvusStore or store.db is None or store._client is not None:
        return None
    if not os.path.isdir(store.db) or not os.access(store.db, os.W_OK | os.X_OK):
        return None  # a read-only database is refused by the full path, as before
    return load(store.db, store.collection)


__all__ = [
    "SNAPSHOT_VERSION",
    "READERS_FOLDER",
    "save_readers_copy",
    "drop_readers_copy",
    "Snapshot",
    "capture",
    "drop",
    "fingerprint",
    "load",
    "local_snapshot",
    "save",
]
