"""What ``tune`` reads from its flags, checked before any evaluation: the metric to maximise, the
``--grid`` values, the ``--require`` limits, and whether the grid's parameters exist for the strategy."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .spec import RUN_KEYS, parse_value, split_top_level

#: metric names ``tune`` accepts (``@N`` takes any positive N for span and document recall metrics)
METRIC_HELP = (
    "recall@N, precision@N, iou@N (Chroma's arithmetic), recall_set@N, precision_set@N, iou_set@N "
    "(set arithmetic), N a number or 'min'; doc_recall@N, ndcg@10, mrr, precision_omega"
)
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
        raise ConfigError(
            f"strategy {strategy!r} has no parameter {', '.join(sorted(set(unknown)))}; valid: "
            f"{', '.join(valid)} (and the run options late, context)"
        )


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


def meets(scores: dict[str, float], req: tuple[str, str, float]) -> bool:
    """Whether ``scores`` meet one parsed ``--require`` limit; a metric that was not computed is an error."""
    name, op, value = req
    if name not in scores:
        raise ConfigError(f"--require {name}: not computed; available: {', '.join(sorted(scores))}")
    v = scores[name]
    return {">=": v >= value, ">": v > value, "<=": v <= value, "<": v < value}[op]
