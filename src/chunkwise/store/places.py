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
from collections.abc import Iterable
from pathlib import Path

from ..security import replace_folder


class ChunkPlaces:
    """Chunk ids by document and chunk index."""

    def __init__(self, items: Iterable[tuple[str, str, int]] = ()):
        #: ``chunk id -> (doc_id, index)``
        self.place: dict[str, tuple[str, int]] = {}
        #: ``doc_id -> {index: chunk id}``
        self.by_doc: dict[str, dict[int, str]] = {}
        self.add(items)

    def __len__(self) -> int:
        return len(self.place)

    def add(self, items: Iterable[tuple[str, str, int]]) -> None:
        """Record chunks (an id already held moves to its new place)."""
        for chunk_id, doc_id, index in items:
            self.remove([chunk_id])
            self.place[chunk_id] = (doc_id, int(index))
            self.by_doc.setdefault(doc_id, {})[int(index)] = chunk_id

    def remove(self, ids: Iterable[str]) -> None:
        for chunk_id in ids:
            where = self.place.pop(chunk_id, None)
            if where is None:
                continue
            held = self.by_doc.get(where[0], {})
            if held.get(where[1]) == chunk_id:
                del held[where[1]]
            if not held:
                self.by_doc.pop(where[0], None)

    def ids_of(self, doc_ids: Iterable[str]) -> dict[str, set[str]]:
        """``doc_id -> {chunk ids}`` of every chunk held for these documents (two chunks of one document may
        share an index while a rewrite of it is under way, so the ids are read by place, not by index)."""
        out: dict[str, set[str]] = {d: set() for d in doc_ids}
        for chunk_id, (doc_id, _index) in self.place.items():
            held = out.get(doc_id)
            if held is not None:
                held.add(chunk_id)
        return out

    def ids_at(self, wanted: dict[str, Iterable[int]]) -> list[str]:
        """The ids of the chunks at ``doc_id -> indexes`` that exist, in document then index order."""
        out: list[str] = []
        for doc_id in sorted(wanted):
            held = self.by_doc.get(doc_id, {})
            out.extend(held[i] for i in sorted(set(wanted[doc_id])) if i in held)
        return out

    def rows(self) -> list[list]:
        """``[id, doc_id, index]`` of every chunk, in id order (what :meth:`save` writes)."""
        return [[i, d, n] for i, (d, n) in sorted(self.place.items())]

    def save(self, folder: str | os.PathLike) -> None:
        """Write to ``folder`` (replaced whole: written beside it, then renamed)."""
        rows = self.rows()

        def fill(tmp: Path) -> None:
            (tmp / "places.json").write_text(json.dumps(rows), encoding="utf-8")

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> ChunkPlaces:
        """Places written by :meth:`save` (``OSError``/``ValueError`` when there are none or they are damaged)."""
        rows = json.loads((Path(folder) / "places.json").read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise ValueError("the saved places are not a list")
        try:
            return cls((str(i), str(d), int(n)) for i, d, n in rows)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"damaged saved places: {exc}") from None


__all__ = ["ChunkPlaces"]
