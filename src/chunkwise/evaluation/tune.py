"""Grid search over a strategy's parameters, scored on an evaluation dataset.

Every grid point is a full evaluation (chunk, embed, retrieve, score), so the search is only affordable
because nothing is embedded twice: all points share one :class:`~.runner.Evaluator`, whose in-memory memo
sits on the persistent embedding cache. Texts common to several points (the same chunk produced by two
configurations, the sentences a semantic strategy embeds, the queries) are embedded once for the whole
search; a rerun reads them all from the cache.

The winner is written as ``{"strategy": ..., "params": {...}}``, the configuration file that ``chunkwise
chunk``, ``index`` and ``eval`` read with ``--config FILE``.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

from ..errors import ConfigError
from .results import RunResult
from .runner import Evaluator
from .spec import RUN_KEYS, parse_value, spec_from_params, split_top_level

#: metric names ``tune`` accepts (``@N`` takes any positive N for span and document recall metrics)
METRIC_HELP = ("recall@N, precision@N, iou@N (Chroma's arithmetic), recall_set@N, precision_set@N, iou_set@N "
               "(set arithmetic), N a number or 'min'; doc_recall@N, ndcg@10, mrr, precision_omega")
_METRIC = re.compile(r"^(recall|precision|iou|recall_set|precision_set|iou_set|doc_recall)@(\d+|min)$")


def parse_metric(metric: str) -> tuple[str, int | None]:
    """Validate a metric name; returns it and the ``k`` the evaluation needs for it (or ``None``)."""
    metric = metric.strip()
    if metric in ("ndcg@10", "mrr", "precision_omega", "precision_omega_set"):
        return metric, None
    m = _METRIC.match(metric)
    if not m:
        raise ConfigError(f"unknown metric {metric!r}; use one of {METRIC_HELP}")
    n = m.group(2)
    if n != "min" and int(n) < 1:
        raise ConfigError(f"metric {metric!r}: N must be >= 1")
    if m.group(1) == "doc_recall" and n == "min":
        raise ConfigError("doc_recall needs a number, e.g. doc_recall@5")
    return metric, (int(n) if n != "min" else None)


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``['max_tokens=100,200', 'overlap=0,50']`` -> ``{"max_tokens": [100, 200], "overlap": [0, 50]}``.

    Values are JSON where they parse; a value list may also be written as one JSON list
    (``separators=[["\\n\\n", " "], ["\\n", " "]]``), and values may contain commas inside brackets.
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--grid expects NAME=V1,V2,..., got {item!r}")
        name, _, values = item.partition("=")
        name = name.strip().replace("-", "_")
        values = values.strip()
        parsed: list[Any]
        as_json = parse_value(values) if values.startswith("[") else None
        if isinstance(as_json, list) and values.count("[") > 1 and all(isinstance(v, list) for v in as_json):
            parsed = as_json
        else:
            parsed = [parse_value(v) for v in split_top_level(values) if v.strip()]
        if not parsed:
            raise ConfigError(f"--grid {name}: no values")
        if name in grid:
            raise ConfigError(f"--grid {name} given twice")
        grid[name] = list(dict.fromkeys(json.dumps(v, sort_keys=True) for v in parsed))
        grid[name] = [json.loads(v) for v in grid[name]]
    return grid


def check_grid(strategy: str, grid: dict[str, Any], fixed: dict[str, Any]) -> None:
    """Unknown grid or fixed parameters are an error that lists the valid ones."""
    from ..strategies import strategy_class

    cls = strategy_class(strategy)
    valid = [p for p in cls.param_names() if p != "embedder"]
    # an old name (semantic's window) is accepted here and renamed, with a warning, by get_strategy
    unknown = [p for p in [*grid, *fixed] if p not in valid and p not in RUN_KEYS and p not in cls.renamed_params]
    if unknown:
        raise ConfigError(f"strategy {strategy!r} has no parameter {', '.join(sorted(set(unknown)))}; valid: "
                          f"{', '.join(valid)} (and the run options late, context)")


_REQUIRE = re.compile(r"^\s*([\w@.]+)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*$")


def parse_requirement(text: str) -> tuple[str, str, float]:
    """``"iou@5>=0.072"`` -> ``("iou@5", ">=", 0.072)``; the metric is checked like ``--metric``."""
    m = _REQUIRE.match(text)
    if not m:
        raise ConfigError(f"--require expects METRIC>=VALUE (or >, <=, <), got {text!r}")
    name = m.group(1)
    if not name.startswith("tokens_retrieved@"):
        parse_metric(name)
    return name, m.group(2), float(m.group(3))


def _meets(scores: dict[str, float], req: tuple[str, str, float]) -> bool:
    name, op, value = req
    if name not in scores:
        raise ConfigError(f"--require {name}: not computed; available: {', '.join(sorted(scores))}")
    v = scores[name]
    return {">=": v >= value, ">": v > value, "<=": v <= value, "<": v < value}[op]


@dataclass
class TuneRow:
    params: dict[str, Any]
    score: float | None
    result: RunResult | None = None
    error: str | None = None
    over_budget: bool = False
    #: requirements (``--require``) this point fails
    failed: list[str] = field(default_factory=list)


@dataclass
class TuneResult:
    strategy: str
    metric: str
    rows: list[TuneRow]
    best: TuneRow | None
    seconds: float
    texts_embedded: int
    max_tokens_retrieved: float | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    require: list[tuple[str, str, float]] = field(default_factory=list)

    def best_config(self, dataset: str = "", embedder: str = "") -> dict[str, Any]:
        if self.best is None or self.best.result is None:
            limits = []
            if self.max_tokens_retrieved is not None:
                limits.append(f"tokens retrieved <= {self.max_tokens_retrieved:g}")
            limits += [f"{n}{op}{v:g}" for n, op, v in self.require]
            raise ConfigError("no configuration of the grid could be evaluated"
                              + (f" that meets {', '.join(limits)}" if limits else ""))
        cfg = self.best.result.spec.to_config()
        r = self.best.result
        cfg["tuned"] = {
            "metric": self.metric, "score": self.best.score, "dataset": dataset, "embedder": embedder,
            "scores": {k: round(v, 6) for k, v in r.scores.items()
                       if k in ("recall@5", "iou@5", "precision@5", "recall@10", "iou@10", "ndcg@10", "mrr",
                                "recall_set@5", "iou_set@5", self.metric) or k.startswith("tokens_retrieved")},
            "grid_points": len(self.rows),
        }
        return cfg


def tune(evaluator: Evaluator, strategy: str, grid: dict[str, list[Any]], metric: str = "recall@5",
         fixed: dict[str, Any] | None = None, max_tokens_retrieved: float | None = None,
         progress: Callable[[str], None] | None = None,
         require: Sequence[tuple[str, str, float] | str] = ()) -> TuneResult:
    """Evaluate every point of ``grid`` (``fixed`` parameters added to each) and rank them by ``metric``.

    ``max_tokens_retrieved`` excludes from the choice of the best (not from the leaderboard) points whose
    mean tokens retrieved per query at the evaluator's ``k`` exceed it; ``require`` (``"iou@5>=0.072"``)
    likewise keeps points failing a requirement on another metric from winning. Invalid points (say
    overlap >= max_tokens) are listed with their error and skipped.
    """
    reqs = [parse_requirement(r) if isinstance(r, str) else r for r in require]
    fixed = dict(fixed or {})
    metric, _ = parse_metric(metric)
    check_grid(strategy, grid, fixed)
    progress = progress or (lambda msg: None)
    names = list(grid)
    points = [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))] or [{}]
    t0 = time.perf_counter()
    n0 = evaluator.embedder.texts_embedded
    rows: list[TuneRow] = []
    tokens_key = f"tokens_retrieved@{evaluator.k}"
    for i, point in enumerate(points, 1):
        params = {**fixed, **point}
        spec = spec_from_params(strategy, params)
        try:
            result = evaluator.run(spec)
        except ConfigError as exc:
            rows.append(TuneRow(params, None, error=str(exc)))
            progress(f"[{i}/{len(points)}] {spec.name}: skipped ({exc})")
            continue
        if metric not in result.scores:
            raise ConfigError(f"metric {metric!r} is not computed with k={evaluator.k}; "
                              f"available: {', '.join(sorted(result.scores))}")
        score = result.scores[metric]
        over = max_tokens_retrieved is not None and result.scores[tokens_key] > max_tokens_retrieved
        failed = [f"{n}{op}{v:g}" for n, op, v in reqs if not _meets(result.scores, (n, op, v))]
        rows.append(TuneRow(params, score, result, over_budget=over, failed=failed))
        extra = "".join(f", {n} = {result.scores[n]:.4f}" for n in dict.fromkeys(["recall@5", "iou@5", *(r[0] for r in reqs)])
                        if n != metric and n in result.scores)
        progress(f"[{i}/{len(points)}] {spec.name}: {metric} = {score:.4f}{extra}"
                 f" ({result.scores[tokens_key]:.0f} tokens retrieved{', over budget' if over else ''})")
    scored = [r for r in rows if r.score is not None]
    scored.sort(key=lambda r: -(r.score or 0.0))   # every score here is a float
    rows = scored + [r for r in rows if r.score is None]
    eligible = [r for r in scored if not r.over_budget and not r.failed]
    return TuneResult(strategy, metric, rows, eligible[0] if eligible else None, time.perf_counter() - t0,
                      evaluator.embedder.texts_embedded - n0, max_tokens_retrieved, fixed, reqs)


def write_config(path: str | Path, config: dict[str, Any]) -> None:
    p = Path(path)
    try:
        p.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the configuration ({exc.strerror})", source=str(path)) from None


__all__ = ["tune", "parse_grid", "parse_metric", "parse_requirement", "check_grid", "write_config", "TuneResult",
           "TuneRow"]
