"""A re-index that changes nothing never makes the embedder (ONNX session, graph check): only a document that
needs embedding does, and that embedder is still checked against the one the collection records."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeEmbedder
from index_data import LAMP, docs, lines

import chunkwise.embeddings
from chunkwise import Document
from chunkwise.cli import main
from chunkwise.embeddings.cache import repaired_count
from chunkwise.errors import ConfigError
from chunkwise.retrieval import Index
from chunkwise.retrieval.lazy_embedder import LazyEmbedder, makes_recorded


class Factory:
    """``get_embedder`` that counts the embedders it makes (``model_id`` of each as asked)."""

    def __init__(self, model_id: str | None = None):
        self.made: list[FakeEmbedder] = []
        self.model_id = model_id

    def __call__(self, name=None, **kw):
        emb = FakeEmbedder()
        if self.model_id:
            emb.model_id = self.model_id
        self.made.append(emb)
        return emb


@pytest.fixture
def factory(monkeypatch):
    f = Factory()
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", f)
    return f


def test_no_op_reindex_never_makes_the_embedder(tmp_path, factory):
    with Index(tmp_path / "t.db") as ix:
        assert ix.add(docs(), strategy=lines()).indexed == 3
    assert len(factory.made) == 1  # a new collection: made at once (its dim goes into the schema)

    with Index(tmp_path / "t.db") as ix:  # a fresh process's Index over the same collection
        report = ix.add(docs(), strategy=lines())
        assert (report.skipped, report.indexed, report.chunks, report.total_chunks) == (3, 0, 0, 9)
        assert len(factory.made) == 1
        # pruning a document whose source is gone (no file kb/trains.txt) deletes rows: no model either
        report = ix.add(docs()[:2], strategy=lines(), prune=True)
        assert (report.skipped, report.pruned, report.total_chunks) == (2, 1, 6)
        assert len(factory.made) == 1


def test_a_changed_document_makes_the_embedder_once_and_is_embedded(tmp_path, factory):
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
    edited = docs()
    edited[1] = Document(LAMP + "\nA new keeper arrived.", source="kb/lamp.txt")
    with Index(tmp_path / "t.db") as ix:
        report = ix.add(edited, strategy=lines())
        assert (report.indexed, report.skipped, report.embedded) == (1, 2, 4)
        assert len(factory.made) == 2 and factory.made[-1].texts_embedded == 4
        assert ix.search("new keeper", k=1, hybrid=False)[0].text == "A new keeper arrived."
        assert len(factory.made) == 2  # search uses the embedder the run made


def test_a_model_that_no_longer_matches_the_record_is_refused_before_writing(tmp_path, monkeypatch, factory):
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
        before = {m.doc_id: m.content_hash for m in ix.documents()}
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", Factory(model_id="fake-bow-64-retrained"))
    with Index(tmp_path / "t.db") as ix:
        assert ix.add(docs(), strategy=lines()).skipped == 3  # nothing to embed: nothing to refuse
        edited = docs()
        edited[0] = Document("Bees dance to tell the way.", source="kb/bees.txt")
        with pytest.raises(ConfigError, match="was built with embedder 'fake-bow-64'"):
            ix.add(edited, strategy=lines())
        assert {m.doc_id: m.content_hash for m in ix.documents()} == before and ix.count() == 9


def test_an_embedder_named_otherwise_is_made_and_checked_at_once(tmp_path, monkeypatch, factory):
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", Factory(model_id="other"))
    with Index(tmp_path / "t.db", embedder="static") as ix:
        with pytest.raises(ConfigError, match="was built with embedder 'fake-bow-64'"):
            ix.add(docs(), strategy=lines())


def test_makes_recorded_only_for_the_recorded_name_and_backend():
    rec = {"name": "minilm", "model_id": "m", "dim": 4, "backend": "onnx"}
    assert makes_recorded(None, {}, rec) and makes_recorded("minilm", {"backend": "onnx"}, rec)
    assert makes_recorded(None, {"backend": "onnx"}, rec)
    assert not makes_recorded("minilm", {}, rec)  # the default back-end may not be the recorded one
    assert not makes_recorded(None, {"backend": "torch"}, rec)
    assert not makes_recorded("e5", {"backend": "onnx"}, rec)
    assert not makes_recorded(None, {"base_url": "http://x"}, rec)  # an option the record does not hold
    assert not makes_recorded(None, {}, {"name": "minilm"})  # nothing recorded to answer from


def test_lazy_embedder_answers_from_the_record_and_loads_once():
    made: list[FakeEmbedder] = []

    def load():
        made.append(FakeEmbedder(dim=8))
        return made[-1]

    lazy = LazyEmbedder("fake-bow-8", 8, load)
    assert (lazy.model_id, lazy.dim, lazy.texts_embedded, lazy.truncated, lazy.loaded) == ("fake-bow-8", 8, 0, 0, False)
    lazy.close()
    assert made == []
    vectors = lazy.embed(["bees", "lamp"])
    assert vectors.shape == (2, 8) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.array_equal(lazy.embed_queries(["bees"]), made[0].embed(["bees"]))
    assert lazy.tokenizer is made[0].tokenizer and lazy.model_window == 510 and lazy.calls  # the rest is the model's
    assert len(made) == 1 and lazy.loaded and lazy.texts_embedded == 4


def test_no_op_reindex_of_a_semantic_strategy_makes_no_embedder_either(tmp_path, factory):
    """The strategy holds the run's embedder; its parameters match the record, so they are not validated
    again (that would read the model's window) until a document is chunked."""
    params = {"max_tokens": 40, "tokenizer": "words"}
    with Index(tmp_path / "t.db") as ix:
        assert ix.add(docs(), strategy="semantic", params=params).indexed == 3
    assert len(factory.made) == 1
    with Index(tmp_path / "t.db") as ix:
        assert ix.add(docs(), strategy="semantic", params=params).skipped == 3
        assert len(factory.made) == 1
        with pytest.raises(ConfigError, match="max_tokens must be an int"):  # other parameters: validated first
            ix.add(docs(), strategy="semantic", params={**params, "max_tokens": 0})


def test_prepare_add_for_another_engine_makes_and_checks_the_embedder(tmp_path, factory):
    """The Ray engine ships the embedder's spec (its recorded name) to its workers: it gets the real one."""
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
    with Index(tmp_path / "t.db") as ix:
        settings = ix.prepare_add(lines())
        assert settings.embedder is factory.made[-1] and len(factory.made) == 2
        assert ix._embedder_name() == "fake-bow-64"


def test_after_a_no_op_add_the_index_embedder_is_still_unmade(tmp_path, factory):
    """What callers ask of ``Index.embedder()`` after a run (the CLI's count of repaired cache entries)
    does not make the model either; embedding through it does, once."""
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
    with Index(tmp_path / "t.db") as ix:
        ix.add(docs(), strategy=lines())
        emb = ix.embedder()
        assert isinstance(emb, LazyEmbedder) and not emb.loaded and emb.inner is None
        assert repaired_count(emb) == 0 and len(factory.made) == 1
        assert emb.embed(["bees"]).shape == (1, 64) and emb.inner is factory.made[-1]
        assert ix.embedder() is factory.made[-1] and len(factory.made) == 2  # made once, then the real one


def test_cli_no_op_reindex_never_makes_the_embedder(tmp_path, monkeypatch, factory, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    for doc in docs():
        (tmp_path / doc.source).write_text(doc.text, encoding="utf-8")
    argv = ["index", "kb", "--db", "t.db", "--strategy", "fixed", "--max-tokens", "16", "--tokenizer", "words"]
    assert main(argv) == 0 and len(factory.made) == 1
    assert main(argv) == 0 and len(factory.made) == 1
    assert "(0 indexed, 3 unchanged and skipped)" in capsys.readouterr().err
