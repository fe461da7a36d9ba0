"""One vocabulary, checked: parameters listed with meanings, configuration errors found once
before any input, `--run LABEL=FILE.json`, each metric once in the tune leaderboard, validated factories."""

from __future__ import annotations

import json

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.embeddings import get_embedder
from chunkwise.errors import ConfigError
from chunkwise.strategies import STRATEGY_NAMES, strategy_class
from chunkwise.strategies.param_docs import describe
from chunkwise.strategies.params import PARAM_HELP


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda *a, **k: FakeEmbedder())


def test_every_strategy_parameter_has_a_meaning():
    for name in STRATEGY_NAMES:
        for d in describe(strategy_class(name)):
            assert PARAM_HELP.get(d.name), f"{name}.{d.name} has no line in strategies/params.py"


def test_strategies_command_lists_parameters_with_defaults(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n{n} " in "\n" + out for n in STRATEGY_NAMES)
    assert main(["strategies", "cohesion"]) == 0
    out = capsys.readouterr().out
    penalty = next(line for line in out.splitlines() if line.strip().startswith("penalty"))
    assert str(strategy_class("cohesion")().penalty) in penalty and "fewer, larger chunks" in penalty
    assert main(["strategies", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err


def test_chunk_help_shows_strategy_parameters(capsys):
    with pytest.raises(SystemExit):
        main(["chunk", "--help"])
    out = capsys.readouterr().out
    assert "threshold_type=percentile" in out and "penalty=" in out and "chunkwise strategies NAME" in out


def test_configuration_error_is_one_line_and_exit_2_however_many_files(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"{i}.txt").write_text("Some text here.")
    assert main(["chunk", str(tmp_path), "--tokenizer", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("unknown tokenizer") == 1 and err.count("\n") == 1


def test_run_label_equals_json_file(dataset, tmp_path, capsys):  # noqa: F811
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"strategy": "fixed", "params": {"max_tokens": 6, "tokenizer": "words"}}))
    rc = main(["-q", "eval", dataset.path, "--run", f"best={cfg}", "--run", str(cfg), "--format", "json"])
    assert rc == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["name"] for r in runs] == ["best", "cfg"]
    assert runs[0]["config"]["params"] == {"max_tokens": 6, "tokenizer": "words"}
    assert main(["-q", "eval", dataset.path, "--run", f"x={tmp_path / 'missing.json'}"]) == 2
    assert "configuration file not found" in capsys.readouterr().err


def test_tune_leaderboard_names_each_metric_once(dataset, tmp_path, capsys):  # noqa: F811
    rc = main(
        [
            "-q",
            "tune",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--grid",
            "max_tokens=4,8",
            "--metric",
            "recall@5",
            "-o",
            str(tmp_path / "b.json"),
        ]
    )
    assert rc == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "parameters" in line)
    cols = [c.strip().lower() for c in header.split("  ") if c.strip()]
    assert cols.count("recall@5") == 1 and "iou@5" in cols


def test_embedder_factory_validates_like_strategies():
    # ``get_embedder`` here is the real factory (imported before the autouse fixture patches the module)
    with pytest.raises(ConfigError, match="embedder 'minilm' has no parameter bogus; valid: model_window, batch_size"):
        get_embedder("minilm", bogus=1)
    with pytest.raises(ConfigError, match="unknown embedder 'nope'"):
        get_embedder("nope")


def test_search_fusion_flags_need_hybrid(tmp_path, capsys):
    assert main(["search", "q", "--db", str(tmp_path / "x.db"), "--dense", "--fusion", "rrf"]) == 2
    assert "--fusion applies only with hybrid on, and hybrid is off (--dense)" in capsys.readouterr().err
    assert main(["search", "q", "--db", str(tmp_path / "x.db"), "--dense", "--hybrid"]) == 2
    assert "contradict" in capsys.readouterr().err
