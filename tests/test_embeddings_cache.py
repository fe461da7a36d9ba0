"""The persistent embedding cache: hits, in-call deduplication, two writers at once, the size bound, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import FakeEmbedder

from chunkwise.cli import main
from chunkwise.embeddings import embedder_from_args, get_embedder
from chunkwise.embeddings.cache import CachedEmbedder, EmbeddingCache, text_key
from chunkwise.errors import ConfigError, InputError


@pytest.fixture
def cached(tmp_path):
    inner = FakeEmbedder()
    return CachedEmbedder(inner, EmbeddingCache(tmp_path)), inner


def test_same_vectors_and_interface_as_the_backend(cached):
    emb, inner = cached
    texts = ["alpha beta", "gamma", "alpha beta delta"]
    np.testing.assert_allclose(emb.embed(texts), FakeEmbedder().embed(texts))
    assert (emb.model_id, emb.dim, emb.model_window, emb.tokenizer) == (
        inner.model_id,
        inner.dim,
        inner.model_window,
        inner.tokenizer,
    )
    assert emb.embed([]).shape == (0, inner.dim)


def test_duplicates_in_one_call_are_embedded_once(cached):
    emb, inner = cached
    v = emb.embed(["a b", "c", "a b", "a b", "c"])
    assert inner.calls == [["a b", "c"]]
    assert emb.texts_embedded == 2
    np.testing.assert_array_equal(v[0], v[2])


def test_second_call_and_second_process_hit_the_cache(tmp_path):
    first = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    first.embed(["one", "two"])
    first.close()
    again = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    v = again.embed(["two", "three", "one"])
    assert again.inner.calls == [["three"]]
    assert again.texts_embedded == 1
    np.testing.assert_allclose(v, FakeEmbedder().embed(["two", "three", "one"]))


def test_models_do_not_share_entries(tmp_path):
    cache = EmbeddingCache(tmp_path)
    a = CachedEmbedder(FakeEmbedder(dim=64), cache)
    b = CachedEmbedder(FakeEmbedder(dim=32), cache)
    a.embed(["x"])
    assert b.embed(["x"]).shape == (1, 32)
    assert b.texts_embedded == 1
    assert set(cache.stats()["models"]) == {"fake-bow-64", "fake-bow-32"}


def test_keys_handle_any_python_string():
    assert text_key("a\ud800b") != text_key("ab")  # lone surrogate: no UnicodeEncodeError
    assert len(text_key("")) == 32


def test_non_text_input_is_rejected_before_the_cache(cached):
    emb, _ = cached
    with pytest.raises(InputError):
        emb.embed(["fine", None])


def test_size_bound_evicts_least_recently_used(tmp_path):
    cache = EmbeddingCache(tmp_path, max_bytes=400_000)
    emb = CachedEmbedder(FakeEmbedder(dim=384), cache)  # 1.5 KB per vector
    emb.embed([f"old text {i}" for i in range(150)])
    for i in range(6):
        emb.embed([f"new text {i} {j}" for j in range(100)])
    stats = cache.stats()
    assert stats["used_bytes"] <= 400_000 + 64 * 1024  # under the bound (plus the last batch's pages)
    assert 0 < stats["entries"] < 750
    # the oldest entries went first, the newest are kept
    keep = cache.get_many(emb.cache_key, [text_key("new text 5 99")])
    gone = cache.get_many(emb.cache_key, [text_key("old text 0")])
    assert len(keep) == 1 and not gone


def test_clear_all_and_one_model(tmp_path):
    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(FakeEmbedder(dim=16), cache).embed(["a", "b"])
    CachedEmbedder(FakeEmbedder(dim=8), cache).embed(["a"])
    assert cache.clear("fake-bow-16") == 2
    assert cache.stats()["entries"] == 1
    assert cache.clear() == 1
    assert cache.stats()["entries"] == 0


def test_corrupt_cache_file_is_a_clear_error(tmp_path):
    (tmp_path / "embeddings.sqlite3").write_bytes(b"this is not a database" * 100)
    emb = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    with pytest.raises(ConfigError) as err:
        emb.embed(["x"])
    assert "--no-cache" in str(err.value) or "cache clear" in str(err.value)


def test_bad_size_bound_env(monkeypatch, tmp_path):
    monkeypatch.setenv("CHUNKWISE_CACHE_MAX_MB", "lots")
    with pytest.raises(
        ConfigError, match=r"^\$CHUNKWISE_CACHE_MAX_MB must be a positive number of megabytes, got 'lots'$"
    ):
        EmbeddingCache(tmp_path)
    monkeypatch.setenv("CHUNKWISE_CACHE_MAX_MB", "0")
    with pytest.raises(
        ConfigError, match=r"^\$CHUNKWISE_CACHE_MAX_MB must be a positive number of megabytes, got '0'$"
    ):
        EmbeddingCache(tmp_path)
    with pytest.raises(ConfigError, match=r"^EmbeddingCache: max_bytes must be an int in \[1, inf\) or None, got 0$"):
        EmbeddingCache(tmp_path, max_bytes=0)
    monkeypatch.setenv("CHUNKWISE_CACHE_MAX_MB", "0.5")
    assert EmbeddingCache(tmp_path).max_bytes == 512 * 1024


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from conftest import FakeEmbedder
    from chunkwise.embeddings.cache import CachedEmbedder, EmbeddingCache
    tag = sys.argv[1]
    emb = CachedEmbedder(FakeEmbedder(), EmbeddingCache({dir!r}))
    for round_ in range(40):
        # half the texts are shared by both processes, half are their own
        emb.embed([f"shared {{round_}} {{i}}" for i in range(10)] + [f"{{tag}} {{round_}} {{i}}" for i in range(10)])
    print(emb.texts_embedded)
""")


def test_two_processes_writing_at_once(tmp_path):
    script = tmp_path / "writer.py"
    cache_dir = tmp_path / "cache"
    script.write_text(WRITER.format(tests=str(__import__("pathlib").Path(__file__).parent), dir=str(cache_dir)))
    procs = [
        subprocess.Popen([sys.executable, str(script), tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tag in ("p1", "p2")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    stats = EmbeddingCache(cache_dir).stats()
    assert stats["entries"] == 40 * 10 + 2 * 40 * 10  # shared texts stored once, private ones all stored
    # every stored vector is intact
    cache = EmbeddingCache(cache_dir)
    keys = [text_key(f"p1 {r} {i}") for r in range(40) for i in range(10)]
    got = cache.get_many("fake-bow-64", keys)
    assert len(got) == 400
    np.testing.assert_allclose(got[text_key("p1 3 4")], FakeEmbedder().embed(["p1 3 4"])[0])


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # builds MiniLM in fresh cache folders (a graph rewrite each)
def test_get_embedder_cache_and_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "env"))
    emb = get_embedder("minilm")
    assert isinstance(emb, CachedEmbedder)
    assert emb.cache.dir == tmp_path / "env"
    v1 = emb.embed(["The pump is inspected."])
    emb2 = get_embedder("minilm")
    np.testing.assert_array_equal(emb2.embed(["The pump is inspected."]), v1)
    assert emb2.texts_embedded == 0
    assert not isinstance(get_embedder("minilm", cache=False), CachedEmbedder)


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # builds MiniLM in fresh cache folders (a graph rewrite each)
def test_embedder_from_args(tmp_path):
    parser = __import__("chunkwise.cli", fromlist=["build_parser"]).build_parser()
    args = parser.parse_args(["--cache-dir", str(tmp_path), "cache", "stats"])
    emb = embedder_from_args(args)
    assert isinstance(emb, CachedEmbedder) and emb.cache.dir == tmp_path and emb.model_id == "minilm"
    args = parser.parse_args(["--no-cache", "--embedder", "minilm", "cache", "stats"])
    assert not isinstance(embedder_from_args(args), CachedEmbedder)
    args = parser.parse_args(["--embedder", "nonsense", "cache", "stats"])
    with pytest.raises(ConfigError):
        embedder_from_args(args)


def test_cli_cache_stats_and_clear(tmp_path, capsys):
    CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path)).embed(["a", "b", "c"])
    assert main(["--cache-dir", str(tmp_path), "cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "fake-bow-64" in out and "3" in out and str(tmp_path) in out
    assert main(["--cache-dir", str(tmp_path), "cache", "stats", "--json"]) == 0
    assert '"entries": 3' in capsys.readouterr().out
    assert main(["--cache-dir", str(tmp_path), "cache", "clear"]) == 0
    assert "deleted 3" in capsys.readouterr().out
    assert EmbeddingCache(tmp_path).stats()["entries"] == 0


def test_forked_child_opens_its_own_connection(tmp_path):
    import multiprocessing

    emb = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    emb.embed(["parent text"])  # the parent holds an open connection

    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_child_embeds, args=(emb,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert len(emb.cache.get_many(emb.cache_key, [text_key("child text")])) == 1


def _child_embeds(emb):
    emb.embed(["child text", "parent text"])
    assert emb.texts_embedded == 2  # 1 in the parent before the fork + 1 here; "parent text" was cached


def test_cli_cache_stats_and_clear_the_rewritten_graph(tmp_path, capsys):
    """`cache stats` shows the rewritten MiniLM graph beside the vectors; `cache clear` deletes it (with its
    lock and marker files); `cache clear --model` leaves it."""
    graph = tmp_path / "minilm-graph-0123456789abcdef.onnx"
    graph.write_bytes(b"x" * 3000)
    (tmp_path / ".minilm-graph-0123456789abcdef.lock").write_bytes(b"")
    assert main(["--cache-dir", str(tmp_path), "cache", "stats", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["graphs"] == {"files": 2, "bytes": 3000}
    assert main(["--cache-dir", str(tmp_path), "cache", "stats"]) == 0
    assert "graphs:" in capsys.readouterr().out
    assert main(["--cache-dir", str(tmp_path), "cache", "clear", "--model", "minilm"]) == 0
    assert graph.exists()
    assert main(["--cache-dir", str(tmp_path), "cache", "clear"]) == 0
    assert "rewritten MiniLM graph" in capsys.readouterr().out
    assert not list(tmp_path.glob("*minilm-graph-*"))


# -- damaged rows: re-embedded, overwritten, counted --------------------------------------------------------
def _poison(path, model: str, text: str, vec_bytes: bytes, dim: int) -> None:
    """Overwrite one cached row in place, as a bad sector or an older bug would have left it."""
    import sqlite3

    with sqlite3.connect(path / "embeddings.sqlite3") as conn:
        n = conn.execute(
            "UPDATE embeddings SET vec = ?, dim = ? WHERE model = ? AND key = ?",
            (vec_bytes, dim, model, text_key(text)),
        ).rowcount
    assert n == 1


@pytest.mark.parametrize("bad", ["inf", "nan", "norm", "short", "odd bytes", "dim", "zeros"])
def test_a_damaged_cached_vector_is_embedded_again_and_overwritten(tmp_path, bad):
    """A cached +inf / NaN / not-unit / wrong-length vector used to be returned as it was (then every later
    run failed on it, blamed on the embedder: 'embedder returned a non-finite vector'), or, for a blob of the
    wrong length, never replaced (INSERT OR IGNORE) and so embedded again on every run; a blob whose length
    is not a multiple of 4 raised from numpy. Now each is embedded again, overwritten and counted."""
    texts = ["alpha beta", "gamma delta", "epsilon"]
    first = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    clean = first.embed(texts)
    first.close()
    good = clean[1].copy()
    poisoned = {
        "inf": (np.where(np.arange(64) == 3, np.inf, good).astype(np.float32).tobytes(), 64),
        "nan": (np.full(64, np.nan, np.float32).tobytes(), 64),
        "norm": ((good * 2).astype(np.float32).tobytes(), 64),
        "short": (good[:10].tobytes(), 64),
        "odd bytes": (good.tobytes()[:-1], 64),
        "dim": (good[:32].tobytes(), 32),
        "zeros": (np.zeros(64, np.float32).tobytes(), 64),  # zero-filled storage, the commonest damage
    }[bad]
    _poison(tmp_path, "fake-bow-64", texts[1], *poisoned)

    again = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    v = again.embed(texts)
    np.testing.assert_allclose(v, clean, atol=1e-6)
    assert again.inner.calls == [["gamma delta"]] and again.cache_repaired == 1
    again.close()
    third = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))  # overwritten: a plain hit now
    np.testing.assert_allclose(third.embed(texts), clean, atol=1e-6)
    assert third.inner.calls == [] and third.cache_repaired == 0


def test_a_zero_vector_for_a_text_is_neither_cached_nor_trusted(tmp_path):
    """A text with something in it has a direction: an all-zero vector for it is damage (zero-filled
    storage), so it is not cached; the embedder's own answer is still returned, and asked for again next time.
    A blank text's zero vector is a real answer and is cached."""

    class Zero(FakeEmbedder):
        def embed(self, texts):
            super().embed(texts)
            return np.zeros((len(list(texts)), self.dim), dtype=np.float32)

    CachedEmbedder(Zero(), EmbeddingCache(tmp_path)).embed(["nothing", " "])
    again = CachedEmbedder(Zero(), EmbeddingCache(tmp_path))
    assert not again.embed(["nothing", " "]).any()
    assert again.inner.calls == [["nothing"]] and again.cache_repaired == 0


def test_a_non_finite_fresh_vector_is_not_cached(tmp_path):
    """What the embedder got wrong is not kept: the next run asks the embedder again (and the caller's check
    blames the embedder, rightly) instead of reading the bad vector back."""

    class Broken(FakeEmbedder):
        def embed(self, texts):
            out = super().embed(texts)
            out[0, 0] = np.inf
            return out

    CachedEmbedder(Broken(), EmbeddingCache(tmp_path)).embed(["one"])
    again = CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path))
    again.embed(["one"])
    assert again.inner.calls == [["one"]] and again.cache_repaired == 0
