"""Property-based invariants of the semantic strategies over random and hostile text (FakeEmbedder).

The same properties every strategy promises: exact slices, the hard cap (in the strategy's tokenizer),
every non-whitespace character covered, ordered and trimmed chunks, deterministic output; plus the
semantic ones: every distinct unit embedded exactly once, and unit spans/vectors kept on the chunks.
"""

from __future__ import annotations

import numpy as np
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy

WORDS = [
    "pump",
    "coolant",
    "seal",
    "lunch",
    "menu",
    "soup",
    "tax",
    "asset",
    "Dr.",
    "e.g.",
    "3.5",
    "U.S.",
    "日本語の文です。",
    "中文句子。",
    "naïve",
    "—",
    "...",
    "?!",
    "\u200b",
    "x" * 40,
    "a-b-c",
    "$20",
    "(see",
    "below)",
]
SEPS = [" ", " ", " ", ". ", "! ", "? ", "\n", "\n\n", "\t", "  ", ".\n", "\r\n", ""]


@st.composite
def texts(draw):
    kind = draw(st.sampled_from(["words", "raw"]))
    if kind == "raw":
        return draw(st.text(min_size=0, max_size=300))
    n = draw(st.integers(0, 120))
    parts = []
    for _ in range(n):
        parts.append(draw(st.sampled_from(WORDS)))
        parts.append(draw(st.sampled_from(SEPS)))
    return "".join(parts)


PARAMS = st.sampled_from(
    [
        ("semantic", {}),
        ("semantic", {"buffer_size": 0, "threshold_type": "gradient"}),
        ("semantic", {"threshold_type": "interquartile", "buffer_vectors": "text"}),
        ("semantic", {"avg_tokens": 12}),
        ("semantic", {"n_chunks": 3}),
        ("maxmin", {}),
        ("maxmin", {"fixed_threshold": 0.05}),
        ("cohesion", {}),
        ("cohesion", {"penalty": 0.0}),
    ]
)


def check(
    text: str, name: str, params: dict, max_tokens: int, min_tokens: int, overlap: int, tokenizer: str | None
) -> None:
    emb = FakeEmbedder(model_window=25)
    strategy = get_strategy(
        name, embedder=emb, max_tokens=max_tokens, min_tokens=min_tokens, overlap=overlap, tokenizer=tokenizer, **params
    )
    doc = Document(text)
    chunks = strategy.chunk(doc)
    tok = get_tokenizer(tokenizer or "words")
    covered = np.zeros(len(text), dtype=bool)
    for i, c in enumerate(chunks):
        assert c.index == i
        assert text[c.start : c.end] == c.text
        assert c.text == c.text.strip()
        assert not c.text.isspace()
        assert c.token_count == tok.count(c.text) <= max_tokens
        assert c.strategy == name
        covered[c.start : c.end] = True
        assert len(c.sentence_spans) == len(c.sentence_vectors) >= 1
        assert c.sentence_spans[0][0] == c.start and c.sentence_spans[-1][1] == c.end
        assert all(c.start <= a < b <= c.end for a, b in c.sentence_spans)
        assert np.all(np.isfinite(c.sentence_vectors))
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start
        if overlap == 0:
            assert a.end <= b.start
    assert all(ch.isspace() for ch, cov in zip(text, covered) if not cov)
    # every distinct unit was embedded once (buffer_vectors="text" also embeds each window once)
    sentences = [t for t in (emb.calls[0] if emb.calls else [])]
    assert len(sentences) == len(set(sentences))
    words = get_tokenizer("words")
    assert all(words.count(t) <= 25 for t in sentences)  # nothing the model would truncate
    units = {text[a:b] for c in chunks for a, b in c.sentence_spans}
    assert set(sentences) == units
    assert len(emb.calls) <= (2 if params.get("buffer_vectors") == "text" else 1)
    # deterministic
    again = strategy.chunk(doc)
    assert [(c.start, c.end, c.id) for c in again] == [(c.start, c.end, c.id) for c in chunks]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts(), params=PARAMS, max_tokens=st.integers(1, 40), min_tokens=st.integers(0, 10), overlap=st.integers(0, 8)
)
def test_invariants_word_tokens(text, params, max_tokens, min_tokens, overlap):
    name, p = params
    min_tokens = min(min_tokens, max_tokens)
    overlap = min(overlap, max_tokens - 1)
    check(text, name, p, max_tokens, min_tokens, overlap, None)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), params=PARAMS, max_tokens=st.integers(1, 120))
def test_invariants_char_tokens(text, params, max_tokens):
    """A strategy tokenizer other than the embedder's: the cap holds in characters, and units still fit
    the embedder's own limit (25 words)."""
    name, p = params
    check(text, name, p, max_tokens, 0, 0, "chars")
