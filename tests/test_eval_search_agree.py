"""``chunkwise eval`` ranks with the function ``Index.search`` ranks with: for the same configuration and the
same chunks, the evaluation's top chunks are the search's results, the section-first pass included, and
``sections=false`` turns it off in both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from eval_data import write_neutral

from chunkwise import Index
from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec
from chunkwise.store.memory import MemoryStore

CHANGELOG = Path(__file__).parent / "data" / "changelog" / "httpx-CHANGELOG.md"
CHUNKING = "markdown:max_tokens=48,tokenizer=words"
CONFIGS = ["", ",sections=false", ",hybrid=false", ",hybrid=false,sections=false", ",fusion=rrf"]


def _versions(text: str) -> dict[str, tuple[int, int]]:
    heads = [(m.group(1), m.start()) for m in re.finditer(r"^## (\d+\.\d+\.\d+)", text, re.M)]
    return {v: (a, heads[n + 1][1] if n + 1 < len(heads) else len(text)) for n, (v, a) in enumerate(heads)}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    text = CHANGELOG.read_text(encoding="utf-8")
    queries = [
        {"query": f"What was fixed in httpx {v}?", "references": [{"doc": "httpx.md", "start": a, "end": b}]}
        for v, (a, b) in _versions(text).items()
    ]
    queries.append({"query": "proxy support and timeouts", "references": ["httpx.md"]})  # no key
    root = write_neutral(tmp_path_factory.mktemp("agree"), queries, docs={"httpx.md": text})
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    spec = parse_run_spec(CHUNKING)
    index.add([str(root / "docs" / "httpx.md")], strategy=spec.strategy, params=dict(spec.params))
    yield load_dataset(str(root)), index
    index.close()


def _eval_top(dataset, spec, k):
    ev = Evaluator(dataset, FakeEmbedder(), k=k)
    chunks, deep, *_ = ev._retrieve(spec, ev.query_vectors())
    return [[(chunks[i].start, chunks[i].end) for i in row[:k]] for row in deep]


@pytest.mark.parametrize("config", CONFIGS)
def test_eval_ranks_as_search_does(setup, config):
    dataset, index = setup
    spec = parse_run_spec(CHUNKING + config)
    k = 5
    got = _eval_top(dataset, spec, k)
    for qi, q in enumerate(dataset.queries):
        want = [(h.start, h.end) for h in index.search(q.text, k=k, **spec.search_options())]
        assert got[qi] == want, (config, q.text)


def test_the_section_pass_is_measured_and_can_be_switched_off(setup):
    dataset, _ = setup
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    on = ev.run(parse_run_spec(CHUNKING))
    off = ev.run(parse_run_spec(CHUNKING + ",sections=false"))
    assert on.spec.sections and not off.spec.sections and off.name.endswith("no-sections")
    keyed = slice(0, len(dataset.queries) - 1)  # the version questions
    assert on.per_query["recall@5"][keyed].mean() > off.per_query["recall@5"][keyed].mean()
    assert on.per_query["recall@5"][-1] == off.per_query["recall@5"][-1]  # no key: the same ranking
    assert off.spec.to_mapping()["run"]["sections"] is False and "sections" not in on.spec.to_mapping()["run"]


def test_tune_can_choose_the_section_pass(setup, tmp_path):
    from chunkwise.evaluation import tune

    dataset, _ = setup
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    grid = {"sections": [False, True]}
    res = tune(ev, "markdown", grid, metric="recall@5", fixed={"max_tokens": 48, "tokenizer": "words"}, baseline=False)
    by_value = {row.params["sections"]: row.score for row in res.rows}
    assert by_value[True] > by_value[False]
    assert res.best.params["sections"] is True and "sections" not in res.best_config()["run"]  # the default
    off = tune(ev, "markdown", {"sections": [False]}, fixed={"max_tokens": 48, "tokenizer": "words"}, baseline=False)
    assert off.best_config()["run"]["sections"] is False  # written out when it differs from the default


def test_eval_cli_no_sections_flag(setup, tmp_path, monkeypatch, capsys):
    import json

    import chunkwise.embeddings
    from chunkwise.cli import main

    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    dataset, _ = setup
    scores = {}
    for flags in ([], ["--no-sections"]):
        out = tmp_path / f"r{len(flags)}.json"
        argv = ["eval", dataset.path, "--strategy", "markdown", "--max-tokens", "48", "--tokenizer", "words"]
        assert main([*argv, *flags, "-o", str(out), "-q"]) == 0, capsys.readouterr().err
        (run,) = json.loads(out.read_text())["runs"]
        assert run["name"].endswith("no-sections") == bool(flags)
        scores[bool(flags)] = run["scores"]["recall@5"]
    assert scores[False] > scores[True]
