"""The rows a search shows, saved beside a Milvus Lite database: with the other saved copies
(:mod:`~chunkwise.store.milvus_search`), what lets a search rank *and show* its hits without starting Milvus
Lite's engine (importing it costs about 300 CPU-ms, more than the rest of a cold search).

The folder ``chunkwise-rows/`` holds

- ``rows.jsonl``: one stored row per line, the columns a hit reads (``MilvusStore.output_fields``) as the
  writer stored them (JSON, UTF-8);
- ``index.npy``: the ids sorted, with each row's offset and length in ``rows.jsonl``. A search opens it
  memory-mapped and finds an id by bisection, so it touches a few pages, and reads each row with one seek:
  neither file is loaded whole;
- ``meta.json``: the columns, the collection's facts a search otherwise asks the engine for (nullable
  columns, the engine's BM25 function, the vector dimension), the row count and the size of ``rows.jsonl``
  (a truncated file is not trusted).

It is keyed like the other copies (``data-key.json``) and kept by the writer like them: a new collection's
rows are appended to a spool as they are written; a write to an existing index takes the saved file over
(renamed into a spool, so no reader sees it change), appends the rows it writes and forgets the ones it
deletes; the connection's close writes the index and renames the spool into place. Replaced and deleted rows
stay in the file until they are more than half of it, when the save copies the live rows into a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..security import replace_folder
from .milvus_schema import COLUMN_TYPES
from .numbers import ChunkNumbers, RowOf

#: where a Milvus Lite directory keeps the rows a hit shows (the life of the other saved copies)
ROWS_FOLDER = "chunkwise-rows"
DATA = "rows.jsonl"
INDEX = "index.npy"
META = "meta.json"
#: bumped when the folder's layout or a line's form changes (an older copy is then not trusted)
VERSION = 2
#: the columns Milvus stores as DOUBLE (``start_time``, ``end_time``...)
DOUBLES = frozenset(c for c, (dtype, _) in COLUMN_TYPES.items() if dtype == "DOUBLE")


def _line(row: dict[str, Any], fields: list[str]) -> bytes:
    """A row as the engine gives it back: a whole number written to a DOUBLE column reads as a float."""
    line = {f: row.get(f) for f in fields}
    for f in DOUBLES.intersection(line):
        value = line[f]
        if type(value) is int:  # not a bool, which the column never holds
            line[f] = float(value)
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _index_array(ids: Mapping[str, int], at: array, size: array) -> np.ndarray:
    """The saved index: the ids of ``ids`` (id -> the row's position in ``at``/``size``) sorted, with each row's
    offset and length."""
    keys = sorted(ids)
    width = max((len(k.encode()) for k in keys), default=1)
    out = np.zeros(len(keys), dtype=[("id", f"S{width}"), ("at", "<i8"), ("size", "<i8")])
    if keys:
        rows = np.fromiter((ids[k] for k in keys), dtype=np.int64, count=len(keys))
        out["id"] = [k.encode() for k in keys]
        out["at"] = np.frombuffer(at, dtype=np.int64)[rows]
        out["size"] = np.frombuffer(size, dtype=np.int64)[rows]
    return out


class SavedRows:
    """A saved copy, open for reading (``OSError``/``ValueError`` when it is missing, damaged or truncated)."""

    def __init__(self, folder: str | os.PathLike):
        folder = Path(folder)
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("version") != VERSION:
            raise ValueError("not a rows copy of this version")
        self.fields: list[str] = list(meta["fields"])
        self.facts: dict[str, Any] = dict(meta["facts"])
        try:
            self.index = np.load(folder / INDEX, mmap_mode="r", allow_pickle=False)
        except EOFError:  # an empty or cut file
            raise ValueError("the rows copy's index is damaged") from None
        if self.index.dtype.names != ("id", "at", "size") or self.index.ndim != 1 or len(self.index) != meta["count"]:
            raise ValueError("the rows copy's index does not match it")
        self._file: BinaryIO = open(folder / DATA, "rb")  # noqa: SIM115 - read by seek until closed
        if os.fstat(self._file.fileno()).st_size != meta["bytes"]:
            self._file.close()
            raise ValueError("the rows copy's file is not the size it was saved with")

    def __len__(self) -> int:
        return len(self.index)

    def get(self, ids: list[str]) -> list[dict[str, Any]]:
        """The rows of ``ids`` that exist, in the order asked (``ValueError`` when a line is not the row its
        index names: the copy is damaged)."""
        if not ids or not len(self.index):
            return []
        keys = self.index["id"]
        wanted = [i.encode() for i in ids]
        at = np.searchsorted(keys, np.array(wanted, dtype=object).astype(keys.dtype))
        out = []
        for chunk_id, key, n in zip(ids, wanted, at.tolist()):
            if n >= len(keys) or keys[n] != key:
                continue
            self._file.seek(int(self.index["at"][n]))
            row = json.loads(self._file.read(int(self.index["size"][n])))
            if not isinstance(row, dict) or row.get("id") != chunk_id:
                raise ValueError("the rows copy is damaged")
            out.append(row)
        return out

    def close(self) -> None:
        self._file.close()


class SpooledRows:
    """The rows copy a writing connection keeps: appended to a spool file beside the database as rows are
    written, their places in memory, saved as :class:`SavedRows`'s folder when the connection closes. In
    memory: each id's position in two arrays of offsets and lengths (about 70 bytes a row beside the id
    string, which the other copies share)."""

    def __init__(
        self, folder: str | os.PathLike, fields: list[str], facts: dict[str, Any], numbers: ChunkNumbers | None = None
    ):
        folder = Path(folder)
        self.folder = Path(tempfile.mkdtemp(prefix=folder.name + ".spool-", dir=folder.parent))
        self.path = self.folder / DATA
        self.fields, self.facts = list(fields), dict(facts)
        self.ids = RowOf(numbers)  # live id -> position in ``at``/``size``
        self.at, self.size = array("q"), array("q")
        self.dead = 0
        self._file: BinaryIO = open(self.path, "ab")  # noqa: SIM115 - appended to until saved or discarded
        self.end = 0

    @classmethod
    def adopt(cls, folder: str | os.PathLike) -> SpooledRows:
        """Take a saved copy over for a writing connection: its file renamed into the spool (a reader that has
        it open keeps reading what it opened), its index read into memory."""
        saved = SavedRows(folder)
        try:
            out = cls(folder, saved.fields, saved.facts)
            index = np.array(saved.index)
        finally:
            saved.close()
        try:
            out._file.close()
            os.replace(Path(folder) / DATA, out.path)
            out._file = open(out.path, "ab")  # noqa: SIM115
            out.end = out._file.tell()
            out.ids = RowOf.in_order([k.decode() for k in index["id"].tolist()])
            out.at = array("q", index["at"].astype(np.int64).tobytes())
            out.size = array("q", index["size"].astype(np.int64).tobytes())
            out.dead = out.end - int(index["size"].sum())
        except BaseException:
            out.discard()
            raise
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def upsert(self, rows: Iterable[dict[str, Any]]) -> None:
        lines: list[bytes] = []
        at = self.end
        for row in rows:
            line = _line(row, self.fields)
            old = self.ids.get(row["id"])
            if old is not None:
                self.dead += self.size[old]
            self.ids[row["id"]] = len(self.at)
            self.at.append(at)
            self.size.append(len(line))
            lines.append(line)
            at += len(line)
        self._file.write(b"".join(lines))
        self.end = at

    def remove(self, ids: Iterable[str]) -> None:
        for chunk_id in ids:
            old = self.ids.pop(chunk_id, None)
            if old is not None:
                self.dead += self.size[old]

    def save(self, folder: str | os.PathLike) -> None:
        """Write :class:`SavedRows`'s folder (the spool file renamed into it, or its live rows copied into a new
        one when the dead ones are more than half of it). The spool is gone after."""
        self._file.close()

        def fill(tmp: Path) -> None:
            ids, at, size = self.ids, self.at, self.size
            if self.dead > self.end - self.dead:  # mostly dead rows: the live ones copied, in stored order
                live = sorted(self.ids.items(), key=lambda kv: kv[1])
                at, size = array("q"), array("q")
                with open(self.path, "rb") as src, open(tmp / DATA, "wb") as dst:
                    for _, n in live:
                        src.seek(self.at[n])
                        at.append(dst.tell())
                        size.append(self.size[n])
                        dst.write(src.read(self.size[n]))
                ids = RowOf.in_order([chunk_id for chunk_id, _ in live])  # row k: the k-th copied
            else:
                os.replace(self.path, tmp / DATA)
            np.save(tmp / INDEX, _index_array(ids, at, size), allow_pickle=False)
            meta = {
                "version": VERSION,
                "fields": self.fields,
                "facts": self.facts,
                "count": len(ids),
                "bytes": os.path.getsize(tmp / DATA),
            }
            (tmp / META).write_text(json.dumps(meta), encoding="utf-8")  # last: the folder is whole

        try:
            replace_folder(folder, fill)
        finally:
            self.discard()

    def discard(self) -> None:
        """Close and remove the spool (what a connection that does not save its copies does with it)."""
        import shutil

        with contextlib.suppress(OSError):
            self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


__all__ = ["ROWS_FOLDER", "SavedRows", "SpooledRows"]
