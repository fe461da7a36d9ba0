"""Milvus Lite's embedded engine, reachable only by this process's user (issue 20, failure 7).

pymilvus opens a ``.db`` path by starting Milvus Lite's gRPC server in process on ``127.0.0.1`` and a free
TCP port, with no authentication: for the whole run any local user can connect to that port, read the
index and write to it, whatever the permissions of the database directory. chunkwise starts the same
engine itself, bound to a unix socket inside a fresh ``0700`` directory (``tempfile.mkdtemp``), so only the
same user (and root) can reach it, and connects pymilvus to ``unix:PATH``.

This uses two internals of milvus-lite 3 (``milvus_lite.db.MilvusLite`` and
``milvus_lite.adapter.grpc.server._build_server``); when they are missing (another milvus-lite version),
:func:`start` returns ``None`` and the caller falls back to pymilvus's TCP port, with the risk above.
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


def start(path: str) -> PrivateEngine | None:
    """Open the Milvus Lite database at ``path`` behind a private unix socket; ``None`` when this
    milvus-lite has not the internals it needs. Errors opening the database (locked, unreadable) raise."""
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
        db = MilvusLite(os.path.abspath(path))
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


__all__ = ["PrivateEngine", "start"]
