"""One number per chunk id for the copies a writing connection keeps, and each copy's rows by that number.

A connection that writes keeps up to four copies beside the database (the BM25 postings, the vectors, the
chunk places and the rows a hit shows), and each needs the row an id sits at in its own files. A dict
``id -> row`` per copy costs about 55 bytes a chunk each (the dict's slot and an int object per row), four
times over: at 70,000 chunks about 15 MB of an indexing run's memory. Instead the connection numbers each id
once (:class:`ChunkNumbers`) and each copy keeps its rows in an array by that number (:class:`RowOf`, 4 bytes
a number), so the four copies hold 16 bytes a chunk between them beyond the one shared dict.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, MutableMapping


class ChunkNumbers:
    """Chunk ids numbered in the order first seen (0, 1, 2 ...). A number is never given to another id and an
    id keeps its number after a copy forgets it, so the numbering holds every id the connection has written
    (as the spooled copies' files do until they are saved)."""

    __slots__ = ("_number", "ids")

    def __init__(self) -> None:
        self._number: dict[str, int] = {}
        self.ids: list[str] = []  # number -> id

    def __len__(self) -> int:
        return len(self.ids)

    def number(self, chunk_id: str) -> int:
        """The id's number (given now if it has none)."""
        n = self._number.get(chunk_id)
        if n is None:
            n = self._number[chunk_id] = len(self.ids)
            self.ids.append(chunk_id)
        return n

    def get(self, chunk_id: str) -> int | None:
        """The id's number, or ``None`` if it has none."""
        return self._number.get(chunk_id)


class RowOf(MutableMapping[str, int]):
    """``chunk id -> row`` of one copy (rows are whole numbers from 0 below 2**31), over a numbering shared with
    the other copies of the connection (or one of its own): an array by number, -1 where the id has no row."""

    __slots__ = ("_live", "_rows", "numbers")

    def __init__(self, numbers: ChunkNumbers | None = None) -> None:
        self.numbers = ChunkNumbers() if numbers is None else numbers
        self._rows = array("i")
        self._live = 0

    @classmethod
    def in_order(cls, ids: list[str]) -> RowOf:
        """Rows 0, 1, 2 ... of ``ids`` (distinct), over a numbering of their own in the same order: built at
        once, as a copy taken over from its saved files is (setting them one by one costs about five times
        more, ~1.3 µs an id). Raises ``ValueError`` if an id repeats."""
        out = cls()
        numbers = out.numbers
        numbers._number = dict(zip(ids, range(len(ids))))
        if len(numbers._number) != len(ids):
            raise ValueError("an id repeats")
        numbers.ids = list(ids)
        out._rows = array("i", range(len(ids)))
        out._live = len(ids)
        return out

    def _at(self, chunk_id: str) -> int:
        n = self.numbers.get(chunk_id)
        if n is None or n >= len(self._rows):
            return -1
        return self._rows[n]

    def __getitem__(self, chunk_id: str) -> int:
        row = self._at(chunk_id)
        if row < 0:
            raise KeyError(chunk_id)
        return row

    def get(self, chunk_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        row = self._at(chunk_id)
        return default if row < 0 else row

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self._at(chunk_id) >= 0

    def __setitem__(self, chunk_id: str, row: int) -> None:
        if not 0 <= row < 2**31:
            raise ValueError(f"a row is a whole number from 0 below 2**31, not {row}")
        n = self.numbers.number(chunk_id)
        rows = self._rows
        if n >= len(rows):
            rows.extend(array("i", [-1]) * (n + 1 - len(rows)))
        if rows[n] < 0:
            self._live += 1
        rows[n] = row

    def __delitem__(self, chunk_id: str) -> None:
        if self.pop(chunk_id, None) is None:
            raise KeyError(chunk_id)

    def pop(self, chunk_id: str, *default: int | None) -> int | None:  # type: ignore[override]
        n = self.numbers.get(chunk_id)
        row = -1 if n is None or n >= len(self._rows) else self._rows[n]
        if row < 0:
            if default:
                return default[0]
            raise KeyError(chunk_id)
        self._rows[n] = -1  # type: ignore[index]
        self._live -= 1
        return row

    def __len__(self) -> int:
        return self._live

    def __iter__(self) -> Iterator[str]:
        ids = self.numbers.ids
        for n, row in enumerate(self._rows):
            if row >= 0:
                yield ids[n]

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        """``(id, row)`` of every id with a row here, in the order the ids were numbered."""
        ids = self.numbers.ids
        return ((ids[n], row) for n, row in enumerate(self._rows) if row >= 0)


__all__ = ["ChunkNumbers", "RowOf"]
