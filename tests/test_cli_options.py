"""Shared chunking options: --param parsing, --config files, errors."""

import argparse
import json

import pytest

from chunkwise.cli.options import add_chunking_options, parse_params, strategy_params_from_args
from chunkwise.errors import ConfigError


def parse(argv):
    p = argparse.ArgumentParser()
    add_chunking_options(p)
    return p.parse_args(argv)


def test_param_values_are_json_or_strings():
    assert parse_params(["a=1", "b=0.5", "c=true", "d=percentile", "e=[1,2]", "buffer-size=0"]) == {
        "a": 1,
        "b": 0.5,
        "c": True,
        "d": "percentile",
        "e": [1, 2],
        "buffer_size": 0,
    }
    with pytest.raises(ConfigError):
        parse_params(["novalue"])


def test_flags_override_config(tmp_path):
    cfg = tmp_path / "best.json"
    cfg.write_text(json.dumps({"strategy": "fixed", "params": {"max_tokens": 100, "overlap": 10}}))
    name, params = strategy_params_from_args(parse(["--config", str(cfg), "--max-tokens", "50"]))
    assert name == "fixed" and params == {"max_tokens": 50, "overlap": 10}
    name, params = strategy_params_from_args(parse([]))
    assert name == "auto" and params == {}


def test_bad_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="bad.json"):
        strategy_params_from_args(parse(["--config", str(bad)]))
    with pytest.raises(ConfigError, match="not found"):
        strategy_params_from_args(parse(["--config", str(tmp_path / "missing.json")]))
