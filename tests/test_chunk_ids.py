"""Chunk ids: one formula, pinned.

Ids key the store and the embedding cache, so an id that drifts silently re-embeds every index. The literals
below were computed by the formula as it stood when it was pinned; a change of the formula must change them
here, in review, never by accident.
"""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from chunkwise.api import chunk
from chunkwise.document import ChunkIds, Document, stable_hash

PUMP = (
    "The pump failed at dawn. The keeper fixed it with a spare gasket. It ran all day.\n\n"
    "Lunch at the cafeteria was soup. Everyone liked the bread."
)


def test_text_chunk_ids_are_pinned():
    doc = Document(PUMP, source="notes/pump.txt")
    assert doc.id == "78b4f87558a5a8cb"
    got = {
        name: [(c.start, c.end, c.id) for c in chunk(doc, name, max_tokens=16)]
        for name in ("fixed", "sentence", "recursive")
    }
    assert got == {
        "fixed": [(0, 64, "d10a706c4e406367"), (64, 134, "8a9ed5255d679b5d"), (135, 141, "0c6a745d846540cb")],
        "sentence": [(0, 24, "d1520ce8587bb3c1"), (25, 81, "b5b777d98fd41abb"), (83, 141, "119cfa6be59605d8")],
        "recursive": [(0, 24, "9c10269ed912219d"), (25, 81, "d4419c3f4fba1a84"), (83, 141, "982bc41349fcd89d")],
    }


def test_text_without_a_file_gets_a_content_id():
    cs = chunk(Document(PUMP), "fixed", max_tokens=16)
    assert [(c.doc_id, c.id) for c in cs] == [
        ("6837b378d74fa956", "717c37f6c29f0130"),
        ("6837b378d74fa956", "d1f2df82b604c545"),
        ("6837b378d74fa956", "d48b18a5db0b714f"),
    ]


def test_video_clip_ids_are_pinned():
    assert ChunkIds("78b4f87558a5a8cb", "video")(10, 250, 0) == "dcc9b77a18a5d2ec"


def _spec_hash(*parts: str | int) -> str:
    """The formula written out from its definition (length-prefixed parts, ints as JSON), independent of
    the implementation's shared prefix."""
    h = hashlib.sha256()
    for part in parts:
        data = (part if isinstance(part, str) else str(part)).encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


@given(
    st.text(max_size=40),
    st.text(max_size=40),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
)
def test_span_ids_follow_the_formula(doc_id, config, a, b):
    ids = ChunkIds(doc_id, config)
    expected = _spec_hash("chunk", doc_id, config, f"{a}:{b}")
    assert ids.span(a, b) == expected == stable_hash("chunk", doc_id, config, f"{a}:{b}")
    # the shared prefix is not consumed by a call
    assert ids.span(a, b) == expected


def chunk_config_id(name: str) -> str:
    from chunkwise.strategies import get_strategy

    return get_strategy(name, max_tokens=8).config_id()


@given(st.text(min_size=1, max_size=300))
def test_every_strategy_chunk_id_is_the_formula(text):
    doc = Document(text, source="x/y.txt")
    for name in ("fixed", "recursive"):
        for c in chunk(doc, name, max_tokens=8):
            assert c.id == _spec_hash("chunk", doc.id, chunk_config_id(name), f"{c.start}:{c.end}")


def test_auto_chunk_ids_on_layout_are_pinned():
    """``auto`` on text with layout (paragraph breaks, Markdown) keeps the ids it had before plain text
    without layout was cut by topic: the literals were computed before that branch existed."""
    doc = Document(PUMP, source="notes/pump.txt")
    assert [(c.start, c.end, c.id, c.strategy) for c in chunk(doc, "auto", max_tokens=16)] == [
        (0, 24, "5990100b82368c23", "auto:recursive"),
        (25, 81, "1a37ae71b797b653", "auto:recursive"),
        (83, 141, "e95716cc1681d560", "auto:recursive"),
    ]
    md = Document(
        "# Pump\n\nThe pump failed at dawn. The keeper fixed it.\n\n## Lunch\n\nSoup and bread.\n",
        source="notes/pump.md",
    )
    assert [(c.start, c.end, c.id, c.strategy) for c in chunk(md, "auto", max_tokens=16)] == [
        (0, 53, "7dd7dbc118cae289", "auto:markdown"),
        (55, 80, "110ccbadbafa26b0", "auto:markdown"),
    ]
