"""Reaching Milvus: a server by URI (what it supports, from its version) or Milvus Lite in a directory, and
every failure on the way as one line.

:class:`~chunkwise.store.milvus.MilvusStore` connects through :func:`connect_server` and :func:`connect_lite`;
both return a connected client (a ``MilvusClient``, or its in-process stand-in for Milvus Lite) or raise a
:class:`~chunkwise.errors.ChunkwiseError` that names the server or the directory and says what to do
(pymilvus itself says "illegal connection params or server unavailable" for most of these). Milvus Lite
runs in this process without pymilvus, a read-only directory from a private copy (:mod:`chunkwise.store.
lite`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ChunkwiseError, ConfigError, InputError

#: where an index lives unless told: the collection name and the Milvus Lite directory (here, so that a
#: command line can show them without importing the store)
DEFAULT_COLLECTION = "chunkwise"
DEFAULT_DB = "chunkwise.db"


def quiet_milvus_logs() -> None:
    """pymilvus logs every failed call with a traceback at ERROR; we turn those failures into one-line
    :class:`ChunkwiseError` messages instead, so the duplicate log output is noise."""
    for name in ("pymilvus", "pymilvus.decorators", "milvus_lite", "milvus_lite.server_manager"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class ServerCapabilities:
    """What the Milvus at the other end supports, from its version (Milvus Lite supports everything).

    ``sparse``: SPARSE_FLOAT_VECTOR fields (Milvus >= 2.4); ``bm25``: BM25 functions that compute the sparse
    vectors inside Milvus (>= 2.5); ``nullable``: nullable scalar fields (>= 2.5). A version that cannot be
    parsed counts as a current one (creating the BM25 field is still retried without it if refused).
    """

    version: str
    sparse: bool = True
    bm25: bool = True
    nullable: bool = True

    @classmethod
    def from_version(cls, version: str) -> ServerCapabilities:
        m = re.match(r"^v?(\d+)\.(\d+)", str(version or "").strip())
        if not m:
            return cls(str(version))
        v = (int(m.group(1)), int(m.group(2)))
        return cls(str(version), sparse=v >= (2, 4), bm25=v >= (2, 5), nullable=v >= (2, 5))

    @property
    def hybrid_note(self) -> str | None:
        """The one line to say when hybrid search cannot use Milvus's own BM25 on this server."""
        if self.bm25:
            return None
        return (
            f"Milvus {self.version} has no BM25 functions: indexing dense vectors only; hybrid search needs "
            "Milvus >= 2.5 for server-side BM25 and falls back to client-side bm25s over all stored texts"
        )


def auth_failure(exc: BaseException | None) -> str | None:
    """The server's own words when a connection failed on authentication (pymilvus reports it only as
    'illegal connection params or server unavailable'; the gRPC status is further down the chain)."""
    seen = 0
    while exc is not None and seen < 20:
        code = getattr(exc, "code", None)
        try:
            name = getattr(code() if callable(code) else code, "name", "")
        except Exception:  # noqa: BLE001 - a code() that needs arguments
            name = ""
        if name in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            details = getattr(exc, "details", None)
            return " ".join(str(details() if callable(details) else name).split())
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def import_pymilvus():
    # gRPC's C core logs connection housekeeping to stderr (e.g. a GOAWAY "too_many_pings" from the
    # in-process Milvus Lite server while a long embedding batch keeps the channel idle; the client simply
    # reconnects). Silence it unless the user asked for gRPC logs.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        import pymilvus  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"pymilvus is not installed (a Milvus server needs it): pip install 'chunkwise[milvus]' ({exc})"
        ) from None
    quiet_milvus_logs()
    return pymilvus


def message(exc: Exception) -> str:
    """A Milvus exception's message on one line."""
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(msg).split())


def quote(value: str) -> str:
    """A Milvus expression string literal (JSON escaping is what the Milvus parser accepts)."""
    return json.dumps(value, ensure_ascii=False)


#: seconds to open a TCP connection to a Milvus server before giving up (at most ``--timeout``): a server
#: that is down or a closed port fails here at once, with this bound stated, instead of after pymilvus's
#: own retries
CONNECT_TIMEOUT = 3.0


def probe_tcp(uri: str, timeout: float) -> None:
    """Open and close one TCP connection to the host and port of an ``http(s)://`` or ``tcp://`` URI."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https", "tcp") or not parts.hostname:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 19530)
    except ValueError as exc:
        raise ConfigError(f"bad port in the Milvus URI: {exc}", source=uri) from None
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except TimeoutError:
        raise ChunkwiseError(
            f"cannot reach the Milvus server: no answer from {parts.hostname}:{port} within {timeout:g} s",
            source=uri,
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ChunkwiseError(
            f"cannot reach the Milvus server: {reason} at {parts.hostname}:{port} (gave up within {timeout:g} s)",
            source=uri,
        ) from None


#: gRPC keepalive of a connection to a Milvus server. pymilvus's own pings every 10 s, between calls too; a
#: server on gRPC's default policy (``milvus-lite server`` is one) accepts a ping every 5 minutes while a call
#: runs and none between calls, and after two more closes the connection ("GOAWAY too_many_pings"), failing
#: the calls in flight. These settings keep to that policy, which every Milvus accepts; a server that stops
#: answering is still found by each call's deadline (``--timeout``).
KEEPALIVE = {
    "grpc.keepalive_time_ms": 300_000,
    "grpc.keepalive_timeout_ms": 20_000,
    "grpc.keepalive_permit_without_calls": False,
}


def connect_server(uri: str, token: str | None, timeout: float) -> tuple[Any, ServerCapabilities]:
    """A client of the server at ``uri`` (checked with one call) and what that server supports.

    The connection is the client's own (pymilvus shares one per URI and token within a process unless asked,
    and a shared one comes with the settings and the connect deadline of whoever opened it first), with
    :data:`KEEPALIVE`; closing the client closes it."""
    import_pymilvus()
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    if not re.match(r"^(https?|tcp|unix)://", uri):
        raise ConfigError(
            "a Milvus URI starts with http://, https://, tcp:// or unix:// (use --db for a local Milvus Lite path)",
            source=uri,
        )
    probe_tcp(uri, min(timeout, CONNECT_TIMEOUT))
    deadline = time.monotonic() + timeout
    client = None
    try:
        client = MilvusClient(uri=uri, token=token or "", timeout=timeout, dedicated=True, grpc_options=KEEPALIVE)
        client.list_collections(timeout=max(deadline - time.monotonic(), 0.001))
        version = client.get_server_version(timeout=max(deadline - time.monotonic(), 0.001))
    except Exception as exc:  # MilvusException, grpc and socket errors of every kind
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        auth = auth_failure(exc)
        if auth:
            raise ChunkwiseError(
                f"authentication failed (wrong --token / $MILVUS_TOKEN?): {auth}", source=uri
            ) from None
        within = f" within {timeout:g} s" if isinstance(exc, MilvusException) else ""
        raise ChunkwiseError(f"cannot reach the Milvus server{within}: {message(exc)}", source=uri) from None
    return client, ServerCapabilities.from_version(version)


def connect_lite(path: str, read_only: bool, timeout: float, source: str) -> Any:
    """A client of the Milvus Lite directory ``path``: the engine in this process (:mod:`chunkwise.store.
    lite`, a private copy when ``read_only``), or pymilvus's own where this milvus-lite has no such engine;
    errors name ``source``, the path as the user gave it."""
    from . import lite

    quiet_milvus_logs()
    try:
        client = _open_waiting_for_copies(path, read_only)
    except lite.ReadOnlyCopyError as exc:
        raise InputError(f"not writable here, and {exc}", source=source) from None
    except Exception as exc:
        if read_only:
            raise InputError(
                f"the database directory is not writable, and Milvus Lite could not open a copy of it ({message(exc)})",
                source=source,
            ) from None
        raise InputError(diagnose_lite_failure(Path(path)), source=source) from None
    if client is not None:
        return client
    if read_only:
        raise InputError(
            "the database directory is not writable (and this milvus-lite version cannot open a private copy of it)",
            source=source,
        )
    import_pymilvus()
    from pymilvus import MilvusClient

    try:
        return MilvusClient(uri=path, timeout=timeout)
    except Exception:
        raise InputError(diagnose_lite_failure(Path(path)), source=source) from None


#: how long opening a database waits while other processes copy or compare its files (store/snapshot.py)
COPY_WAIT_S = 120.0


def _open_waiting_for_copies(path: str, read_only: bool) -> Any:
    """``lite.open_client``; refused by the ``LOCK`` while other processes only hold it shared for a moment
    (to copy the files or compare them, :func:`~chunkwise.store.snapshot.files_at_rest`), tried again until
    they let go (:data:`COPY_WAIT_S` at most). A process that has the database open refuses at once."""
    import time

    from . import lite, snapshot

    deadline = time.monotonic() + COPY_WAIT_S
    while True:
        try:
            return lite.open_client(path, read_only=read_only)
        except lite.ReadOnlyCopyError:
            raise
        except Exception as exc:
            locked = type(exc).__name__ == "DataDirLockedError"
            if read_only or not locked or time.monotonic() > deadline or not snapshot.copies_only(path):
                raise
            time.sleep(0.05)


IN_USE_PROBLEM = (
    "the database is in use by another process (Milvus Lite allows one at a time); searches read its last "
    "finished run meanwhile, but indexing or deleting must wait until that process ends"
)


class BusyDatabaseWarning(UserWarning):
    """A search reads the last finished run of a database another process is writing."""


def open_readers_copy(path: str, exc: InputError | None, folder: str) -> Any:
    """A client of a private copy of ``path/folder``, the readers' copy of the last finished run
    (store/snapshot.py). With ``exc`` (why ``path`` itself could not be opened): only when it says another
    process has ``path`` open, with one warning; else, or when there is no copy to read, ``exc`` is raised.
    Without: for a reader that never opens the database itself, without a warning (an :class:`InputError`
    when there is no copy)."""
    import time

    from . import lite

    refused = exc or InputError("the database has no readers' copy", source=path)
    readers = Path(path) / folder
    if exc is not None and not str(exc.problem).startswith("the database is in use"):
        raise exc
    client = None
    for attempt in range(3):  # a process making the copy current replaces it whole: the next try reads the new one
        if not readers.is_dir():
            break
        try:
            client = lite.open_client(str(readers), read_only=True)
            break
        except Exception:  # noqa: BLE001 - replaced while it was copied
            time.sleep(0.1 * (attempt + 1))
    if client is None:
        raise refused from None
    if exc is not None:
        import warnings

        warnings.warn(
            f"{exc.source}: another process has this database open; the results are as of its last finished run",
            BusyDatabaseWarning,
            stacklevel=5,
        )
    return client


def failures() -> tuple[type[Exception], ...]:
    """What a failed Milvus call raises: the in-process client's :class:`~chunkwise.store.lite.LiteCallError`
    and, once pymilvus is imported (a server), its ``MilvusException`` (pymilvus is not imported to ask)."""
    from .lite import LiteCallError

    exceptions = sys.modules.get("pymilvus.exceptions")
    return (LiteCallError,) if exceptions is None else (LiteCallError, exceptions.MilvusException)


def check_lite_path(db: str, writable: Callable[[Path], bool]) -> tuple[str, bool]:
    """The Milvus Lite directory ``db`` checked (created, private, where it does not exist yet), and whether
    it can only be read (``writable`` says whether this user may change it)."""
    path = Path(db)
    if not path.name.endswith(".db") or path.name == ".db":
        raise ConfigError(
            "a Milvus Lite database path must end in '.db' (it is a directory Milvus Lite "
            "creates), e.g. --db ./chunkwise.db",
            source=db,
        )
    if path.exists() and not path.is_dir():
        raise InputError("exists and is a file, not a Milvus Lite database directory", source=db)
    if not path.exists():
        parent = path.parent if str(path.parent) else Path(".")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the database directory ({exc.strerror or exc})", source=db) from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InputError("cannot create the database here: the directory is not writable", source=db)
        from ..security import private_dir

        with contextlib.suppress(OSError):
            private_dir(path)  # 0700: the chunks are copies of the user's documents
    elif not writable(path):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError("the database directory is not readable", source=db)
        return str(path), True
    return str(path), False


def diagnose_lite_failure(path: Path) -> str:
    """Why Milvus Lite refused to open ``path`` (pymilvus only says 'illegal connection params')."""
    lock = path / "LOCK"
    if lock.exists():
        try:
            import fcntl

            with open(lock, "a") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(fh, fcntl.LOCK_UN)
                except OSError:
                    return "the database is in use by another process (Milvus Lite allows one at a time)"
        except (ImportError, OSError):
            pass
    try:
        probe = path / ".chunkwise-write-test"
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return f"the database directory is not writable ({exc.strerror or exc})"
    return "Milvus Lite could not open it (is it a Milvus Lite database of a compatible version?)"


__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_DB",
    "ServerCapabilities",
    "quiet_milvus_logs",
    "auth_failure",
    "import_pymilvus",
    "message",
    "quote",
    "connect_server",
    "connect_lite",
    "failures",
    "diagnose_lite_failure",
    "check_lite_path",
]
