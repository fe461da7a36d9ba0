"""chunk_many: one embedding stream for many documents, identical to chunking them one by one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.embeddings.vectors import embed_stream_sorted
from chunkwise.errors import InputError
from chunkwise.strategies import get_strategy
from chunkwise.strategies.many import chunk_documents, chunk_many

SEMANTIC = ("semantic", "maxmin", "cohesion")
TEXTS = [
    "Cats purr when they are happy. Cats sleep most of the day. A cat grooms its fur.\n\n"
    "Rockets need fuel to reach orbit. Orbit is reached at high speed. Fuel is heavy.",
    "One sentence only.",
    "",
    "Der Hund bellt laut. Die Katze schläft auf dem Sofa. Rockets need fuel.",
    "Cats purr when they are happy. Cats purr when they are happy.",  # a repeated sentence (deduplicated)
    "# Title\n\nA paragraph under a heading. Another sentence here.\n\n## Sub\n\nMore text follows now.",
]


def dicts(chunks):
    return [c.to_dict() for c in chunks]


@pytest.mark.parametrize("name", SEMANTIC)
def test_chunk_many_is_identical_to_chunk(name):
    emb = FakeEmbedder()
    strategy = get_strategy(name, embedder=emb, max_tokens=12, min_tokens=2)
    one = [strategy.chunk(Document(t, source=f"d{i}")) for i, t in enumerate(TEXTS)]
    many = strategy.chunk_many([Document(t, source=f"d{i}") for i, t in enumerate(TEXTS)])
    assert [dicts(c) for c in many] == [dicts(c) for c in one]
    for a, b in zip(one, many):
        for x, y in zip(a, b):
            assert np.allclose(x.sentence_vectors, y.sentence_vectors)
            assert x.sentence_spans == y.sentence_spans


def test_one_stream_embeds_every_distinct_sentence_once():
    emb = FakeEmbedder()
    strategy = get_strategy("cohesion", embedder=emb)
    docs = [Document(f"Sentence number {i} is here. Shared sentence for all.", source=f"d{i}") for i in range(50)]
    strategy.chunk_many(docs)
    sent = [t for call in emb.calls for t in call]
    assert len(sent) == len(set(sent)) == 51  # 50 distinct + the shared one, once
    assert len(emb.calls) == 1  # one slice: not one call per document


def test_embed_stream_sorted_keeps_order_and_batches_by_length():
    emb = FakeEmbedder()
    texts = [("word " * (i % 7 + 1)) + str(i) for i in range(2500)]
    out = embed_stream_sorted(emb, texts)
    assert np.allclose(out, emb.embed(texts))
    slices = emb.calls[:-1]
    assert len(slices) == 3
    # longest first: every slice's texts are no longer than the shortest of the slice before it
    assert all(max(map(len, b)) <= min(map(len, a)) for a, b in zip(slices, slices[1:]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from("ab .\n\u00e9\u4e2d!?"), max_size=120), max_size=6))
def test_chunk_many_matches_chunk_on_hostile_text(texts):
    strategy = get_strategy("cohesion", embedder=FakeEmbedder(), max_tokens=8)
    many = strategy.chunk_many(texts)
    assert [dicts(c) for c in many] == [dicts(strategy.chunk(t)) for t in texts]
    for t, chunks in zip(texts, many):
        for c in chunks:
            assert t[c.start : c.end] == c.text and c.token_count <= 8


def test_bad_inputs_no_crash():
    """A document in a script no model reads, one sentence, and 10,000 one-word sentences."""
    strategy = get_strategy("semantic", embedder=FakeEmbedder(), max_tokens=64)
    cuneiform = "\U00012000\U00012001\U00012002 \U00012003\U00012004. \U00012005\U00012006."
    words = " ".join(f"Word{i}." for i in range(10_000))
    out = strategy.chunk_many([cuneiform, "Alone.", words])
    assert "".join(c.text for c in out[0]).replace(" ", "") == cuneiform.replace(" ", "")
    assert [c.text for c in out[1]] == ["Alone."]
    assert all(c.token_count <= 64 for c in out[2])
    assert sum(len(c.text.split()) for c in out[2]) == 10_000  # nothing lost


def test_failure_in_one_document_is_isolated(monkeypatch):
    strategy = get_strategy("semantic", embedder=FakeEmbedder())
    real = strategy.plan

    def plan(doc, *a, **kw):
        if doc.source == "bad":
            raise InputError("cannot read this", source="bad")
        return real(doc, *a, **kw)

    monkeypatch.setattr(strategy, "plan", plan)
    docs = [Document("Fine text here.", source="ok"), Document("x", source="bad"), Document("More text.", source="ok2")]
    out = chunk_many(strategy, docs, return_exceptions=True)
    assert isinstance(out[1], InputError) and [c.text for c in out[2]] == ["More text."]
    with pytest.raises(InputError):
        chunk_many(strategy, docs)


def test_chunk_documents_keeps_order_and_passes_errors_through():
    strategy = get_strategy("cohesion", embedder=FakeEmbedder())
    err = InputError("unreadable", source="b.pdf")
    items = [("a", Document("First doc. Two.")), ("b.pdf", err), ("c", Document("Third doc."))]
    out = list(chunk_documents(strategy, items, group_chars=5))
    assert [s for s, _, _ in out] == ["a", "b.pdf", "c"]
    assert out[1][2] is None and out[1][1] is err
    assert [c.text for c in out[2][2]] == ["Third doc."]
    plain = list(chunk_documents(get_strategy("recursive"), items))  # strategies without an embedding pass
    assert [c.text for c in plain[2][2]] == ["Third doc."]


def test_cli_chunk_folder_streams_once(capsys, monkeypatch, tmp_path):
    import chunkwise.embeddings as embeddings
    from chunkwise.cli import main

    fake = FakeEmbedder()
    monkeypatch.setattr(embeddings, "embedder_from_args", lambda args, **kw: fake)
    for i in range(20):
        (tmp_path / f"d{i:02d}.txt").write_text(f"Document {i} talks about cats. Cats purr. Dogs bark {i}.\n")
    code = main(["chunk", str(tmp_path), "--strategy", "cohesion", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["source"].rsplit("/", 1)[-1] for r in rows} == {f"d{i:02d}.txt" for i in range(20)}
    assert len(fake.calls) == 1  # one embedding stream for the folder
    assert err == ""  # -q: no bars, and English text: no language warning
