"""``chunkwise serve``: the viz view as a local web app with search and a JSON API (extra ``serve``).

Binds 127.0.0.1 by default. Even there it answers only requests that name it (``Host``: the loopback names,
``--host``, ``--allowed-host``), so another site's page cannot read it through DNS rebinding. Bound to
anything else it requires a token (``--token``, or a random one printed at start), since anyone who can
reach the port could otherwise read the index. See :mod:`chunkwise.viz.app` for the routes and limits.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from ..errors import ConfigError
from . import add_command


def register(subparsers) -> None:
    p = add_command(subparsers, "serve")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--db", default=None, metavar="PATH.db", help="index to search (built by `chunkwise index`)")
    p.add_argument("--uri", default=None, metavar="URL", help="Milvus server to search instead of --db")
    p.add_argument("--collection", default=None, help="collection name (default: chunkwise's)")
    p.add_argument("--max-upload-size", default="10MB", metavar="SIZE", help="largest accepted upload (default 10MB)")
    p.add_argument(
        "--token",
        default=os.environ.get("CHUNKWISE_SERVE_TOKEN") or None,
        help="require this token (Authorization: Bearer TOKEN, or open /?token=TOKEN once); default "
        "$CHUNKWISE_SERVE_TOKEN; off on loopback, a random one printed at start on any other --host",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name to answer (repeatable; besides 127.0.0.1, localhost, [::1] and --host)",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds a client may take to send its request head, or pause within a body (default 10)",
    )
    from .answers import add_endpoint_options

    add_endpoint_options(p, "language model for /ask and rerank llm (default: the environment's; else extractive)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..validation import Interval, check_flag
    from ..viz.app import create_app, host_names, is_loopback, serve
    from .chunk import parse_size

    check_flag(args.port, "--port", Interval(int, 1, 65535))
    check_flag(args.read_timeout, "--read-timeout", Interval(float, 0, None, closed="neither"))
    for name in args.allowed_host:
        if not name.strip() or ("*" in name and name != "*" and not name.startswith("*.")):
            raise ConfigError(f"--allowed-host: {name!r} is not a host name (or '*', '*.example.com')")
    limit = parse_size(args.max_upload_size, "--max-upload-size")
    embedder = None
    if getattr(args, "embedder", None) or getattr(args, "embedder_backend", None):
        from ..embeddings import embedder_from_args

        embedder = embedder_from_args(args)
    loopback = is_loopback(args.host)
    token = args.token
    made_token = False
    if token is None and not loopback:
        token, made_token = secrets.token_urlsafe(24), True
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError("chunkwise serve needs the serve extra: pip install 'chunkwise[serve]'") from None
    app = create_app(
        args.db,
        uri=args.uri,
        collection=args.collection,
        embedder=embedder,
        max_upload_bytes=limit,
        allowed_hosts=host_names(args.host, args.allowed_host),
        token=token,
        read_timeout=args.read_timeout,
    )
    shown = f"[{args.host}]" if ":" in args.host else args.host
    if args.host in ("0.0.0.0", "::"):  # a browser reaches a wildcard binding by this machine's name
        import socket

        shown = socket.gethostname().lower()
    url = f"http://{shown}:{args.port}/" + (f"?token={token}" if made_token else "")
    if not loopback:
        print(
            f"chunkwise: warning: serving on {args.host}: anyone who can reach it and has the token can use "
            "the app and read the index; requests must name this machine as localhost, its host name or an "
            "--allowed-host",
            file=sys.stderr,
        )
    if made_token or not args.quiet:
        # the generated token is printed even with --quiet: without it nobody could use the app
        print(f"chunkwise: serving on {url} (API docs at /docs; Ctrl-C stops)", file=sys.stderr, flush=True)
    serve(app, args.host, args.port, read_timeout=args.read_timeout)
    return 0
