"""What one evaluation run is, and the ``--run NAME:key=value,...`` way to write one down.

A run is a :class:`~chunkwise.pipeline.config.PipelineConfig` (``RunSpec`` is that class): the same type
``tune`` writes and ``index``/``search``/``ask`` read, so a setting measured by ``eval`` is the setting a
search uses. This module adds the ``--run`` string syntax (:func:`parse_run_spec`) and the mapping of
strategy parameters mixed with run settings (:func:`spec_from_params`).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..pipeline.config import (
    DEFAULT_FUSION,
    DEFAULT_HYBRID,
    DENSE_WEIGHT,
    OLD_RUN_KEYS,
    RRF_K,
    SETTINGS,
    VECTOR_MODES,
    PipelineConfig,
)
from ..strategies.factory import parse_value

#: one evaluation run: the pipeline configuration itself
RunSpec = PipelineConfig
#: keys of a run spec that configure the run, not the strategy (old spellings still read)
RUN_KEYS = (*SETTINGS, *OLD_RUN_KEYS)
#: the defaults of the fusion settings, as ``chunkwise search`` has them (:mod:`chunkwise.pipeline.config`)
DEFAULT_RRF_K = RRF_K
DEFAULT_DENSE_WEIGHT = DENSE_WEIGHT


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets, braces and quotes (so JSON values may contain commas)."""
    out, depth, quote, buf, escape = [], 0, None, [], False
    for ch in text:
        if escape:
            buf.append(ch)
            escape = False
            continue
        if ch == "\\" and quote:
            buf.append(ch)
            escape = True
            continue
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    out.append("".join(buf))
    return out


def parse_run_spec(text: str) -> RunSpec:
    """``NAME[:key=value,key=value,...]``, optionally prefixed by ``LABEL=``, e.g.
    ``'rec200=recursive:max_tokens=200,overlap=0,tokenizer=cl100k'``. Values are JSON when they parse
    (``separators=["\\n\\n","\\n"," ",""]``). The keys of :data:`RUN_KEYS` (``late``, ``context``,
    ``hybrid``, ``fusion``...) configure the run."""
    from ..strategies import STRATEGY_NAMES

    text = text.strip()
    label = None
    head, _, rest = text.partition(":")
    if "=" in head:
        label, _, head = head.partition("=")
        label = label.strip() or None
    name = head.strip()
    if name not in STRATEGY_NAMES:
        raise ConfigError(f"--run {text!r}: unknown strategy {name!r}; choose one of {', '.join(STRATEGY_NAMES)}")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in split_top_level(rest):
            if not item.strip():
                continue
            if "=" not in item:
                raise ConfigError(f"--run {text!r}: expected key=value, got {item!r}")
            k, _, v = item.partition("=")
            params[k.strip().replace("-", "_")] = parse_value(v)
    return spec_from_params(name, params, label=label)


def spec_from_params(
    name: str, params: dict[str, Any], label: str | None = None, run: dict[str, Any] | None = None
) -> RunSpec:
    """A run from strategy parameters that may include run settings (``late``, ``context``, ``hybrid``...),
    checked as a configuration file is."""
    params = dict(params)
    run = dict(run or {})
    for key in RUN_KEYS:
        if key in params:
            run[key] = params.pop(key)
    if label:
        run["label"] = label
    return PipelineConfig.from_mapping({"strategy": name, "params": params, "run": run})


def fusion_settings(run: dict[str, Any]) -> dict[str, Any]:
    """Checked ``fusion``, ``rrf_k`` and ``dense_weight`` from a run mapping (defaults where absent)."""
    out = {}
    for name in ("fusion", "rrf_k", "dense_weight"):
        value = run.get(name)
        out[name] = SETTINGS[name].default if value is None else SETTINGS[name].check(name, value)
    return out


__all__ = [
    "RunSpec",
    "RUN_KEYS",
    "VECTOR_MODES",
    "DEFAULT_RRF_K",
    "DEFAULT_DENSE_WEIGHT",
    "DEFAULT_FUSION",
    "DEFAULT_HYBRID",
    "parse_run_spec",
    "spec_from_params",
    "fusion_settings",
    "split_top_level",
    "parse_value",
]
