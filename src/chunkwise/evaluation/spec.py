"""What one evaluation run is: a strategy with its parameters plus the run's options (:class:`RunSpec`).

Also the two ways to write one down: ``--run NAME:key=value,...`` strings (:func:`parse_run_spec`) and a
``--config`` file's strategy, parameters and ``run`` mapping (:func:`spec_from_params`). The fusion settings
are checked here once (:func:`fusion_settings`) for ``eval``, ``tune`` and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..retrieval.fusion import DENSE_WEIGHT, FUSION_MODES, RRF_K
from ..retrieval.index import DEFAULT_FUSION, DEFAULT_HYBRID, VECTOR_MODES
from ..strategies.factory import parse_value

#: keys of a run spec that configure the run, not the strategy
RUN_KEYS = ("label", "late", "context", "context_opts", "late_opts", "hybrid", "vectors", "fusion", "rrf_k",
            "dense_weight")
#: how a hybrid run fuses the vector and BM25 rankings, the RRF constant and the z-score weight: the same
#: definitions as ``chunkwise search`` (:mod:`chunkwise.retrieval.fusion`)
DEFAULT_RRF_K = RRF_K
DEFAULT_DENSE_WEIGHT = DENSE_WEIGHT


@dataclass
class RunSpec:
    """One configuration to evaluate: a strategy with its parameters, plus contextual/late options.

    ``context`` is a :func:`chunkwise.context.contextualize` mode (``headings``, ``neighbors``...);
    ``late`` embeds chunks by late chunking (:func:`chunkwise.context.late_chunk_vectors`);
    ``hybrid`` (the default, as for ``search``) retrieves by BM25 and the vector ranking fused
    (``fusion``: z-scores by default, or reciprocal rank fusion); ``hybrid=False`` by vectors alone.
    """

    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    late: bool = False
    context: str | None = None
    context_opts: dict[str, Any] = field(default_factory=dict)
    late_opts: dict[str, Any] = field(default_factory=dict)
    hybrid: bool = DEFAULT_HYBRID
    vectors: str = "text"
    #: hybrid fusion: ``rrf`` (reciprocal rank fusion with constant ``rrf_k``) or ``zscore`` (per query, each
    #: retriever's scores over all chunks z-normalised, then ``dense_weight * dense + (1 - dense_weight) * bm25``)
    fusion: str = DEFAULT_FUSION
    rrf_k: int = DEFAULT_RRF_K
    dense_weight: float = DEFAULT_DENSE_WEIGHT

    def fusion_options(self) -> dict[str, Any]:
        """The fusion settings that differ from the defaults (``{}`` for z-score fusion at the default
        weight): what a run's name shows and what ``tune`` passes on."""
        out: dict[str, Any] = {}
        if self.fusion != DEFAULT_FUSION:
            out["fusion"] = self.fusion
        if self.fusion == "zscore" and self.dense_weight != DEFAULT_DENSE_WEIGHT:
            out["dense_weight"] = self.dense_weight
        if self.fusion == "rrf" and self.rrf_k != DEFAULT_RRF_K:
            out["rrf_k"] = self.rrf_k
        return out

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        parts = [self.strategy]
        for k, v in self.params.items():
            if k == "embedder":
                continue
            parts.append(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}")
        if self.context:
            parts.append(f"context={self.context}")
        if self.late:
            parts.append("late")
        if self.hybrid:
            parts.extend(f"{k}={v}" for k, v in self.fusion_options().items())
        else:
            parts.append("dense")
        if self.vectors != "text":
            parts.append(f"vectors={self.vectors}")
        return " ".join(parts)

    def to_config(self) -> dict[str, Any]:
        """The JSON ``--config`` files hold (``chunk``/``index``/``eval`` read ``strategy`` and ``params``)."""
        out: dict[str, Any] = {"strategy": self.strategy,
                               "params": {k: v for k, v in self.params.items() if k != "embedder"}}
        run: dict[str, Any] = {}
        if self.late:
            run["late"] = True
        if self.context:
            run["context"] = self.context
        if self.context_opts:
            run["context_opts"] = self.context_opts
        # written out in full: a file must mean the same whatever a later version's defaults are
        run["hybrid"] = self.hybrid
        if self.hybrid:
            run["fusion"] = self.fusion
            if self.fusion == "zscore":
                run["dense_weight"] = self.dense_weight
            elif self.rrf_k != DEFAULT_RRF_K:
                run["rrf_k"] = self.rrf_k
        if self.vectors != "text":
            run["vectors"] = self.vectors
        if run:
            out["run"] = run
        return out


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


def spec_from_params(name: str, params: dict[str, Any], label: str | None = None,
                     run: dict[str, Any] | None = None) -> RunSpec:
    """A :class:`RunSpec` from strategy parameters that may include the run keys (late, context...)."""
    params = dict(params)
    run = dict(run or {})
    for key in RUN_KEYS:
        if key in params:
            run[key] = params.pop(key)
    late = _flag(run.get("late", False))
    hybrid = _flag(run.get("hybrid", DEFAULT_HYBRID))
    ctx = run.get("context") or None
    if ctx is not None and not isinstance(ctx, str):
        raise ConfigError(f"context must be a mode name, got {ctx!r}")
    return RunSpec(name, params, label=label or run.get("label"), late=bool(late), context=ctx,
                   context_opts=dict(run.get("context_opts") or {}), late_opts=dict(run.get("late_opts") or {}),
                   hybrid=hybrid, vectors=_vectors_mode(run.get("vectors", "text")),
                   **fusion_settings(run))


def fusion_settings(run: dict[str, Any]) -> dict[str, Any]:
    """Validated ``fusion``, ``rrf_k`` and ``dense_weight`` from a run mapping (defaults where absent)."""
    fusion = run.get("fusion") or DEFAULT_FUSION
    if fusion not in FUSION_MODES:
        raise ConfigError(f"fusion must be one of {', '.join(FUSION_MODES)}, got {fusion!r}")
    rrf_k = run.get("rrf_k", DEFAULT_RRF_K)
    if rrf_k is None:
        rrf_k = DEFAULT_RRF_K
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or rrf_k < 0 or int(rrf_k) != rrf_k:
        raise ConfigError(f"rrf_k must be a non-negative integer, got {rrf_k!r}")
    weight = run.get("dense_weight", DEFAULT_DENSE_WEIGHT)
    if weight is None:
        weight = DEFAULT_DENSE_WEIGHT
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"dense_weight must be a number in [0, 1], got {weight!r}")
    return {"fusion": fusion, "rrf_k": int(rrf_k), "dense_weight": float(weight)}


def _vectors_mode(value: Any) -> str:
    if value not in VECTOR_MODES:
        raise ConfigError(f"vectors must be one of {', '.join(VECTOR_MODES)}, got {value!r}")
    return value


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


__all__ = ["RunSpec", "RUN_KEYS", "VECTOR_MODES", "DEFAULT_RRF_K", "DEFAULT_DENSE_WEIGHT", "DEFAULT_FUSION",
           "DEFAULT_HYBRID", "parse_run_spec",
           "spec_from_params", "fusion_settings", "split_top_level", "parse_value"]
