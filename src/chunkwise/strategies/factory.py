"""Strategies from user input: the one place a semantic strategy is given the shared embedder, and the one
parser of textual parameter values (``--param NAME=VALUE``, ``--run NAME:key=value``).

``Index.add``, the CLI and evaluation all build strategies by name; a strategy that embeds while chunking
(``semantic``, ``maxmin``, ``cohesion``) must use the same embedder as the rest of the run unless its own
parameters name one, so the rule lives here once instead of at every caller.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigError
from . import Strategy, get_strategy, strategy_class


def make_strategy(name: str, params: dict[str, Any] | None = None, embedder: Any = None) -> Strategy:
    """Build strategy ``name`` with ``params``; one that takes an ``embedder`` gets ``embedder`` unless
    ``params`` names one (``None`` leaves the strategy's own default)."""
    params = dict(params or {})
    if embedder is not None and "embedder" not in params and "embedder" in strategy_class(name).param_names():
        params["embedder"] = embedder
    return get_strategy(name, **params)


def parse_value(text: str) -> Any:
    """A parameter value given as text: JSON when it parses (numbers, true/false/null, lists), else the
    string itself (surrounding whitespace removed either way)."""
    from ..security import loads_bounded

    text = text.strip()
    try:
        return loads_bounded(text, "a parameter value")
    except json.JSONDecodeError:
        return text
    except ValueError as exc:  # too deep, too long, NaN: one line, not a RecursionError or a NaN parameter
        raise ConfigError(str(exc)) from None


__all__ = ["make_strategy", "parse_value"]
