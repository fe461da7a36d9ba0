"""The default retrieval of `search`, `ask` and the Python API is hybrid (BM25 + vectors, z-score fusion);
`--dense` / ``hybrid=False`` is vector search alone. Chosen by measurement: benchmarks/results/evaluation.md, "Dense or
hybrid" (benchmarks/bench_retrieval.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import chunkwise
from chunkwise.cli import main

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How many people fit in the beer garden?"


@pytest.fixture(scope="module")
def examples_db(tmp_path_factory):
    """examples/ indexed once with the default configuration (real MiniLM), sources as examples/..."""
    db = tmp_path_factory.mktemp("defaults") / "chunkwise.db"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with chunkwise.Index(db=str(db)) as ix:
            ix.add(["examples"])
    finally:
        os.chdir(cwd)
    return str(db)


def cited(answer: dict) -> set[str]:
    """The sources of the passages an answer cites."""
    return {p["source"] for p in answer["passages"] if p["number"] in answer["citations"]}


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    for name in ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


# indexing examples/ with MiniLM takes about 30 s on the shared 2-core machine
@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow
def test_beer_garden_answered_from_the_meeting_by_default(examples_db, capsys):
    """The beer garden is named once, by Tom in the team meeting. With the whole meeting in one chunk,
    vectors alone ranked the bee podcast and the rooftop gardens above it; the default hybrid answer quotes
    the meeting (BM25 finds "beer garden"), and so does the dense one now that ``auto`` cuts the meeting at
    its topic changes."""
    assert main(["ask", QUESTION, "--db", examples_db, "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert "forty people" in answer["answer"]
    assert answer["extractive"] and cited(answer) == {"examples/team-meeting.vtt"}
    assert main(["ask", QUESTION, "--db", examples_db, "--format", "json", "--hybrid"]) == 0  # the old opt-in
    assert json.loads(capsys.readouterr().out)["answer"] == answer["answer"]
    assert main(["ask", QUESTION, "--db", examples_db, "--format", "json", "--dense"]) == 0
    dense = json.loads(capsys.readouterr().out)
    assert cited(dense) == {"examples/team-meeting.vtt"}


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # shares the examples index above
def test_search_cli_and_api_default_is_hybrid_dense_opts_out(examples_db, capsys):
    assert main(["-q", "search", QUESTION, "--db", examples_db, "-k", "5", "--format", "jsonl"]) == 0
    hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(h["bm25_rank"] is not None or h["vector_rank"] is not None for h in hits)
    assert any(h["bm25_rank"] is not None for h in hits)
    meeting = next(h for h in hits if h["source"] == "examples/team-meeting.vtt")
    assert meeting["bm25_rank"] == 1 and "beer garden" in meeting["text"]
    assert main(["-q", "search", QUESTION, "--db", examples_db, "-k", "5", "--format", "jsonl", "--dense"]) == 0
    dense = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(h["bm25_rank"] is None for h in dense) and all(h["vector_rank"] is not None for h in dense)
    with chunkwise.Index(db=examples_db) as ix:
        api = ix.search(QUESTION, k=5)
        assert [h.id for h in api] == [h["id"] for h in hits]
        assert [h.id for h in ix.search(QUESTION, k=5, hybrid=False)] == [h["id"] for h in dense]
        assert "forty people" in ix.ask(QUESTION).text


def test_web_search_default_is_hybrid(tmp_path):
    """`chunkwise serve`'s /search retrieves as `chunkwise search` does unless the request says
    ``"hybrid": false``."""
    pytest.importorskip("fastapi")
    from conftest import FakeEmbedder
    from fastapi.testclient import TestClient

    from chunkwise.viz.app import create_app

    fake = FakeEmbedder()
    db = tmp_path / "s.db"
    with chunkwise.Index(db, embedder=fake) as ix:
        ix.add(
            [chunkwise.Document("The pump needs a new seal.\n\nLunch is at noon.", source="<t>")],
            strategy="sentence",
            params={"max_tokens": 8, "tokenizer": "words"},
        )
    with TestClient(create_app(str(db), embedder=fake), base_url="http://127.0.0.1") as client:
        default = client.post("/search", json={"query": "new seal", "k": 2}).json()["results"]
        dense = client.post("/search", json={"query": "new seal", "k": 2, "hybrid": False}).json()["results"]
    assert default[0]["bm25_rank"] == 1 and "seal" in default[0]["text"]
    assert all(h["bm25_rank"] is None for h in dense)
