"""The four "how to add" recipes of docs/ARCHITECTURE.md, each done here: a strategy, an embedder, an input
format and a store, all used through the same paths the CLI and ``Index`` use."""

from __future__ import annotations

import numpy as np
import pytest

from chunkwise.document import Document
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.formats import load, register_format
from chunkwise.retrieval import Index
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.store import Store
from chunkwise.store.memory import MemoryStore
from chunkwise.strategies.base import Strategy

TEXT = "Bees make honey.\nThe queen lays eggs.\nLamps need oil.\nOil lamps smoke."


# -- a strategy: subclass Strategy, implement split() over one region ---------------------------------------
class LineChunker(Strategy):
    """One chunk per non-empty line (build_chunks caps, counts and ids them)."""

    name = "lines"
    apply_rules = False  # one chunk per line, even a tiny one (the shared rules would merge it)

    def split(self, doc, start, end, tokenizer):
        spans, pos = [], start
        for line in doc.text[start:end].split("\n"):
            a = doc.text.index(line, pos)
            pos = a + len(line)
            if line.strip():
                spans.append((a, pos))
        return spans


def test_a_new_strategy_chunks_exactly_and_indexes(tmp_path):
    doc = Document(TEXT, source="t.txt")
    chunks = LineChunker(max_tokens=50, tokenizer="words").chunk(doc)
    assert [c.text for c in chunks] == TEXT.split("\n")
    assert all(doc.text[c.start : c.end] == c.text and c.strategy == "lines" for c in chunks)
    with Index(store=MemoryStore(), embedder=WordEmbedder()) as ix:
        report = ix.add([doc], strategy=LineChunker(max_tokens=50, tokenizer="words"))
        assert report.chunks == 4 and ix.config["strategy"]["name"] == "lines"


# -- an embedder: subclass Embedder with dim, model_id, model_window, tokenizer and embed() --------------------
class WordEmbedder(Embedder):
    """Hashed bag of words, L2-normalised: texts that share words are similar."""

    dim, model_id, model_window = 32, "toy-words-32", 256

    @property
    def tokenizer(self):
        return get_tokenizer("words")

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace(".", " ").split():
                out[i, sum(map(ord, w)) % self.dim] += 1.0
            out[i, 0] += 1e-3
        return l2_normalize(out)


def test_a_new_embedder_drives_a_semantic_strategy_and_the_index():
    from chunkwise.strategies.factory import make_strategy

    semantic = make_strategy("semantic", {"max_tokens": 20, "tokenizer": "words"}, WordEmbedder())
    assert isinstance(semantic.embedder, WordEmbedder)
    doc = Document("Bees make honey. Bees love honey. Lamps burn oil. Oil lamps smoke.")
    assert "".join(c.text for c in semantic.chunk(doc)).replace(" ", "") == doc.text.replace(" ", "")
    with Index(store=MemoryStore(), embedder=WordEmbedder()) as ix:
        ix.add([doc], strategy="sentence", params={"max_tokens": 8, "tokenizer": "words"})
        assert ix.config["embedder"]["model_id"] == "toy-words-32"
        assert "Lamps" in ix.search("lamps oil", k=1)[0].text


# -- a format: a loader bytes -> Document, registered with its extensions -----------------------------------
def load_keyvalue(data: bytes, source: str, **options) -> Document:
    """``key: value`` lines; the text is the values, one per line, with the keys as metadata."""
    pairs = [line.split(":", 1) for line in data.decode("utf-8").splitlines() if ":" in line]
    return Document(
        "\n".join(v.strip() for _, v in pairs), source=source, metadata={"keys": [k.strip() for k, _ in pairs]}
    )


def test_a_new_format_is_detected_by_extension_and_indexed(tmp_path):
    register_format("keyvalue", load_keyvalue, extensions=[".kv"])
    path = tmp_path / "notes.kv"
    path.write_text("a: Bees make honey.\nb: Lamps need oil.\n", encoding="utf-8")
    doc = load(path)
    assert doc.text == "Bees make honey.\nLamps need oil." and doc.metadata["keys"] == ["a", "b"]
    with Index(store=MemoryStore(), embedder=WordEmbedder()) as ix:
        report = ix.add([str(path)], strategy=LineChunker(max_tokens=50, tokenizer="words"))
        assert report.indexed == 1 and report.chunks == 2
    with pytest.raises(Exception, match="built-in"):
        register_format("text", load_keyvalue)


# -- a store: implement the Store protocol (chunkwise.store.memory.MemoryStore is the worked example);
# Index runs the crash-safe write sequence over it ---------------------------------------------------
def test_a_new_store_serves_add_search_hybrid_and_delete():
    store = MemoryStore()
    assert isinstance(store, Store)
    doc = Document(TEXT, source="kb.txt")
    with Index(store=store, embedder=WordEmbedder()) as ix:
        assert ix.add([doc], strategy=LineChunker(max_tokens=50, tokenizer="words")).chunks == 4
        assert ix.add([doc], strategy=LineChunker(max_tokens=50, tokenizer="words")).skipped == 1
        hit = ix.search("queen eggs", k=2)[0]
        assert hit.text == "The queen lays eggs." and hit.chunk_index == 1 and hit.rank == 1
        assert hit.to_dict()["chunk_index"] == 1 and hit.to_dict()["text"] == hit.chunk.text
        fused = ix.search("oil lamps", k=2, hybrid=True)
        assert {h.text for h in fused} == {"Lamps need oil.", "Oil lamps smoke."}
        assert all(h.vector_rank and h.bm25_rank for h in fused)
        assert ix.delete("kb.txt") == 4 and ix.count() == 0
