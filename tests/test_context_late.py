"""Late chunking: offset alignment, macro windows, fallbacks and bad input (model-free embedders)."""

from __future__ import annotations

import hashlib
import re
import warnings

import numpy as np
import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.context import LateChunkingStats, LateChunkingWarning, late_chunk_vectors
from chunkwise.context.late import document_token_vectors, macro_windows, pool_chunks
from chunkwise.document import Chunk, Document
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.errors import ConfigError
from chunkwise.segmentation.tokenizers import get_tokenizer


def make_chunks(doc: Document, spans: list[tuple[int, int]]) -> list[Chunk]:
    return [
        Chunk(
            text=doc.text[a:b],
            start=a,
            end=b,
            index=i,
            id=f"c{i}",
            doc_id=doc.id,
            source=doc.source,
            token_count=0,
            strategy="test",
        )
        for i, (a, b) in enumerate(spans)
    ]


def word_vec(word: str, dim: int = 32) -> np.ndarray:
    seed = int(hashlib.md5(word.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


class WordEmbedder(Embedder):
    """Token = run of non-whitespace (the same as its tokenizer); a token's vector depends only on the word,
    so late chunking with any windows must give exactly what one big window gives."""

    def __init__(self, model_window: int = 50, dim: int = 32):
        self.model_window, self.dim, self.model_id = model_window, dim, "word-test"
        self.windows: list[str] = []

    @property
    def tokenizer(self):
        return get_tokenizer("words")

    def embed(self, texts):
        return l2_normalize(
            np.stack(
                [
                    sum((word_vec(w, self.dim) for w in t.split()), np.zeros(self.dim)) + (0 if t.split() else 1)
                    for t in texts
                ]
            ).astype(np.float32)
        )

    def embed_tokens(self, text):
        self.windows.append(text)
        spans = [m.span() for m in re.finditer(r"\S+", text)][: self.model_window]
        vecs = np.stack([word_vec(text[a:b], self.dim) for a, b in spans]) if spans else np.zeros((0, self.dim))
        return vecs.astype(np.float32), spans


class PositionEmbedder(WordEmbedder):
    """A token's vector records where it sat in its window: [distance to left edge, to right edge, 1]."""

    def embed_tokens(self, text):
        self.windows.append(text)
        spans = [m.span() for m in re.finditer(r"\S+", text)][: self.model_window]
        n = len(spans)
        vecs = np.array([[i, n - 1 - i, 1.0] + [0.0] * (self.dim - 3) for i in range(n)], dtype=np.float32)
        return vecs.reshape(n, self.dim), spans


def brute_force(doc: Document, chunks: list[Chunk], embedder: Embedder) -> np.ndarray:
    """The definition, written the slow way: one window, tokens by majority of characters."""
    vecs, spans = embedder.embed_tokens(doc.text)
    out = []
    for c in chunks:
        inside = [
            v
            for v, (a, b) in zip(vecs, spans)
            if 2 * (min(b, c.end) - max(a, c.start)) >= (b - a) and min(b, c.end) > max(a, c.start)
        ]
        out.append(np.mean(inside, axis=0))
    return l2_normalize(np.array(out))


TEXT = (
    "Alpha beta gamma. Delta epsilon zeta eta. Theta iota kappa lambda mu. Nu xi omicron pi rho sigma. "
    "Tau upsilon phi chi psi omega."
)


def test_single_window_equals_mean_of_tokens_inside_each_chunk():
    doc = Document(TEXT)
    spans = [(0, 17), (18, 41), (42, 98), (99, len(TEXT))]
    chunks = make_chunks(doc, spans)
    emb = WordEmbedder(model_window=100)
    got = late_chunk_vectors(doc, chunks, emb)
    assert got.shape == (4, emb.dim) and got.dtype == np.float32
    assert len(emb.windows) == 1 and emb.windows[0] == TEXT
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(got, brute_force(doc, chunks, emb), atol=1e-5)


def test_token_straddling_a_boundary_goes_to_the_chunk_holding_most_of_it():
    doc = Document("abcdef ghi")
    emb = WordEmbedder()
    chunks = make_chunks(doc, [(0, 4), (4, 10)])  # "abcd" holds 4 of the 6 characters of "abcdef"
    got = late_chunk_vectors(doc, chunks, emb)
    np.testing.assert_allclose(got[0], l2_normalize(word_vec("abcdef")[None])[0], atol=1e-6)
    np.testing.assert_allclose(got[1], l2_normalize(word_vec("ghi")[None])[0], atol=1e-6)


def test_overlapping_chunks_share_tokens():
    doc = Document(TEXT)
    chunks = make_chunks(doc, [(0, 41), (18, 98)])
    emb = WordEmbedder(model_window=100)
    np.testing.assert_allclose(late_chunk_vectors(doc, chunks, emb), brute_force(doc, chunks, emb), atol=1e-5)


def test_macro_windows_cover_every_token_once_from_its_best_window():
    text = " ".join(f"w{i}" for i in range(100))
    emb = PositionEmbedder(model_window=20)
    stats = LateChunkingStats()
    vecs, spans = document_token_vectors(text, emb, late_window=20, overlap=8, stats=stats)
    assert [tuple(s) for s in spans] == get_tokenizer("words").offsets(text)
    assert stats.windows == len(emb.windows) > 1 and stats.tokens == 100
    # every token comes from the window where it is farthest from an artificial edge
    windows = macro_windows(get_tokenizer("words").offsets(text), text, 20, 8)
    for p, v in enumerate(vecs):
        left, right = int(v[0]), int(v[1])
        got_score = min(left if p - left > 0 else 10**6, right if p + right < 99 else 10**6)
        best = max(min(p - s if s > 0 else 10**6, e - 1 - p if e < 100 else 10**6) for s, e in windows if s <= p < e)
        assert got_score == best
    # overlap: consecutive windows share tokens, no window exceeds the limit
    assert all(e - s <= 20 for s, e in windows)
    assert all(b[0] < a[1] for a, b in zip(windows, windows[1:]))


def test_macro_windows_match_one_big_window_for_a_position_independent_model():
    text = " ".join(f"tok{i % 37}" for i in range(300))
    doc = Document(text)
    spans = [(m.start(), min(m.start() + 90, len(text))) for m in re.finditer(r"tok\d+", text)][::25]
    spans = [(a, b if text[b - 1] != " " else b - 1) for a, b in spans]
    chunks = make_chunks(doc, spans)
    big = late_chunk_vectors(doc, chunks, WordEmbedder(model_window=1000))
    small = late_chunk_vectors(doc, chunks, WordEmbedder(model_window=40), late_window=40, overlap=10)
    np.testing.assert_allclose(small, big, atol=1e-5)


words = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(words, st.sampled_from([" ", "  ", "\n", "\n\n", "\t"])), min_size=1, max_size=120),
    st.integers(2, 30),
    st.data(),
)
def test_property_any_text_any_windows(parts, window, data):
    text = "".join(w + s for w, s in parts)
    overlap = data.draw(st.integers(0, window - 1))
    n = len(text)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=8)) if n > 1 else []))
    spans = []
    for a, b in zip([0, *cuts], [*cuts, n]):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
    doc = Document(text)
    chunks = make_chunks(doc, spans)
    emb = WordEmbedder(model_window=window)
    stats = LateChunkingStats()
    got = late_chunk_vectors(doc, chunks, emb, late_window=window, overlap=overlap, stats=stats)
    assert got.shape == (len(chunks), emb.dim)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-4)
    assert stats.tokens == len(text.split()) and stats.truncated == 0
    ref = late_chunk_vectors(doc, chunks, WordEmbedder(model_window=10**6))
    # tokens cut by a chunk boundary go by majority; both runs use the same rule, so only rounding differs
    np.testing.assert_allclose(got, ref, atol=1e-4)


def test_chunk_without_tokens_is_embedded_on_its_own():
    text = "Weather report for Monday. 🌧🌧🌧 Heavy rain expected all day."
    doc = Document(text)
    a = text.index("🌧")
    chunks = make_chunks(doc, [(0, a - 1), (a, a + 3), (a + 4, len(text))])
    emb = FakeEmbedder()  # its embed_tokens only sees \w+ tokens: the emoji chunk has none
    stats = LateChunkingStats()
    got = late_chunk_vectors(doc, chunks, emb, stats=stats)
    assert stats.fallback == 1
    np.testing.assert_allclose(got[1], emb.embed(["🌧🌧🌧"])[0], atol=1e-6)
    assert np.all(np.isfinite(got)) and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_truncating_back_end_is_reported_not_hidden():
    # the fake's tokenizer counts "a-b-c" as one word but embed_tokens sees three tokens: windows overflow
    text = " ".join("x-y-z" for _ in range(60))
    doc = Document(text)
    chunks = make_chunks(doc, [(i * 6, i * 6 + 5) for i in range(60)])
    stats = LateChunkingStats()
    with pytest.warns(LateChunkingWarning, match="truncated"):
        got = late_chunk_vectors(doc, chunks, FakeEmbedder(model_window=30), stats=stats)
    assert stats.truncated > 0 and stats.fallback > 0
    assert np.all(np.isfinite(got))


def test_chunk_outside_the_document_is_an_internal_error():
    doc = Document("short text")
    bad = make_chunks(doc, [(0, 5)])
    bad[0].end = 50
    with pytest.raises(RuntimeError, match="outside document"):
        late_chunk_vectors(doc, bad, WordEmbedder())
    moved = make_chunks(doc, [(0, 5)])
    moved[0].start, moved[0].end = 6, 10  # offsets no longer match the text
    with pytest.raises(RuntimeError, match="does not match"):
        late_chunk_vectors(doc, moved, WordEmbedder())


def test_long_document_without_macro_windows_is_a_clear_error():
    doc = Document(" ".join(["word"] * 80), source="notes/long.txt")
    chunks = make_chunks(doc, [(0, 4)])
    with pytest.raises(ConfigError, match=r"notes/long.txt: document has 80 tokens.*window of 50"):
        late_chunk_vectors(doc, chunks, WordEmbedder(model_window=50), macro=False)
    # the same document fits when macro windows are allowed, and short ones need none
    assert late_chunk_vectors(doc, chunks, WordEmbedder(model_window=50)).shape == (1, 32)
    short = Document("just a few words")
    assert late_chunk_vectors(short, make_chunks(short, [(0, 4)]), WordEmbedder(), macro=False).shape == (1, 32)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"late_window": 51}, "larger than"),
        ({"late_window": 1}, r"late_window must be an int in \[2, inf\)"),
        ({"late_window": 10, "overlap": 10}, "overlap"),
        ({"overlap": -1}, "overlap"),
    ],
)
def test_bad_window_parameters(kw, msg):
    doc = Document("a b c")
    with pytest.raises(ConfigError, match=msg):
        late_chunk_vectors(doc, make_chunks(doc, [(0, 1)]), WordEmbedder(model_window=50), **kw)


def test_embedder_without_token_vectors_is_a_config_error():
    class NoTokens(WordEmbedder):
        embed_tokens = Embedder.embed_tokens

    doc = Document("a b c")
    with pytest.raises(ConfigError, match="token vectors"):
        late_chunk_vectors(doc, make_chunks(doc, [(0, 1)]), NoTokens())


def test_default_window_is_256_capped_by_the_model_and_the_full_model_window_without_macro():
    doc = Document(" ".join(f"w{i}" for i in range(600)))
    chunks = make_chunks(doc, [(0, 2)])
    stats = LateChunkingStats()
    emb = WordEmbedder(model_window=510)
    late_chunk_vectors(doc, chunks, emb, stats=stats)
    assert max(len(w.split()) for w in emb.windows) == 256 and stats.windows == 3  # 0, 192, 384 (+64 overlap)
    emb = WordEmbedder(model_window=100)
    late_chunk_vectors(doc, chunks, emb)
    assert max(len(w.split()) for w in emb.windows) == 100
    with pytest.raises(ConfigError, match="window of 510"):
        late_chunk_vectors(doc, chunks, WordEmbedder(model_window=510), macro=False)
    short = Document(" ".join(["w"] * 400))
    emb = WordEmbedder(model_window=510)
    late_chunk_vectors(short, make_chunks(short, [(0, 1)]), emb, macro=False)  # 400 > 256 but fits the model
    assert len(emb.windows) == 1


def test_no_chunks_and_plain_string_input():
    emb = WordEmbedder()
    assert late_chunk_vectors("a b c", [], emb).shape == (0, emb.dim)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = Document("one two")
        assert late_chunk_vectors(doc.text, make_chunks(doc, [(0, 3), (4, 7)]), emb).shape == (2, emb.dim)


def test_pool_chunks_reports_empty_spans():
    vecs = np.eye(3, dtype=np.float32)
    spans = np.array([[0, 2], [3, 5], [10, 12]])
    pooled, empty = pool_chunks(vecs, spans, [(0, 5), (6, 9), (10, 12)])
    assert empty == [1]
    np.testing.assert_allclose(pooled[0], [0.5, 0.5, 0])
    np.testing.assert_allclose(pooled[2], [0, 0, 1])


def test_a_bad_late_option_is_refused_before_the_collection_records_it(tmp_path):
    """``Index.add`` checks ``late_options`` before it writes the collection's record: the refused run leaves
    the next valid one working, not refused for options it never used."""
    import chunkwise

    doc = Document("The pump needs a new seal. Lunch is at noon.", source="<t>")
    with chunkwise.Index(tmp_path / "late.db", embedder=FakeEmbedder()) as ix:
        for bad in ({"late_window": 0}, {"late_window": 100000}, {"overlap": -1}):
            with pytest.raises(ConfigError):
                ix.add([doc], strategy="sentence", late=True, late_options=bad)
        report = ix.add([doc], strategy="sentence", late=True)
        assert report.documents == 1 and not report.failed
