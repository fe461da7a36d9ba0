"""Every key a ``tune`` output can hold changes what ``index``, ``search`` and ``ask`` do, as it changed
``eval``: one ``PipelineConfig`` is read, and each of its settings reaches ``Index.add``/``Index.search``.

The CLI tests record the keyword arguments the commands hand to the index (the index itself is a real
one over the test embedder); the API test checks that ``rrf_k`` changes the fused scores exactly as the
evaluation's fusion does with that constant.
"""

from __future__ import annotations

import json

import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

import chunkwise.cli.index as cli_index
from chunkwise.cli import main
from chunkwise.pipeline.config import SETTINGS, PipelineConfig
from chunkwise.retrieval.fusion import reciprocal_rank_fusion
from chunkwise.retrieval.index import Index

#: a non-default value for every setting, as a tune output writes it
TUNED = {
    "hybrid": True,
    "fusion": "rrf",
    "rrf_k": 7,
    "dense_weight": 0.35,
    "vectors": "pool",
    "late": True,
    "late_options": {"late_window": 128},
    "context": "neighbors",
    "context_options": {"neighbors": 1},
    "expand": "neighbors:1",
    "budget": 2000,
    "rerank": "maxsim:0.5",
    "rerank_depth": 50,
    "granularities": [128, 512],
    "sections": False,
}
RETRIEVAL = ("hybrid", "fusion", "rrf_k", "dense_weight", "rerank", "rerank_depth", "sections")


def test_the_tuned_example_covers_every_setting():
    assert set(TUNED) == set(SETTINGS) - {"label"}


def test_index_refuses_an_evaluation_only_setting_in_one_line(tmp_path, capsys):
    """granularities fuses several chunkings in ``eval``; an index holds one, so it is refused, not dropped."""
    (tmp_path / "a.txt").write_text("Some text.")
    assert main(["index", str(tmp_path / "a.txt"), "--config", write(tmp_path, {"granularities": [128, 512]})]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "granularities is an evaluation setting" in err


class Recorder:
    """Stands in for the opened index: records what the command asks of it."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.store = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def search(self, query, **kw):
        self.calls.append(("search", kw))
        return []

    def expand(self, results, mode=None, budget=None):
        self.calls.append(("expand", {"expand": mode, "budget": budget}))
        return []

    def ask(self, question, **kw):
        self.calls.append(("ask", kw))
        raise SystemExit(0)  # what was asked is all this test needs

    def add(self, paths, **kw):
        self.calls.append(("add", kw))
        raise SystemExit(0)


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(cli_index, "open_index", lambda args: rec)
    return rec


def write(tmp_path, run: dict) -> str:
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"strategy": "semantic", "params": {"max_tokens": 64}, "run": run}))
    return str(path)


@pytest.mark.parametrize("key", RETRIEVAL)
@pytest.mark.parametrize("command", ["search", "ask"])
def test_search_and_ask_take_each_retrieval_setting(tmp_path, recorder, command, key):
    value = {"hybrid": False}[key] if key == "hybrid" else TUNED[key]
    run = {"hybrid": True, key: value}
    try:
        main([command, "lamp", "--config", write(tmp_path, run)])
    except SystemExit:
        pass
    [(called, kw)] = recorder.calls
    assert called == command and kw[key] == value, kw
    assert {k: kw[k] for k in RETRIEVAL if k in kw} == PipelineConfig.from_mapping({"run": run}).search_options()


@pytest.mark.parametrize("command", ["search", "ask"])
def test_search_and_ask_take_expand_and_budget(tmp_path, recorder, command):
    path = write(tmp_path, {"expand": TUNED["expand"], "budget": TUNED["budget"]})
    for extra in ([], ["--expand", "section", "--budget", "1k"]):
        try:
            main([command, "lamp", "--config", path, *extra])
        except SystemExit:
            pass
    called = [kw for name, kw in recorder.calls if name == ("expand" if command == "search" else "ask")]
    assert [(kw["expand"], kw["budget"]) for kw in called] == [("neighbors:1", 2000), ("section", 1000)]


def test_flags_override_the_file(tmp_path, recorder):
    main(["search", "lamp", "--config", write(tmp_path, {"fusion": "rrf", "rrf_k": 7}), "--rrf-k", "3"])
    main(["search", "lamp", "--config", write(tmp_path, {"fusion": "rrf", "rrf_k": 7}), "--dense"])
    assert recorder.calls[0][1]["rrf_k"] == 3 and recorder.calls[0][1]["fusion"] == "rrf"
    assert recorder.calls[1][1]["hybrid"] is False


def test_a_bad_config_is_one_line(tmp_path, capsys):
    assert main(["search", "lamp", "--config", write(tmp_path, {"rrf_k": -2})]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rrf_k must be an int in [0, inf)" in err and "tuned.json" in err


@pytest.mark.parametrize("key", ["vectors", "late", "late_options", "context", "context_options"])
def test_index_takes_each_chunking_and_vector_setting(tmp_path, recorder, key):
    run = {key: TUNED[key]}
    if key == "late_options":
        run["late"] = True
    if key == "context_options":
        run["context"] = "neighbors"
    (tmp_path / "a.txt").write_text("Some text.")
    try:
        main(["index", str(tmp_path / "a.txt"), "--config", write(tmp_path, run)])
    except SystemExit:
        pass
    [(called, kw)] = recorder.calls
    want = PipelineConfig.from_mapping({"strategy": "semantic", "run": run}).index_options()
    assert called == "add" and kw[key] == want[key] == TUNED[key], kw
    assert kw["strategy"] == "semantic" and kw["params"] == {"max_tokens": 64}


def test_rrf_k_changes_search_as_it_changes_the_evaluations_fusion(tmp_path):
    """``Index.search(rrf_k=K)`` scores the fused list with the same function and constant ``eval`` uses."""
    with Index(tmp_path / "r.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        query = "lens keepers polish"
        vec = [h.id for h in ix.search(query, k=50, hybrid=False)]
        bm25 = [h.id for h in ix.store.search_text(query, 50)]
        for k in (0, 7, 60):
            got = [(r.id, r.score) for r in ix.search(query, k=4, fusion="rrf", rrf_k=k)]
            want = reciprocal_rank_fusion([vec, bm25], k=k)[:4]
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want])
        first = ix.search(query, k=1, fusion="rrf", rrf_k=0)[0].score
        assert first != ix.search(query, k=1, fusion="rrf", rrf_k=60)[0].score
