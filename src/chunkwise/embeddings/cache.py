"""A persistent embedding cache: SQLite, keyed by (model, sha256 of the text), shared by every command.

Why SQLite: one file, no server, atomic writes, and safe when several processes (two ``chunkwise index``
runs, a test runner with workers) write at once:

- WAL journal, so readers never block the writer and the writer never blocks readers;
- a busy timeout, so a second writer waits for the first instead of failing with "database is locked";
- ``INSERT OR IGNORE``, so two processes that embed the same text both succeed (the vectors are equal);
- each write is one short ``BEGIN IMMEDIATE`` transaction.

The cache is bounded (``max_bytes``, default 2 GiB or ``$CHUNKWISE_CACHE_MAX_MB``): every row records when it
was last used (refreshed at most once an hour, so reads stay reads), and when the live data outgrows the
bound the least recently used rows are deleted down to 90 % of it. The freed pages are reused by later
inserts; ``chunkwise cache clear`` also vacuums the file.

A row read back is not trusted: a vector that is not finite, has the wrong length, is not of unit length
(every chunkwise embedder L2-normalises), or is all zeros for a text with something in it (zero-filled
storage is the commonest damage; an embedder's zero vector for such a text is not cached either) is
treated as missing, embedded again and overwritten (``INSERT OR IGNORE`` alone would keep the bad row
forever), and counted in :attr:`CachedEmbedder.cache_repaired`. Otherwise one damaged row (a bad sector, a
bug in an older version, a hand edit) would fail every later run, blamed on the embedder. A fresh vector
that is itself not finite is not stored (the caller's own check then names the embedder).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..validation import Interval, PathSpec, validated
from .base import Embedder, WrappedEmbedder, check_texts

CACHE_DIR_ENV = "CHUNKWISE_CACHE_DIR"
CACHE_MAX_ENV = "CHUNKWISE_CACHE_MAX_MB"
DEFAULT_MAX_BYTES = 2 * 1024**3
DB_NAME = "embeddings.sqlite3"
#: last_used (microseconds since the epoch) is refreshed on a hit only when older than this: LRU-ish
#: without a write per read
TOUCH_INTERVAL = 3600 * 10**6
_SQL_VARS = 500  # keys per IN (...) query, well under SQLite's variable limit
#: how far from 1 the length of a cached unit vector may be (float32 rounding is ~1e-7)
NORM_TOLERANCE = 1e-3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    key BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    last_used INTEGER NOT NULL,
    UNIQUE (model, key)
);
CREATE INDEX IF NOT EXISTS embeddings_last_used ON embeddings (last_used);
"""


def _now() -> int:
    return time.time_ns() // 1000


def default_cache_dir() -> Path:
    """``$CHUNKWISE_CACHE_DIR`` or the platform's user cache directory (``~/.cache/chunkwise`` on Linux)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("chunkwise", appauthor=False))


def resolve_cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir()


def vector_problem(vec: np.ndarray, dim: int | None = None, unit: bool = True, text: str = "") -> str | None:
    """Why a vector cannot be a cached embedding of ``text`` (not finite, ``dim`` long or of unit length, or
    all zeros for a text that is not blank), or ``None``."""
    if dim and vec.shape[0] != dim:
        return f"{vec.shape[0]} dimensions instead of {dim}"
    if not np.all(np.isfinite(vec)):
        return "not finite"
    if text.strip() and not np.any(vec):
        return "all zeros"
    if unit:
        norm = float(np.linalg.norm(vec.astype(np.float64)))
        if norm != 0.0 and abs(norm - 1.0) > NORM_TOLERANCE:
            return f"length {norm:.3g}, not 1"
    return None


def repaired_count(embedder: Any) -> int:
    """Cached vectors found damaged and embedded again by the cache in (or under) ``embedder``."""
    while embedder is not None:
        if isinstance(embedder, CachedEmbedder):
            return embedder.cache_repaired
        embedder = getattr(embedder, "inner", None)
    return 0


def text_key(text: str) -> bytes:
    """sha256 of the UTF-8 text (lone surrogates kept, so every Python string has a key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache(AbstractContextManager["EmbeddingCache", None]):
    """Vectors by (model id, text hash) in ``<cache_dir>/embeddings.sqlite3``."""

    @validated(cache_dir=[PathSpec(), None], max_bytes=[Interval(int, 1, None), None])
    def __init__(self, cache_dir: str | os.PathLike | None = None, max_bytes: int | None = None):
        self.dir = resolve_cache_dir(cache_dir)
        self.path = self.dir / DB_NAME
        if max_bytes is None:
            env = os.environ.get(CACHE_MAX_ENV)
            try:
                max_bytes = int(float(env) * 1024**2) if env else DEFAULT_MAX_BYTES
            except ValueError:
                max_bytes = 0
            if max_bytes < 1:  # the environment's text, not a parameter: named as it is set
                raise ConfigError(f"${CACHE_MAX_ENV} must be a positive number of megabytes, got {env!r}")
        self.max_bytes = int(max_bytes)
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._write_failed = False

    # -- connection ---------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # forked child: never reuse the parent's connection (SQLite forbids it)
        if self._conn is not None:
            return self._conn
        try:
            from ..security import private_dir, private_file

            private_dir(self.dir)
            private_file(self.path)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 60000")
            for attempt in range(50):  # switching to WAL needs a moment of exclusive access
                try:
                    conn.execute("PRAGMA journal_mode = WAL")
                    break
                except sqlite3.OperationalError:
                    time.sleep(0.05 * (attempt + 1))
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(
                f"cannot open the embedding cache ({exc}); use --cache-dir DIR or --no-cache", source=str(self.path)
            ) from None
        self._conn = conn
        self._pid = os.getpid()
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __exit__(self, *exc):
        self.close()

    # -- reads and writes ---------------------------------------------------------------------------
    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among ``keys`` (missing keys are simply absent, and so are rows whose bytes are
        not a vector of the recorded length)."""
        return self.get_checked(model, keys)[0]

    def get_checked(self, model: str, keys: Sequence[bytes]) -> tuple[dict[bytes, np.ndarray], set[bytes]]:
        """The cached vectors among ``keys``, and the keys whose rows are damaged (a blob that is not
        ``dim`` float32 values)."""
        found: dict[bytes, np.ndarray] = {}
        damaged: set[bytes] = set()
        if not keys:
            return found, damaged
        now = _now()
        with self._lock:
            conn = self._connect()
            stale: list[bytes] = []
            try:
                for s in range(0, len(keys), _SQL_VARS):
                    part = list(keys[s : s + _SQL_VARS])
                    marks = ",".join("?" * len(part))
                    rows = conn.execute(
                        f"SELECT key, dim, vec, last_used FROM embeddings WHERE model = ? AND key IN ({marks})",
                        [model, *part],
                    ).fetchall()
                    for key, dim, blob, last_used in rows:
                        if isinstance(blob, bytes) and len(blob) == 4 * dim:
                            found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
                        else:
                            damaged.add(bytes(key))
                        if isinstance(last_used, int) and last_used < now - TOUCH_INTERVAL:
                            stale.append(bytes(key))
                if stale:
                    self._write(
                        conn,
                        lambda: [
                            conn.execute(
                                f"UPDATE embeddings SET last_used = ? WHERE model = ? AND key IN "
                                f"({','.join('?' * len(stale[s : s + _SQL_VARS]))})",
                                [now, model, *stale[s : s + _SQL_VARS]],
                            )
                            for s in range(0, len(stale), _SQL_VARS)
                        ],
                    )
            except sqlite3.DatabaseError as exc:
                raise ConfigError(
                    f"the embedding cache is unreadable ({exc}); run `chunkwise cache clear` or use --no-cache",
                    source=str(self.path),
                ) from None
        return found, damaged

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]], replace: bool = False) -> None:
        """Store vectors; keys already present are left as they are (another process may have won), or
        overwritten with ``replace`` (rows found damaged)."""
        if not items:
            return
        now = _now()
        rows = [
            (model, key, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes(), now) for key, v in items
        ]
        sql = (
            "INSERT INTO embeddings (model, key, dim, vec, last_used) VALUES (?, ?, ?, ?, ?) ON CONFLICT "
            "(model, key) DO UPDATE SET dim = excluded.dim, vec = excluded.vec, last_used = excluded.last_used"
            if replace
            else "INSERT OR IGNORE INTO embeddings (model, key, dim, vec, last_used) VALUES (?, ?, ?, ?, ?)"
        )
        with self._lock:
            conn = self._connect()
            try:
                self._write(conn, lambda: conn.executemany(sql, rows))
                self.evict()  # three O(1) pragmas when under the bound
            except sqlite3.Error as exc:
                # a full disk or a read-only cache must not stop the embedding itself
                if not self._write_failed:
                    warnings.warn(
                        f"embedding cache {self.path}: write failed ({exc}); continuing without storing new vectors",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                self._write_failed = True

    @staticmethod
    def _write(conn: sqlite3.Connection, work) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            work()
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- size bound ---------------------------------------------------------------------------------
    def used_bytes(self) -> int:
        """Bytes of live pages in the database file (freed pages excluded; WAL file excluded)."""
        with self._lock:
            conn = self._connect()
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        return (pages - free) * page_size

    def evict(self) -> int:
        """Delete least-recently-used rows until the live data is under 90 % of ``max_bytes``.

        Returns the number of rows deleted.
        """
        deleted = 0
        with self._lock:
            conn = self._connect()
            for _ in range(5):  # freed space is not exactly proportional to rows: re-measure
                used = self.used_bytes()
                if used <= (self.max_bytes if not deleted else 0.9 * self.max_bytes):
                    break
                rows = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
                if rows == 0:
                    break
                n = max(1, int(rows * (1 - 0.9 * self.max_bytes / used)) + 1)
                self._write(
                    conn,
                    lambda n=n: conn.execute(
                        "DELETE FROM embeddings WHERE id IN (SELECT id FROM embeddings ORDER BY last_used, id LIMIT ?)",
                        (n,),
                    ),
                )
                deleted += n
        return deleted

    # -- maintenance --------------------------------------------------------------------------------
    def stats(self) -> dict:
        """Path, size bound, file sizes and a row count per model."""
        info: dict[str, Any] = {
            "path": str(self.path),
            "max_bytes": self.max_bytes,
            "exists": self.path.exists(),
            "file_bytes": 0,
            "used_bytes": 0,
            "entries": 0,
            "models": {},
        }
        if not self.path.exists():
            return info
        with self._lock:
            conn = self._connect()
            for model, count, size in conn.execute(
                "SELECT model, count(*), sum(length(vec)) FROM embeddings GROUP BY model ORDER BY model"
            ):
                info["models"][model] = {"entries": count, "vector_bytes": int(size or 0)}
                info["entries"] += count
            info["used_bytes"] = self.used_bytes()
        info["file_bytes"] = sum(p.stat().st_size for p in self.dir.glob(DB_NAME + "*") if p.is_file())
        return info

    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or those of one model) and shrink the file. Returns rows deleted."""
        if not self.path.exists():
            return 0
        with self._lock:
            conn = self._connect()
            n = [0]

            def work():
                cur = (
                    conn.execute("DELETE FROM embeddings WHERE model = ?", (model,))
                    if model
                    else conn.execute("DELETE FROM embeddings")
                )
                n[0] = cur.rowcount

            self._write(conn, work)
            try:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:  # another process is using it: the pages are reused anyway
                pass
        return n[0]


class CachedEmbedder(WrappedEmbedder):
    """Any embedder plus the persistent cache, with the same interface.

    Identical texts inside one ``embed`` call are embedded once; texts seen before (in any process that
    shares the cache directory) are not embedded again. ``texts_embedded`` and ``truncated`` are those of
    the wrapped back-end, so they count only texts actually sent to the model.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache):
        super().__init__(inner)
        self.cache = cache
        #: the cache namespace: the back-end's ``cache_key`` if it has one (openai adds the endpoint)
        self.cache_key = getattr(inner, "cache_key", None) or inner.model_id
        #: cached vectors found damaged (not finite, wrong length, not unit length) and embedded again
        self.cache_repaired = 0
        #: whether the back-end's vectors have unit length (the Embedder contract; a back-end may say no)
        self.unit = bool(getattr(inner, "normalized", True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, self.cache_key, self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries of a back-end that reads them unlike documents (E5's ``query: ``) are cached under their
        own namespace (``MODEL:query``), so a text that is both a chunk and a query keeps both vectors."""
        if not self.distinct_queries:
            return self.embed(texts)
        return self._cached(texts, self.cache_key + ":query", self.inner.embed_queries)

    def _cached(self, texts: Sequence[str], cache_key: str, compute) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        unique: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            unique.setdefault(k, t)
        vectors, damaged = self.cache.get_checked(cache_key, list(unique))
        dim = self.dim or None  # a remote back-end learns its dimension from its first answer
        if dim is None and vectors:
            dims = [v.shape[0] for v in vectors.values()]
            dim = max(set(dims), key=dims.count)
        for k in [k for k, v in vectors.items() if vector_problem(v, dim, self.unit, unique[k])]:
            del vectors[k]
            damaged.add(k)
        self.cache_repaired += len(damaged)
        missing = [k for k in unique if k not in vectors]
        if missing:
            new = compute([unique[k] for k in missing])
            fresh = list(zip(missing, new))
            # never cache what the embedder got wrong (not finite; zeros for a text with something in it)
            sound = [(k, v) for k, v in fresh if vector_problem(v, None, False, unique[k]) is None]
            self.cache.put_many(cache_key, [(k, v) for k, v in sound if k not in damaged])
            self.cache.put_many(cache_key, [(k, v) for k, v in sound if k in damaged], replace=True)
            vectors.update(fresh)
        return np.stack([vectors[k] for k in keys]).astype(np.float32, copy=False)

    def close(self) -> None:
        self.cache.close()
        super().close()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {str(self.cache.path)!r})"
