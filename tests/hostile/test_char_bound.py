"""the 16-characters-per-token bound holds for the semantic strategies too.

A run of text without spaces is one token to a word tokenizer (and one ``[UNK]`` to WordPiece), so token
caps alone let a 300,000-character chunk through; the shared shaping step (strategies/units.py) must cut it.
"""

from __future__ import annotations

import pytest
from conftest import FakeEmbedder

from chunkwise.document import Document
from chunkwise.strategies import get_strategy
from chunkwise.strategies.base import max_chars_for


@pytest.mark.parametrize("name", ["semantic", "cohesion", "maxmin"])
@pytest.mark.parametrize("max_tokens,overlap,min_tokens", [(16, 0, 0), (64, 8, 0), (32, 0, 12)])
def test_spaceless_run_is_capped_by_characters(name, max_tokens, overlap, min_tokens):
    text = "A short sentence first. " + "x" * 300_000 + " And a normal sentence after it. The end."
    doc = Document(text, source="run.txt")
    strategy = get_strategy(
        name, embedder=FakeEmbedder(), max_tokens=max_tokens, overlap=overlap, min_tokens=min_tokens
    )
    chunks = strategy.chunk(doc)
    limit = max_chars_for(max_tokens)
    assert max(len(c.text) for c in chunks) <= limit
    assert all(text[c.start : c.end] == c.text and c.token_count <= max_tokens for c in chunks)
    covered = sum(c.end - c.start for c in chunks) if overlap == 0 else None
    if covered is not None:
        assert covered >= 300_000


def test_many_small_long_units_are_not_merged_past_the_bound():
    # units of 200 characters that count one token each: 16 of them fit 16 tokens but not 256 characters
    text = " ".join("y" * 200 + "." for _ in range(40))
    chunks = get_strategy("semantic", embedder=FakeEmbedder(), max_tokens=16).chunk(Document(text))
    assert max(len(c.text) for c in chunks) <= max_chars_for(16)
