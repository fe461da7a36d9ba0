"""The ``chunkwise`` command line: one module per command group, dispatched from here.

Errors a person can act on (:class:`~chunkwise.errors.ChunkwiseError`) are printed as one line and the
process exits with status 2; commands that process several inputs exit 1 when some of them failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import ChunkwiseError

#: command modules, each with ``register(subparsers)``; every sub-parser sets ``func(args) -> int``
COMMAND_MODULES = ("chunk", "inspect", "embeddings", "index", "evaluate")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="chunkwise",
        description="Chunk documents where the meaning changes, index them, and measure retrieval.",
    )
    parser.add_argument("--version", action="version", version=f"chunkwise {__version__}")
    parser.add_argument("--embedder", default=None,
                        help="embedding back-end for every command that embeds: minilm (default), "
                             "minilm-torch, st:NAME_OR_PATH, static, openai:MODEL")
    parser.add_argument("--base-url", default=None, help="base URL for openai:MODEL embedders")
    parser.add_argument("--cache-dir", default=None, help="embedding cache directory (default: user cache dir)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summaries")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a command group not built yet
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ChunkwiseError as exc:
        print(f"chunkwise: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chunkwise: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
