"""Why a chunking cut where it did: one row per sentence, for ``chunkwise inspect`` and the viz report.

The semantic strategies explain themselves (``strategy.explain(doc)``: the distance each sentence was
compared with, the threshold, the cause of every cut). Other strategies have no distances, so their rows
are read off the final chunks: a sentence is a breakpoint when a chunk ends between it and the next one.
Both kinds of rows are numbered by the chunk each sentence starts in, the same way for every reader.
"""

from __future__ import annotations

import bisect
from typing import Any

from ..document import Document


def explain_rows(strategy, doc: Document) -> list[dict[str, Any]]:
    """Rows for ``doc``: the strategy's own ``explain`` when it has one, else breakpoints from its chunks."""
    rows = strategy.explain(doc) if hasattr(strategy, "explain") else _rows_from_chunks(strategy, doc)
    number_rows(rows)
    return rows


def _rows_from_chunks(strategy, doc: Document) -> list[dict[str, Any]]:
    from ..segmentation.sentences import split_sentences

    ends = sorted(c.end for c in strategy.chunk(doc))
    rows = []
    # the sentences the strategy itself splits with (``sentence``'s ``sentence_backend`` and ``language``)
    options: dict[str, Any] = {}
    if getattr(strategy, "sentence_backend", None):
        options["backend"] = strategy.sentence_backend
    if getattr(strategy, "language", None):
        options["language"] = strategy.language
    spans = split_sentences(doc.text, **options)
    for k, (a, b) in enumerate(spans):
        last = k == len(spans) - 1
        # a chunk ends between this sentence's end and the next sentence's start
        i = bisect.bisect_left(ends, b)
        cut = last or (i < len(ends) and ends[i] <= spans[k + 1][0])
        rows.append(
            {
                "sentence": doc.text[a:b],
                "start": a,
                "end": b,
                "distance_to_next": None,
                "threshold": None,
                "breakpoint": bool(cut),
                "cause": ("end" if last else "rule") if cut else None,
            }
        )
    return rows


def number_rows(rows: list[dict[str, Any]]) -> None:
    """Give each sentence row the index of the chunk it starts in (a new chunk follows every breakpoint)."""
    chunk = -1
    for k, row in enumerate(rows):
        if k == 0 or rows[k - 1]["breakpoint"]:
            chunk += 1
        row["chunk"] = chunk
