"""``chunkwise viz PATH -o report.html``: see where a strategy cuts, as one self-contained HTML file.

The strategy options are those of ``chunk``; ``--compare NAME[:k=v,k=v]`` adds up to three more strategies
as side-by-side columns (shared options such as ``--max-tokens`` apply to them too, ``--param`` only to the
main one). The file embeds plotly.js once and needs no network (see docs/viz.md for sizes).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from ..errors import ConfigError
from . import add_command

SHARED = ("max_tokens", "min_tokens", "overlap", "tokenizer", "respect_sections")


def register(subparsers) -> None:
    from .chunk import add_input_options
    from .options import add_chunking_options, strategies_epilog

    p = add_command(
        subparsers,
        "viz",
        epilog=strategies_epilog,  # called when the help is printed
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", help="one document (text, Markdown, HTML, PDF, WebVTT, SRT), or - for stdin")
    add_chunking_options(p)
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="NAME[:k=v,...]",
        help="another strategy as a side-by-side column (repeatable, up to 3), e.g. "
        "--compare recursive --compare semantic:threshold_amount=90",
    )
    p.add_argument(
        "-o",
        "--output",
        default="chunkwise-report.html",
        metavar="FILE",
        help="where to write the report (default chunkwise-report.html)",
    )
    add_input_options(p)
    p.set_defaults(func=run)


def parse_compare(spec: str) -> tuple[str, dict]:
    """``"semantic:threshold_amount=90,buffer_size=1"`` -> ``("semantic", {...})``."""
    from ..strategies import STRATEGY_NAMES
    from .options import parse_params

    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in STRATEGY_NAMES:
        raise ConfigError(f"--compare: unknown strategy {name!r}; choose one of {', '.join(STRATEGY_NAMES)}")
    return name, parse_params([p for p in rest.split(",") if p.strip()])


def build_strategies(args: argparse.Namespace) -> list:
    """The main strategy (as ``chunk`` builds it) and the ``--compare`` ones, validated before reading."""
    from ..strategies import SEMANTIC_STRATEGIES
    from ..strategies.factory import make_strategy
    from .chunk import _build_strategy
    from .options import strategy_params_from_args

    if len(args.compare) > 3:
        raise ConfigError(f"--compare takes up to 3 strategies (4 columns in all), got {len(args.compare)}")
    main = _build_strategy(args)
    _, params = strategy_params_from_args(args)
    out = [main]
    embedder = getattr(main, "embedder", None) if main.name in SEMANTIC_STRATEGIES else None
    for spec in args.compare:
        name, own = parse_compare(spec)
        if name in SEMANTIC_STRATEGIES and "embedder" not in own and embedder is None:
            from ..embeddings import embedder_from_args

            embedder = embedder_from_args(args)
        shared = {k: v for k, v in params.items() if k in SHARED}
        out.append(make_strategy(name, own, embedder, shared=shared))
    return out


def views_with_progress(doc, strategies: list, quiet: bool = False) -> list:
    """One view per strategy, with a tqdm bar (total and ETA) on a terminal: a semantic column of a long
    document embeds thousands of sentences."""
    from tqdm import tqdm

    from ..viz import build_view, labels_for

    bar = tqdm(
        total=len(strategies),
        desc="chunking",
        unit="strategy",
        file=sys.stderr,
        leave=False,
        disable=quiet or not sys.stderr.isatty(),
    )
    views = []
    try:
        for strategy, label in zip(strategies, labels_for(strategies)):
            bar.set_postfix_str(label)
            views.append(build_view(doc, strategy, label))
            bar.update()
    finally:
        bar.close()
    return views


def run(args: argparse.Namespace) -> int:
    from ..formats import load, read_stdin
    from ..formats.text import DecodingWarning
    from ..viz import render_report
    from .chunk import input_options

    strategies = build_strategies(args)
    options = input_options(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodingWarning)
        doc = read_stdin(**options) if args.path == "-" else load(args.path, **options)
    for message in doc.metadata.get("warnings", []):
        print(f"chunkwise: warning: {doc.source}: {message}", file=sys.stderr)
    page = render_report(doc, views_with_progress(doc, strategies, quiet=args.quiet))
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise ConfigError(f"cannot write the report ({exc.strerror or exc})", source=args.output) from None
    if not args.quiet:
        size = len(page.encode("utf-8"))
        print(
            f"chunkwise: wrote {args.output} ({size / 1e6:.1f} MB; {', '.join(s.name for s in strategies)})",
            file=sys.stderr,
        )
    return 0
