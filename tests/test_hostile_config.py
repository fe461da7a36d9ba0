"""Hostile configuration is one line, never a traceback: deep or huge JSON, NaN, strings for booleans, an
absurd rerank depth, a tokenizer path that is not a tokenizer."""

from __future__ import annotations

import json

import pytest

from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.pipeline.config import PipelineConfig
from chunkwise.security import MAX_CONFIG_DEPTH, loads_bounded


def _one_line_error(capsys, argv, *needles):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("chunkwise: error:"), err
    for n in needles:
        assert n in err, err
    return err


@pytest.fixture
def text(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("Hello there. A second sentence.\n", encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("command", ["chunk", "tune"])
def test_a_100000_deep_config_is_one_line(tmp_path, capsys, text, command):
    deep = tmp_path / "deep.json"
    deep.write_text('{"run":' * 100_000 + "1" + "}" * 100_000, encoding="utf-8")
    extra = ["--grid", "max_tokens=32,64"] if command == "tune" else []
    _one_line_error(capsys, [command, text, "--config", str(deep), *extra], "deep.json", "levels deep")


def test_a_huge_config_is_refused_before_it_is_read(tmp_path, capsys, text):
    big = tmp_path / "big.json"
    big.write_text('{"params": {"x": "' + "a" * (2 << 20) + '"}}', encoding="utf-8")
    _one_line_error(capsys, ["chunk", text, "--config", str(big)], "big.json", "at most")


@pytest.mark.parametrize(
    "run, needle",
    [
        ({"hybrid": "yes"}, "hybrid must be true or false"),
        ({"rerank_depth": 1_000_000_000}, "rerank_depth must be an int in [1, 1000]"),
        ({"rerank_depth": 1e9}, "rerank_depth must be"),
    ],
)
def test_search_config_settings_are_checked(tmp_path, capsys, run, needle):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"run": run}), encoding="utf-8")
    _one_line_error(capsys, ["search", "q", "--db", str(tmp_path / "x.db"), "--config", str(cfg)], needle, "c.json")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_strategy_parameters_are_refused(tmp_path, capsys, text, value):
    cfg = tmp_path / "n.json"
    cfg.write_text('{"strategy": "semantic", "params": {"threshold": ' + value + "}}", encoding="utf-8")
    _one_line_error(capsys, ["chunk", text, "--config", str(cfg)], "n.json")
    _one_line_error(capsys, ["chunk", text, "-p", f"threshold={value}"], "threshold")
    with pytest.raises(ConfigError, match="finite"):
        PipelineConfig.from_mapping({"strategy": "semantic", "params": {"threshold": float("nan")}})


def test_a_tokenizer_path_that_is_not_a_tokenizer_is_one_line(tmp_path, capsys, text):
    bogus = tmp_path / "passwd"
    bogus.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    _one_line_error(capsys, ["chunk", text, "--tokenizer", f"hf:{bogus}"], "not a Hugging Face tokenizer.json")
    cfg = tmp_path / "t.json"
    cfg.write_text(json.dumps({"strategy": "recursive", "params": {"tokenizer": f"hf:{bogus}"}}), encoding="utf-8")
    _one_line_error(capsys, ["chunk", text, "--config", str(cfg)], "not a Hugging Face tokenizer.json")


def test_loads_bounded_counts_brackets_outside_strings_only():
    inside = '"' + "[" * 1000 + '"'
    assert loads_bounded(f'{{"a": {inside}}}') == {"a": "[" * 1000}
    ok = "[" * MAX_CONFIG_DEPTH + "]" * MAX_CONFIG_DEPTH
    assert loads_bounded(ok) is not None
    with pytest.raises(ValueError, match="levels deep"):
        loads_bounded("[" + ok + "]")
