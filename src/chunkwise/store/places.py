"""Where each stored chunk sits in its document: ``(doc_id, chunk index) -> chunk id``, held in process.

Neighbour expansion (:mod:`chunkwise.retrieval.expand`) needs a hit's neighbours by document and chunk index.
Milvus Lite answers any filtered query by walking every row of the collection in Python (about 160 CPU-ms at
30,000 chunks, seven times the hybrid search it expands), but reads rows by primary key directly. On a
Milvus Lite directory :class:`ChunkPlaces` therefore keeps the ids by place (read once with the in-process
search copies, saved beside them, dropped or updated by every write like them), and the neighbours are read
by id.
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path

from ..security import replace_folder
from .numbers import ChunkNumbers, RowOf


class ChunkPlaces:
    """Chunk ids by document and chunk index.

    Held as columns, since one entry stands for every chunk of a corpus: a dict ``chunk id -> row`` and, per
    row, the id, the document's number and the chunk index in arrays; each document's held places as two
    arrays (indexes in order, and the rows there). About half the memory of dicts of tuples and of dicts.
    """

    #: free rows are dropped (the rest renumbered) once there are more of them than this and than held rows
    compact_after = 1024

    def __init__(self, items: Iterable[tuple[str, str, int]] = (), numbers: ChunkNumbers | None = None):
        self._row = RowOf(numbers)  # chunk id -> row (numbered with the connection's other copies)
        self._ids: list[str | None] = []  # row -> chunk id (None: a free row)
        self._doc = array("i")  # row -> document number
        self._index = array("q")  # row -> chunk index
        self._free: list[int] = []
        self._doc_ids: list[str] = []  # document number -> doc_id
        self._doc_no: dict[str, int] = {}
        #: document number -> (chunk indexes in order, the row at each); the latest id added at a place holds it
        self._by_doc: dict[int, tuple[array, array]] = {}
        self.add(items)

    def __len__(self) -> int:
        return len(self._row)

    def add(self, items: Iterable[tuple[str, str, int]]) -> None:
        """Record chunks (an id already held moves to its new place)."""
        for chunk_id, doc_id, index in items:
            index = int(index)
            if not -(2**63) <= index < 2**63:
                raise ValueError(f"chunk index out of range: {index}")
            self.remove([chunk_id])
            doc = self._doc_no.get(doc_id)
            if doc is None:
                doc = self._doc_no[doc_id] = len(self._doc_ids)
                self._doc_ids.append(doc_id)
            if self._free:
                row = self._free.pop()
                self._ids[row] = chunk_id
                self._doc[row] = doc
                self._index[row] = index
            else:
                row = len(self._ids)
                self._ids.append(chunk_id)
                self._doc.append(doc)
                self._index.append(index)
            self._row[chunk_id] = row
            held = self._by_doc.get(doc)
            if held is None:
                held = self._by_doc[doc] = (array("q"), array("i"))
            indexes, rows = held
            if not indexes or indexes[-1] < index:
                indexes.append(index)
                rows.append(row)
                continue
            at = bisect_left(indexes, index)
            if indexes[at] == index:
                rows[at] = row
            else:
                indexes.insert(at, index)
                rows.insert(at, row)

    def remove(self, ids: Iterable[str]) -> None:
        for chunk_id in ids:
            row = self._row.pop(chunk_id, None)
            if row is None:
                continue
            doc, index = self._doc[row], self._index[row]
            self._ids[row] = None
            self._free.append(row)
            held = self._by_doc.get(doc)
            if held is not None:
                indexes, rows = held
                at = bisect_left(indexes, index)
                if at < len(indexes) and indexes[at] == index and rows[at] == row:
                    del indexes[at]
                    del rows[at]
                if not indexes:
                    del self._by_doc[doc]
        if len(self._free) > self.compact_after and len(self._free) * 2 > len(self._ids):
            self._compact()

    def _compact(self) -> None:
        """Drop the free rows (renumbering the rest, in the same order)."""
        new = array("i", [-1]) * len(self._ids)
        ids: list[str | None] = []
        doc, index = array("i"), array("q")
        for row, chunk_id in enumerate(self._ids):
            if chunk_id is not None:
                new[row] = len(ids)
                self._row[chunk_id] = len(ids)
                ids.append(chunk_id)
                doc.append(self._doc[row])
                index.append(self._index[row])
        self._ids, self._doc, self._index, self._free = ids, doc, index, []
        for _indexes, rows in self._by_doc.values():
            rows[:] = array("i", [new[r] for r in rows])

    def ids_of(self, doc_ids: Iterable[str]) -> dict[str, set[str]]:
        """``doc_id -> {chunk ids}`` of every chunk held for these documents (two chunks of one document may
        share an index while a rewrite of it is under way, so the ids are read by place, not by index)."""
        out: dict[str, set[str]] = {d: set() for d in doc_ids}
        wanted = {self._doc_no[d]: out[d] for d in out if d in self._doc_no}
        if wanted:
            docs = self._doc
            for chunk_id, row in self._row.items():
                held = wanted.get(docs[row])
                if held is not None:
                    held.add(chunk_id)
        return out

    def ids_at(self, wanted: dict[str, Iterable[int]]) -> list[str]:
        """The ids of the chunks at ``doc_id -> indexes`` that exist, in document then index order."""
        out: list[str] = []
        for doc_id in sorted(wanted):
            doc = self._doc_no.get(doc_id)
            held = self._by_doc.get(doc) if doc is not None else None
            if held is None:
                continue
            indexes, rows = held
            for i in sorted(set(wanted[doc_id])):
                at = bisect_left(indexes, i)
                if at < len(indexes) and indexes[at] == i:
                    out.append(self._ids[rows[at]])
        return out

    def rows(self) -> list[list]:
        """``[id, doc_id, index]`` of every chunk, in id order (what :meth:`save` writes)."""
        names, index = self._doc_ids, self._index
        docs = self._doc
        return [[i, names[docs[r]], index[r]] for i, r in sorted(self._row.items())]

    def save(self, folder: str | os.PathLike) -> None:
        """Write to ``folder`` (replaced whole: written beside it, then renamed): :meth:`rows` as JSON, written
        a thousand rows at a time rather than built whole, since the save comes at the end of an index run."""
        order = sorted(self._row)
        names, docs, index, row_of = self._doc_ids, self._doc, self._index, self._row

        def fill(tmp: Path) -> None:
            with open(tmp / "places.json", "w", encoding="utf-8") as out:
                out.write("[")
                for at in range(0, len(order), 1000):
                    part = [[i, names[docs[r]], index[r]] for i in order[at : at + 1000] for r in (row_of[i],)]
                    out.write((", " if at else "") + json.dumps(part)[1:-1])
                out.write("]")

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> ChunkPlaces:
        """Places written by :meth:`save` (``OSError``/``ValueError`` when there are none or they are damaged)."""
        rows = json.loads((Path(folder) / "places.json").read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise ValueError("the saved places are not a list")
        try:
            return cls((str(i), str(d), int(n)) for i, d, n in rows)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"damaged saved places: {exc}") from None


__all__ = ["ChunkPlaces"]
