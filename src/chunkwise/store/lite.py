"""Milvus Lite's embedded engine, reachable only by this process's user.

pymilvus opens a ``.db`` path by starting Milvus Lite's gRPC server in process on ``127.0.0.1`` and a free
TCP port, with no authentication: for the whole run any local user can connect to that port, read the
index and write to it, whatever the permissions of the database directory. chunkwise starts the same
engine itself, bound to a unix socket inside a fresh ``0700`` directory (``tempfile.mkdtemp``), so only the
same user (and root) can reach it, and connects pymilvus to ``unix:PATH``.

This uses two internals of milvus-lite 3 (``milvus_lite.db.MilvusLite`` and
``milvus_lite.adapter.grpc.server._build_server``); when they are missing (another milvus-lite version),
:func:`start` returns ``None`` and the caller falls back to pymilvus's TCP port, with the risk above.

A database this user may read but not write (another user's index shared read-only, a read-only mount, an
archive) is opened as a copy: Milvus Lite has no read-only mode (opening takes a lock file inside the
directory, tidies its staging folder and may replay its write-ahead log), so ``start(path, read_only=True)``
copies the directory into the private folder, holding a shared lock on the original's ``LOCK`` meanwhile (a
process writing it holds that lock exclusively, so the copy is never of a half-written state), and serves
the copy; :meth:`PrivateEngine.stop` removes it. The original is never written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any


@dataclass
class PrivateEngine:
    """A running engine: its gRPC server, the database object, the private folder and the URI to use."""

    server: Any
    db: Any
    folder: str
    uri: str

    def stop(self) -> None:
        """Stop serving, release the database (its LOCK) and remove the socket folder."""
        with contextlib.suppress(Exception):
            self.server.stop(grace=2).wait(5)
        with contextlib.suppress(Exception):
            self.db.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class ReadOnlyCopyError(OSError):
    """A read-only database could not be copied (in use by its writer, unreadable, no space)."""


def start(path: str, read_only: bool = False) -> PrivateEngine | None:
    """Open the Milvus Lite database at ``path`` behind a private unix socket (a private copy of it with
    ``read_only``); ``None`` when this milvus-lite has not the internals it needs. Errors opening the
    database (locked, unreadable) raise; a failed copy raises :class:`ReadOnlyCopyError`."""
    try:
        from milvus_lite.adapter.grpc.server import DEFAULT_MAX_WORKERS, _build_server
        from milvus_lite.db import MilvusLite
    except ImportError:
        return None
    folder = tempfile.mkdtemp(prefix="chunkwise-milvus-")  # created 0700 by mkdtemp
    socket_path = os.path.join(folder, "milvus.sock")
    if len(socket_path.encode()) > 100:  # sun_path limit: use a short folder instead
        shutil.rmtree(folder, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix="cw-", dir="/tmp")
        socket_path = os.path.join(folder, "s")
    try:
        data_dir = _private_copy(path, os.path.join(folder, "copy.db")) if read_only else os.path.abspath(path)
        db = MilvusLite(data_dir)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    server = None
    try:
        server = _build_server(db, DEFAULT_MAX_WORKERS)
        if not server.add_insecure_port(f"unix:{socket_path}"):
            raise OSError("cannot bind the unix socket")
        os.chmod(socket_path, 0o600)
        server.start()
    except BaseException:
        engine = PrivateEngine(server, db, folder, "")
        engine.stop()
        raise
    return PrivateEngine(server, db, folder, f"unix:{socket_path}")


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


__all__ = ["PrivateEngine", "ReadOnlyCopyError", "start"]
