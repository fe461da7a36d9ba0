"""``static``: model2vec-format static model distilled from the ONNX MiniLM (no torch needed)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("model2vec")

from chunkwise.cli import main  # noqa: E402
from chunkwise.embeddings import get_embedder  # noqa: E402
from chunkwise.embeddings.static import (  # noqa: E402
    StaticEmbedder,
    distill_static,
    static_model_dir,
    zipf_sif_weights,
)
from chunkwise.errors import ConfigError, InputError  # noqa: E402

LIMIT = 1400  # distil only the first 1,400 vocabulary tokens: the whole pipeline in a few seconds


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("static-cache")
    distill_static(d, limit_vocab=LIMIT, pca_dims=64)
    return d


@pytest.fixture(scope="module")
def static(cache_dir):
    return StaticEmbedder.load(cache_dir)


def test_distilled_model_is_in_model2vec_format(cache_dir, static):
    from model2vec import StaticModel

    path = static_model_dir(cache_dir)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "chunkwise.json"):
        assert (path / name).is_file()
    m2v = StaticModel.from_pretrained(path)
    # tokens inside the distilled part of the vocabulary; more texts than one gather block, some empty
    texts = [["a b c", "the 1 2 3 !", "x y z", "", "q " * (i % 9)][i % 5] + f" {i}" * (i % 3) for i in range(400)]
    ours, theirs = static.embed(texts), m2v.encode(texts)
    nonzero = np.linalg.norm(theirs, axis=1) > 0
    assert nonzero.sum() > 300
    np.testing.assert_allclose(ours[nonzero], theirs[nonzero], atol=1e-5)
    assert static.metadata["tokens_embedded"] == LIMIT
    assert static.dim == 64 and static.model_id == "static:minilm-static-256"
    assert static.tokenizer.name == "minilm"


def test_vectors_are_unit_and_deterministic(static):
    texts = ["the pump", "", "  ", "a", "ü" * 600]
    v = static.embed(texts)
    assert v.shape == (5, 64) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(v, static.embed(texts))
    np.testing.assert_array_equal(v[1], v[2])  # no tokens -> the empty text's embedding


def test_truncation_is_counted(cache_dir):
    e = StaticEmbedder.load(cache_dir, model_window=10)
    e.embed(["a " * 50, "a b"])
    assert e.truncated == 1


def test_order_and_batching_do_not_matter(cache_dir, static):
    texts = [f"{i} a b {i % 7}" for i in range(50)]
    small = StaticEmbedder.load(cache_dir, batch_size=7)
    np.testing.assert_allclose(small.embed(texts), static.embed(texts), atol=1e-6)
    np.testing.assert_allclose(static.embed(texts[::-1])[::-1], static.embed(texts), atol=1e-6)


def test_not_distilled_yet_says_what_to_run(tmp_path):
    with pytest.raises(ConfigError) as err:
        get_embedder("static", cache_dir=tmp_path)
    assert "chunkwise distill" in str(err.value)


def test_bad_input_and_parameters(static, tmp_path):
    with pytest.raises(InputError):
        static.embed("one string")
    with pytest.raises(ConfigError):
        distill_static(tmp_path, pca_dims=1000)


def test_get_embedder_static_with_cache(cache_dir):
    e = get_embedder("static", cache_dir=cache_dir)
    v = e.embed(["a b", "a b"])
    assert e.texts_embedded == 1 and v.shape == (2, 64)


def test_zipf_weights():
    w = zipf_sif_weights(1000)
    assert w.shape == (1000,) and np.all(np.diff(w) > 0) and 0 < w[0] < w[-1] < 1


def test_cli_distill_when_present_and_errors(cache_dir, capsys, tmp_path):
    assert main(["--cache-dir", str(cache_dir), "distill"]) == 0
    assert "already distilled" in capsys.readouterr().out
    assert main(["--cache-dir", str(tmp_path), "distill", "--pca-dims", "1"]) == 2
    assert "pca_dims" in capsys.readouterr().err


def test_cli_distill_writes_the_model(tmp_path, capsys, monkeypatch):
    import chunkwise.embeddings.static as static_mod

    real = static_mod.distill_static
    monkeypatch.setattr(static_mod, "distill_static", lambda *a, **kw: real(*a, **{**kw, "limit_vocab": 1100}))
    assert main(["--cache-dir", str(tmp_path), "distill", "--pca-dims", "32"]) == 0
    assert "static model written to" in capsys.readouterr().out
    assert StaticEmbedder.load(tmp_path).dim == 32
