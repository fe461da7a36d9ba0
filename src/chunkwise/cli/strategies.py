"""``chunkwise strategies [NAME]``: every strategy's parameters, defaults and meanings.

The same table feeds the epilog of ``chunkwise chunk --help`` (:func:`strategies_epilog`), so a user finds
``-p penalty=...`` without reading error messages or source code.
"""

from __future__ import annotations

import argparse
import textwrap

from ..strategies import STRATEGY_NAMES, strategy_class
from ..strategies.base import Strategy
from ..strategies.params import describe, format_default

#: parameters every strategy has (shown once, not per strategy)
SHARED = tuple(Strategy.param_names())


def _summary(name: str) -> str:
    """The first sentence of the strategy's docstring, without reStructuredText markup."""
    doc = " ".join((strategy_class(name).__doc__ or "").strip().split("\n\n")[0].split())
    first = doc.split("; ")[0].split(". ")[0].rstrip(".")
    return first.replace("``", "") + "."


def strategies_epilog() -> str:
    """A compact list: each strategy with its own parameters and their defaults."""
    lines = [
        "strategy parameters (set with -p NAME=VALUE; `chunkwise strategies NAME` explains them):",
        "  all: " + ", ".join(f"{d.name}={format_default(d.default)}" for d in describe(Strategy)),
    ]
    for name in STRATEGY_NAMES:
        own = [d for d in describe(strategy_class(name)) if d.name not in SHARED]
        if own:
            lines.append(
                textwrap.fill(
                    ", ".join(f"{d.name}={format_default(d.default)}" for d in own),
                    width=100,
                    initial_indent=f"  {name}: ",
                    subsequent_indent="      ",
                )
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    names = [args.name] if args.name else list(STRATEGY_NAMES)
    for i, name in enumerate(names):
        cls = strategy_class(name)  # unknown names: one ConfigError line listing the valid ones
        if i and args.name:
            print()
        print(f"{name}: {_summary(name)}" if args.name else f"{name:10s} {_summary(name)}")
        if not args.name:
            continue
        for d in describe(cls):
            print(f"  {d.name:18s} {format_default(d.default):12s} {d.help}")
    if not args.name:
        print("\n`chunkwise strategies NAME` lists a strategy's parameters with defaults and meanings.")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "strategies",
        help="list strategies and their parameters",
        description="List the chunking strategies, or one strategy's parameters with their defaults and meanings.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="a strategy name")
    p.set_defaults(func=run)
