"""Exact cosine search over an index's vectors held in process: the candidates of a hybrid search.

A hybrid search fuses the top 1,000 candidates of each side by their scores (:mod:`chunkwise.retrieval.
fusion`); only ids and scores are needed until the final k are known. Milvus Lite nevertheless turns every
vector candidate into a whole stored row (all columns, in Python) before it answers, about 0.07 ms each, so
the 1,000 vector candidates cost more than the rest of a hybrid query together (docs/scale.md#search-cost).
On a Milvus Lite directory, which one process at a time may open, :class:`VectorCache` keeps the vectors in
a float32 matrix instead (read once, saved in the directory beside the bm25s index and dropped by every
write, like it), and ranks them exactly: ``matrix @ query``, the cosine of L2-normalised vectors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..security import replace_folder
from .numbers import ChunkNumbers, RowOf


class VectorCache:
    """The vectors of every stored chunk by id, L2-normalised rows of one float32 matrix."""

    def __init__(self, items: Iterable[tuple[str, list[float]]]):
        pairs = list(items)
        self.ids = [i for i, _ in pairs]
        self._index_of = {doc: n for n, doc in enumerate(self.ids)}
        matrix = np.asarray([v for _, v in pairs], dtype=np.float32)
        self.matrix = _normalized(matrix) if pairs else np.zeros((0, 0), dtype=np.float32)
        #: rows allocated ahead for appends; ``matrix`` is a view of its first ``len(ids)`` rows
        self._room: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, ids: list[str]) -> np.ndarray | None:
        """The unit vectors of ``ids`` (rows in that order), or ``None`` if one of them is not held."""
        found = [self._index_of.get(i) for i in ids]
        rows = [r for r in found if r is not None]
        return self.matrix[rows] if len(rows) == len(ids) else None

    def upsert(self, items: Iterable[tuple[str, list[float]]]) -> None:
        """Add vectors by id at the end, as Milvus Lite stores an upsert (an id already held moves there with
        its new vector), so ties keep ranking in the order Milvus Lite's own search gives them."""
        pairs = list(dict((i, v) for i, v in items).items())  # the last vector of an id written twice
        if not pairs:
            return
        self.remove([i for i, _ in pairs])
        rows = _normalized(np.asarray([v for _, v in pairs], dtype=np.float32))
        n, need = len(self.ids), len(self.ids) + len(rows)
        for chunk_id, _ in pairs:
            self._index_of[chunk_id] = len(self.ids)
            self.ids.append(chunk_id)
        if not self.matrix.size:
            self.matrix, self._room = rows, None
            return
        # appended into rows allocated ahead (an eighth more each time): a writer adding many batches to a
        # large copy copies it a few times, not once per batch
        if self._room is None or need > len(self._room) or self._room.shape[1] != rows.shape[1]:
            room = np.empty((need + max(need // 8, 1024), self.matrix.shape[1]), dtype=np.float32)
            room[:n] = self.matrix
            self._room = room
        self._room[n:need] = rows
        self.matrix = self._room[:need]

    def remove(self, ids: Iterable[str]) -> None:
        """Forget vectors by id (unknown ids are ignored)."""
        gone = {n for n in map(self._index_of.get, ids) if n is not None}
        if not gone:
            return
        keep = np.ones(len(self.ids), dtype=bool)
        keep[list(gone)] = False
        self.matrix, self._room = self.matrix[keep], None
        self.ids = [i for i, k in zip(self.ids, keep.tolist()) if k]
        self._index_of = {doc: n for n, doc in enumerate(self.ids)}

    def canonical(self) -> dict[str, bytes]:
        """``id -> the row's bytes``: what two copies of the same vectors agree on, whatever their order."""
        return {i: self.matrix[n].tobytes() for i, n in self._index_of.items()}

    def save(self, folder: str | os.PathLike) -> None:
        """Write the cache to ``folder`` (replaced whole: written beside it, then renamed)."""

        def fill(tmp: Path) -> None:
            (tmp / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
            np.save(tmp / "vectors.npy", self.matrix, allow_pickle=False)

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> VectorCache:
        """A cache written by :meth:`save` (``OSError``/``ValueError`` when there is none or it is damaged)."""
        folder = Path(folder)
        out = cls(())
        out.ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        out.matrix = np.load(folder / "vectors.npy", allow_pickle=False)
        if out.matrix.dtype != np.float32 or out.matrix.ndim != 2 or len(out.matrix) != len(out.ids):
            raise ValueError("the saved vectors do not match their ids")
        out._index_of = {doc: n for n, doc in enumerate(out.ids)}
        return out

    def search(self, vector: np.ndarray, limit: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` nearest ``(id, cosine)`` pairs, best first (ties in stored order), within ``allowed``."""
        if not self.ids or limit <= 0:
            return []
        query = _normalized(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        # einsum, not ``@``: one vector against the matrix is a matrix-vector product, which BLAS spreads over
        # threads that spin on a busy machine (2,000 x 384: 5 CPU-ms with OpenBLAS's threads, 0.3 without)
        scores = np.einsum("ij,j->i", self.matrix, query)
        if allowed is not None:
            keep = np.zeros(len(self.ids), dtype=bool)
            keep[[n for n in map(self._index_of.get, allowed) if n is not None]] = True
            scores = np.where(keep, scores, -np.inf)
            limit = min(limit, int(keep.sum()))
        limit = min(limit, len(self.ids))
        if limit <= 0:
            return []
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.ids[n], float(scores[n])) for n in top.tolist()]


class SpooledVectors:
    """The vectors a run writes into a new collection, appended to a file in the database directory as they
    are written (the run never holds them all in memory), and saved as :class:`VectorCache`'s folder when
    the connection closes: the first search after a build finds them instead of reading every row back.

    The file is a ``.npy`` whose header is rewritten with the final row count, so saving renames it when
    nothing was replaced or removed; otherwise the live rows are copied in slices. Rows replaced or removed
    are marked dead (an upsert moves an id to the end, as Milvus Lite stores it)."""

    #: rows per slice when copying or materialising (64 MB of 384-dimension vectors at most)
    SLICE = 1 << 14

    def __init__(self, folder: str | os.PathLike, numbers: ChunkNumbers | None = None):
        import tempfile

        folder = Path(folder)
        self.folder = Path(tempfile.mkdtemp(prefix=folder.name + ".spool-", dir=folder.parent))
        self.path = self.folder / "vectors.npy"
        self.ids: list[str] = []
        self._index_of = RowOf(numbers)  # live id -> row of the file (numbered with the connection's other copies)
        self._dead: list[int] = []
        self.dim = 0
        self._header = 0
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return len(self._index_of)

    def rows(self, ids: list[str]) -> np.ndarray | None:
        """Not held in memory: the caller embeds again (as without a copy)."""
        return None

    def _header_bytes(self, rows: int) -> bytes:
        import io

        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": np.dtype(np.float32).str, "fortran_order": False, "shape": (rows, self.dim)}
        )
        return buf.getvalue()

    def upsert(self, items: Iterable[tuple[str, list[float]]]) -> None:
        pairs = list(dict((i, v) for i, v in items).items())
        if not pairs:
            return
        rows = _normalized(np.asarray([v for _, v in pairs], dtype=np.float32))
        if self._file is None:
            self.dim = rows.shape[1]
            head = self._header_bytes(0)
            self._header = len(head)
            self._file = open(self.path, "wb")  # noqa: SIM115 - appended to until saved or closed
            self._file.write(head)
        if rows.shape[1] != self.dim:
            raise ValueError("vectors of another dimension")
        self.remove([i for i, _ in pairs])
        for chunk_id, _ in pairs:
            self._index_of[chunk_id] = len(self.ids)
            self.ids.append(chunk_id)
        assert self._file is not None
        self._file.write(np.ascontiguousarray(rows).tobytes())

    def remove(self, ids: Iterable[str]) -> None:
        for chunk_id in ids:
            n = self._index_of.pop(chunk_id, None)
            if n is not None:
                self._dead.append(n)

    def _live_slices(self) -> Iterable[np.ndarray]:
        """The live rows, in stored order, a slice at a time (read back from the file)."""
        assert self._file is not None
        self._file.flush()
        if not self.ids:
            return
        data = np.memmap(self.path, dtype=np.float32, mode="r", offset=self._header, shape=(len(self.ids), self.dim))
        keep = np.ones(len(self.ids), dtype=bool)
        keep[self._dead] = False
        for a in range(0, len(self.ids), self.SLICE):
            yield np.array(data[a : a + self.SLICE][keep[a : a + self.SLICE]])
        del data

    def live_ids(self) -> list[str]:
        dead = set(self._dead)
        return [i for n, i in enumerate(self.ids) if n not in dead]

    def cache(self) -> VectorCache:
        """The vectors in memory, as the copy a search ranks with."""
        out = VectorCache(())
        out.ids = self.live_ids()
        out._index_of = {doc: n for n, doc in enumerate(out.ids)}
        if self._file is not None and out.ids:
            out.matrix = np.concatenate(list(self._live_slices()))
        return out

    def save(self, folder: str | os.PathLike) -> None:
        """Write :class:`VectorCache`'s folder: the file itself, renamed, when every row is live (its header
        rewritten with the row count), else the live rows copied a slice at a time. The spool is gone
        after."""
        if self._file is None:  # nothing written
            VectorCache(()).save(folder)
            self.discard()
            return
        ids = self.live_ids()

        def fill(tmp: Path) -> None:
            assert self._file is not None
            (tmp / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
            head = self._header_bytes(len(ids))
            if not self._dead and len(head) == self._header:
                self._file.seek(0)
                self._file.write(head)
                self._file.close()
                os.replace(self.path, tmp / "vectors.npy")
                return
            with open(tmp / "vectors.npy", "wb") as out:
                out.write(head)
                for part in self._live_slices():
                    out.write(part.tobytes())

        replace_folder(folder, fill)
        self.discard()

    def discard(self) -> None:
        """Close and remove the spool (what a run that does not save its copies does with it)."""
        import shutil

        if self._file is not None and not self._file.closed:
            self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _normalized(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


__all__ = ["SpooledVectors", "VectorCache"]
