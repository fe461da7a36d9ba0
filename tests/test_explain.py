"""strategies.explain: the per-sentence rows behind ``chunkwise inspect`` and the viz report."""

from __future__ import annotations

import json

import pytest
from conftest import FakeEmbedder

from chunkwise.document import Document
from chunkwise.segmentation.sentences import split_sentences
from chunkwise.strategies import get_strategy
from chunkwise.strategies.explain import explain_rows

TEXT = " ".join(f"Sentence number {i} talks about topic {i // 4} at some length." for i in range(24))


@pytest.mark.parametrize("name", ["sentence", "recursive", "fixed"])
def test_rows_of_a_classic_strategy_mark_the_chunk_ends(name):
    strategy = get_strategy(name, max_tokens=40, tokenizer="words")
    doc = Document(TEXT)
    rows = explain_rows(strategy, doc)
    chunks = strategy.chunk(doc)
    assert [(r["start"], r["end"]) for r in rows] == split_sentences(TEXT)
    # a breakpoint after sentence k exactly when some chunk ends between it and the next sentence
    ends = {c.end for c in chunks}
    for k, r in enumerate(rows[:-1]):
        gap = range(r["end"], rows[k + 1]["start"] + 1)
        assert r["breakpoint"] == any(e in gap for e in ends), k
        assert r["cause"] == ("rule" if r["breakpoint"] else None)
    assert rows[-1]["breakpoint"] and rows[-1]["cause"] == "end"
    # chunk numbers start at 0 and step by one after each breakpoint
    assert rows[0]["chunk"] == 0
    for a, b in zip(rows, rows[1:]):
        assert b["chunk"] == a["chunk"] + (1 if a["breakpoint"] else 0)


def test_rows_of_a_semantic_strategy_come_from_its_own_explain():
    strategy = get_strategy("semantic", embedder=FakeEmbedder(), max_tokens=60)
    rows = explain_rows(strategy, Document(TEXT))
    assert any(r["distance_to_next"] is not None for r in rows)
    assert rows[-1]["chunk"] == sum(r["breakpoint"] for r in rows[:-1])


def test_inspect_rows_split_sentences_as_the_strategy_does(tmp_path, capsys):
    """`inspect --strategy sentence -p language=it`: the rows are the strategy's own sentences (Italian "ad es."
    is not a sentence end), not those of the default splitter."""
    from chunkwise.cli import main

    text = "Usa un attrezzo adatto, ad es. Una chiave inglese. Poi chiudi la valvola.\n"
    path = tmp_path / "it.txt"
    path.write_text(text, encoding="utf-8")
    assert (
        main(
            [
                "inspect",
                str(path),
                "--strategy",
                "sentence",
                "-p",
                "max_tokens=10",
                "-p",
                "tokenizer=words",
                "-p",
                "language=it",
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["sentence"] for r in rows] == [
        "Usa un attrezzo adatto, ad es. Una chiave inglese.",
        "Poi chiudi la valvola.",
    ]
    assert [r["breakpoint"] for r in rows] == [True, True]
