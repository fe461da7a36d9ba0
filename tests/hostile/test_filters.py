"""Issue 20, failure 11: a structured filter API that untrusted values cannot escape."""

from __future__ import annotations

import pytest

from chunkwise.document import Document, Page
from chunkwise.errors import ConfigError
from chunkwise.retrieval.filters import build_filter
from chunkwise.retrieval.index import Index

INJECTIONS = ['x" or 1 == 1 or "', "x' or 1 == 1 or '", 'x\\" or id != "', "a\nor true", "%"]


def test_build_filter_quotes_and_validates():
    assert build_filter([("page_start", ">=", 2)]) == "(page_start >= 2)"
    assert build_filter({"doc_id": 'a"b'}) == '(doc_id == "a\\"b")'
    assert (
        build_filter([("speakers", "contains", "Ann"), ("chunk_index", "in", [1, 2])])
        == '(array_contains(speakers, "Ann")) and (chunk_index in [1, 2])'
    )
    for bad in (
        [("vector", "==", 1)],
        [("page_start", "==", "2")],
        [("page_start", "or", 1)],
        [("page_start", ">=", float("nan"))],
        [("source", "like", 3)],
        "page_start > 1",
        [("page_start", ">=", True)],
        [("source", "contains", "x")],
        [("page_start", "in", "12")],
    ):
        with pytest.raises(ConfigError):
            build_filter(bad)


def test_search_where_cannot_be_escaped(tmp_path, fake_embedder):
    docs = []
    for k in range(3):
        text = f"Chapter {k}. The keeper lit the lamp on page one.\n\nOn the next page the keeper slept {k}."
        cut = text.index("On the next")
        docs.append(Document(text, source=f"book{k}.pdf", pages=[Page(1, 0, cut), Page(2, cut, len(text))]))
    with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:
        index.add(docs, strategy="sentence", params={"max_tokens": 16})
        everything = index.search("keeper", k=50)
        assert len(everything) >= 6
        later = index.search("keeper", k=50, where=[("page_start", ">=", 2)])
        assert later and all(r.page_start >= 2 for r in later)
        one = index.search("keeper", k=50, where=[("source", "==", "book1.pdf")], hybrid=True)
        assert one and {r.source for r in one} == {"book1.pdf"}
        for value in INJECTIONS:
            assert index.search("keeper", k=50, where=[("source", "==", value)]) == []
        # the raw expression is trusted input: it is passed as it is (documented)
        assert len(index.search("keeper", k=50, filter='source == "nope" or 1 == 1')) == len(everything)
        both = index.search("keeper", k=50, filter='source != "book0.pdf"', where={"page_start": 1})
        assert both and all(r.source != "book0.pdf" and r.page_start == 1 for r in both)
