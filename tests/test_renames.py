"""One vocabulary: every renamed parameter works under its new name, and its old name still works,
warns (DeprecationWarning naming the new one) and gives the same result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import build_parser, main
from chunkwise.context import contextualize, late_chunk_vectors
from chunkwise.context.late import document_token_vectors
from chunkwise.context.llm import LLMContextualizer
from chunkwise.deprecation import ChunkwiseDeprecationWarning
from chunkwise.document import Chunk, Document, stable_hash
from chunkwise.embeddings import get_embedder
from chunkwise.embeddings.base import Embedder
from chunkwise.embeddings.openai import OpenAIEmbedder
from chunkwise.errors import ChunkwiseError, ConfigError
from chunkwise.llm import get_llm
from chunkwise.retrieval.index import Index
from chunkwise.segmentation.tokens import get_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.semantic import SemanticChunker

TEXT = (
    "Cats purr when they are content. A cat sleeps most of the day. Kittens play with string.\n\n"
    "Rust has a borrow checker. Cargo builds Rust crates. The compiler rejects data races.\n\n"
    "Bread needs flour and water. Yeast makes the dough rise. Bake it in a hot oven."
)
URL = "http://127.0.0.1:9/v1"  # never contacted: the tests below only construct clients


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


def chunks_of(doc: Document, spans: list[tuple[int, int]]) -> list[Chunk]:
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


# -- embedders: max_tokens -> model_window ----------------------------------------------------------------
def test_embedder_model_window_and_old_attribute(no_warnings):
    emb = FakeEmbedder(model_window=7)
    assert emb.model_window == 7
    with pytest.warns(DeprecationWarning, match="'max_tokens' is deprecated, use 'model_window'"):
        assert emb.max_tokens == 7
    with pytest.warns(DeprecationWarning, match="model_window"):
        emb.max_tokens = 9
    assert emb.model_window == 9


def test_minilm_model_window_and_old_window_give_the_same_model(no_warnings):
    new = get_embedder("minilm", model_window=254, cache=False)
    with pytest.warns(DeprecationWarning, match="'window' is deprecated, use 'model_window'"):
        old = get_embedder("minilm", window=256, cache=False)
    assert (new.model_id, new.model_window) == (old.model_id, old.model_window) == ("minilm-w256", 254)
    text = " ".join(["word"] * 300)
    np.testing.assert_array_equal(new.embed([text]), old.embed([text]))
    assert new.truncated == old.truncated == 1
    with pytest.raises(ConfigError, match="model_window"):
        get_embedder("minilm", model_window=511, cache=False)


def test_openai_model_window_and_old_max_tokens(no_warnings):
    new = OpenAIEmbedder("m", base_url=URL, model_window=5)
    with pytest.warns(DeprecationWarning, match="openai embedder: 'max_tokens' is deprecated, use 'model_window'"):
        old = OpenAIEmbedder("m", base_url=URL, max_tokens=5)
    assert new.model_window == old.model_window == 5
    with pytest.raises(ConfigError, match=r"openai embedder: model_window must be an int in \[1, inf\), got 0"):
        OpenAIEmbedder("m", base_url=URL, model_window=0)


def test_factory_lists_new_keywords_only():
    with pytest.raises(ConfigError) as err:
        get_embedder("minilm", bogus=1, cache=False)
    assert "valid: model_window, batch_size, max_batch_tokens, threads" in str(err.value)
    assert "window," not in str(err.value).replace("model_window", "")


# -- back-end apart from the model --------------------------------------------------------------------------
def test_backend_is_chosen_apart_from_the_model(no_warnings):
    assert get_embedder("minilm", backend="onnx", cache=False).model_id == "minilm"
    with pytest.raises(ConfigError, match="unknown backend 'tpu' for embedder 'minilm'; choose one of onnx, torch"):
        get_embedder("minilm", backend="tpu")
    with pytest.raises(ConfigError, match="runs on one back-end only; backend= applies to minilm"):
        get_embedder("use-multilingual", backend="torch")
    with pytest.raises(ConfigError, match=r"^get_embedder: backend must be a back-end name or None, got 1$"):
        get_embedder("minilm", backend=1)


def test_old_minilm_torch_name_warns_and_means_backend_torch():
    def build(*a, **k):
        try:
            return get_embedder(*a, cache=False, **k).model_id
        except ChunkwiseError as exc:  # the torch extra is not installed here: the same error either way
            return str(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = build("minilm", backend="torch")
    with pytest.warns(DeprecationWarning, match="'minilm-torch' is deprecated, use 'minilm' with backend='torch'"):
        old = build("minilm-torch")
    assert old == new
    with pytest.raises(ConfigError, match="runs on torch, not backend='onnx'"), pytest.warns(DeprecationWarning):
        get_embedder("minilm-torch", backend="onnx")


def test_backend_from_the_environment(monkeypatch):
    monkeypatch.setenv("CHUNKWISE_EMBEDDER_BACKEND", "tpu")
    with pytest.raises(ConfigError, match="unknown backend 'tpu'"):
        get_embedder(None)
    assert get_embedder("minilm", cache=False).model_id == "minilm"  # a named model ignores the variable


def test_index_reopens_old_minilm_torch_records_without_a_warning(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(
        chunkwise.embeddings, "get_embedder", lambda name, **kw: seen.append((name, kw)) or FakeEmbedder()
    )
    ix = Index(db=str(tmp_path / "x.db"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        ix.embedder({"embedder": {"name": "minilm-torch", "model_id": "fake-bow-64", "dim": 64}})
    assert seen[0][0] == "minilm" and seen[0][1]["backend"] == "torch"
    ix.close()


def test_cli_embedder_backend_flag_and_old_name(capsys):
    assert main(["embed", "--embedder", "static", "--embedder-backend", "torch", "x"]) == 2
    assert "runs on one back-end only" in capsys.readouterr().err
    rc = main(["embed", "--embedder", "minilm-torch", "--no-cache", "x"])
    err = capsys.readouterr().err
    assert err.count("chunkwise: warning: embedder name 'minilm-torch' is deprecated") == 1
    assert "--embedder minilm --embedder-backend torch" in err
    assert rc in (0, 2)  # 2 without the torch extra, with the usual one-line error
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    out = capsys.readouterr().out
    assert "--embedder-backend {onnx,torch}" in out and "minilm-torch" not in out.replace("--embedder minilm-torch", "")


# -- eval: --embed-window -> --model-window -----------------------------------------------------------------
def test_eval_model_window_flag_and_hidden_old_flag(monkeypatch, capsys):
    from chunkwise.cli.evaluate import _embedder

    seen = []
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name, **kw: seen.append(kw) or FakeEmbedder())
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _embedder(build_parser().parse_args(["eval", "DATA", "--model-window", "254"]))
    with pytest.warns(DeprecationWarning, match="--embed-window is deprecated, use --model-window"):
        args = build_parser().parse_args(["eval", "DATA", "--embed-window", "256"])
    _embedder(args)
    assert seen[0]["model_window"] == seen[1]["model_window"] == 254
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    assert "--model-window" in out and "--embed-window" not in out
    # on the command line the old flag is one warning line on stderr, once
    assert main(["eval", "missing-folder", "--embed-window", "256"]) == 2
    err = capsys.readouterr().err
    assert err.count("chunkwise: warning: --embed-window is deprecated, use --model-window") == 1


# -- late chunking: window -> late_window -------------------------------------------------------------------
def test_late_window_and_old_window_give_the_same_vectors(no_warnings):
    doc = Document(" ".join(f"w{i}" for i in range(60)))
    chunks = chunks_of(doc, [(0, 40), (40, 120), (120, len(doc.text))])
    emb = FakeEmbedder(model_window=30, tokenizer="words")
    new = late_chunk_vectors(doc, chunks, emb, late_window=20, overlap=4)
    with pytest.warns(DeprecationWarning, match="late chunking: 'window' is deprecated, use 'late_window'"):
        old = late_chunk_vectors(doc, chunks, emb, window=20, overlap=4)
    np.testing.assert_array_equal(new, old)
    with pytest.warns(DeprecationWarning, match="late_window"):
        v_old, s_old = document_token_vectors(doc.text, emb, window=20, overlap=4)
    v_new, s_new = document_token_vectors(doc.text, emb, late_window=20, overlap=4)
    np.testing.assert_array_equal(v_new, v_old) and np.testing.assert_array_equal(s_new, s_old)
    with pytest.raises(ConfigError, match="give late_window only"):
        late_chunk_vectors(doc, chunks, emb, late_window=20, window=20)


def test_index_late_options_old_key_and_old_records():
    with pytest.warns(DeprecationWarning, match="late_options: 'window' is deprecated, use 'late_window'"):
        from chunkwise.deprecation import renamed

        assert renamed({"window": 64, "overlap": 8}, {"window": "late_window"}, "late_options", 2) == {
            "late_window": 64,
            "overlap": 8,
        }
    # a collection recorded before the rename is not "changed" by it
    base = {
        "schema": 1,
        "embedder": {"model_id": "m", "dim": 3},
        "strategy": {"config": "c", "params": {}},
        "vectors": "text",
        "late": True,
        "context": "llm",
    }
    old = {**base, "late_options": {"overlap": 8, "window": 64}, "context_options": {"max_tokens": 50}}
    new = {**base, "late_options": {"late_window": 64, "overlap": 8}, "context_options": {"answer_tokens": 50}}
    assert Index._differences(old, new) == []
    assert Index._differences({**old, "late_options": {"window": 32}}, new)


def test_cli_index_passes_late_window(monkeypatch, tmp_path):
    from chunkwise.cli import index as cli_index

    seen = {}

    class FakeStore:
        def read_config(self):  # a new collection: the window is checked against the embedder
            return None

    class FakeIndex:
        store = FakeStore()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def add(self, paths, **kw):
            seen.update(kw)
            raise ConfigError("stop here")

        def embedder(self):
            return None

    monkeypatch.setattr(cli_index, "open_index", lambda args: FakeIndex())
    (tmp_path / "a.txt").write_text("Some text.")
    assert main(["index", str(tmp_path), "--db", str(tmp_path / "x.db"), "--late", "--late-window", "64"]) == 2
    assert seen["late_options"]["late_window"] == 64 and "window" not in seen["late_options"]


# -- llm context: max_tokens -> answer_tokens -----------------------------------------------------------------
def test_llm_context_answer_tokens_and_old_max_tokens(no_warnings):
    new = LLMContextualizer(base_url=URL, model="m", cache=False, answer_tokens=50)
    with pytest.warns(DeprecationWarning, match="LLMContextualizer: 'max_tokens' is deprecated, use 'answer_tokens'"):
        old = LLMContextualizer(base_url=URL, model="m", cache=False, max_tokens=50)
    assert new.answer_tokens == old.answer_tokens == 50 and new.prompt_id() == old.prompt_id()
    doc, chunk = Document(TEXT), chunks_of(Document(TEXT), [(0, 30)])[0]
    assert new._payload(doc, chunk) == old._payload(doc, chunk)  # sent as the API's max_tokens either way
    assert new._payload(doc, chunk)["max_tokens"] == 50
    with pytest.warns(DeprecationWarning, match="answer_tokens"):
        assert old.max_tokens == 50
    with pytest.warns(DeprecationWarning, match="context mode 'llm': 'max_tokens' is deprecated"):
        contextualize(doc, [], "llm", base_url=URL, model="m", cache=False, max_tokens=50)
    with pytest.raises(ConfigError, match="valid: .*answer_tokens"):
        contextualize(doc, [], "llm", base_url=URL, model="m", bogus=1)


def test_llm_factory_validates_options(monkeypatch):
    monkeypatch.delenv("CHUNKWISE_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="llm has no option bogus; valid: api_key, context_tokens, answer_tokens"):
        get_llm(bogus=1)
    with pytest.raises(ConfigError, match="llm has no option max_tokens"):
        get_llm(URL, "m", max_tokens=5)
    assert get_llm(answer_tokens=100, embedder=FakeEmbedder()).extractive


def test_other_factories_validate(no_warnings):
    with pytest.raises(ConfigError, match="unknown tokenizer 'nope'"):
        get_tokenizer("nope")
    with pytest.raises(
        ConfigError,
        match=r"^contextualize: mode must be one of 'none', 'headings', 'neighbors', 'llm' or None, got 'nope'$",
    ):
        contextualize(Document("x"), [], "nope")
    with pytest.raises(ConfigError, match="no option window; valid: neighbors"):
        contextualize(Document("x"), [], "neighbors", window=3)


# -- semantic strategy: window -> buffer_vectors --------------------------------------------------------------
def test_semantic_buffer_vectors_and_old_window(no_warnings):
    emb = FakeEmbedder()
    new = get_strategy("semantic", embedder=emb, buffer_size=1, buffer_vectors="text", max_tokens=40)
    with pytest.warns(DeprecationWarning, match="strategy 'semantic': 'window' is deprecated, use 'buffer_vectors'"):
        old = get_strategy("semantic", embedder=emb, buffer_size=1, window="text", max_tokens=40)
    with pytest.warns(DeprecationWarning, match="buffer_vectors"):
        direct = SemanticChunker(embedder=emb, buffer_size=1, window="text", max_tokens=40)
    doc = Document(TEXT)
    spans = [(c.start, c.end, c.id) for c in new.chunk(doc)]
    assert (
        spans == [(c.start, c.end, c.id) for c in old.chunk(doc)] == [(c.start, c.end, c.id) for c in direct.chunk(doc)]
    )
    assert "window" not in new.get_params() and new.get_params()["buffer_vectors"] == "text"
    with pytest.raises(ConfigError, match="buffer_vectors"):
        get_strategy("semantic", embedder=emb, buffer_vectors="mean").chunk(doc)
    with pytest.raises(ConfigError, match="give 'buffer_vectors' only"):
        get_strategy("semantic", embedder=emb, buffer_vectors="text", window="text")


def test_semantic_chunk_ids_survive_the_rename(no_warnings):
    """The fingerprint keeps the old parameter names, so indexes built before the renames keep their ids."""
    s = get_strategy("semantic", embedder=FakeEmbedder(), buffer_vectors="text")
    old = {"buffer_vectors": "window", "break_distance": "structure_bonus"}
    params = {}
    for k, v in sorted(s.get_params().items()):
        v = v.name if k == "tokenizer" and hasattr(v, "name") else v
        v = v.model_id if hasattr(v, "model_id") else v
        params[old.get(k, k)] = v
    assert s.config_id() == stable_hash("semantic", params)


def test_strategies_command_shows_new_names(capsys, no_warnings):
    assert main(["strategies", "semantic"]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.strip().startswith("buffer_vectors"))
    assert "pool" in line and "text" in line
    assert not any(row.strip().startswith("window") for row in out.splitlines())
    rc = main(["chunk", "-", "--strategy", "fixed", "--param", "bogus=1"])
    assert rc == 2


def test_chunk_cli_old_semantic_param_warns_once(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda *a, **k: FakeEmbedder())
    (tmp_path / "a.txt").write_text(TEXT)
    assert main(["-q", "chunk", str(tmp_path / "a.txt"), "--strategy", "semantic", "-p", "window=text"]) == 0
    err = capsys.readouterr().err
    assert err.count("'window' is deprecated, use 'buffer_vectors'") == 1
    assert main(["-q", "chunk", str(tmp_path / "a.txt"), "--strategy", "semantic", "-p", "buffer_vectors=text"]) == 0
    assert "deprecated" not in capsys.readouterr().err


def test_embedder_base_class_keeps_one_name():
    assert "max_tokens" not in vars(Embedder) or isinstance(vars(Embedder)["max_tokens"], property)
    assert Embedder.model_window == 0
    assert issubclass(ChunkwiseDeprecationWarning, DeprecationWarning)


def test_every_deprecation_names_its_removal_release(capsys):
    """Old names warn with what replaces them and the release that removes them, in one wording."""
    from chunkwise.deprecation import REMOVED_IN

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        get_strategy("semantic", window=2, embedder=FakeEmbedder())
        FakeEmbedder().max_tokens  # noqa: B018 - the deprecated attribute read is the test
        with pytest.raises(Exception):  # noqa: B017 - any failure after the warning: the name alone is tested
            get_embedder("minilm-torch")
    messages = [str(w.message) for w in caught if issubclass(w.category, ChunkwiseDeprecationWarning)]
    assert len(messages) == 3, messages
    assert all(f"(removed in chunkwise {REMOVED_IN})" in m for m in messages), messages
    assert main(["eval", "x", "--embed-window", "5"]) == 2
    assert f"(removed in chunkwise {REMOVED_IN})" in capsys.readouterr().err
