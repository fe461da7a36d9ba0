"""Chunks in Milvus: Milvus Lite in a local ``.db`` directory by default, a Milvus server by URI, one code path.

Two collections per index:

- ``NAME`` holds one row per chunk, every provenance field a real typed column (so ``--filter`` can use
  them), the dense ``vector`` (COSINE) and, where the server supports it, a BM25 ``sparse`` vector that
  Milvus computes itself from ``indexed_text``.
- ``NAME__state`` holds the index's configuration (one ``__config__`` row: embedder, chunking, context
  and vector mode) and one *marker* row per document (its content hash and chunk count).

The marker is what makes re-indexing incremental and crash-safe. A document counts as indexed only when a
marker with its current content hash exists, and a marker is written *last*, after all of the document's
chunks are in and its stale chunks are out. Replacing a document therefore runs: delete its marker, upsert
its new chunks (ids are deterministic, so a repeat is idempotent), delete its chunks whose ids are not in the
new set, write the marker. A process killed between any two steps leaves a document without a current
marker, and the next run simply does all four steps again, ending with exactly the chunks of a clean run.

Milvus Lite (``milvus-lite`` >= 3) is a pure-Python engine with a write-ahead log that pymilvus starts in
process for a path ending in ``.db`` (the path is a directory). It supports nullable scalar fields, JSON,
ARRAY, and BM25 functions, so the schema below is the same for Lite and a Milvus >= 2.5 server.

Older servers (see :class:`ServerCapabilities`, detected from the server version when connecting): a server
without BM25 functions (Milvus < 2.5) gets the collection without the ``sparse`` field, and hybrid search
falls back to ``bm25s`` over the stored texts (see :mod:`chunkwise.retrieval.hybrid`); a server without
nullable fields (Milvus < 2.5) stores a missing page, time or context as a sentinel (-1, -1.0, "") that is
turned back into ``None`` on every read. Tested against Milvus 2.3.5 (``pip install milvus==2.3.5``) and
the Milvus Lite server; Milvus < 2.3 (no upsert, no ARRAY fields) is not supported.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..document import Chunk, Document
from ..errors import ChunkwiseError, ConfigError, InputError
from .base import Hit, Marker
from .bm25 import BM25Fallback
from .rows import MAX_VARCHAR, SECTION_BYTES, chunk_from_row, chunk_rows, truncate_utf8

#: bump when the schema changes incompatibly; recorded in the config row
SCHEMA_VERSION = 2  # 2: source_start/source_end
CONFIG_ID = "__config__"
#: collection property of the state collection: the fingerprint of the configuration it was created for
CONFIG_PROPERTY = "chunkwise.config"
STATE_SUFFIX = "__state"
DEFAULT_COLLECTION = "chunkwise"
DEFAULT_DB = "chunkwise.db"
#: scalar fields returned with every search hit
OUTPUT_FIELDS = [
    "id",
    "doc_id",
    "source",
    "text",
    "context",
    "start",
    "end",
    "chunk_index",
    "token_count",
    "page_start",
    "page_end",
    "section",
    "start_time",
    "end_time",
    "speakers",
    "strategy",
    "embedder",
    "content_hash",
    "metadata",
    "source_start",
    "source_end",
]
#: where a Milvus Lite directory keeps its bm25s index between processes (dropped before every write)
BM25_FOLDER = "chunkwise-bm25"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
READ_ONLY_PROBLEM = (
    "the database directory is not writable: it can be searched, but indexing into it or "
    "deleting from it needs write access (copy it somewhere writable to change it)"
)
#: rows per upsert call, and the byte budget of one call (gRPC messages default to 64 MiB)
_WRITE_ROWS = 512
_WRITE_BYTES = 16 << 20
#: rows one plain query may return (Milvus caps offset + limit at 16384)
_QUERY_LIMIT = 16384
#: how a server without nullable fields stores ``None`` (real values are never negative or empty there)
NULL_SENTINELS = {
    "context": "",
    "page_start": -1,
    "page_end": -1,
    "start_time": -1.0,
    "end_time": -1.0,
    "source_start": -1,
    "source_end": -1,
}


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


def _auth_failure(exc: BaseException | None) -> str | None:
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


def _import_pymilvus():
    # gRPC's C core logs connection housekeeping to stderr (e.g. a GOAWAY "too_many_pings" from the
    # in-process Milvus Lite server while a long embedding batch keeps the channel idle; the client simply
    # reconnects). Silence it unless the user asked for gRPC logs.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        import pymilvus  # noqa: F401
    except ImportError as exc:  # pragma: no cover - pymilvus is a core dependency
        raise ConfigError(f"indexing needs pymilvus and milvus-lite: pip install pymilvus milvus-lite ({exc})") from exc
    return pymilvus


def _writable(path: Path) -> bool:
    """Whether this user may change the Milvus Lite directory ``path`` (root may, whatever the mode bits; a
    read-only mount refuses everyone)."""
    return os.access(path, os.W_OK | os.X_OK)


def _message(exc: Exception) -> str:
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(msg).split())


def quote(value: str) -> str:
    """A Milvus expression string literal (JSON escaping is what the Milvus parser accepts)."""
    return json.dumps(value, ensure_ascii=False)


def stable_config_hash(config: dict[str, Any]) -> str:
    """A fingerprint of a recorded configuration (key order does not matter)."""
    import hashlib

    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:32]


def as_scores(hits: list[dict]) -> dict[str, float]:
    """``id -> score`` (higher is better) from hits ranked best first. Milvus Lite reports BM25 as a
    negative distance (more negative is better) where a server may report the score itself: the ranking
    order tells which."""
    values = [float(h["distance"]) for h in hits]
    flip = values[0] < values[-1] if len(values) > 1 else bool(values and values[0] < 0)
    return {h["id"]: (-v if flip else v) for h, v in zip(hits, values)}


class MilvusStore:
    """One chunkwise index in Milvus: the chunk collection plus its state collection (implements
    :class:`chunkwise.store.base.Store`).

    ``db`` is a Milvus Lite directory whose name ends in ``.db`` (created on first use); ``uri`` (with an
    optional ``token``) names a Milvus server instead. ``timeout`` bounds connecting and every call, so an
    unreachable server is an error after a few seconds, not a hang.
    """

    def __init__(
        self,
        db: str | os.PathLike | None = None,
        uri: str | None = None,
        token: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        timeout: float = 10.0,
        client_bm25: bool | None = None,
    ):
        if db is not None and uri is not None:
            raise ConfigError("give either a Milvus Lite path (db) or a server URI (uri), not both")
        if not isinstance(collection, str) or not _NAME_RE.match(collection):
            raise ConfigError(
                f"invalid collection name {collection!r}: use letters, digits and underscores, "
                "starting with a letter or underscore"
            )
        self.db: str | None = None if uri is not None else os.fspath(db if db is not None else DEFAULT_DB)
        self.uri = uri
        self.token = token
        self.collection = collection
        self.state_collection = collection + STATE_SUFFIX
        self.timeout = timeout
        self.bm25_builtin = False
        self.nullable = True
        self.capabilities: ServerCapabilities | None = None
        self.output_fields = list(OUTPUT_FIELDS)
        self._client = None
        self._engine = None  # Milvus Lite behind a private socket (store/lite.py)
        #: a Milvus Lite directory this user may read but not write: searched through a private copy
        #: (store/lite.py); every write is refused with one line
        self.read_only = False
        self._loaded: set[str] = set()
        #: bm25s over the stored texts (built on the first text search, dropped by every write of this store)
        self._bm25: BM25Fallback | None = None
        #: rank text searches with that bm25s index even where Milvus has BM25 of its own. ``None`` (the
        #: default): yes for Milvus Lite in a directory, which one process at a time may open, so no other
        #: writer can make the index stale; Milvus Lite scores BM25 in pure Python, term by term over its
        #: posting lists, ~80% of a hybrid query's CPU (docs/scale.md#search-cost). A server keeps its own
        #: BM25 (other clients write to it, and its BM25 is compiled).
        self.client_bm25 = client_bm25
        #: the recorded configuration and the collection facts, read once per connection: a search needs
        #: neither again, and each costs a round trip (docs/scale.md#search-cost)
        self._config: dict[str, Any] | None = None
        self._opened = False
        self._bm25_saved_dropped = False

    # -- connection ------------------------------------------------------------------------------------
    @property
    def hybrid_note(self) -> str | None:
        """Why hybrid search runs client-side here (a server without BM25 functions), else ``None``."""
        if self.bm25_builtin or self.capabilities is None:
            return None
        return self.capabilities.hybrid_note

    @property
    def location(self) -> str:
        return self.uri if self.uri is not None else self._lite_db()

    def _lite_db(self) -> str:
        """``db`` where the store is Milvus Lite (``__init__`` sets it whenever no ``uri`` is given)."""
        assert self.db is not None, "a store without a uri always has a Milvus Lite path"
        return self.db

    def _check_db_path(self) -> str:
        path = Path(self._lite_db())
        if not path.name.endswith(".db") or path.name == ".db":
            raise ConfigError(
                "a Milvus Lite database path must end in '.db' (it is a directory Milvus Lite "
                "creates), e.g. --db ./chunkwise.db",
                source=self.db,
            )
        if path.exists() and not path.is_dir():
            raise InputError("exists and is a file, not a Milvus Lite database directory", source=self.db)
        if not path.exists():
            parent = path.parent if str(path.parent) else Path(".")
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(
                    f"cannot create the database directory ({exc.strerror or exc})", source=self.db
                ) from None
            if not os.access(parent, os.W_OK | os.X_OK):
                raise InputError("cannot create the database here: the directory is not writable", source=self.db)
            from ..security import private_dir

            with contextlib.suppress(OSError):
                private_dir(path)  # 0700: the chunks are copies of the user's documents
        elif not _writable(path):
            if not os.access(path, os.R_OK | os.X_OK):
                raise InputError("the database directory is not readable", source=self.db)
            self.read_only = True  # searchable through a private copy; writes are refused
        return str(path)

    def require_writable(self) -> None:
        """Connect, and refuse a database that can only be read (before a run chunks and embeds for nothing)."""
        self.connect()
        if self.read_only:
            raise InputError(READ_ONLY_PROBLEM, source=self.db)

    def _writer(self):
        """The client, for a call that writes (refused on a read-only database). The bm25s index saved in
        a Milvus Lite directory is removed before the first write of a connection, so a process killed
        half-way through writing never leaves an index that a later one would trust."""
        self.require_writable()
        client = self.connect()
        if not self._bm25_saved_dropped and self.db is not None:
            shutil.rmtree(Path(self.db) / BM25_FOLDER, ignore_errors=True)
            self._bm25_saved_dropped = True
        return client

    def _diagnose_lite_failure(self) -> str:
        """Why Milvus Lite refused to open ``self.db`` (pymilvus only says 'illegal connection params')."""
        path = Path(self._lite_db())
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

    @property
    def missing(self) -> bool:
        """True for a Milvus Lite path with no database yet (reading it must not create one)."""
        return self.db is not None and self._client is None and not Path(self.db).exists()

    def connect(self):
        """The MilvusClient, connected on first use; every failure is one clear :class:`ChunkwiseError`."""
        if self._client is not None:
            return self._client
        _import_pymilvus()
        quiet_milvus_logs()
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        if self.uri is not None:
            if not re.match(r"^(https?|tcp|unix)://", self.uri):
                raise ConfigError(
                    "a Milvus URI starts with http://, https://, tcp:// or unix:// "
                    "(use --db for a local Milvus Lite path)",
                    source=self.uri,
                )
            try:
                client = MilvusClient(uri=self.uri, token=self.token or "", timeout=self.timeout)
                client.list_collections(timeout=self.timeout)
                version = client.get_server_version(timeout=self.timeout)
            except Exception as exc:  # MilvusException, grpc and socket errors of every kind
                auth = _auth_failure(exc)
                if auth:
                    raise ChunkwiseError(
                        f"authentication failed (wrong --token / $MILVUS_TOKEN?): {auth}", source=self.uri
                    ) from None
                within = f" within {self.timeout:g} s" if isinstance(exc, MilvusException) else ""
                raise ChunkwiseError(
                    f"cannot reach the Milvus server{within}: {_message(exc)}", source=self.uri
                ) from None
            self.capabilities = ServerCapabilities.from_version(version)
        else:
            path = self._check_db_path()
            from . import lite

            try:
                # a private unix socket, not a TCP port; a private copy of a read-only database (store/lite.py)
                self._engine = lite.start(path, read_only=self.read_only)
                if self._engine is None and self.read_only:
                    raise InputError(
                        "the database directory is not writable (and this milvus-lite version "
                        "cannot open a private copy of it)",
                        source=self.db,
                    )
                client = MilvusClient(uri=self._engine.uri if self._engine else path, timeout=self.timeout)
            except InputError:
                raise
            except Exception as exc:
                if self._engine is not None:
                    self._engine.stop()
                    self._engine = None
                if isinstance(exc, lite.ReadOnlyCopyError):
                    raise InputError(f"not writable here, and {exc}", source=self.db) from None
                if self.read_only:
                    raise InputError(
                        "the database directory is not writable, and Milvus Lite could not open a "
                        f"copy of it ({_message(exc)})",
                        source=self.db,
                    ) from None
                raise InputError(self._diagnose_lite_failure(), source=self.db) from None
            self.capabilities = ServerCapabilities("lite")
        self._client = client
        return client

    def close(self) -> None:
        """Close the client and, for Milvus Lite, stop its in-process server and release the directory."""
        client, self._client = self._client, None
        self._loaded.clear()
        self._forget()
        if client is None:
            return
        with contextlib.suppress(Exception):
            client.close()
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.stop()
        elif self.db is not None:
            with contextlib.suppress(Exception):
                from milvus_lite.server_manager import server_manager_instance

                server_manager_instance.release_server(os.path.abspath(self.db))

    def _forget(self) -> None:
        """Drop what was read once per connection (the configuration, the collection facts, bm25s)."""
        self._config = None
        self._opened = False
        self._bm25 = None
        self._bm25_saved_dropped = False

    @contextlib.contextmanager
    def _errors(self, action: str):
        """Milvus failures as one-line errors that name the store and what was being done."""
        from pymilvus.exceptions import MilvusException

        try:
            yield
        except MilvusException as exc:
            raise ChunkwiseError(f"Milvus {action} failed: {_message(exc)}", source=self.location) from None

    # -- collections -----------------------------------------------------------------------------------
    def read_config(self) -> dict[str, Any] | None:
        """The recorded configuration, or ``None`` for an index that does not exist (yet).

        Read once per connection (an index's configuration changes only when this store recreates it);
        "does not exist" is asked again every time, since another client may create the index meanwhile."""
        if self._config is not None:
            return dict(self._config)
        client = self.connect()
        with self._errors("read the index configuration"):
            if not client.has_collection(self.state_collection):
                if client.has_collection(self.collection):
                    raise ConfigError(
                        f"collection {self.collection!r} exists but was not made by chunkwise "
                        "(no state collection); choose another --collection",
                        source=self.location,
                    )
                return None
            self._load(self.state_collection)
            rows = client.get(self.state_collection, ids=[CONFIG_ID], output_fields=["data"])
        if not rows:
            return None
        self._config = dict(rows[0]["data"])
        return dict(self._config)

    def create(self, config: dict[str, Any], dim: int, replace: bool = False) -> None:
        """Create the index and record ``config``, unless another client just did (create-if-absent).

        The state collection is created with the configuration's fingerprint in its description; the
        server creates a collection atomically, so when two clients race, every one of them reads back the
        same winner's fingerprint and the loser is refused with a clear message instead of replacing the
        winner's collections. Nothing existing is dropped unless ``replace`` (``recreate=True``), or it is
        the leftover of a creation killed before its config row was written (no row appears for a while):
        the config row is written last, and no chunk is written before it exists.
        """
        from pymilvus.exceptions import MilvusException

        client = self._writer()
        self._forget()
        fingerprint = "chunkwise-config:" + stable_config_hash(config)
        with self._errors("create the index"):
            if replace:
                self._drop_all()
            for attempt in range(2):
                self._create_if_absent(self.state_collection, fingerprint)
                found = self._description(self.state_collection)
                if fingerprint in found:
                    break
                if not found.startswith("chunkwise-config:") and attempt == 0 and self._config_row() is None:
                    self._drop_all()  # a state collection of an older chunkwise, never completed: start over
                    continue
                if self._wait_for_config_row() is None and attempt == 0:
                    self._drop_all()  # a creation killed half-way (no config row ever came): start over
                    continue
                raise ConfigError(
                    f"another client created collection {self.collection!r} at the same time with a different "
                    "configuration; run again to see what it records, or use another --collection",
                    source=self.location,
                )
            try:
                client.create_index(self.state_collection, self._state_index(), sync=False)
            except MilvusException:  # the racing winner made it already
                pass
            if not client.has_collection(self.collection):
                try:
                    self._create_chunks(dim)
                except MilvusException:  # a racing client with the same configuration won
                    if not self._appears(self.collection):
                        raise
            self._load(self.state_collection)
            client.upsert(self.state_collection, [self._state_row(CONFIG_ID, "config", "", "", 0, config)])
        self.open()

    def _drop_all(self) -> None:
        client = self.connect()
        self._forget()
        for name in (self.collection, self.state_collection):
            if client.has_collection(name):
                client.drop_collection(name)
            self._loaded.discard(name)

    def _create_if_absent(self, name: str, description: str) -> None:
        """Create the state collection; an error because it exists already (a racing client) is not one.
        (Servers answer a racing duplicate with different texts, raw errno ones included.)"""
        from pymilvus.exceptions import MilvusException

        client = self.connect()
        try:
            client.create_collection(
                name,
                schema=self._state_schema(description),
                consistency_level="Strong",
                properties={CONFIG_PROPERTY: description},
            )
        except MilvusException:
            if self._appears(name):
                return
            raise ConfigError(
                f"could not create collection {self.collection!r}, and no other client did "
                "either; is the server healthy? run again",
                source=self.location,
            ) from None

    def _appears(self, name: str, seconds: float = 5.0) -> bool:
        """Does ``name`` exist, or appear within ``seconds``? A racing winner's collection can take a
        moment to register after the loser's create call has already failed."""
        import time

        deadline = time.monotonic() + seconds
        while not self.connect().has_collection(name):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _description(self, name: str) -> str:
        """The fingerprint recorded at creation (a collection property; the description too, for servers
        that drop unknown properties)."""
        desc = self.connect().describe_collection(name)
        props = desc.get("properties") or {}
        return str(props.get(CONFIG_PROPERTY) or desc.get("description") or "")

    def _config_row(self) -> dict | None:
        client = self.connect()
        try:
            self._load(self.state_collection)
            rows = client.get(self.state_collection, ids=[CONFIG_ID], output_fields=["data"])
        except Exception:  # noqa: BLE001 - not loadable yet (no index): no row
            return None
        return dict(rows[0]["data"]) if rows else None

    def _wait_for_config_row(self, seconds: float = 3.0) -> dict | None:
        """The config row a racing creator is about to write, or ``None`` when none comes."""
        import time

        deadline = time.monotonic() + seconds
        while True:
            row = self._config_row()
            if row is not None or time.monotonic() > deadline:
                return row
            time.sleep(0.2)

    def open(self) -> None:
        """Load the collections for search and find out whether Milvus computes BM25 itself (once per
        connection: the schema of a collection does not change while it exists)."""
        client = self.connect()
        if self._opened:
            return
        with self._errors("open the index"):
            desc = client.describe_collection(self.collection)
            fields = {f.get("name"): f for f in desc.get("fields", [])}
            self.bm25_builtin = "sparse" in fields
            self.nullable = bool(fields.get("page_start", {}).get("nullable"))
            # an index of schema 1 has no source offsets: it stays searchable (the hits lack them); adding
            # to it is refused by the configuration check ("built with schema version 1")
            self.output_fields = [f for f in OUTPUT_FIELDS if f in fields]
            for name in (self.collection, self.state_collection):
                self._load(name)
        self._opened = True

    def _load(self, name: str) -> None:
        """Load a collection for reading once per connection (a reopened database starts released)."""
        if name not in self._loaded:
            self.connect().load_collection(name)
            self._loaded.add(name)

    def _state_schema(self, description: str = ""):
        from pymilvus import DataType, MilvusClient

        s = MilvusClient.create_schema(
            auto_id=False, enable_dynamic_field=False, description=description or "chunkwise index state"
        )
        s.add_field("id", DataType.VARCHAR, is_primary=True, max_length=128)
        s.add_field("kind", DataType.VARCHAR, max_length=16)
        s.add_field("source", DataType.VARCHAR, max_length=MAX_VARCHAR)
        s.add_field("content_hash", DataType.VARCHAR, max_length=64)
        s.add_field("chunks", DataType.INT64)
        s.add_field("data", DataType.JSON)
        # Milvus wants a vector field in every collection; this one is never searched.
        s.add_field("placeholder", DataType.FLOAT_VECTOR, dim=2)
        return s

    def _state_index(self):
        from pymilvus import MilvusClient

        ip = MilvusClient.prepare_index_params()
        ip.add_index(field_name="placeholder", index_type="FLAT", metric_type="L2")
        return ip

    @staticmethod
    def _state_row(id_: str, kind: str, source: str, content_hash: str, chunks: int, data: dict) -> dict:
        return {
            "id": id_,
            "kind": kind,
            "source": truncate_utf8(source, MAX_VARCHAR),
            "content_hash": content_hash,
            "chunks": int(chunks),
            "data": data,
            "placeholder": [0.0, 0.0],
        }

    def _chunk_schema(self, dim: int, bm25: bool, nullable: bool = True):
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description="chunkwise chunks")
        add = s.add_field
        add("id", DataType.VARCHAR, is_primary=True, max_length=64)
        add("doc_id", DataType.VARCHAR, max_length=64)
        add("source", DataType.VARCHAR, max_length=MAX_VARCHAR)
        add("text", DataType.VARCHAR, max_length=MAX_VARCHAR)
        add("context", DataType.VARCHAR, max_length=MAX_VARCHAR, nullable=nullable)
        add("indexed_text", DataType.VARCHAR, max_length=MAX_VARCHAR, enable_analyzer=bm25)
        add("start", DataType.INT64)
        add("end", DataType.INT64)
        add("chunk_index", DataType.INT64)
        add("token_count", DataType.INT64)
        add("page_start", DataType.INT64, nullable=nullable)
        add("page_end", DataType.INT64, nullable=nullable)
        add("section", DataType.VARCHAR, max_length=SECTION_BYTES)
        add("start_time", DataType.DOUBLE, nullable=nullable)
        add("end_time", DataType.DOUBLE, nullable=nullable)
        add("speakers", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=64, max_length=256)
        add("strategy", DataType.VARCHAR, max_length=64)
        add("embedder", DataType.VARCHAR, max_length=512)
        add("content_hash", DataType.VARCHAR, max_length=64)
        add("metadata", DataType.JSON)
        add("vector", DataType.FLOAT_VECTOR, dim=dim)
        add("source_start", DataType.INT64, nullable=nullable)
        add("source_end", DataType.INT64, nullable=nullable)
        if bm25:
            add("sparse", DataType.SPARSE_FLOAT_VECTOR)
            s.add_function(
                Function(
                    name="bm25",
                    function_type=FunctionType.BM25,
                    input_field_names=["indexed_text"],
                    output_field_names=["sparse"],
                )
            )
        return s

    def _create_chunks(self, dim: int) -> None:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        client = self.connect()
        caps = self.capabilities or ServerCapabilities("unknown")
        for bm25 in (True, False) if caps.bm25 else (False,):
            ip = MilvusClient.prepare_index_params()
            ip.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
            if bm25:
                ip.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
            try:
                client.create_collection(
                    self.collection, schema=self._chunk_schema(dim, bm25, caps.nullable), consistency_level="Strong"
                )
                client.create_index(self.collection, ip, sync=False)
                return
            except MilvusException as exc:
                # A server older than Milvus 2.5 has no BM25 functions: store without, use bm25s instead.
                if not bm25 or not re.search(
                    r"function|bm25|analyzer|sparse|create index on \d+ field", _message(exc), re.I
                ):
                    raise
                if client.has_collection(self.collection):
                    client.drop_collection(self.collection)

    # -- document markers ------------------------------------------------------------------------------
    def _scan(self, collection: str, fields: list[str], filter: str = "") -> Iterator[dict]:
        client = self.connect()
        it = client.query_iterator(collection, batch_size=4096, filter=filter, output_fields=fields)
        try:
            while True:
                batch = it.next()
                if not batch:
                    return
                yield from batch
        finally:
            with contextlib.suppress(Exception):
                it.close()

    def markers(self) -> dict[str, Marker]:
        """Every completely indexed document, by doc id."""
        with self._errors("read the document list"):
            rows = list(
                self._scan(
                    self.state_collection, ["id", "source", "content_hash", "chunks", "data"], 'kind == "document"'
                )
            )
        return {
            r["id"]: Marker(
                r["id"], r["source"], r["content_hash"], r["chunks"], bool((r.get("data") or {}).get("complete", True))
            )
            for r in rows
        }

    def chunk_documents(self) -> dict[str, str]:
        """``doc_id -> source`` of every document with chunks in the collection (markers or not)."""
        with self._errors("scan the chunks"):
            return {r["doc_id"]: r["source"] for r in self._scan(self.collection, ["id", "doc_id", "source"])}

    def chunk_ids(self, doc_ids: Iterable[str]) -> dict[str, set[str]]:
        """``doc_id -> {chunk ids}`` as stored now, for the given documents."""
        doc_ids = list(doc_ids)
        out: dict[str, set[str]] = {d: set() for d in doc_ids}
        if not doc_ids:
            return out
        expr = f"doc_id in [{', '.join(quote(d) for d in doc_ids)}]"
        with self._errors("read chunk ids"):
            # one plain query covers a batch's documents; an iterator costs three round trips (each a
            # consistency wait of ~0.3 s on a Milvus 2.3 server), so it is used only when the answer is large
            rows = self.connect().query(
                self.collection, filter=expr, output_fields=["id", "doc_id"], limit=_QUERY_LIMIT
            )
            if len(rows) >= _QUERY_LIMIT:
                rows = self._scan(self.collection, ["id", "doc_id"], expr)
            for r in rows:
                out.setdefault(r["doc_id"], set()).add(r["id"])
        return out

    def unmark(self, doc_ids: Iterable[str]) -> None:
        """Step 1 of replacing documents: they stop counting as indexed."""
        ids = list(doc_ids)
        if ids:
            with self._errors("write the document list"):
                self._writer().delete(self.state_collection, ids=ids)

    def mark(self, markers: Iterable[Marker]) -> None:
        """Last step: the documents are completely indexed with these content hashes."""
        rows = [
            self._state_row(
                m.doc_id, "document", m.source, m.content_hash, m.chunks, {} if m.complete else {"complete": False}
            )
            for m in markers
        ]
        if rows:
            with self._errors("write the document list"):
                self._writer().upsert(self.state_collection, rows)

    # -- chunks ----------------------------------------------------------------------------------------
    def _encode(self, row: dict) -> dict:
        """A row as this collection stores it: ``None`` becomes a sentinel where fields cannot be null."""
        if self.nullable:
            return row
        return {**row, **{k: v for k, v in NULL_SENTINELS.items() if row.get(k) is None}}

    def _decode(self, row: dict) -> dict:
        """The inverse of :meth:`_encode` on a row (or hit entity) read back."""
        if not self.nullable:
            for k, v in NULL_SENTINELS.items():
                if k in row and row[k] == v:
                    row[k] = None
        return row

    def upsert(self, items: list[tuple[Document, list[Chunk], np.ndarray]], embedder_id: str) -> list[str]:
        """Write documents' chunks with their vectors (rows from :mod:`chunkwise.store.rows`)."""
        rows: list[dict] = []
        for doc, chunks, vectors in items:
            rows.extend(chunk_rows(doc, chunks, vectors, embedder_id))
        self.upsert_chunks(rows)
        return [r["id"] for r in rows]

    def upsert_chunks(self, rows: Iterable[dict]) -> None:
        self._bm25 = None
        client = self._writer()
        batch: list[dict] = []
        size = 0
        with self._errors("write chunks"):
            for row in rows:
                n = len(row["text"]) * 2 + len(row["indexed_text"]) + 8 * len(row["vector"]) + 512
                if batch and (len(batch) >= _WRITE_ROWS or size + n > _WRITE_BYTES):
                    client.upsert(self.collection, batch)
                    batch, size = [], 0
                batch.append(self._encode(row))
                size += n
            if batch:
                client.upsert(self.collection, batch)

    def delete_chunks(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        self._bm25 = None
        client = self._writer()
        with self._errors("delete chunks"):
            for i in range(0, len(ids), 4096):
                client.delete(self.collection, ids=ids[i : i + 4096])
        return len(ids)

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        """Remove documents: markers first (so a crash leaves them 'changed', never 'done'), then chunks."""
        doc_ids = list(doc_ids)
        if not doc_ids:
            return 0
        self.unmark(doc_ids)
        stored = self.chunk_ids(doc_ids)
        return self.delete_chunks(sorted(set().union(*stored.values())))

    def flush(self) -> None:
        """Seal what was written into indexed segments. Milvus Lite otherwise searches fresh rows by scanning
        its in-memory table: measured on the five Chroma corpora (1,790 chunks), BM25 search went from
        1.2 s to 33 ms and vector search from 200 ms to 6 ms per query after one 1 s flush."""
        with self._errors("flush"):
            self._writer().flush(self.collection)

    def count(self) -> int:
        client = self.connect()
        with self._errors("count chunks"):
            rows = client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def fetch(self, ids: list[str]) -> list[Hit]:
        """The stored chunks of ``ids`` (those that exist), as hits without a score."""
        if not ids:
            return []
        with self._errors("read chunks"):
            rows = self.connect().get(self.collection, ids=ids, output_fields=self.output_fields)
        return [Hit(r["id"], 0.0, *chunk_from_row(self._decode(r))) for r in rows]

    def scan_chunks(self, fields: list[str], filter: str = "") -> Iterator[dict]:
        with self._filter_errors(filter, "read chunks"):
            yield from (self._decode(r) for r in self._scan(self.collection, fields, filter))

    # -- search ----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _filter_errors(self, filter: str | None, action: str):
        from pymilvus.exceptions import MilvusException

        try:
            yield
        except MilvusException as exc:
            if filter:
                raise InputError(f"invalid filter expression {filter!r}: {_message(exc)}") from None
            raise ChunkwiseError(f"Milvus {action} failed: {_message(exc)}", source=self.location) from None

    def search_vector(
        self, vector: np.ndarray, limit: int, filter: str | None = None, ids_only: bool = False
    ) -> list[Hit]:
        """Nearest chunks by cosine similarity, best first (with the stored chunks unless ``ids_only``)."""
        with self._filter_errors(filter, "search"):
            res = self.connect().search(
                self.collection,
                data=[np.asarray(vector, dtype=np.float32).tolist()],
                anns_field="vector",
                limit=limit,
                filter=filter or "",
                output_fields=["id"] if ids_only else self.output_fields,
                search_params={"metric_type": "COSINE"},
            )
        hits = list(res[0]) if res else []
        if ids_only:
            return [Hit(h["id"], float(h["distance"])) for h in hits]
        return [Hit(h["id"], float(h["distance"]), *chunk_from_row(self._decode(h.get("entity") or {}))) for h in hits]

    def search_text(self, query: str, limit: int, filter: str | None = None) -> list[Hit]:
        """Chunks by BM25 over ``indexed_text``, best first: ``bm25s`` over the stored texts where
        :attr:`uses_client_bm25` (built on the first call, rebuilt after writes; no round trip per query
        without a filter, one with), else Milvus's own."""
        if not self.uses_client_bm25:
            scores = as_scores(self.search_bm25(query, limit, filter, fields=["id"]))
            return [Hit(i, s) for i, s in scores.items()]
        if self._bm25 is None:
            self._bm25 = self._saved_bm25() or self._build_bm25()
        allowed = self._ids_matching(filter) if filter else None
        return [Hit(i, s) for i, s in self._bm25.search(query, limit, allowed)]

    def _saved_bm25(self) -> BM25Fallback | None:
        """The bm25s index an earlier process saved in the Milvus Lite directory, if it still covers every
        chunk (writes remove it first; the count guards against writers that do not know of it)."""
        if self.db is None or not self.bm25_builtin:
            return None
        try:
            saved = BM25Fallback.load(Path(self.db) / BM25_FOLDER)
        except (OSError, ValueError):
            return None
        return saved if len(saved) == self.count() else None

    def _build_bm25(self) -> BM25Fallback:
        """bm25s over every stored text (a scan of the collection), saved for later processes where it can be."""
        built = BM25Fallback((r["id"], r["indexed_text"]) for r in self.scan_chunks(["id", "indexed_text"]))
        if self.db is not None and self.bm25_builtin and not self.read_only:
            with contextlib.suppress(OSError):
                built.save(Path(self.db) / BM25_FOLDER)
                self._bm25_saved_dropped = False  # the next write of this connection must remove it again
        return built

    @property
    def uses_client_bm25(self) -> bool:
        """Whether text search runs ``bm25s`` here rather than Milvus's BM25 (see :attr:`client_bm25`)."""
        if not self.bm25_builtin:
            return True
        return self.db is not None if self.client_bm25 is None else bool(self.client_bm25)

    def _ids_matching(self, filter: str) -> set[str]:
        """The ids of the chunks ``filter`` admits: one plain query, an iterator only for a large answer."""
        with self._filter_errors(filter, "read chunks"):
            rows = self.connect().query(self.collection, filter=filter, output_fields=["id"], limit=_QUERY_LIMIT)
            if len(rows) >= _QUERY_LIMIT:
                rows = list(self._scan(self.collection, ["id"], filter))
        return {r["id"] for r in rows}

    def search_bm25(
        self, query: str, limit: int, filter: str | None = None, fields: list[str] | None = None
    ) -> list[dict]:
        """Chunks by Milvus's own BM25 over ``indexed_text`` (only when :attr:`bm25_builtin`)."""
        with self._filter_errors(filter, "full-text search"):
            res = self.connect().search(
                self.collection,
                data=[query],
                anns_field="sparse",
                limit=limit,
                filter=filter or "",
                output_fields=self.output_fields if fields is None else fields,
            )
        return list(res[0]) if res else []
