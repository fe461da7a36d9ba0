"""The packing engine (strategies/packing.py) on its own, on random and hostile text, in every tokenizer.

Whatever the units, the estimate and the options: every span is within ``max_tokens`` and the character
bound, every count is the exact count of its slice, spans come in order (starts increasing; without overlap
disjoint), and every non-whitespace character of the units is in some span. A token map whose estimate
lies (halves every count) forces every repair path: over-packed spans must come back within the cap, exactly
counted. (Ends need not increase with overlap: repacking with whole-unit overlap from a span over the cap
can give a span inside its predecessor, as the sentence strategy always has.)
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.errors import ConfigError
from chunkwise.segmentation.sentences import split_sentences
from chunkwise.segmentation.token_map import TokenMap
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies.base import max_chars_for
from chunkwise.strategies.packing import fill, fit_exact, merge_small, pack

TOKENIZERS = ["minilm", "cl100k", "chars", "words"]

FRAGMENTS = [
    "Hello world. ",
    "Dr. Smith paid $3.50. ",
    "中文句子。",
    "\n\n",
    "\r\n",
    "x" * 150,
    "é" * 7,
    "👩‍👩‍👧 ",
    "a\u0301",
    "\x00",
    "שלום עולם. ",
    "word,",
    "  \t",
    "; ",
    "AAAAAAAAAAAAAAAAAAAAAAAA",
    "3.14159",
    "!?",
    "\u200b",
]

texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=25).map("".join),
    st.text(max_size=300),
)


class LyingMap(TokenMap):
    """A token map whose estimates are half the truth: the engine over-packs and must repair."""

    def estimate(self, a: int, b: int) -> int:
        return super().estimate(a, b) // 2


def units_of(text: str, by: str) -> list[tuple[int, int]]:
    """Candidate pieces: sentences or words (non-whitespace runs)."""
    if by == "sentences":
        return split_sentences(text)
    return [m.span() for m in re.finditer(r"\S+", text)]


def check(
    text: str, units, spans, counts, tokenizer: str, max_tokens: int, overlap: int, overlap_by: str = "units"
) -> None:
    """Assert the engine's contract for ``spans``/``counts`` packed from ``units``."""
    tok = get_tokenizer(tokenizer)
    assert len(spans) == len(counts)
    for (a, b), n in zip(spans, counts):
        assert 0 <= a < b <= len(text)
        assert n == tok.count(text[a:b]), "count is not the exact count of the slice"
        assert n <= max_tokens, f"span of {n} tokens over max_tokens={max_tokens}"
        assert b - a <= max_chars_for(max_tokens)
    for (a, b), (c, _d) in zip(spans, spans[1:]):
        assert a < c or (overlap_by == "words" and a == c), "spans out of order"
        if not overlap:
            assert b <= c, "spans overlap without overlap"
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    missing = [i for a, b in units for i in range(a, b) if i not in covered and not text[i].isspace()]
    assert not missing, f"characters not in any span: {missing[:10]}"


def run_pack(
    text: str, tokenizer: str, max_tokens: int, overlap: int, min_tokens: int, by: str, overlap_by: str, lying: bool
):
    """Pack ``text``'s units; with ``overlap_by="words"`` repair by re-splitting exactly (``fit_exact``)."""
    tok = get_tokenizer(tokenizer)
    tm = (LyingMap if lying else TokenMap)(text, tok)
    units = units_of(text, by)
    resplit = None
    if overlap_by == "words":

        def resplit(a: int, b: int, _n: int):
            return fit_exact(text, a, b, tok, max_tokens)

    spans, counts = pack(
        text,
        units,
        tok,
        max_tokens,
        token_map=tm,
        min_tokens=min_tokens,
        overlap=overlap,
        overlap_by=overlap_by,
        resplit=resplit,
    )
    return units, spans, counts


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    max_tokens=st.sampled_from([6, 9, 16, 40]),
    overlap_share=st.sampled_from([0, 0, 0.3]),
    min_share=st.sampled_from([0, 0.3]),
    by=st.sampled_from(["sentences", "words"]),
    overlap_by=st.sampled_from(["units", "words"]),
    lying=st.booleans(),
)
def test_pack_keeps_the_contract(tokenizer, text, max_tokens, overlap_share, min_share, by, overlap_by, lying):
    overlap = int(max_tokens * overlap_share)
    min_tokens = int(max_tokens * min_share)
    try:
        units, spans, counts = run_pack(text, tokenizer, max_tokens, overlap, min_tokens, by, overlap_by, lying)
    except ConfigError as e:  # one character over a tiny cap (an emoji in minilm's WordPiece, a cl100k byte)
        assert "too small" in str(e)
        return
    check(text, units, spans, counts, tokenizer, max_tokens, overlap, overlap_by)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("lying", [False, True])
def test_pack_repairs_every_span_of_a_lying_estimate(tokenizer, lying):
    text = " ".join(f"Sentence {i} has some words, and {'x' * (i % 7) * 20} more." for i in range(200))
    for overlap_by in ("units", "words"):
        units, spans, counts = run_pack(text, tokenizer, 30, 8, 5, "sentences", overlap_by, lying)
        check(text, units, spans, counts, tokenizer, 30, 8, overlap_by)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, max_tokens=st.sampled_from([4, 9, 40]))
def test_fit_exact_covers_the_range_with_exact_counts(tokenizer, text, max_tokens):
    tok = get_tokenizer(tokenizer)
    try:
        spans, counts = fit_exact(text, 0, len(text), tok, max_tokens)
    except ConfigError as e:
        assert "too small" in str(e)
        return
    check(text, [(0, len(text))], spans, counts, tokenizer, max_tokens, 0)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 30), max_size=40),
    max_tokens=st.integers(1, 60),
    overlap=st.integers(0, 20),
    counted=st.booleans(),
)
def test_fill_packs_consecutive_units_greedily(sizes, max_tokens, overlap, counted):
    """Units of ``n`` tokens each (chars): spans are runs of whole units, each as long as the cap allows,
    and the bound-count fast path gives the same spans as the plain estimate."""
    bounds = [0]
    for n in sizes:
        bounds.append(bounds[-1] + n + 1)  # n characters and a space
    units = [(a, b - 1) for a, b in zip(bounds, bounds[1:])]
    text = " ".join("x" * n for n in sizes)
    tm = TokenMap(text, get_tokenizer("chars"))
    overlap = min(overlap, max_tokens - 1) if max_tokens > 1 else 0
    plain = fill(units, tm.estimate, max_tokens, max_chars_for(max_tokens), overlap)
    if counted:
        upper, lower = tm.bound_counts([b for _, b in units] + [a for a, _ in units])
        m = len(units)
        assert (
            fill(
                units,
                tm.estimate,
                max_tokens,
                max_chars_for(max_tokens),
                overlap,
                counted=(upper[:m].tolist(), lower[m:].tolist()),
            )
            == plain
        )
    starts = {a for a, _ in units}
    ends = {b for _, b in units}
    for k, (a, b) in enumerate(plain):
        assert a in starts and b in ends, "a span that is not a run of whole units"
        if tm.estimate(a, b) > max_tokens:  # only a unit too big alone may exceed the estimate
            assert (a, b) in units
        if k + 1 < len(plain) and not overlap:
            nxt = units[[u[0] for u in units].index(plain[k + 1][0])]
            assert tm.estimate(a, nxt[1]) > max_tokens, "the next unit would still have fitted"
    assert [u for u in units if not any(a <= u[0] and u[1] <= b for a, b in plain)] == []


def test_merge_small_merges_only_within_the_cap():
    text = "a b c d e f g h"
    tm = TokenMap(text, get_tokenizer("words"))
    spans = [(0, 1), (2, 3), (4, 7), (8, 15)]
    merged = merge_small(spans, tm.estimate, 2, 3, 100)
    assert merged == [(0, 3), (4, 7), (8, 15)]  # "a" joins "b"; "c d" has min_tokens already
    assert merge_small([(0, 5), (6, 7)], tm.estimate, 2, 3, 100) == [(0, 5), (6, 7)]  # "d" would pass the cap
    assert merge_small(spans, tm.estimate, 0, 3, 100) == spans


def test_counts_are_aligned_or_none_never_guessed():
    """``split_with_counts`` gives one count per span (or None); a mismatch is reported, not guessed at."""
    from chunkwise.document import Document
    from chunkwise.strategies.base import CountingStrategy, build_chunks

    class OneCountShort(CountingStrategy):
        name = "one-count-short"

        def split_with_counts(self, doc, start, end, tokenizer):
            return [(start, start + 5), (start + 6, end)], [1]

    doc = Document("Hello world")
    with pytest.raises(RuntimeError, match="1 token counts for 2 spans"):
        OneCountShort(max_tokens=10, tokenizer="words").chunk(doc)
    with pytest.raises(RuntimeError, match="token counts"):
        build_chunks(doc, [(0, 5), (6, 11)], get_tokenizer("words"), OneCountShort(), [1])
    assert OneCountShort().split(doc, 0, 11, get_tokenizer("words")) == [(0, 5), (6, 11)]
    chunks = build_chunks(doc, [(6, 11), (0, 5)], get_tokenizer("words"), OneCountShort(), [1, 1])
    assert [(c.text, c.token_count) for c in chunks] == [("Hello", 1), ("world", 1)]


def test_keep_headings_with_bodies_joins_heading_only_parts_forward():
    from chunkwise.strategies.packing import keep_headings_with_bodies

    text = "# A\n## B\nbody\n# C\n"
    parts = [(0, 4), (4, 9), (9, 14), (14, 18)]  # "# A", "## B", "body", "# C"
    heads = {(0, 4), (4, 9), (14, 18)}

    def heading_only(a, b):  # a joined run is heading-only while its last part is
        return any(b == e for _, e in heads) and text[a:b].strip().startswith("#")

    # a run of headings stays with the first body below it; the last heading has nothing after it
    assert keep_headings_with_bodies(parts, heading_only) == [(0, 14), (14, 18)]
    # where the join does not fit, the heading stays a part of its own
    assert keep_headings_with_bodies(parts, heading_only, lambda h, p: p[1] - h[0] <= 9) == [(0, 9), (9, 14), (14, 18)]
    assert keep_headings_with_bodies([], heading_only) == []
