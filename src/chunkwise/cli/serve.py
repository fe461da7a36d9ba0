"""``chunkwise serve``: the viz view as a local web app with search and a JSON API (extra ``serve``).

Binds 127.0.0.1 by default: the app has no authentication, so exposing it (``--host 0.0.0.0``) is a
deliberate choice and a warning is printed. See :mod:`chunkwise.viz.app` for the routes and limits.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="local web app: paste or upload, see the cuts change; search; JSON API",
        description="Serve a small web app on loopback: paste text or upload a file, pick strategies and "
                    "parameters and see the cuts change; search an index with highlighted hits; JSON API "
                    "(POST /chunk, POST /search, GET /health; schema at /openapi.json, docs at /docs).",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--db", default=None, metavar="PATH.db", help="index to search (built by `chunkwise index`)")
    p.add_argument("--uri", default=None, metavar="URL", help="Milvus server to search instead of --db")
    p.add_argument("--collection", default=None, help="collection name (default: chunkwise's)")
    p.add_argument("--max-upload-size", default="10MB", metavar="SIZE",
                   help="largest accepted upload (default 10MB)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..viz.app import create_app
    from .chunk import parse_size

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be in 1..65535, got {args.port}")
    limit = parse_size(args.max_upload_size)
    embedder = None
    if getattr(args, "embedder", None) or getattr(args, "embedder_backend", None):
        from ..embeddings import embedder_from_args

        embedder = embedder_from_args(args)
    app = create_app(args.db, uri=args.uri, collection=args.collection, embedder=embedder, max_upload_bytes=limit)
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("chunkwise serve needs the serve extra: pip install 'chunkwise[serve]'") from None
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"chunkwise: warning: serving on {args.host}: anyone who can reach it can use the app "
              "(there is no authentication)", file=sys.stderr)
    if not args.quiet:
        print(f"chunkwise: serving on http://{args.host}:{args.port}/ (API docs at /docs; Ctrl-C stops)",
              file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
