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


def make_strategy(
    spec: str | Strategy,
    params: dict[str, Any] | None = None,
    embedder: Any = None,
    *,
    shared: dict[str, Any] | None = None,
) -> Strategy:
    """The strategy ``spec`` names (or ``spec`` itself), validated: every front end builds strategies here,
    so a strategy object given with parameters is the same error everywhere.

    ``params`` are the strategy's own parameters (an unknown one is a :class:`ConfigError`); ``shared``
    ones (a run's ``max_tokens``, say) apply where the strategy takes them. A strategy that embeds while
    chunking gets ``embedder`` unless ``params`` names one (``None`` leaves its own default).
    """
    params = dict(params or {})
    if isinstance(spec, Strategy):
        asked = sorted({*params, *(shared or {})})
        if asked:
            raise ConfigError(
                f"parameters {', '.join(asked)} given with a strategy object; set them on the strategy instead"
            )
        spec.validate()
        return spec
    cls = strategy_class(spec)
    valid = set(cls.param_names())
    merged = {k: v for k, v in (shared or {}).items() if k in valid}
    merged.update(params)
    if embedder is not None and "embedder" not in merged and "embedder" in valid:
        merged["embedder"] = embedder
    strategy = get_strategy(spec, **merged)
    strategy.validate()
    return strategy


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
