"""CSV and TSV files as tables: whole rows packed into chunks, the header row carried by every chunk.

The document text is the file as written (line endings normalised), so offsets point into the file. The
loader finds the rows (a quoted field may hold line breaks and delimiters, as in RFC 4180) and gives them to
the chunker as units (``Document.metadata["units"]``): ``auto`` packs whole rows up to ``max_tokens`` and
cuts a row only when it alone is too long. The first row is the header (:class:`~chunkwise.document.Table`):
a chunk that begins after it carries it as :attr:`~chunkwise.document.Chunk.context`, embedded and indexed
beside the rows, so "which column is this number in" survives the cut without changing the chunk text.

A folder walk leaves out data files over :data:`DATA_MAX_BYTES` (one line with their counts): a results
dump of thousands of rows would otherwise bury a repository's documents. Naming the file, or an include
pattern naming its type (``--include '*.csv'``), reads it anyway.
"""

from __future__ import annotations

import os

from ..document import Document, Table
from . import DATA_MAX_BYTES, TABLE_EXTENSIONS  # defined with the other formats' extensions
from .text import emit_warnings, read_source


def row_spans(text: str, delimiter: str = ",") -> list[tuple[int, int]]:
    """The rows of a CSV/TSV text as spans (without their line break). A field that starts with ``"`` is
    quoted up to the next lone ``"`` and may hold line breaks; a quote that is never closed makes every
    line a row (the file is not valid CSV, and a line is the best guess)."""
    rows: list[tuple[int, int]] = []
    n = len(text)
    start = pos = 0
    field_start = True
    while pos < n:
        ch = text[pos]
        if field_start and ch == '"':
            close = pos + 1
            while True:
                close = text.find('"', close)
                if close < 0:
                    return _lines(text)
                if text.startswith('""', close):
                    close += 2
                    continue
                break
            pos = close + 1
            field_start = False
            continue
        if ch == "\n":
            rows.append((start, pos))
            start = pos + 1
            field_start = True
        else:
            field_start = ch == delimiter
        pos += 1
    if start < n:
        rows.append((start, n))
    return [(a, b) for a, b in rows if text[a:b].strip()]


def _lines(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.split("\n"):
        if line.strip():
            out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def load_table(data: bytes, source: str, **options) -> Document:
    """A CSV (or, by the ``.tsv`` extension, tab-separated) file: rows as units, the first row the header."""
    text, smap, warns = read_source(data, source, options.get("encoding"))
    delimiter = TABLE_EXTENSIONS.get(os.path.splitext(source)[1].lower(), ",")
    if delimiter == "," and "\t" in text.split("\n", 1)[0] and "," not in text.split("\n", 1)[0]:
        delimiter = "\t"
    rows = row_spans(text, delimiter)
    tables = [Table(rows[0][0], rows[-1][1], rows[0][0], rows[0][1])] if len(rows) > 1 else []
    emit_warnings(source, warns)
    return Document(
        text,
        source=source,
        tables=tables,
        metadata={"format": "table", "warnings": warns, "units": rows, "rows": max(0, len(rows) - 1)},
        title=os.path.basename(source) if not source.startswith("<") else None,
        source_map=smap,
    )


__all__ = ["load_table", "row_spans", "TABLE_EXTENSIONS", "DATA_MAX_BYTES"]
