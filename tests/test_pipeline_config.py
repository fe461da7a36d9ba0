"""PipelineConfig: every setting declared once, checked in one place, and a file means what it says.

The round trip (config -> JSON file -> config) is property-tested over random valid configurations, and
every setting is given invalid values generated from its declaration, each of which must be refused with a
ConfigError naming it.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.deprecation import ChunkwiseDeprecationWarning
from chunkwise.errors import ConfigError
from chunkwise.pipeline.config import (
    CONTEXT_MODES,
    FUSION_MODES,
    LATE_OPTIONS,
    SETTINGS,
    VECTOR_MODES,
    PipelineConfig,
)
from chunkwise.strategies import STRATEGY_NAMES

JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
VALID = {
    "vectors": st.sampled_from(VECTOR_MODES),
    "late": st.booleans(),
    "late_options": st.dictionaries(st.sampled_from(LATE_OPTIONS), st.integers(0, 512), max_size=3),
    "context": st.one_of(st.none(), st.sampled_from(CONTEXT_MODES)),
    "context_options": st.dictionaries(st.text(min_size=1, max_size=8), JSON_SCALAR, max_size=3),
    "hybrid": st.booleans(),
    "fusion": st.sampled_from(FUSION_MODES),
    "rrf_k": st.integers(0, 10_000),
    "dense_weight": st.floats(0, 1, allow_nan=False),
    "expand": st.sampled_from([None, "none", "neighbors:0", "neighbors:2", "section", "parent:512", "auto"]),
    "budget": st.one_of(st.none(), st.integers(1, 100_000)),
    "label": st.one_of(st.none(), st.text(min_size=1, max_size=12)),
    "rerank": st.sampled_from([None, "maxsim", "maxsim:0.5", "maxsim:0", "llm", "cross:/models/ce"]),
    "rerank_depth": st.integers(1, 1000),
    "granularities": st.sampled_from([None, [128, 512], [64, 256, 1024]]),
    "sections": st.booleans(),
}
#: values each setting must refuse, derived from the kind of its check
INVALID = {
    "vectors": ["mean", "", 1],
    "late": ["maybe", 2, [True]],
    "late_options": [{"size": 3}, [1], "late_window=3"],
    "context": ["summary", 3, True],
    "context_options": [[1, 2], "a=1", {1: 2}],
    "hybrid": ["sometimes", 3, {}],
    "fusion": ["sum", "", 0],
    "rrf_k": [-1, 2.5, "60", True, float("inf")],
    "dense_weight": [-0.1, 1.5, "0.5", True, float("nan")],
    "expand": ["window", "neighbors:-1", "parent:0", "section:2", "auto:1", 3],
    "budget": [0, -5, 2.5, "lots", True],
    "label": [3, ["x"]],
    "rerank": ["colbert", "maxsim:2", "maxsim:x", "cross:", "llm:listwise", 3],
    "rerank_depth": [0, -3, 2.5, "30", True],
    "granularities": [[128], [128, 128], [0, 256], "128,512", 256, [128, True]],
    "sections": ["sometimes", 1, {}],
}


def test_every_setting_has_valid_and_invalid_values_here():
    assert set(VALID) == set(SETTINGS) == set(INVALID)


def applicable(run: dict) -> dict:
    """``run`` without the settings that apply only under a switch it turns off (``fusion`` with hybrid off:
    such a file is refused, ``tests/test_setting_combinations.py``)."""
    return {
        k: v
        for k, v in run.items()
        if not (SETTINGS[k].requires and run.get(SETTINGS[k].requires) is False and v is not None)
    }


@settings(max_examples=150)
@given(
    strategy=st.sampled_from(STRATEGY_NAMES),
    params=st.dictionaries(st.sampled_from(["max_tokens", "overlap", "tokenizer", "penalty"]), JSON_SCALAR, max_size=3),
    run=st.fixed_dictionaries({}, optional=VALID).map(lambda run: applicable(run)),
)
def test_file_round_trip(tmp_path_factory, strategy, params, run):
    config = PipelineConfig.from_mapping({"strategy": strategy, "params": params, "run": run})
    for name, value in run.items():
        want = value if value is not None or name in ("context", "label") else SETTINGS[name].default
        assert getattr(config, name) == (want if name not in ("late_options", "context_options") else value or {})
    assert config.name  # every configuration has a readable name
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    config.save(path)
    again = PipelineConfig.load(path)
    assert again == config
    written = json.loads(path.read_text())["run"]
    assert written["hybrid"] == config.hybrid  # retrieval is always spelled out
    if config.hybrid:
        assert (
            written["fusion"] == config.fusion and ("dense_weight" if config.fusion == "zscore" else "rrf_k") in written
        )


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, values in INVALID.items() for v in values])
def test_every_invalid_value_is_one_config_error(name, value):
    with pytest.raises(ConfigError, match=name.split("_")[0] if name == "late_options" else name):
        PipelineConfig.from_mapping({"strategy": "fixed", "run": {name: value}})


def test_null_in_a_file_means_the_default_and_none_in_code_is_refused():
    assert PipelineConfig.from_mapping({"run": {"rrf_k": None, "fusion": None}}) == PipelineConfig().validate()
    for name in ("rrf_k", "dense_weight", "fusion", "vectors"):
        with pytest.raises(ConfigError, match=name):
            PipelineConfig(**{name: None}).validate()


def test_unknown_keys_name_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError, match="unknown run setting rrf; valid: vectors"):
        PipelineConfig.from_mapping({"run": {"rrf": 3}})
    with pytest.raises(ConfigError, match="unknown key retrieval"):
        PipelineConfig.from_mapping({"retrieval": {}})
    with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
        PipelineConfig.from_mapping({"strategy": "nope"})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable JSON configuration") as exc:
        PipelineConfig.load(bad)
    assert str(bad) in str(exc.value)


def test_old_run_keys_still_read_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = PipelineConfig.from_mapping({"run": {"context_opts": {"k": 1}, "late_opts": {"window": 64}}})
    assert config.context_options == {"k": 1} and config.late_options == {"late_window": 64}
    messages = [str(w.message) for w in caught if issubclass(w.category, ChunkwiseDeprecationWarning)]
    assert len(messages) == 3 and all("removed in chunkwise" in m for m in messages), messages


def test_front_end_options_cover_every_setting():
    config = PipelineConfig(strategy="fixed", params={"max_tokens": 64}, rrf_k=7).validate()
    handed_on = set(config.index_options()) | set(config.search_options()) | set(config.expand_options())
    # a label names a run, it changes nothing; granularities is an evaluation setting (an index has one size)
    assert handed_on == {"strategy", "params", *SETTINGS} - {"label", "granularities"}
    assert config.search_options() == {
        "hybrid": True,
        "fusion": "zscore",
        "rrf_k": 7,
        "dense_weight": 0.8,
        "rerank": None,
        "rerank_depth": 30,
        "sections": True,
    }
    # with hybrid off, the fusion settings are not handed on (a search would refuse them)
    assert config.with_settings(hybrid=False).search_options() == {
        "hybrid": False,
        "rerank": None,
        "rerank_depth": 30,
        "sections": True,
    }
    assert config.with_settings(rrf_k=None, fusion="rrf").fusion == "rrf"
    with pytest.raises(ConfigError, match="rrf_k"):
        config.with_settings(rrf_k=-3)
