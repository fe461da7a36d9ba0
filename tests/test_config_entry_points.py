"""``Index.add``/``search``/``ask`` take a :class:`PipelineConfig`; their keyword arguments are sugar over it (one
path: keywords -> ``PipelineConfig.overridden`` -> the work). Every retrieval setting declared in
``PipelineConfig`` is accepted by ``Index.search``, ``chunkwise search``, ``chunkwise eval`` (down to the
ranking the evaluator runs), ``tune --grid`` and the web API's ``/search`` body, and the command line's setting
flags take their name, default and help from the one declaration."""

from __future__ import annotations

import argparse

import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

import chunkwise.retrieval.index as index_module
from chunkwise.cli import build_parser, main
from chunkwise.errors import ConfigError
from chunkwise.pipeline.config import SETTINGS, PipelineConfig, stage_names
from chunkwise.retrieval import Index

#: a valid value other than the default for every retrieval setting (stage "search"): a setting added to
#: PipelineConfig gets one here, and the tests below then prove Index.search, search, eval, tune and the web
#: API take it
SAMPLES = {
    "hybrid": False,
    "fusion": "rrf",
    "rrf_k": 7,
    "dense_weight": 0.5,
    "sections": False,
    "rerank": "maxsim:0.5",
    "rerank_depth": 12,
}


def test_every_retrieval_setting_has_a_sample():
    assert set(SAMPLES) == set(stage_names("search"))
    for name, value in SAMPLES.items():
        assert value != SETTINGS[name].default, name


@pytest.fixture
def index(tmp_path):
    ix = Index(tmp_path / "t.db", embedder=FakeEmbedder())
    ix.add(docs(), strategy=lines())
    yield ix
    ix.close()


@pytest.fixture
def seen(monkeypatch):
    """The configurations ``Index.search``/``ask`` ran with; the second stage is a pass-through."""
    runs: list[PipelineConfig] = []
    real = index_module.run_config

    def recording(*args, **kwargs):
        runs.append(real(*args, **kwargs))
        return runs[-1]

    monkeypatch.setattr(index_module, "run_config", recording)
    from chunkwise.retrieval import rerank

    monkeypatch.setattr(rerank, "rerank_results", lambda query, results, spec, embedder=None, k=5: results[:k])
    return runs


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_index_search_takes_every_retrieval_setting_as_keyword_and_in_a_config(index, seen, name):
    value = SAMPLES[name]
    by_keyword = index.search("the queen lays eggs", k=9, **{name: value})
    assert getattr(seen[-1], name) == value
    by_config = index.search("the queen lays eggs", k=9, config=PipelineConfig(**{name: value}))
    assert getattr(seen[-1], name) == value
    assert _scored(by_keyword) == _scored(by_config)  # the same hits (equal scores may come in either order)


def _scored(hits) -> list[tuple[str, float]]:
    return sorted((h.id, round(h.score, 6)) for h in hits)


def test_keywords_override_the_config_and_change_the_ranking(index):
    q = "queen eggs summer"
    dense = index.search(q, k=9, hybrid=False)
    hybrid = index.search(q, k=9)
    assert _scored(dense) != _scored(hybrid)
    assert _scored(index.search(q, k=9, config=PipelineConfig(hybrid=False))) == _scored(dense)
    assert _scored(index.search(q, k=9, config=PipelineConfig(hybrid=False), hybrid=True)) == _scored(hybrid)
    rrf = index.search(q, k=9, config=PipelineConfig(fusion="rrf", rrf_k=1))
    assert _scored(rrf) == _scored(index.search(q, k=9, fusion="rrf", rrf_k=1)) != _scored(hybrid)


def test_a_bad_setting_is_one_config_error_and_an_unknown_keyword_a_type_error(index):
    with pytest.raises(ConfigError, match="dense_weight must be a number in"):
        index.search("bees", dense_weight=2)
    with pytest.raises(ConfigError, match="fusion must be one of"):
        index.search("bees", config=PipelineConfig(fusion="max"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'vectors'.*hybrid, fusion"):
        index.search("bees", vectors="pool")  # an index setting, not a retrieval one
    with pytest.raises(ConfigError, match="config must be a PipelineConfig"):
        index.search("bees", config={"hybrid": False})


def test_ask_takes_the_config_and_its_expand_settings(index, seen):
    answer = index.ask("who lays eggs?", k=2, config=PipelineConfig(hybrid=False, expand="neighbors:1"), budget="2k")
    asked, searched = seen  # ask's configuration, then the search it made
    assert (asked.hybrid, asked.expand, asked.budget) == (False, "neighbors:1", 2000)
    assert searched.hybrid is False
    assert answer.text


def test_add_takes_a_config_and_keywords_are_the_same_run(tmp_path):
    config = PipelineConfig(strategy="fixed", params={"max_tokens": 8, "tokenizer": "words"}, context="headings")
    with Index(tmp_path / "a.db", embedder=FakeEmbedder()) as a:
        a.add(docs(), config=config)
        recorded_a, rows_a = a.config, sorted((m.doc_id, m.chunks) for m in a.documents())
    with Index(tmp_path / "b.db", embedder=FakeEmbedder()) as b:
        b.add(docs(), "fixed", params={"max_tokens": 8, "tokenizer": "words"}, context="headings")
        recorded_b, rows_b = b.config, sorted((m.doc_id, m.chunks) for m in b.documents())
    assert recorded_a == recorded_b and recorded_a["context"] == "headings"
    assert recorded_a["strategy"]["params"]["max_tokens"] == 8
    assert rows_a == rows_b and rows_a
    with Index(tmp_path / "c.db", embedder=FakeEmbedder()) as c:  # another strategy: the config's params stay out
        c.add(docs(), config=PipelineConfig(strategy="semantic", params={"buffer_size": 1}), strategy="sentence")
        assert c.config["strategy"]["name"] == "sentence" and "buffer_size" not in c.config["strategy"]["params"]
    with Index(tmp_path / "a.db", embedder=FakeEmbedder()) as again:  # a keyword overrides the config
        with pytest.raises(ConfigError, match=r"context='headings' \(now None\)"):
            again.add(docs(), config=config, context=None)
        with pytest.raises(ConfigError, match="granularities is an evaluation setting"):
            again.add(docs(), config=PipelineConfig(granularities=[64, 128]))


# -- the command line ------------------------------------------------------------------------------------
def _actions(command: str) -> dict[str, argparse.Action]:
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return {a.dest: a for a in sub._actions}


@pytest.mark.parametrize("command", ["index", "search", "ask", "eval", "tune"])
def test_setting_flags_take_name_default_and_help_from_the_declaration(command):
    actions = _actions(command)
    # eval's --expand is its own (what span recall at a budget reads, default auto), not ask's
    stages = ("index", "search") if command in ("eval", "tune") else ("index", "search", "expand")
    flagged = [name for name in stage_names(*stages) if name in actions]
    assert flagged, command
    for name in flagged:
        st, action = SETTINGS[name], actions[name]
        assert st.flag_name(name) in action.option_strings, name
        assert action.help == st.flag_help(name)
        assert action.default is None  # "not given": a --config file's value stands
        shown = {None: "none", True: "on", False: "off"}.get(st.default, st.default)
        assert f"default: {shown}" in action.help and st.help in action.help


def test_search_and_ask_have_a_flag_for_every_retrieval_setting_and_index_for_its_settings():
    for command in ("search", "ask"):
        assert set(stage_names("search", "expand")) <= set(_actions(command))
    index_flags = {n for n in stage_names("index") if SETTINGS[n].flag_name(n)}
    assert index_flags == {"vectors", "late", "context"} and index_flags <= set(_actions("index"))
    for command in ("eval", "tune"):  # every run of an evaluation retrieves and indexes as these say
        assert set(stage_names("search")) | index_flags <= set(_actions(command)), command


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_cli_search_takes_every_retrieval_setting(tmp_path, monkeypatch, name):
    calls: list[dict] = []

    def fake_search(self, query, k=5, filter=None, **kw):
        calls.append(kw)
        return []

    monkeypatch.setattr(Index, "search", fake_search)
    st, value = SETTINGS[name], SAMPLES[name]
    flag = [st.flag_name(name)] + ([] if isinstance(value, bool) else [str(value)])
    assert main(["search", "bees", "--db", str(tmp_path / "x.db"), *flag]) == 0
    assert calls[-1][name] == value
    assert main(["search", "bees", "--db", str(tmp_path / "x.db")]) == 0
    assert calls[-1][name] == st.default


@pytest.mark.parametrize("command", ["chunk", "index"])
def test_shared_strategy_parameter_flags_take_their_help_from_the_strategies(command):
    from chunkwise.cli.options import SHARED_PARAM_FLAGS
    from chunkwise.strategies.params import PARAM_HELP

    actions = _actions(command)
    for name, _, _ in SHARED_PARAM_FLAGS:
        assert actions[name].help.startswith(PARAM_HELP[name]) and actions[name].default is None, name


def _flag(name: str, value) -> list[str]:
    return [SETTINGS[name].flag_name(name)] + ([] if isinstance(value, bool) else [str(value)])


@pytest.fixture
def ranked(monkeypatch):
    """The configurations the evaluator ranked with (``rank_candidates``, the ranking ``Index.search`` uses);
    the first one stops the run (a :class:`ConfigError`, so ``main`` returns 2)."""
    from chunkwise.retrieval import search

    runs: list[PipelineConfig] = []

    def recording(store, query, qvec, k, filter, run):
        runs.append(run)
        raise ConfigError("ranked")

    monkeypatch.setattr(search, "rank_candidates", recording)
    return runs


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_cli_eval_takes_every_retrieval_setting_to_the_ranking(dataset, ranked, monkeypatch, name):
    import chunkwise.embeddings

    monkeypatch.setattr(chunkwise.embeddings, "embedder_from_args", lambda args, **kw: FakeEmbedder())
    value = SAMPLES[name]
    base = ["-q", "eval", str(dataset.path), "--strategy", "fixed", "--max-tokens", "16", "--bootstrap", "10"]
    assert main([*base, *_flag(name, value)]) == 2
    assert getattr(ranked[-1], name) == value
    assert main(base) == 2
    assert getattr(ranked[-1], name) == SETTINGS[name].default


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_tune_grid_takes_every_retrieval_setting_as_a_fixed_flag(dataset, ranked, monkeypatch, tmp_path, name):
    import chunkwise.embeddings

    monkeypatch.setattr(chunkwise.embeddings, "embedder_from_args", lambda args, **kw: FakeEmbedder())
    value = SAMPLES[name]
    out = tmp_path / "best.json"
    base = ["-q", "tune", str(dataset.path), "--strategy", "fixed", "--grid", "max_tokens=16,32", "-o", str(out)]
    # a point carries the fusion settings of its own fusion (rrf_k with rrf, dense_weight with zscore)
    context = {"rrf_k": ["--fusion", "rrf"]}.get(name, [])
    assert main([*base, "--bootstrap", "10", *context, *_flag(name, value)]) == 2
    assert getattr(ranked[-1], name) == value


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_web_api_search_body_takes_every_retrieval_setting(tmp_path, monkeypatch, name):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from chunkwise.viz.app import create_app

    calls: list[dict] = []
    monkeypatch.setattr(Index, "search", lambda self, query, **kw: calls.append(kw) or [])
    db = tmp_path / "w.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
    with TestClient(create_app(str(db), embedder=FakeEmbedder()), base_url="http://127.0.0.1") as client:
        assert client.post("/search", json={"query": "bees", name: SAMPLES[name]}).status_code == 200
        assert calls[-1][name] == SAMPLES[name]
        assert client.post("/search", json={"query": "bees"}).status_code == 200
        assert name not in calls[-1]  # not given: Index.search's default, the declaration's
        schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]
        assert schema[name]["description"] == SETTINGS[name].field_help()  # true means on, not the switch
        if SETTINGS[name].switch:  # a JSON boolean, not a string that reads like one
            assert client.post("/search", json={"query": "bees", name: "yes"}).status_code == 422
