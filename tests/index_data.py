"""Predictable documents and a one-chunk-per-line strategy for the index tests (independent of the real
chunking strategies, which the CLI and acceptance tests use)."""

from __future__ import annotations

import re
from collections import Counter

from chunkwise import Document
from chunkwise.strategies import Strategy


class LineStrategy(Strategy):
    """One chunk per non-empty line (the index tests need predictable chunks, not clever ones)."""

    name = "lines"
    apply_rules = False  # exactly one chunk per line, however short

    def split(self, doc, start, end, tokenizer):
        return [(start + m.start(), start + m.end()) for m in re.finditer(r"[^\n]+", doc.text[start:end])]


def lines(**kw):
    return LineStrategy(tokenizer="words", **kw)


BEES = "Bees make honey from nectar in the hive.\nThe queen lays eggs all summer.\nBeekeepers wear veils and gloves."
LAMP = (
    "The lighthouse lamp turns every ten seconds.\nKeepers polish the lens at dusk.\nFog horns sound in winter storms."
)
TRAINS = "The night train leaves at nine.\nSleeping cars have narrow bunks.\nThe conductor checks tickets twice."


def docs():
    """Three three-line documents with file-like sources (an edited text replaces the old one)."""
    return [
        Document(BEES, source="kb/bees.txt"),
        Document(LAMP, source="kb/lamp.txt"),
        Document(TRAINS, source="kb/trains.txt"),
    ]


def count_calls(index) -> Counter:
    """Wrap every public method of the index's store client; the counter fills as they are called (each
    call is one round trip to Milvus)."""
    client = index.store.connect()
    calls: Counter = Counter()
    for name in dir(client):
        method = getattr(client, name)
        if name.startswith("_") or not callable(method):
            continue

        def wrapped(*args, _name=name, _method=method, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(client, name, wrapped)
    return calls
