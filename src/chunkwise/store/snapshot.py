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
from collections.abc import Iterator
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
CACHE_FOLDERS = ("chunkwise-bm25", "chunkwise-vectors", "chunkwise-places", "chunkwise-rows", "chunkwise-readers")
#: a copy of the database as of its last finished run, what searches read while another process holds the
#: database (Milvus Lite allows one process in a directory): refreshed by every process that opens the
#: database, before it opens it, when the files changed since (:func:`refresh_readers_copy`); kept between
#: runs, so a search that finds it current copies nothing
READERS_FOLDER = "chunkwise-readers"
#: in the readers' copy: the database files' fingerprint it was copied from (its key)
READERS_KEY = "chunkwise-files.json"
#: a database larger than this gets no readers' copy (the copy costs its size in disk, and in time once per
#: change)
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


def save_readers_copy(db: str | os.PathLike, files: list[list] | None = None) -> bool:
    """Copy the database files (``files``, as :func:`fingerprint` lists them, without ``LOCK``) into
    :data:`READERS_FOLDER` with their fingerprint as its key, whole or not at all; False when there is nothing
    to copy or it is too large. The caller makes sure no process writes the files meanwhile
    (:func:`refresh_readers_copy`)."""
    from ..security import replace_folder

    files = fingerprint(db) if files is None else files
    data = [f for f in files if f[0] != "LOCK"]
    if not data or sum(f[1] for f in data) > READERS_MAX_BYTES:
        return False
    root = Path(db)

    def fill(tmp: Path) -> None:
        import shutil

        for rel, _size, _mtime in data:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, tmp / rel)
        (tmp / READERS_KEY).write_text(json.dumps(files), encoding="utf-8")  # last: the copy is whole

    try:
        replace_folder(root / READERS_FOLDER, fill)
    except OSError:  # no space, or another process replaced it at the same moment (with the same files)
        return readers_key(db) == files
    return True


def readers_key(db: str | os.PathLike) -> list | None:
    """The fingerprint the readers' copy was made from, or ``None`` when there is none (or it is partial)."""
    with contextlib.suppress(OSError, ValueError):
        key = json.loads((Path(db) / READERS_FOLDER / READERS_KEY).read_text(encoding="utf-8"))
        return key if isinstance(key, list) else None
    return None


@contextlib.contextmanager
def files_at_rest(db: str | os.PathLike) -> Iterator[bool]:
    """Hold a shared lock on the database's ``LOCK`` meanwhile: True when no process has the database open
    (each holds it exclusively), so its files stay as they are until the block ends (an opener waits, see
    :func:`copies_only`); False when one has, or the lock cannot be taken."""
    import fcntl

    try:
        fh = open(Path(db) / "LOCK", "a")  # noqa: SIM115 - held for the block
    except OSError:
        yield False
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def copies_only(db: str | os.PathLike) -> bool:
    """Whether the processes holding the database's ``LOCK`` (if any) hold it shared, to copy or compare
    its files for a moment (:func:`files_at_rest`), not open: an opener refused by the lock may retry."""
    with files_at_rest(db) as free:
        return free


#: how long a closing writer waits for readers holding the ``LOCK`` shared for a moment (to compare the files)
EXCLUSIVE_WAIT_S = 2.0


def lock_exclusive(lock: Any, db: str | os.PathLike) -> None:
    """Take the database's open ``LOCK`` file ``lock`` exclusively, waiting while other processes only hold
    it shared for a moment (:func:`files_at_rest`; :data:`EXCLUSIVE_WAIT_S` at most); ``OSError`` when a
    process has the database open or the wait runs out."""
    import fcntl
    import time

    deadline = time.monotonic() + EXCLUSIVE_WAIT_S
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError:
            if time.monotonic() > deadline or not copies_only(db):
                raise
            time.sleep(0.02)


def refresh_readers_copy(db: str | os.PathLike) -> bool:
    """Before this process opens the database: make the readers' copy current when no process has the
    database open (a copy whose key equals the files is kept; only a change is copied). True when the copy
    is of the files as they are now; False when there is none to make (an empty or too large database), or
    another process has the database open (the copy, if any, is of the last run it found)."""
    if not os.path.isfile(Path(db) / "LOCK"):
        return False  # never opened: nothing to copy (a new database)
    with files_at_rest(db) as free:
        if not free:
            return False
        files = fingerprint(db)
        return readers_key(db) == files or save_readers_copy(db, files)


def newer_run(db: str | os.PathLike, key: list) -> bool:
    """Whether the database holds a later finished run than the copy of ``key`` (a fingerprint): its files
    differ while no process has it open, or the readers' copy was made again since."""
    with files_at_rest(db) as free:
        if free:
            return fingerprint(db) != key
    latest = readers_key(db)
    return latest is not None and latest != key


def files_read(store: MilvusStore) -> list[list]:
    """The fingerprint of the database files ``store`` reads: of those the copy it reads was made from, else
    of the directory now. Saved in-process copies are trusted only when made from the same files."""
    if store._copy_key is not None:
        return store._copy_key
    if store._copies_files is not None:  # a search that checked its copies without the engine (open_copies)
        return store._copies_files
    return fingerprint(store._lite_db())


def open_local(store: MilvusStore) -> Any:
    """A client of ``store``'s Milvus Lite directory: the engine on the directory itself, a private copy of
    it where this user cannot write it (store/lite.py), or a private copy of its readers' copy (the last
    finished run) where another process has it open or the store has ``snapshot_reads``. The readers' copy
    is made current first, while no process has the directory open."""
    from ..errors import InputError
    from .milvus_connection import connect_lite, open_readers_copy

    path = store._check_db_path()
    if not store.read_only:
        store._readers_copy = refresh_readers_copy(path)
    if store.snapshot_reads and not store.read_only and not store._will_write and store._readers_copy:
        with contextlib.suppress(InputError):
            client = open_readers_copy(path, None, READERS_FOLDER)
            store._copy_key, store.read_only = readers_key(path), True
            return client
    try:
        return connect_lite(path, store.read_only, store.timeout, source=store._lite_db())
    except InputError as exc:  # another process has it open: the copy of its last finished run
        client = open_readers_copy(path, exc, READERS_FOLDER)
        store._copy_key, store.read_only, store.busy = readers_key(path), True, True
        return client


def closing(store: MilvusStore) -> tuple[dict[str, Any] | None, bool]:
    """Read while ``store`` is still connected: the snapshot state a connection that wrote leaves, and whether
    it saved copies since its last write (keyed once the directory is released, :func:`closed`)."""
    live = bool(store.db) and store._client is not None and not store.read_only
    state = capture(store) if store.keep_snapshot and live else None
    return state, bool(store._copies_saved and live)


def closed(store: MilvusStore, leave: tuple[dict[str, Any] | None, bool]) -> None:
    """Once the directory is released: save the snapshot, key the saved copies on the files as the closed
    connection left them (the readers' copy stays: the next process to open the database copies the
    change)."""
    from .milvus_search import rekey_copies

    state, rekey = leave
    if store.db is None:
        return
    if state is not None:
        save(store.db, store.collection, state)
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
            if hasattr(client, "settle"):  # and the merges the flush started in the background ended
                client.settle(name)  # unbounded, as the close that follows waits for it anyway
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
    from ..security import private_file

    path = snapshot_path(db, collection)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(Path(db) / "LOCK", "a") as lock:
            lock_exclusive(lock, db)
            if state["files"] != fingerprint(db):
                return
            data = dict(state, version=SNAPSHOT_VERSION, collection=collection)
            private_file(tmp)
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
    except (OSError, TypeError, ValueError):  # locked, unwritable, or a value JSON cannot hold: no snapshot
        with contextlib.suppress(OSError):
            tmp.unlink()


def load(db: str | os.PathLike, collection: str, files: list[list] | None = None) -> Snapshot | None:
    """The snapshot of ``collection`` in the database directory ``db``, or ``None`` unless it exists, parses,
    has this version and its fingerprint equals the database's files now (``files``: their fingerprint,
    taken by the caller)."""
    try:
        data = json.loads(snapshot_path(db, collection).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            return None
        if data.get("collection") != collection or data.get("files") != (fingerprint(db) if files is None else files):
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
    "READERS_KEY",
    "save_readers_copy",
    "readers_key",
    "refresh_readers_copy",
    "files_at_rest",
    "copies_only",
    "newer_run",
    "open_local",
    "files_read",
    "Snapshot",
    "capture",
    "drop",
    "fingerprint",
    "load",
    "local_snapshot",
    "save",
]
