"""Options shared by every command that chunks (chunk, inspect, index, eval): one definition, one parser.

``add_chunking_options`` declares them; ``strategy_from_args`` builds the strategy. Strategy-specific
parameters not covered by a dedicated flag are passed as ``--param NAME=VALUE`` (repeatable), and
``--config FILE`` (JSON written by ``chunkwise tune``) supplies a strategy and parameters as defaults.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..strategies import STRATEGY_NAMES, get_strategy, strategy_class


def add_chunking_options(p: argparse.ArgumentParser, default_strategy: str = "recursive") -> None:
    g = p.add_argument_group("chunking")
    g.add_argument("--strategy", "-s", choices=STRATEGY_NAMES, default=None,
                   help=f"chunking strategy (default: {default_strategy})")
    g.add_argument("--max-tokens", type=int, default=None, help="hard cap per chunk (default 256)")
    g.add_argument("--min-tokens", type=int, default=None, help="merge chunks smaller than this")
    g.add_argument("--overlap", type=int, default=None, help="tokens repeated between chunks")
    g.add_argument("--tokenizer", default=None, help="minilm (default) | cl100k | chars | words | hf:PATH")
    g.add_argument("--respect-sections", type=int, default=None, metavar="LEVEL",
                   help="never cross a heading of this level or higher")
    g.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="any other strategy parameter, e.g. -p threshold_type=percentile -p buffer_size=0")
    g.add_argument("--config", default=None, metavar="FILE",
                   help="JSON file with {\"strategy\": ..., \"params\": {...}} (as written by `chunkwise tune`)")
    p.set_defaults(_default_strategy=default_strategy)


def parse_value(text: str) -> Any:
    """``--param`` values: JSON when it parses (numbers, true/false/null, lists), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(items: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        params[key.strip().replace("-", "_")] = parse_value(value.strip())
    return params


def load_config(path: str) -> tuple[str | None, dict[str, Any], dict[str, Any]]:
    """Strategy name, strategy parameters and run options (``vectors``, ``hybrid``, ``late``...) of a
    ``--config`` JSON file ``{"strategy": ..., "params": {...}, "run": {...}}`` as ``chunkwise tune`` writes."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("configuration file not found", source=path) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"not a readable JSON configuration ({exc})", source=path) from None
    if (not isinstance(data, dict) or not isinstance(data.get("params", {}), dict)
            or not isinstance(data.get("run") or {}, dict)):
        raise ConfigError('expected {"strategy": NAME, "params": {...}}', source=path)
    return data.get("strategy"), dict(data.get("params", {})), dict(data.get("run") or {})


def strategy_params_from_args(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The strategy name and its parameters: --config first, then flags and --param override it."""
    name, params = (None, {})
    if getattr(args, "config", None):
        name, params, _ = load_config(args.config)
    name = args.strategy or name or args._default_strategy
    for flag in ("max_tokens", "min_tokens", "overlap", "tokenizer", "respect_sections"):
        value = getattr(args, flag, None)
        if value is not None:
            params[flag] = value
    params.update(parse_params(args.param))
    return name, params


def strategy_from_args(args: argparse.Namespace, embedder=None):
    """Build the strategy; semantic strategies get the global ``--embedder`` unless a parameter names one."""
    name, params = strategy_params_from_args(args)
    if "embedder" in strategy_class(name).param_names() and "embedder" not in params and embedder is not None:
        params["embedder"] = embedder
    return get_strategy(name, **params)
