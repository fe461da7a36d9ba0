"""The semantic strategies (semantic, maxmin, cohesion): rules, reference behaviour, edge cases, CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from conftest import FakeEmbedder

from chunkwise.document import Document
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.embeddings.vectors import chunk_vectors
from chunkwise.errors import ConfigError
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.cohesion import CohesionChunker, optimal_cuts
from chunkwise.strategies.maxmin import MaxMinChunker
from chunkwise.strategies.semantic import SemanticChunker, pooled_windows
from chunkwise.strategies.units import Units

NAMES = ("semantic", "maxmin", "cohesion")

SEED = (
    "The XR-12 coolant pump must be inspected every 500 operating hours. Check the pump's impeller for "
    "cavitation damage during each inspection. Replace the XR-12 seal kit if coolant leaks exceed 5 ml per "
    "hour. The staff cafeteria now serves vegetarian lunch options on Fridays. Cafeteria opening hours are "
    "11:30 to 14:00 on weekdays."
)
PUMP, CAFETERIA = SEED[: SEED.index(" The staff")], SEED[SEED.index("The staff") :]


def topic_text(topics: list[tuple[str, int]]) -> str:
    """Sentences built from a topic's vocabulary, so FakeEmbedder makes same-topic sentences similar."""
    vocab = {
        "pump": "pump coolant impeller seal valve pressure flow",
        "food": "cafeteria lunch menu vegetarian soup dessert coffee",
        "tax": "income tax credit deferred asset liability carry",
        "space": "rocket orbit moon launch crew module booster",
    }
    out = []
    for topic, n in topics:
        words = vocab[topic].split()
        for i in range(n):
            out.append(" ".join(words[(i + k) % len(words)] for k in range(5)).capitalize() + ".")
    return " ".join(out)


# -- acceptance: the seed example with the real model -----------------------------------------------------
@pytest.fixture(scope="module")
def minilm():
    from chunkwise.embeddings import get_embedder

    return get_embedder("minilm", cache=False)


@pytest.mark.parametrize(
    "name,params",
    [
        ("semantic", {"buffer_size": 0, "threshold_type": "percentile", "threshold_amount": 95}),
        ("semantic", {}),
        ("semantic", {"buffer_size": 1}),
        ("maxmin", {}),
        ("cohesion", {}),
    ],
)
def test_seed_example_two_chunks(minilm, name, params):
    chunks = get_strategy(name, embedder=minilm, **params).chunk(Document(SEED))
    assert [c.text for c in chunks] == [PUMP, CAFETERIA]


# The same five sentences with a shorter last one: the cafeteria notice is 23 MiniLM tokens, under the
# 24-token min_tokens default, and its adjacent distances (0.52 0.61 1.04 0.62) are those of the
# reported example. The min_tokens merge used to glue it back onto the pump across the strongest cut.
SHORT_SEED = SEED.replace("are 11:30 to 14:00 on weekdays.", "are 11:30 to 14:00.")
SHORT_CAFETERIA = SHORT_SEED[SHORT_SEED.index("The staff") :]


@pytest.mark.parametrize("name", NAMES)
def test_short_topic_survives_min_tokens_defaults(minilm, name):
    strategy = get_strategy(name, embedder=minilm)
    assert minilm.tokenizer.count(SHORT_CAFETERIA) < strategy.effective_min_tokens()
    chunks = strategy.chunk(Document(SHORT_SEED))
    assert [c.text for c in chunks] == [PUMP, SHORT_CAFETERIA]
    rows = strategy.explain(SHORT_SEED)
    assert [r["breakpoint"] for r in rows] == [False, False, True, False, True]


@pytest.mark.parametrize("name", NAMES)
def test_cli_short_topic_two_chunks_with_defaults(tmp_path, capsys, name):
    from chunkwise.cli import main

    path = tmp_path / "pump.txt"
    path.write_text(SHORT_SEED + "\n", encoding="utf-8")
    assert main(["--no-cache", "chunk", str(path), "-s", name, "--format", "jsonl"]) == 0
    texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert texts == [PUMP, SHORT_CAFETERIA]


def test_decisive_cut_is_never_merged_across():
    """A short segment after a cut far above the document's typical distance joins the other side or
    stays alone; without the rule it joined the more similar neighbour across the cut."""
    from chunkwise.strategies.units import DECISIVE_MARGIN, decisive_cuts, merge_small

    # units 0-2 one topic, 3-4 another; unit 2->3 distance 1.0, the others about 0.3
    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    vecs = l2_normalize(np.stack([a, a + 0.4 * b, a + 0.2 * b, b + 0.3 * a, b]).astype(np.float32))
    units = Units(
        spans=[(i * 10, i * 10 + 9) for i in range(5)],
        tokens=np.array([10, 10, 10, 5, 5]),
        gaps=np.zeros(4, dtype=np.int64),
        vectors=vecs,
    )
    d = units.adjacent_distances()
    assert d[2] >= np.median(d) + DECISIVE_MARGIN > max(d[0], d[1], d[3])
    assert decisive_cuts(units, [3]) == {3}
    assert merge_small(units, [0, 3, 5], min_tokens=24, max_tokens=256) == [0, 5]  # the old behaviour
    assert merge_small(units, [0, 3, 5], min_tokens=24, max_tokens=256, keep={3}) == [0, 3, 5]
    # a cut that is not decisive still merges, and a sliver inside a topic still folds into a neighbour
    assert decisive_cuts(units, [1]) == set()
    assert merge_small(units, [0, 1, 3, 5], min_tokens=15, max_tokens=256, keep={3}) == [0, 3, 5]
    # one unit alone is a sliver, not a topic: it folds into its nearer neighbour even across a kept cut
    # (unit 3 joins unit 4), and the two-unit segment that results is then held apart at cut 3
    assert merge_small(units, [0, 3, 4, 5], min_tokens=24, max_tokens=256, keep={3, 4}) == [0, 3, 5]


def test_embedded_once_real_model(minilm):
    before = minilm.texts_embedded
    get_strategy("semantic", embedder=minilm, buffer_size=2).chunk(SEED)
    assert minilm.texts_embedded - before == 5


# -- each sentence embedded exactly once ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_each_sentence_embedded_once(name):
    emb = FakeEmbedder()
    text = topic_text([("pump", 6), ("food", 5), ("tax", 7)])
    strategy = get_strategy(name, embedder=emb, max_tokens=40)
    chunks = strategy.chunk(text)
    embedded = [t for call in emb.calls for t in call]
    assert len(emb.calls) == 1
    assert len(embedded) == len(set(embedded)) == 18
    assert sorted(embedded) == sorted({s for c in chunks for s in (text[a:b] for a, b in c.sentence_spans)})


def test_duplicate_sentences_embedded_once():
    emb = FakeEmbedder()
    text = " ".join(["The pump is fine."] * 30 + ["Lunch is served."] * 3)
    chunks = get_strategy("semantic", embedder=emb).chunk(text)
    assert emb.texts_embedded == 2
    assert sum(len(c.sentence_spans) for c in chunks) == 33


def test_window_text_embeds_windows_for_parity():
    from chunkwise.segmentation.sentences import split_sentences

    emb = FakeEmbedder()
    text = topic_text([("pump", 4), ("food", 4)])
    get_strategy("semantic", embedder=emb, buffer_size=1, buffer_vectors="text").chunk(text)
    spans = split_sentences(text)
    windows = [text[spans[max(0, i - 1)][0] : spans[min(7, i + 1)][1]] for i in range(8)]
    assert len(emb.calls) == 2  # the sentences once (for the chunks), then the windows as text
    assert sorted(emb.calls[0]) == sorted(text[a:b] for a, b in spans)
    assert emb.calls[1] == windows


def test_pooled_windows_match_explicit_sums():
    rng = np.random.default_rng(0)
    v = l2_normalize(rng.standard_normal((7, 5)))
    w = pooled_windows(v, 2)
    for i in range(7):
        s = v[max(0, i - 2) : i + 3].sum(0)
        assert np.allclose(w[i], s / np.linalg.norm(s), atol=1e-6)


# -- hard cap before embedding ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_long_sentence_split_before_embedding(name):
    emb = FakeEmbedder(model_window=12)  # the model reads 12 words; the cap is 30
    long_sentence = " ".join(f"word{i}" for i in range(100)) + "."
    text = "Short opening sentence here. " + long_sentence + " A short closing sentence."
    chunks = get_strategy(name, embedder=emb, max_tokens=30).chunk(text)
    words = get_tokenizer("words")
    assert all(words.count(t) <= 12 for call in emb.calls for t in call)
    assert all(c.token_count <= 30 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize("name", NAMES)
def test_no_punctuation_text(name):
    emb = FakeEmbedder()
    text = " ".join(f"token{i % 37} alpha beta" for i in range(300))
    chunks = get_strategy(name, embedder=emb, max_tokens=50).chunk(text)
    assert len(chunks) >= 900 // 50
    assert all(c.token_count <= 50 for c in chunks)
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_cap_in_other_tokenizer_than_embedder():
    emb = FakeEmbedder()  # counts words
    text = topic_text([("pump", 10), ("food", 10)])
    chunks = get_strategy("cohesion", embedder=emb, max_tokens=40, tokenizer="chars").chunk(text)
    assert all(len(c.text) <= 40 and c.token_count == len(c.text) for c in chunks)


# -- edge cases ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "text,n", [("", 0), ("   \n ", 0), ("One sentence only.", 1), ("The pump leaks coolant. Lunch is at noon.", None)]
)
def test_tiny_inputs(name, text, n):
    emb = FakeEmbedder()
    strategy = get_strategy(name, embedder=emb)
    chunks = strategy.chunk(text)
    if n is not None:
        assert len(chunks) == n
    else:
        assert 1 <= len(chunks) <= 2
    assert all(text[c.start : c.end] == c.text for c in chunks)
    rows = strategy.explain(text)
    assert len(rows) == (0 if not text.strip() else text.count("."))
    if rows:
        assert rows[-1]["breakpoint"] and rows[-1]["distance_to_next"] is None


@pytest.mark.parametrize(
    "name,params",
    [
        ("semantic", {}),
        ("semantic", {"threshold_type": "gradient"}),
        ("semantic", {"threshold_type": "interquartile"}),
        ("semantic", {"threshold_type": "standard_deviation"}),
        ("maxmin", {}),
        ("cohesion", {}),
    ],
)
def test_identical_sentences_no_nan(name, params):
    emb = FakeEmbedder()
    text = " ".join(["The coolant pump must be inspected."] * 200)
    strategy = get_strategy(name, embedder=emb, max_tokens=60, **params)
    chunks = strategy.chunk(text)
    assert all(c.token_count <= 60 for c in chunks)
    assert sum(len(c.sentence_spans) for c in chunks) == 200
    for row in strategy.explain(text):
        for key in ("distance_to_next", "threshold"):
            assert row[key] is None or math.isfinite(row[key])
    # identical sentences are one topic: only the cap cuts, into full chunks
    assert len(chunks) == math.ceil(200 * 6 / 60)


class RandomEmbedder(Embedder):
    """Cheap vectors for big inputs: topic id from the first word, plus noise."""

    def __init__(self, dim: int = 32):
        self.dim, self.model_window, self.model_id, self.texts_embedded = dim, 510, "random", 0
        self._tok = get_tokenizer("words")

    @property
    def tokenizer(self):
        return self._tok

    def embed(self, texts):
        texts = list(texts)
        self.texts_embedded += len(texts)
        rng = np.random.default_rng(len(texts))
        topics = np.array([hash(t.split(" ", 1)[0]) % self.dim for t in texts])
        v = rng.standard_normal((len(texts), self.dim)).astype(np.float32) * 0.5
        v[np.arange(len(texts)), topics] += 3.0
        return l2_normalize(v)


_BIG_DOC_SCRIPT = """
import json, resource, sys
sys.path.insert(0, {tests!r})
from test_semantic import RandomEmbedder
from chunkwise.strategies import get_strategy
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
text = " ".join(f"{{words[(i // 7) % 6]}} item {{i}} is described here." for i in range(50_000))
out = {{}}
for name in ("semantic", "maxmin", "cohesion"):
    emb = RandomEmbedder()
    chunks = get_strategy(name, embedder=emb, max_tokens=64).chunk(text)
    out[name] = dict(embedded=emb.texts_embedded, units=sum(len(c.sentence_spans) for c in chunks),
                     max_tokens=max(c.token_count for c in chunks), chunks=len(chunks),
                     exact=all(text[c.start:c.end] == c.text for c in chunks))
# VmHWM is this process image's own peak; ru_maxrss would also count the parent's pages at fork time
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
out["maxrss_mb"] = (int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
print(json.dumps(out))
"""


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow
def test_fifty_thousand_sentences_bounded_memory():
    """One 50,000-sentence document through all three strategies, in a fresh process so its peak memory
    (VmHWM) is the run's own: an n x n float32 similarity matrix alone would need 10 GB."""
    import subprocess
    import sys
    from pathlib import Path

    script = _BIG_DOC_SCRIPT.format(tests=str(Path(__file__).parent))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name in NAMES:
        assert out[name]["embedded"] == 50_000 and out[name]["units"] == 50_000, out
        assert out[name]["max_tokens"] <= 64 and out[name]["exact"], out
        assert out[name]["chunks"] >= 50_000 * 6 // 64
    assert out["maxrss_mb"] < 1024, out


# -- shaping: min_tokens, overlap, vectors ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_min_tokens_merges_into_neighbour(name):
    emb = FakeEmbedder()
    text = topic_text([("pump", 4), ("food", 1), ("pump", 4), ("tax", 4)])
    plain = get_strategy(name, embedder=emb, max_tokens=200, min_tokens=0).chunk(text)
    merged = get_strategy(name, embedder=emb, max_tokens=200, min_tokens=12).chunk(text)
    assert all(c.token_count >= 12 for c in merged) or len(merged) == 1
    assert len(merged) <= len(plain)


def test_min_tokens_respects_cap():
    emb = FakeEmbedder()
    text = topic_text([("pump", 2), ("food", 1), ("tax", 2)])
    chunks = get_strategy(
        "semantic", embedder=emb, max_tokens=10, min_tokens=8, threshold_type="absolute", threshold_amount=0.0
    ).chunk(text)
    assert all(c.token_count <= 10 for c in chunks)


@pytest.mark.parametrize("name", NAMES)
def test_overlap_repeats_trailing_sentences(name):
    emb = FakeEmbedder()
    text = topic_text([("pump", 6), ("food", 6), ("tax", 6)])
    chunks = get_strategy(name, embedder=emb, max_tokens=40, overlap=6).chunk(text)
    assert all(c.token_count <= 40 for c in chunks)
    assert any(b.start < a.end for a, b in zip(chunks, chunks[1:]))
    assert all(b.start > a.start for a, b in zip(chunks, chunks[1:]))


@pytest.mark.parametrize("name", NAMES)
def test_vectors_kept_on_chunks(name):
    emb = FakeEmbedder()
    text = topic_text([("pump", 5), ("food", 5)])
    chunks = get_strategy(name, embedder=emb).chunk(text)
    for c in chunks:
        assert len(c.sentence_spans) == len(c.sentence_vectors)
        assert c.sentence_spans[0][0] == c.start and c.sentence_spans[-1][1] == c.end
        for (a, b), v in zip(c.sentence_spans, c.sentence_vectors):
            assert np.allclose(v, emb.embed([text[a:b]])[0], atol=1e-6)
    n_calls = len(emb.calls)
    pooled = chunk_vectors(chunks, mode="pool")
    assert len(emb.calls) == n_calls  # pooling calls no model
    assert np.allclose(np.linalg.norm(pooled, axis=1), 1, atol=1e-5)
    embedded = chunk_vectors(chunks, mode="embed", embedder=emb)
    assert np.allclose(embedded, emb.embed([c.text for c in chunks]), atol=1e-6)
    assert chunks[0].vector is not None
    with pytest.raises(ConfigError):
        chunk_vectors(chunks, mode="mean")


def test_respect_sections_never_crossed():
    from chunkwise.document import Section

    emb = FakeEmbedder()
    a = topic_text([("pump", 4)])
    b = topic_text([("pump", 4)])
    text = a + "\n\n" + b
    doc = Document(text, sections=[Section(0, len(a), ("A",), 1), Section(len(a) + 2, len(text), ("B",), 1)])
    for name in NAMES:
        chunks = get_strategy(name, embedder=emb, respect_sections=1).chunk(doc)
        assert not any(c.start < len(a) < c.end for c in chunks)
        assert [c.section for c in chunks][0] == ["A"] and chunks[-1].section == ["B"]


# -- semantic: thresholds and targets ---------------------------------------------------------------------
def _units(vectors, tokens=None):
    v = l2_normalize(np.asarray(vectors, np.float32))
    n = len(v)
    return Units(
        spans=[(2 * i, 2 * i + 1) for i in range(n)],
        tokens=np.asarray(tokens if tokens is not None else [1] * n, np.int64),
        gaps=np.zeros(max(n - 1, 0), np.int64),
        vectors=v,
    )


def test_thresholds_match_langchain_definitions():
    lc = pytest.importorskip("langchain_experimental.text_splitter")
    d = np.random.default_rng(3).random(40)
    for kind in ("percentile", "standard_deviation", "gradient"):
        ours = SemanticChunker(threshold_type=kind).threshold(d)[0]
        theirs = lc.SemanticChunker(embeddings=None, breakpoint_threshold_type=kind)._calculate_breakpoint_threshold(
            list(d)
        )[0]
        assert ours == pytest.approx(theirs)
    # interquartile: Tukey's fence Q3 + k * IQR, where LangChain uses mean + k * IQR
    q1, q3 = np.percentile(d, [25, 75])
    assert SemanticChunker(threshold_type="interquartile").threshold(d)[0] == pytest.approx(q3 + 1.5 * (q3 - q1))


def test_absolute_threshold_is_a_distance():
    units = _units([[1, 0], [1, 0.1], [0, 1], [0.05, 1]])
    d = SemanticChunker(threshold_type="absolute", threshold_amount=0.25, buffer_size=0).decide(units, None, "")
    assert d.cuts == [2]


def test_n_chunks_and_avg_tokens():
    emb = FakeEmbedder()
    text = topic_text([("pump", 5), ("food", 5), ("tax", 5), ("space", 5)])
    for n in (1, 2, 4, 7):
        chunks = get_strategy("semantic", embedder=emb, n_chunks=n, max_tokens=500, min_tokens=0).chunk(text)
        assert len(chunks) == n
    four = get_strategy("semantic", embedder=emb, n_chunks=4, buffer_size=0, max_tokens=500, min_tokens=0).chunk(text)
    assert [len(c.sentence_spans) for c in four] == [5, 5, 5, 5]
    total = sum(c.token_count for c in four)
    for target in (10, 25, 50):
        chunks = get_strategy("semantic", embedder=emb, avg_tokens=target, max_tokens=500).chunk(text)
        mean = total / len(chunks)
        assert abs(mean - target) <= target * 0.35, (target, mean)


def test_topics_found_with_fake_embedder():
    emb = FakeEmbedder()
    text = topic_text([("pump", 6), ("food", 6), ("tax", 6)])
    for name, params in (
        ("semantic", {"buffer_size": 0, "threshold_type": "standard_deviation", "threshold_amount": 1}),
        ("maxmin", {"fixed_threshold": 0.4}),
        ("cohesion", {}),
    ):
        chunks = get_strategy(name, embedder=emb, max_tokens=500, **params).chunk(text)
        assert [len(c.sentence_spans) for c in chunks] == [6, 6, 6], name


# -- maxmin: the authors' rule ----------------------------------------------------------------------------
def authors_maxmin(emb: np.ndarray, fixed_threshold=0.6, c=0.9, init_constant=1.5) -> list[int]:
    """Reference: the rule of hsdslab/MaxMinChunking ``process_sentences``, written out plainly (sizes of
    the chunks it makes), with an O(|C|^2) recomputation of the chunk's minimum similarity."""
    sizes, cluster = [], [0]
    for i in range(1, len(emb)):
        sims = [float(emb[i] @ emb[j]) for j in cluster]
        if len(cluster) == 1:
            ok = init_constant * sims[0] > fixed_threshold
        else:
            inner = min(float(emb[a] @ emb[b]) for a, b in itertools.combinations(cluster, 2))
            sig = 1 / (1 + math.exp(-(len(cluster) - 1)))
            ok = max(sims) > max(inner * c * sig, fixed_threshold)
        if ok:
            cluster.append(i)
        else:
            sizes.append(len(cluster))
            cluster = [i]
    sizes.append(len(cluster))
    return sizes


@pytest.mark.parametrize("seed", range(6))
def test_maxmin_matches_authors_rule(seed):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, 16))
    topic = np.repeat(np.arange(4), rng.integers(2, 8, 4))
    v = l2_normalize(centers[topic] + 0.6 * rng.standard_normal((len(topic), 16)))
    units = _units(v)
    for params in (
        {"fixed_threshold": 0.6},
        {"fixed_threshold": 0.3},
        {"fixed_threshold": 0.45, "c": 1.2, "init_constant": 1.2},
    ):
        full = dict(fixed_threshold=0.6, c=0.9, init_constant=1.5) | params
        strategy = MaxMinChunker(max_tokens=10_000, **full)
        d = strategy.decide(units, None, "")
        bounds = [0, *d.cuts, len(v)]
        assert [b - a for a, b in zip(bounds, bounds[1:])] == authors_maxmin(v, **full)


def test_maxmin_cap_cut_reported():
    emb = FakeEmbedder()
    text = " ".join(["The coolant pump must be inspected."] * 10)
    rows = MaxMinChunker(embedder=emb, max_tokens=12).explain(text)
    causes = [r["cause"] for r in rows if r["breakpoint"]]
    assert causes[:-1] == ["max_tokens"] * (len(causes) - 1) and causes[-1] == "end"


# -- cohesion: exact optimum -----------------------------------------------------------------------------
def brute_force(v: np.ndarray, tokens: list[int], max_tokens: int, penalty: float) -> float:
    n = len(v)
    s = v @ v.T
    mu = (s.sum() - np.trace(s)) / (n * (n - 1))
    best = -np.inf
    for mask in range(2 ** (n - 1)):
        cuts = [i + 1 for i in range(n - 1) if mask >> i & 1]
        bounds = [0, *cuts, n]
        total = 0.0
        ok = True
        for a, b in zip(bounds, bounds[1:]):
            if sum(tokens[a:b]) > max_tokens:
                ok = False
                break
            total += sum(s[i, j] - mu for i in range(a, b) for j in range(i + 1, b)) - penalty
        if ok:
            best = max(best, total)
    return best


def score(v, cuts, penalty):
    n = len(v)
    s = v @ v.T
    mu = (s.sum() - np.trace(s)) / (n * (n - 1))
    bounds = [0, *cuts, n]
    return sum(
        sum(s[i, j] - mu for i in range(a, b) for j in range(i + 1, b)) - penalty for a, b in zip(bounds, bounds[1:])
    )


@pytest.mark.parametrize("seed", range(8))
def test_cohesion_finds_the_exact_optimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    v = l2_normalize(rng.standard_normal((n, 6)) + rng.standard_normal(6))
    tokens = [int(t) for t in rng.integers(1, 6, n)]
    max_tokens = int(max(tokens) + rng.integers(0, 12))
    penalty = float(rng.choice([0.0, 0.3, 1.0]))
    units = _units(v, tokens)
    cuts = optimal_cuts(units, max_tokens, penalty)
    bounds = [0, *cuts, n]
    assert all(sum(tokens[a:b]) <= max_tokens for a, b in zip(bounds, bounds[1:]))
    assert score(v, cuts, penalty) == pytest.approx(brute_force(v, tokens, max_tokens, penalty), abs=1e-6)


def test_cohesion_penalty_controls_chunk_count():
    emb = FakeEmbedder()
    text = topic_text([("pump", 6), ("food", 6), ("tax", 6)])
    counts = [len(CohesionChunker(embedder=emb, max_tokens=500, penalty=p).chunk(text)) for p in (0.0, 1.0, 50.0)]
    assert counts[0] >= counts[1] >= counts[2]


# -- parameters -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,params",
    [
        ("semantic", {"threshold_type": "median"}),
        ("semantic", {"buffer_size": -1}),
        ("semantic", {"buffer_vectors": "mean"}),
        ("semantic", {"n_chunks": 2, "avg_tokens": 50}),
        ("semantic", {"threshold_amount": 150}),
        ("semantic", {"n_chunks": 0}),
        ("maxmin", {"c": -1}),
        ("maxmin", {"init_constant": 0}),
        ("cohesion", {"penalty": -1}),
        ("cohesion", {"max_tokens": 0}),
        ("semantic", {"embedder": 3}),
        ("maxmin", {"fixed_threshold": "high"}),
    ],
)
def test_bad_parameters(name, params):
    with pytest.raises(ConfigError):
        get_strategy(name, embedder=params.pop("embedder", FakeEmbedder()), **params).chunk("A b. C d.")


def test_constructor_only_stores_and_tokenizer_defaults_to_embedders():
    s = SemanticChunker(embedder="no-such-embedder", buffer_size=-5)
    assert s.buffer_size == -5 and s.tokenizer is None
    emb = FakeEmbedder()
    chunks = SemanticChunker(embedder=emb, max_tokens=6).chunk("one two three four five six. seven eight.")
    assert chunks[0].token_count == 6  # counted in the embedder's (word) tokenizer
    assert SemanticChunker.param_names()[:6] == [
        "max_tokens",
        "min_tokens",
        "overlap",
        "tokenizer",
        "respect_sections",
        "embedder",
    ]


def test_chunk_ids_deterministic_and_config_dependent():
    emb = FakeEmbedder()
    text = topic_text([("pump", 4), ("food", 4)])
    a = get_strategy("cohesion", embedder=emb).chunk(text)
    b = get_strategy("cohesion", embedder=emb).chunk(text)
    c = get_strategy("cohesion", embedder=emb, penalty=3.0).chunk(text)
    assert [x.id for x in a] == [x.id for x in b]
    assert a[0].id != c[0].id and a[0].strategy == "cohesion"


# -- explain and the CLI ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_explain_rows_agree_with_chunks(name):
    emb = FakeEmbedder()
    text = topic_text([("pump", 5), ("food", 5), ("tax", 3)])
    strategy = get_strategy(name, embedder=emb, max_tokens=30)
    rows = strategy.explain(text)
    chunks = strategy.chunk(text)
    assert [r["sentence"] for r in rows] == [text[r["start"] : r["end"]] for r in rows]
    assert {r["end"] for r in rows if r["breakpoint"]} == {c.end for c in chunks}
    for r in rows:
        assert set(r) >= {"sentence", "start", "end", "distance_to_next", "threshold", "breakpoint"}
        assert (r["cause"] is None) == (not r["breakpoint"])
    json.dumps(rows)


def test_cli_inspect_seed(tmp_path, capsys):
    from chunkwise.cli import main

    path = tmp_path / "seed.txt"
    path.write_text(SEED + "\n", encoding="utf-8")
    assert main(["--no-cache", "inspect", str(path), "-s", "semantic", "-p", "buffer_size=0"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 5
    assert [x["breakpoint"] for x in lines] == [False, False, True, False, True]
    assert lines[2]["cause"] == "threshold" and lines[2]["distance_to_next"] > lines[2]["threshold"]
    assert [x["chunk"] for x in lines] == [0, 0, 0, 1, 1]
    assert main(["--no-cache", "inspect", str(path), "-s", "semantic", "-p", "threshold_type=nope"]) == 2
    assert "threshold_type" in capsys.readouterr().err


def test_cli_inspect_other_strategy_and_missing_file(tmp_path, capsys):
    from chunkwise.cli import main

    path = tmp_path / "seed.txt"
    path.write_text(SEED + "\n", encoding="utf-8")
    assert main(["inspect", str(path), "-s", "sentence", "--max-tokens", "40", "--tokenizer", "words"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 5 and lines[-1]["breakpoint"] and lines[-1]["cause"] == "end"
    assert all(x["distance_to_next"] is None for x in lines)
    assert main(["inspect", str(tmp_path / "missing.txt"), "-s", "sentence"]) == 1
    err = capsys.readouterr().err
    assert "missing.txt" in err and "Traceback" not in err


# -- transcripts: the loader's units are the sentences --------------------------------------------------
def test_loader_units_are_the_semantic_units(fake_embedder):
    """A transcript has no punctuation to split on; the cue-merged units a loader records are used as the
    sentences, and any text outside them is still split and covered."""
    from chunkwise.document import Document
    from chunkwise.strategies import get_strategy

    lines = [
        "so the pump needs a new seal",
        "and the seal kit is on order",
        "lunch moves to the new cafeteria",
        "the cafeteria opens at noon",
    ]
    text = "\n".join(lines) + "\ntrailing words without a unit"
    units, pos = [], 0
    for line in lines:
        units.append([pos, pos + len(line)])
        pos += len(line) + 1
    doc = Document(text, metadata={"units": units})
    for name in ("semantic", "maxmin", "cohesion"):
        rows = get_strategy(name, embedder=fake_embedder, tokenizer="words", max_tokens=64).explain(doc)
        spans = [[r["start"], r["end"]] for r in rows]
        assert spans[:4] == units, name
        assert doc.text[spans[4][0] : spans[4][1]] == "trailing words without a unit"
        without = get_strategy(name, embedder=fake_embedder, tokenizer="words", max_tokens=64).explain(Document(text))
        assert len(without) < len(rows)  # the plain splitter sees wrapped lines as one sentence


def test_vtt_example_units_drive_the_semantic_strategies(fake_embedder):
    from conftest import ROOT

    from chunkwise.formats import load
    from chunkwise.strategies import get_strategy

    doc = load(ROOT / "examples" / "team-meeting.vtt")
    rows = get_strategy("cohesion", embedder=fake_embedder, max_tokens=256).explain(doc)
    assert [[r["start"], r["end"]] for r in rows] == [list(u) for u in doc.metadata["units"]]
