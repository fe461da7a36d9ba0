"""``chunkwise strategies [NAME]``: every strategy's parameters, defaults, accepted values and meanings.

All of it is generated from the strategies' declarations (:mod:`chunkwise.strategies.params`). The same
table feeds the epilog of ``chunkwise chunk --help`` (:func:`strategies_epilog`), so a user finds
``-p penalty=...`` without reading error messages or source code.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..strategies import STRATEGY_NAMES, strategy_class
from ..strategies.param_docs import describe, format_default
from . import add_command

if TYPE_CHECKING:
    from ..strategies.param_docs import ParamDoc


def _summary(name: str) -> str:
    """The first sentence of the strategy's docstring, without reStructuredText markup."""
    doc = " ".join((strategy_class(name).__doc__ or "").strip().split("\n\n")[0].split())
    first = doc.split("; ")[0].split(". ")[0].rstrip(".")
    return first.replace("``", "") + "."


def _param_line(d: ParamDoc, indent: str, width: int = 100) -> str:
    """``name=default  constraint: help``, wrapped under itself: one entry of the ``chunk --help`` list."""
    head = f"{indent}{d.name}={format_default(d.default)}"
    import textwrap

    body = f"{d.constraint}: {d.help}" if d.constraint else d.help
    return textwrap.fill(
        body,
        width=width,
        initial_indent=f"{head:<{len(indent) + 24}} ",
        subsequent_indent=" " * (len(indent) + 25),
    )


def strategies_epilog() -> str:
    """Each strategy's own parameters (the shared ones once) with default, accepted values and meaning.

    The strategy classes are imported here, not when the command line is built: ``chunkwise --help``
    lists the commands without importing numpy and the tokenizers."""
    from ..strategies.base import Strategy

    lines = [
        "strategy parameters (set with -p NAME=VALUE; `chunkwise strategies NAME` explains them):",
        "  all strategies:",
        *(_param_line(d, "    ") for d in describe(Strategy)),
    ]
    shared = {d.name: d for d in describe(Strategy)}
    for name in STRATEGY_NAMES:
        # its own parameters, and shared ones it takes differently (the semantic strategies' defaults)
        own = [d for d in describe(strategy_class(name)) if shared.get(d.name) != d]
        if own:
            lines.append(f"  {name}:")
            lines.extend(_param_line(d, "    ") for d in own)
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
            if d.constraint:
                print(f"  {'':18s} {'':12s} takes {d.constraint}")
    if not args.name:
        print("\n`chunkwise strategies NAME` lists a strategy's parameters with defaults, values and meanings.")
    return 0


def register(subparsers) -> None:
    p = add_command(subparsers, "strategies")
    p.add_argument("name", nargs="?", metavar="NAME", help="a strategy name")
    p.set_defaults(func=run)
