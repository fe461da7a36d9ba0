"""`chunkwise serve` takes the second retrieval stage like `chunkwise search` (so `search --server` with
`--rerank` retrieves as the local command does), and refuses a reranker that names a file on the server."""

from __future__ import annotations

import pytest
from conftest import FakeEmbedder

import chunkwise

pytest.importorskip("fastapi")


@pytest.fixture
def client(tmp_path):
    from fastapi.testclient import TestClient

    from chunkwise.viz.app import create_app

    fake = FakeEmbedder()
    db = tmp_path / "s.db"
    text = "The pump needs a new seal.\n\nLunch is at noon.\n\nThe seal ships on Monday."
    with chunkwise.Index(db, embedder=fake) as ix:
        ix.add([chunkwise.Document(text, source="<t>")], strategy="sentence", params={"max_tokens": 8})
    with TestClient(create_app(str(db), embedder=fake), base_url="http://127.0.0.1") as c:
        yield c


def test_search_reranks_with_the_requested_stage(client, monkeypatch):
    from chunkwise.retrieval import rerank

    calls = []

    def reverse(query, results, spec, *, embedder, k):
        calls.append((query, spec, len(results), k))
        return [r.__class__(**{**r.__dict__, "rank": i + 1}) for i, r in enumerate(reversed(results[:k]))]

    plain = client.post("/search", json={"query": "new seal", "k": 2}).json()["results"]
    monkeypatch.setattr(rerank, "rerank_results", reverse)
    body = {"query": "new seal", "k": 2, "rerank": "maxsim", "rerank_depth": 3}
    reranked = client.post("/search", json=body).json()["results"]
    assert calls == [("new seal", "maxsim", 3, 2)]  # the depth's candidates went to the stage
    assert [r["text"] for r in reranked] == [r["text"] for r in reversed(plain)]
    assert [r["rank"] for r in reranked] == [1, 2]


def test_a_reranker_naming_a_file_is_refused(client):
    response = client.post("/search", json={"query": "seal", "rerank": "cross:/etc/models/ce"})
    assert response.status_code == 400 and "names a file" in response.json()["error"]


@pytest.mark.parametrize("body", [{"rerank_depth": 0}, {"rerank_depth": 101}, {"rerank": "x" * 101}])
def test_rerank_fields_are_bounded(client, body):
    assert client.post("/search", json={"query": "seal", **body}).status_code == 422


def test_a_bad_spec_is_one_clear_error(client):
    response = client.post("/search", json={"query": "seal", "rerank": "bogus"})
    assert response.status_code == 400 and "rerank must be one of" in response.json()["error"]


def test_the_section_pass_can_be_turned_off_over_http(client, monkeypatch):
    """``search --no-sections --server`` sends ``sections: false``; the server searches without the pass."""
    from chunkwise.retrieval import index as index_module

    seen = []
    original = index_module.Index.search

    def spy(self, query, **kw):
        seen.append(kw.get("sections", True))
        return original(self, query, **kw)

    monkeypatch.setattr(index_module.Index, "search", spy)
    for body, want in (({}, True), ({"sections": False}, False), ({"sections": True}, True)):
        assert client.post("/search", json={"query": "seal 200ms", **body}).status_code == 200
        assert seen[-1] is want
    assert client.post("/search", json={"query": "seal", "sections": "maybe"}).status_code == 422
