"""The four "how to add" recipes of docs/ARCHITECTURE.md, each done here: a strategy, an embedder, an input
format and a store, all used through the same paths the CLI and ``Index`` use."""

from __future__ import annotations

import numpy as np
import pytest

from chunkwise.document import Document
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.formats import load, register_format
from chunkwise.retrieval import Index
from chunkwise.segmentation.tokens import get_tokenizer
from chunkwise.store import Hit, Store
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
    assert all(doc.text[c.start:c.end] == c.text and c.strategy == "lines" for c in chunks)
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
    return Document("\n".join(v.strip() for _, v in pairs), source=source,
                    metadata={"keys": [k.strip() for k, _ in pairs]})


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


# -- a store: implement the Store protocol; Index runs the crash-safe write sequence over it ----------------
class MemoryStore:
    """Everything in dicts; exact cosine and a word-overlap "BM25" (enough for a test, not for use)."""

    collection, location, hybrid_note = "memory", "<memory>", None

    def __init__(self):
        self.config, self.rows, self.marks = None, {}, {}

    missing = property(lambda self: self.config is None)

    def read_config(self):
        return self.config

    def create(self, config, dim, replace=False):
        self.config = config
        if replace:
            self.rows.clear()
            self.marks.clear()

    def open(self):
        pass

    def close(self):
        pass

    def markers(self):
        return dict(self.marks)

    def mark(self, markers):
        self.marks.update({m.doc_id: m for m in markers})

    def unmark(self, doc_ids):
        for d in doc_ids:
            self.marks.pop(d, None)

    def upsert(self, items, embedder_id):
        for _doc, chunks, vectors in items:
            self.rows.update({c.id: (c, np.asarray(v)) for c, v in zip(chunks, vectors)})
        return [c.id for _, chunks, _ in items for c in chunks]

    def chunk_ids(self, doc_ids):
        return {d: {i for i, (c, _) in self.rows.items() if c.doc_id == d} for d in doc_ids}

    def chunk_documents(self):
        return {c.doc_id: c.source for c, _ in self.rows.values()}

    def delete_chunks(self, ids):
        ids = [i for i in ids if self.rows.pop(i, None) is not None]
        return len(ids)

    def delete_documents(self, doc_ids):
        self.unmark(doc_ids)
        return self.delete_chunks([i for ids in self.chunk_ids(doc_ids).values() for i in ids])

    def flush(self):
        pass

    def count(self):
        return len(self.rows)

    def fetch(self, ids):
        return [Hit(i, 0.0, self.rows[i][0]) for i in ids if i in self.rows]

    def search_vector(self, vector, limit, filter=None, ids_only=False):
        scored = sorted(((float(v @ vector), i) for i, (_, v) in self.rows.items()), reverse=True)[:limit]
        return [Hit(i, s, None if ids_only else self.rows[i][0]) for s, i in scored]

    def search_text(self, query, limit, filter=None):
        words = set(query.lower().split())
        scored = [(len(words & set(c.embed_text.lower().replace(".", " ").split())), i)
                  for i, (c, _) in self.rows.items()]
        return [Hit(i, float(s)) for s, i in sorted(scored, reverse=True)[:limit] if s > 0]


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
