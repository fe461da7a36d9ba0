"""``chunkwise questions DOCS -o DATASET``: evaluation questions for documents that have none.

The generators, filters and the atomic write are :mod:`chunkwise.evaluation.questions`; this module parses
the flags (the input flags of ``chunk`` and the LLM flags of ``ask``) and prints what was kept.
"""

from __future__ import annotations

import os
import sys

from ..errors import ConfigError
from . import add_command
from .options import add_input_options, input_options, walk_options


def register(subparsers) -> None:
    from ..evaluation.questions import DEFAULT_OFFLINE_METHOD, METHODS, STYLES
    from .answers import add_llm_options

    p = add_command(subparsers, "questions", fields={"default_method": DEFAULT_OFFLINE_METHOD})
    p.add_argument("paths", nargs="+", metavar="DOCS", help="files or folders of documents")
    p.add_argument("-o", "--output", required=True, metavar="DATASET_DIR", help="the dataset folder to write")
    p.add_argument(
        "-n", "--questions", type=int, default=100, metavar="N", dest="n", help="questions to keep (default 100)"
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default=None,
        help=f"generator (default: llm with an endpoint, else {DEFAULT_OFFLINE_METHOD})",
    )
    p.add_argument(
        "--styles",
        default=",".join(STYLES),
        metavar="LIST",
        help=f"llm question styles, rotated: {', '.join(STYLES)} (default all)",
    )
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument(
        "--max-overlap",
        type=float,
        default=0.5,
        metavar="F",
        help="reject a question when more than this fraction of its word trigrams occurs in its "
        "reference (default 0.5)",
    )
    p.add_argument(
        "--max-jaccard",
        type=float,
        default=0.8,
        metavar="F",
        help="reject a question this similar (word-set Jaccard) to a kept one (default 0.8)",
    )
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="llm requests at once (default 4)")
    p.add_argument("--force", action="store_true", help="replace DATASET_DIR if it exists")
    add_input_options(p)
    add_llm_options(p)
    p.set_defaults(func=run_questions)


def _client(args):
    """The chat client the LLM flags ask for (``None`` without an endpoint), built like ``ask``'s."""
    from ..llm.client import BASE_URL_ENV, ChatClient

    if not (args.llm_base_url or os.environ.get(BASE_URL_ENV)) and args.method != "llm":
        if args.llm_model:
            raise ConfigError("--llm-model needs an endpoint: --llm-base-url URL")
        return None
    from .answers import endpoint_args, endpoint_from_args

    endpoint = endpoint_from_args(args)
    kw = {k: v for k, v in endpoint_args(args).items() if v is not None} if endpoint is None else {}
    return ChatClient(
        endpoint=endpoint,
        cache=not getattr(args, "no_cache", False),
        cache_dir=getattr(args, "cache_dir", None),
        purpose="questions --method llm",
        **kw,
    )


def run_questions(args) -> int:
    from ..evaluation.questions import DEFAULT_OFFLINE_METHOD, generate_questions, load_documents, write_question_set

    if args.method is not None and args.method != "llm" and args.llm_base_url:
        raise ConfigError(f"--method {args.method} is offline; drop --llm-base-url (or use --method llm)")
    client = _client(args) if args.method in (None, "llm") else None
    method = args.method or ("llm" if client is not None else DEFAULT_OFFLINE_METHOD)
    progress = None if args.quiet else (lambda msg: print(f"chunkwise: {msg}", file=sys.stderr, flush=True))
    try:
        docs = load_documents(args.paths, **walk_options(args), **input_options(args))
        qs = generate_questions(
            docs,
            method=method,
            n=args.n,
            seed=args.seed,
            client=client,
            styles=[s.strip() for s in args.styles.split(",") if s.strip()],
            max_overlap=args.max_overlap,
            max_jaccard=args.max_jaccard,
            concurrency=args.concurrency,
            progress=progress,
        )
        out = write_question_set(qs, args.output, force=args.force)
    finally:
        if client is not None:
            client.close()
    m = qs.manifest
    rejected = ", ".join(f"{v} {k}" for k, v in m["rejected"].items()) or "none"
    print(
        f"wrote {out}: {m['kept']} questions (method {method}) over {m['documents']} documents "
        f"({m['kept']} of the {m['requested']} asked for; rejected: {rejected})"
    )
    if m["kept"] < m["requested"] and not args.quiet:
        print(
            f"chunkwise: only {m['kept']} of the {m['requested']} questions asked for could be made "
            f"({m['passages']} passages to ask about)",
            file=sys.stderr,
        )
    print(f"next: chunkwise tune {out} --trials 30 -o best.json   # or chunkwise eval {out} --run ...")
    return 0


__all__ = ["register", "run_questions"]
