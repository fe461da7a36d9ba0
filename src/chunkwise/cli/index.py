"""``chunkwise index PATH...`` and ``chunkwise search "QUERY"``: the main job from the command line.

Both talk to the same store options: ``--db DIR.db`` (Milvus Lite, the default ``./chunkwise.db``) or
``--uri http://host:19530 [--token ...]`` (a Milvus server or cluster), and ``--collection NAME``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from ..errors import ConfigError, InputError
from ..store.milvus_connection import DEFAULT_COLLECTION, DEFAULT_DB
from . import add_command


def add_store_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("store")
    where = g.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        default=None,
        metavar="PATH.db",
        help=f"Milvus Lite database directory, created on first use (default: ./{DEFAULT_DB})",
    )
    where.add_argument(
        "--uri", default=None, metavar="URL", help="Milvus server instead of Milvus Lite, e.g. http://localhost:19530"
    )
    g.add_argument("--token", default=None, help="Milvus token (user:password or API key; default: $MILVUS_TOKEN)")
    g.add_argument("--collection", default=DEFAULT_COLLECTION, help=f"collection name (default: {DEFAULT_COLLECTION})")
    g.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up on a server call after this long (default 10); opening the connection gives up "
        "after 3 s (or this, if shorter)",
    )


def open_index(args: argparse.Namespace):
    from ..retrieval.index import TIMEOUT, Index
    from ..validation import check_flag

    if args.timeout is not None:
        check_flag(args.timeout, "--timeout", TIMEOUT)
    options = {"base_url": args.base_url} if getattr(args, "base_url", None) else {}
    if getattr(args, "embedder_backend", None):
        options["backend"] = args.embedder_backend
    return Index(
        db=args.db,
        uri=args.uri,
        token=args.token or os.environ.get("MILVUS_TOKEN"),
        collection=args.collection,
        embedder=getattr(args, "embedder", None),
        cache=not getattr(args, "no_cache", False),
        cache_dir=getattr(args, "cache_dir", None),
        embedder_options=options,
        timeout=args.timeout,
    )


def add_retrieval_options(p: argparse.ArgumentParser) -> None:
    """How ``search`` and ``ask`` retrieve: a flag for every retrieval setting of
    :class:`~chunkwise.pipeline.PipelineConfig` (stages ``"search"`` and ``"expand"``: hybrid, or ``--dense``,
    the fusion flags, the reranker, the context handed on), each from its declaration, and a ``--config``
    file whose retrieval settings they take (the flags given override it)."""
    from ..pipeline.config import stage_names
    from .options import add_stage_flags

    add_stage_flags(p, "search", "expand")
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help=f"retrieve as a configuration written by `chunkwise tune` says ({', '.join(stage_names('search', 'expand'))}); "
        "flags given override it",
    )


def register(subparsers) -> None:
    _register_index(subparsers)
    _register_search(subparsers)


def _register_index(subparsers) -> None:
    from .options import add_chunking_options, add_input_options

    p = add_command(subparsers, "index")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to index")
    add_store_options(p)
    add_chunking_options(p)
    add_input_options(p)
    _add_vector_options(p)
    _add_maintenance_options(p)
    _add_ray_options(p)
    p.set_defaults(func=run_index)


#: the late-chunking option flags: the ``late_options`` key, the flag, its help
_LATE_FLAGS = (
    (
        "late_window",
        "--late-window",
        "late chunking macro-window size (default: 256, at most the embedder's model_window)",
    ),
    ("overlap", "--late-overlap", "tokens shared by consecutive late-chunking windows"),
)


def _add_vector_options(p: argparse.ArgumentParser) -> None:
    from .options import add_setting_flags

    g = p.add_argument_group("vectors and context")
    add_setting_flags(g, "vectors", "late")
    for _, flag, help_text in _LATE_FLAGS:
        g.add_argument(flag, type=int, default=None, metavar="TOKENS", help=help_text)
    add_setting_flags(g, "context")
    g.add_argument(
        "--context-neighbors",
        type=int,
        default=None,
        metavar="N",
        help="sentences each side for --context neighbors (default 2)",
    )
    from .answers import add_endpoint_options

    add_endpoint_options(p, "language model for --context llm")


def _add_maintenance_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("maintenance")
    g.add_argument("--prune", action="store_true", help="remove documents whose files no longer exist")
    g.add_argument(
        "--delete",
        action="append",
        default=[],
        metavar="SOURCE_OR_ID",
        help="remove a document (by source path or doc id) and exit (repeatable)",
    )
    g.add_argument(
        "--recreate",
        action="store_true",
        help="drop the collection and build it again (e.g. with another embedder or strategy)",
    )
    g.add_argument(
        "--batch-size",
        type=int,
        default=256,
        metavar="CHUNKS",
        help="chunks gathered before each embed-and-write round (default 256)",
    )


def _add_ray_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distributed ingestion (extra 'ray')")
    g.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: chunk in Ray tasks, embed in a Ray actor pool, "
        "write from here (needs --uri)",
    )
    g.add_argument(
        "--address",
        default=None,
        metavar="auto|ray://HOST:PORT",
        help="Ray cluster to join (default: start a local one)",
    )
    g.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="embedding actors, one model each (default: the cluster's CPUs)",
    )


def _register_search(subparsers) -> None:
    s = add_command(subparsers, "search")
    s.add_argument("query", help="the question or keywords")
    s.add_argument("-k", type=int, default=5, help="number of chunks to return (default 5)")
    s.add_argument(
        "--filter",
        default=None,
        metavar="EXPR",
        help="Milvus boolean expression, e.g. 'source like \"%%manual%%\" and page_start >= 3'; "
        "passed to Milvus as it is (trusted input only: applications use Index.search(where=...))",
    )
    add_retrieval_options(s)
    from .answers import add_endpoint_options

    add_endpoint_options(s, "language model for --rerank llm")
    s.add_argument("--format", choices=("table", "jsonl"), default="table", help="output format")
    s.add_argument(
        "--max-chars",
        type=int,
        default=400,
        metavar="N",
        help="table format: cut each text at N characters (0 = whole text; default 400)",
    )
    from .remote import add_server_option

    add_server_option(s)
    add_store_options(s)
    s.set_defaults(func=run_search)


def _llm_context_options(args: argparse.Namespace) -> dict:
    from .answers import endpoint_args

    return {**endpoint_args(args), "cache_dir": getattr(args, "cache_dir", None)}


def _context_options(args: argparse.Namespace) -> dict:
    if args.context == "neighbors":
        return {"neighbors": args.context_neighbors}
    if args.context == "llm":
        return _llm_context_options(args)
    from .answers import endpoint_args

    if args.context_neighbors is not None or any(v is not None for v in endpoint_args(args).values()):
        raise ConfigError("--context-neighbors needs --context neighbors; --llm-* options need --context llm")
    return {}


def run_index(args: argparse.Namespace) -> int:
    from ..formats.text import DecodingWarning
    from .options import input_options, strategy_params_from_args, walk_options

    if not args.paths and not args.delete and not args.prune:
        raise ConfigError("nothing to do: give files or folders to index (or --delete / --prune)")
    from ..retrieval.index import BATCH_SIZE
    from ..validation import check_flag

    check_flag(args.batch_size, "--batch-size", BATCH_SIZE)
    quiet = args.quiet
    load_options = input_options(args)
    with open_index(args) as index:
        writable = getattr(index.store, "require_writable", None)
        if writable is not None:  # a read-only database is searchable; refuse it here, before any work
            # without starting Milvus Lite unless this run deletes: a re-run with nothing to do never needs it
            writable(**({} if args.delete else {"connect": False}))
        if args.delete:
            for key in args.delete:
                n = index.delete(key)
                if not quiet:
                    print(f"deleted {key}: {n} chunks", file=sys.stderr)
            return 0
        name, params = strategy_params_from_args(args)
        run = _run_settings(args)
        _check_late_flags(index, args, run)
        if args.engine == "ray":
            return _report(_run_ray(index, args, name, params, load_options, run), quiet)
        elif args.address is not None or args.workers is not None:
            raise ConfigError("--address and --workers need --engine ray")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DecodingWarning)  # printed below, once, from report.warnings
            report = index.add(
                args.paths,
                strategy=name,
                params=params,
                **run,
                prune=args.prune,
                **walk_options(args),
                load_options=load_options,
                batch_size=args.batch_size,
                recreate=args.recreate,
                progress=not quiet,
                notify=_warn_now,
            )
        _warn_repaired(index)
    return _report(report, quiet)


def _run_settings(args: argparse.Namespace) -> dict:
    """``Index.add``'s vectors, late chunking and context: a ``--config`` file's settings, the flags given
    overriding them (so ``index --config tuned.json`` builds the index ``eval`` measured)."""
    from ..pipeline.config import PipelineConfig
    from .options import pipeline_config

    config = pipeline_config(args.config) if args.config else PipelineConfig()
    late = bool(args.late or config.late)
    given = {key: getattr(args, flag[2:].replace("-", "_")) for key, flag, _ in _LATE_FLAGS}
    if not late and any(v is not None for v in given.values()):
        raise ConfigError(f"{' and '.join(flag for _, flag, _ in _LATE_FLAGS)} need --late")
    late_options = dict(config.late_options)
    late_options.update({k: v for k, v in given.items() if v is not None})
    context = args.context or config.context
    context_options = _context_options(args) if args.context or not config.context else dict(config.context_options)
    if context == "llm" and not args.context:  # the endpoint is this machine's, not the file's
        context_options.update({k: v for k, v in _llm_context_options(args).items() if v is not None})
    options = config.with_settings(vectors=args.vectors, late=late, context=context).index_options()
    return {
        "vectors": options["vectors"],
        "late": late,
        "late_options": late_options if late else None,
        "context": context,
        "context_options": context_options,
    }


def _check_late_flags(index, args: argparse.Namespace, run: dict) -> None:
    """Late-chunking values given as flags, checked as the run would check them (against the embedder's
    window too) and refused in the flags' spelling (``--late-window must be ...``), before any work."""
    if not run["late"] or all(getattr(args, flag[2:].replace("-", "_")) is None for _, flag, _ in _LATE_FLAGS):
        return
    from ..context.late import check_late_options

    names = {key: flag for key, flag, _ in _LATE_FLAGS}
    check_late_options(run["late_options"] or {}, 0, names)  # the ranges, before a model is made
    if args.engine == "ray" or (not args.recreate and _recorded(index)):
        return  # an existing collection: the run compares the flags with what it was built with (no model)
    limit = int(getattr(index.embedder(), "model_window", 0) or 0)  # the embedder the new collection gets
    check_late_options(run["late_options"] or {}, limit, names)


def _recorded(index) -> bool:
    """Whether the collection exists with its configuration recorded: from the snapshot beside a local
    database when it vouches for it (no engine started), else from the store."""
    from ..store.snapshot import local_snapshot

    return local_snapshot(index.store) is not None or index.store.read_config() is not None


def _warn_repaired(index) -> None:
    """One line when cached vectors were found damaged and embedded again (embeddings/cache.py)."""
    from ..embeddings.cache import repaired_count

    repaired = repaired_count(index.embedder())
    if repaired:
        print(
            f"chunkwise: warning: {repaired} cached vector{'s were' if repaired != 1 else ' was'} damaged (not "
            "finite, wrong length or not of unit length): embedded again and overwritten in the embedding cache",
            file=sys.stderr,
        )


def _warn_now(line: str) -> None:
    """A warning the user can act on before the work is done (a language the embedder does not read)."""
    print(f"chunkwise: warning: {line}", file=sys.stderr, flush=True)


def _run_ray(index, args: argparse.Namespace, name: str, params: dict, load_options: dict, run: dict):
    """``--engine ray``: the same options as the local engine (vectors, late chunking, context, the walk)."""
    from ..retrieval.ray_engine import index_with_ray

    return index_with_ray(
        index,
        args.paths,
        address=args.address,
        workers=args.workers,
        strategy=name,
        params=params,
        **run,
        include=args.include,
        exclude=args.exclude,
        all_files=bool(getattr(args, "all_files", False)),
        code=bool(getattr(args, "code", False)),
        gitignore=bool(getattr(args, "gitignore", True)),
        prune=args.prune,
        batch_size=args.batch_size,
        recreate=args.recreate,
        progress=not args.quiet,
        load_options=load_options,
    )


def _report(report, quiet: bool) -> int:
    for source, message in getattr(report, "warnings", []):
        print(f"chunkwise: warning: {source}: {message}", file=sys.stderr)
    if getattr(report, "language_warning", None):
        print(f"chunkwise: warning: {report.language_warning}", file=sys.stderr)
    for source, problem in report.failed:
        print(f"chunkwise: error: {source}: {problem}", file=sys.stderr)
    for note in report.notes:
        print(f"chunkwise: note: {note}", file=sys.stderr)
    if not quiet:
        print(f"chunkwise: {report.summary()}", file=sys.stderr)
    if report.failed:
        return 1 if report.documents else 2
    return 0


def retrieval_settings(args: argparse.Namespace) -> dict:
    """``Index.search``'s ``hybrid``, ``fusion``, ``rrf_k`` and ``dense_weight``: a ``--config`` file's
    settings (every one of them, as ``eval`` measured them), overridden by the flags given (how they may
    combine: :func:`~chunkwise.pipeline.config.check_combinations`)."""
    from ..pipeline.config import PipelineConfig
    from .options import pipeline_config, settings_given

    config = pipeline_config(args.config) if getattr(args, "config", None) else PipelineConfig()
    # a fusion flag with hybrid off (--dense, or the file's) is refused as Index.search and the web API do
    return config.with_settings(flags=True, **settings_given(args, "search")).search_options()


def expand_settings(args: argparse.Namespace) -> dict:
    """``Index.expand``'s (and ``Index.ask``'s) ``expand`` and ``budget``: a ``--config`` file's, overridden
    by the flags given (``--expand none`` turns a file's expansion off, ``--budget none`` its budget); with a
    budget and no mode, the expansion by document kind (:func:`~chunkwise.pipeline.config.reader_expand`)."""
    from ..pipeline.config import PipelineConfig, reader_expand
    from .options import pipeline_config

    config = pipeline_config(args.config) if getattr(args, "config", None) else PipelineConfig()
    flag = getattr(args, "expand", None)
    budget = getattr(args, "budget", None)
    unlimited = isinstance(budget, str) and budget.strip().lower() == "none"  # lifts a --config's budget
    options = config.with_settings(budget=None if unlimited else budget).expand_options()
    if unlimited:
        options["budget"] = None
    if flag is not None:
        options["expand"] = PipelineConfig(expand=flag).validate().expand
    options["expand"] = reader_expand(options["expand"], options["budget"])  # "none": the hits alone
    return options


def run_search(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise InputError("the query is empty")
    from ..retrieval.index import TOP_K
    from ..validation import Interval, check_flag

    check_flag(args.k, "-k", TOP_K)
    check_flag(args.max_chars, "--max-chars", Interval(int, 0, None))
    settings = retrieval_settings(args)
    widen = expand_settings(args)
    from . import remote
    from .search_output import format_passages, print_results

    mode = None if widen["expand"] == "none" else widen["expand"]  # search hands on the hits as they are
    url = remote.server_url(args)
    if url:
        if mode is not None or widen["budget"] is not None:
            raise ConfigError("--expand and --budget are not sent to a --server yet: search locally for them")
        return print_results(args, remote.search(args, url, settings))
    with open_index(args) as index:
        results = index.search(args.query, k=args.k, filter=args.filter, **settings)
        if mode is not None or widen["budget"] is not None:
            passages = index.expand(results, mode, widen["budget"])
            return print_results(args, passages, format_passages)
    return print_results(args, results)
