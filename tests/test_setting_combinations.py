"""How retrieval settings combine is one declaration (``Setting.requires``), checked by one function
(``check_combinations``) for every front end: ``fusion``/``rrf_k``/``dense_weight`` with hybrid off is the
same refusal, in the same words, from ``Index.search``, a ``--config`` file, ``chunkwise search``, the web
API and an evaluation run. And an int setting is an int everywhere: ``rrf_k: 60.0`` is refused by each.
"""

from __future__ import annotations

import json

import pytest
from conftest import FakeEmbedder

import chunkwise
import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.pipeline.config import SETTINGS, PipelineConfig

pytest.importorskip("fastapi")


def refusal(**given) -> str:
    with pytest.raises(ConfigError) as info:
        PipelineConfig().overridden(("search",), given, "search")
    return info.value.problem


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("combos") / "c.db"
    text = "The pump needs a new seal.\n\nLunch is at noon.\n\nThe seal ships on Monday."
    with chunkwise.Index(path, embedder=FakeEmbedder()) as ix:
        ix.add([chunkwise.Document(text, source="<t>")], strategy="sentence", params={"max_tokens": 8})
    return path


@pytest.fixture(scope="module")
def client(db):
    from fastapi.testclient import TestClient

    from chunkwise.viz.app import create_app

    with TestClient(create_app(str(db), embedder=FakeEmbedder()), base_url="http://127.0.0.1") as c:
        yield c


def cli_refusal(**given) -> str:
    with pytest.raises(ConfigError) as info:
        PipelineConfig().with_settings(flags=True, **given)
    return info.value.problem


def test_the_rule_is_declared_on_the_settings():
    assert {n for n, st in SETTINGS.items() if st.requires == "hybrid"} == {"fusion", "rrf_k", "dense_weight"}
    message = refusal(hybrid=False, fusion="rrf")
    assert message == "fusion applies only with hybrid on, and hybrid is off (hybrid=false): drop one or the other"
    assert "--" not in message  # Python's, a file's and the web API's names, no flag
    assert refusal(hybrid=False, rrf_k=9, dense_weight=0.5).startswith("rrf_k and dense_weight apply")


def test_the_command_line_names_its_flags():
    message = cli_refusal(hybrid=False, rrf_k=9)
    assert message == "--rrf-k applies only with hybrid on, and hybrid is off (--dense): drop one or the other"
    assert cli_refusal(hybrid=False, fusion="rrf", rrf_k=9, dense_weight=0.5).startswith(
        "--fusion, --rrf-k and --dense-weight apply only with hybrid on"
    )


@pytest.mark.parametrize("given", [{"fusion": "rrf"}, {"rrf_k": 9}, {"dense_weight": 0.5}])
def test_every_front_end_refuses_fusion_without_hybrid_in_its_own_words(db, client, tmp_path, capsys, given):
    message = refusal(hybrid=False, **given)
    name = next(iter(given))
    assert message.startswith(f"{name} applies") and "(hybrid=false)" in message
    # the Python API
    with chunkwise.Index(db, embedder=FakeEmbedder()) as ix, pytest.raises(ConfigError) as info:
        ix.search("seal", hybrid=False, **given)
    assert info.value.problem == message
    # the web API: the JSON fields' names
    response = client.post("/search", json={"query": "seal", "hybrid": False, **given})
    assert response.status_code == 400 and response.json()["error"] == message
    response = client.post("/ask", json={"question": "seal?", "hybrid": False, **given})
    assert response.status_code == 400 and response.json()["error"] == message
    # the command line: the flags (or the file's hybrid off with a fusion flag), named as flags
    flag = f"--{name.replace('_', '-')}"
    flagged = f"{flag} applies only with hybrid on, and hybrid is off (--dense): drop one or the other"
    flags = [f"{flag}={value}" for value in given.values()]
    assert main(["search", "seal", "--db", str(db), "--dense", *flags]) == 2
    err = capsys.readouterr().err
    assert flagged in err and f" {name} " not in err
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({"run": {"hybrid": False}}))
    assert main(["search", "seal", "--db", str(db), "--config", str(dense), *flags]) == 2
    assert flagged in capsys.readouterr().err
    # a configuration file that holds both: the file's names
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"run": {"hybrid": False, **given}}))
    with pytest.raises(ConfigError) as info:
        PipelineConfig.load(both)
    assert info.value.problem == message


@pytest.mark.parametrize("name", ["fusion", "rrf_k", "dense_weight"])
def test_a_default_spelled_out_with_hybrid_off_is_no_conflict(db, client, tmp_path, capsys, monkeypatch, name):
    """Code that forwards every setting of a configuration (``hybrid=False, fusion="zscore"``) keeps
    working: only a value other than the default is refused."""
    given = {name: SETTINGS[name].default}  # the declared default, spelled out
    assert PipelineConfig().overridden(("search",), {"hybrid": False, **given}, "search").hybrid is False
    with chunkwise.Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search("seal", k=2, hybrid=False, **given)
        assert hits and all(h.bm25_rank is None for h in hits)
        assert ix.search("seal", k=2, **PipelineConfig(hybrid=False).search_options(), **given)
    response = client.post("/search", json={"query": "seal", "hybrid": False, **given})
    assert response.status_code == 200 and response.json()["results"]
    path = tmp_path / "both.json"
    path.write_text(json.dumps({"run": {"hybrid": False, **given}}))
    assert PipelineConfig.load(path).hybrid is False
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda *a, **k: FakeEmbedder())
    flags = [f"--{n.replace('_', '-')}={v}" for n, v in given.items()]
    assert main(["search", "seal", "--db", str(db), "--dense", *flags, "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["bm25_rank"] is None for r in rows)


def test_an_evaluation_run_refuses_it_in_the_same_words():
    from chunkwise.evaluation.runner import Evaluator

    spec = PipelineConfig(strategy="fixed", hybrid=False, fusion="rrf")
    with pytest.raises(ConfigError) as info:
        Evaluator._check_run(spec)
    assert info.value.problem == f"{spec.name}: {refusal(hybrid=False, fusion='rrf')}"


def test_turning_hybrid_off_over_a_fused_configuration_searches_by_vectors(db, tmp_path, capsys, monkeypatch):
    """A file's fusion is that file's hybrid search: ``--dense`` (or ``hybrid=False``) over it searches by
    vectors, with the fusion settings back at their defaults, in every front end alike."""
    fused = PipelineConfig(fusion="rrf", rrf_k=9).validate()
    dense = fused.overridden(("search",), {"hybrid": False}, "search")
    assert (dense.hybrid, dense.fusion, dense.rrf_k) == (False, "zscore", 60)
    assert fused.with_settings(hybrid=False) == dense
    with chunkwise.Index(db, embedder=FakeEmbedder()) as ix:
        hits = ix.search("seal", k=2, config=fused, hybrid=False)
    assert hits and all(h.bm25_rank is None for h in hits)  # vectors alone
    path = tmp_path / "fused.json"
    fused.save(path)
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda *a, **k: FakeEmbedder())
    assert main(["search", "seal", "--db", str(db), "--config", str(path), "--dense", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["bm25_rank"] is None for r in rows)


@pytest.mark.parametrize(("name", "value"), [("rrf_k", 60.0), ("rrf_k", True), ("rerank_depth", 5.0)])
def test_an_int_setting_takes_an_int_in_every_front_end(db, client, tmp_path, capsys, name, value):
    with pytest.raises(ConfigError, match=f"{name} must be an int"):
        PipelineConfig().overridden(("search",), {name: value}, "search")
    with chunkwise.Index(db, embedder=FakeEmbedder()) as ix, pytest.raises(ConfigError, match=f"{name} must be"):
        ix.search("seal", **{name: value})
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"run": {name: value}}))
    with pytest.raises(ConfigError, match=f"{name} must be"):
        PipelineConfig.load(path)
    assert client.post("/search", json={"query": "seal", name: value}).status_code == 422
    if value is not True:
        with pytest.raises(SystemExit) as stop:  # the flag's parser refuses it
            main(["search", "seal", "--db", str(db), f"--{name.replace('_', '-')}", str(value)])
        assert stop.value.code == 2 and f"--{name.replace('_', '-')}" in capsys.readouterr().err


def test_a_number_setting_takes_no_boolean_over_http(client):
    assert client.post("/search", json={"query": "seal", "dense_weight": True}).status_code == 422
    assert client.post("/search", json={"query": "seal", "dense_weight": 1}).status_code == 200
    assert client.post("/ask", json={"question": "seal?", "min_score": True}).status_code == 422
    for k in (True, 2.0):  # Index.search refuses both
        assert client.post("/search", json={"query": "seal", "k": k}).status_code == 422


def test_the_web_api_takes_the_values_the_python_api_takes(db, client):
    """No stricter bound over HTTP than the declaration's where the server's resources are not at stake:
    ``rrf_k=0`` is a valid constant in every front end."""
    with chunkwise.Index(db, embedder=FakeEmbedder()) as ix:
        assert ix.search("seal", fusion="rrf", rrf_k=0)
    response = client.post("/search", json={"query": "seal", "fusion": "rrf", "rrf_k": 0})
    assert response.status_code == 200 and response.json()["results"]
    assert client.post("/search", json={"query": "seal", "fusion": "rrf", "rrf_k": -1}).status_code == 400
