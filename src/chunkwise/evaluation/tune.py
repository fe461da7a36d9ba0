"""Grid search over a strategy's parameters, scored on an evaluation dataset.

Every grid point is a full evaluation (chunk, embed, retrieve, score), so the search is only affordable
because nothing is embedded twice: all points share one :class:`~.runner.Evaluator`, whose in-memory memo
sits on the persistent embedding cache. Texts common to several points (the same chunk produced by two
configurations, the sentences a semantic strategy embeds, the queries) are embedded once for the whole
search; a rerun reads them all from the cache.

The winner is written as ``{"strategy": ..., "params": {...}}``, the configuration file that ``chunkwise
chunk``, ``index`` and ``eval`` read with ``--config FILE``.

Where each part lives: the flags' parsing in :mod:`.tune_parse`; the rows, the held-out split and the
winner-or-not decision in :mod:`.tune_decide`; the grid search and the result in :mod:`.tune_grid`; the
budgeted search (``--trials``) in :mod:`.tune_search`. Every public name stays importable from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .tune_decide import (
    KEEP_DEFAULT,
    MIN_HOLDOUT_QUERIES,
    NO_WINNER,
    PREFER,
    SIGNIFICANT,
    Decision,
    Saturation,
    TuneRow,
    decide,
    saturation,
    split_queries,
)
from .tune_grid import TuneContext, TuneResult, default_spec, evaluate_point, finish, tune
from .tune_parse import METRIC_HELP, check_grid, parse_grid, parse_metric, parse_requirement
from .tune_search import RETRIEVALS, SearchSpace, search


def write_config(path: str | Path, config: dict[str, Any]) -> None:
    """Write a tuned configuration as the JSON ``--config`` reads; a failed write is one ConfigError."""
    p = Path(path)
    try:
        p.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the configuration ({exc.strerror})", source=str(path)) from None


__all__ = [
    "tune",
    "search",
    "SearchSpace",
    "Decision",
    "decide",
    "split_queries",
    "RETRIEVALS",
    "parse_grid",
    "parse_metric",
    "parse_requirement",
    "check_grid",
    "write_config",
    "TuneResult",
    "TuneRow",
    "METRIC_HELP",
    "SIGNIFICANT",
    "NO_WINNER",
    "MIN_HOLDOUT_QUERIES",
    "KEEP_DEFAULT",
    "PREFER",
    "Saturation",
    "saturation",
    "default_spec",
    "TuneContext",
    "evaluate_point",
    "finish",
]
