"""``chunkwise embed``, ``chunkwise distill`` and ``chunkwise cache stats|clear`` (cached vectors and the
rewritten MiniLM graph beside them).

The embedder is chosen by the global ``--embedder`` option (see :func:`chunkwise.embeddings.
embedder_from_args`) for every command that embeds; ``embed`` exposes it directly (texts in, vectors out),
``distill`` and ``cache`` manage what the embedders keep on disk.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import add_command


def _usage(parser: argparse.ArgumentParser) -> int:
    """``chunkwise cache`` without an action: its help, and the usage error's exit status."""
    parser.print_help()
    return 2


def register(subparsers) -> None:
    e = add_command(subparsers, "embed")
    e.add_argument("texts", nargs="*", metavar="TEXT", help="texts to embed")
    e.add_argument(
        "--input",
        "-i",
        default=None,
        metavar="FILE",
        help="read texts from FILE, one per line ('-' = stdin); every line is a row, blank ones too",
    )
    e.add_argument(
        "--output",
        "-o",
        default=None,
        metavar="FILE",
        help="write vectors to FILE: .npy (float32 matrix) or .jsonl (default: JSON lines on stdout)",
    )
    e.add_argument("--batch-size", type=int, default=1024, help="texts per embedding call (default 1024)")
    e.set_defaults(func=run_embed)

    p = add_command(subparsers, "distill")
    p.add_argument("--pca-dims", type=int, default=256, help="output dimensions (default 256)")
    p.add_argument("--sif-coefficient", type=float, default=1e-5, help="Zipf/SIF weighting (default 1e-5)")
    p.add_argument("--name", default=None, help="model folder name (default minilm-static-256)")
    p.add_argument("--force", action="store_true", help="distil again even if the model exists")
    p.set_defaults(func=run_distill)

    c = add_command(subparsers, "cache")
    csub = c.add_subparsers(dest="cache_command", metavar="ACTION")
    s = csub.add_parser("stats", help="location, size and entries per model")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=run_cache_stats)
    x = csub.add_parser("clear", help="delete cached embeddings (all, or one model's)")
    x.add_argument("--model", default=None, help="only this model id (as listed by `cache stats`)")
    x.set_defaults(func=run_cache_clear)
    c.set_defaults(func=lambda args: _usage(c))


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def run_distill(args: argparse.Namespace) -> int:
    import time

    from ..embeddings.static import DEFAULT_NAME, StaticEmbedder, distill_static, static_model_dir

    name = args.name or DEFAULT_NAME
    target = static_model_dir(args.cache_dir, name)
    if target.exists() and not args.force:
        print(f"static model already distilled: {target} (use --force to redo it)")
        return 0
    quiet = getattr(args, "quiet", False)
    started = time.time()

    def progress(done: int, total: int) -> None:
        if not quiet and sys.stderr.isatty():
            print(f"\rembedding vocabulary: {done}/{total}", end="", file=sys.stderr, flush=True)

    path = distill_static(
        args.cache_dir,
        name=name,
        pca_dims=args.pca_dims,
        sif_coefficient=args.sif_coefficient,
        force=args.force,
        progress=progress,
    )
    if not quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    meta = StaticEmbedder(path).metadata
    print(
        f"static model written to {path} ({meta.get('vocab_size')} tokens x {args.pca_dims} dims, "
        f"PCA keeps {meta.get('explained_variance', 0):.1%} of the variance, {time.time() - started:.0f} s); "
        "use it with --embedder static"
    )
    return 0


def run_cache_stats(args: argparse.Namespace) -> int:
    from ..embeddings.cache import EmbeddingCache
    from ..embeddings.onnx_graph import cached_graphs

    with EmbeddingCache(args.cache_dir) as cache:
        info = cache.stats()
        graphs = cached_graphs(cache.dir)
    info["graphs"] = {"files": len(graphs), "bytes": sum(p.stat().st_size for p in graphs)}
    from ..security import redact_urls

    info["models"] = {redact_urls(k): v for k, v in info["models"].items()}  # an endpoint URL may carry a key
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"cache:    {info['path']}{'' if info['exists'] else ' (not created yet)'}")
    print(
        f"size:     {_human(info['file_bytes'])} on disk, {_human(info['used_bytes'])} live, "
        f"bound {_human(info['max_bytes'])}"
    )
    print(f"entries:  {info['entries']}")
    for model, m in info["models"].items():
        print(f"  {model:<40} {m['entries']:>9} vectors  {_human(m['vector_bytes'])}")
    print(
        f"graphs:   {_human(info['graphs']['bytes'])} in {info['graphs']['files']} file(s): the rewritten MiniLM "
        "model (made again when needed)"
    )
    return 0


def run_cache_clear(args: argparse.Namespace) -> int:
    from ..embeddings.cache import EmbeddingCache
    from ..embeddings.onnx_graph import cached_graphs

    with EmbeddingCache(args.cache_dir) as cache:
        n = cache.clear(args.model)
        path = cache.path
        graphs = [] if args.model else cached_graphs(cache.dir)
    what = f"model {args.model!r}" if args.model else "all models"
    print(f"deleted {n} cached embeddings ({what}) from {path}")
    if graphs:
        size = 0
        for p in graphs:
            try:
                size += p.stat().st_size
                p.unlink()
            except OSError as exc:
                print(f"{p}: not deleted ({exc.strerror or exc})", file=sys.stderr)
        print(f"deleted the rewritten MiniLM graph ({_human(size)}; made again on next use)")
    return 0


def _read_lines(path: str):
    """Lines of ``path`` (or stdin) without their line ends, streamed."""
    from ..errors import InputError

    if path == "-":
        for line in sys.stdin:
            yield line.rstrip("\r\n")
        return
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield line.rstrip("\r\n")
    except FileNotFoundError:
        raise InputError("file not found", source=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=path) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", source=path) from None


def run_embed(args: argparse.Namespace) -> int:
    import itertools

    import numpy as np

    from ..embeddings import embedder_from_args
    from ..errors import ConfigError
    from ..validation import Interval, check_flag

    check_flag(args.batch_size, "--batch-size", Interval(int, 1, None))
    if args.texts and args.input:
        raise ConfigError("give texts as arguments or with --input, not both")
    if not args.texts and not args.input:
        raise ConfigError("nothing to embed: give texts as arguments or --input FILE ('-' for stdin)")
    out_path = args.output
    if out_path and not out_path.endswith((".npy", ".jsonl")):
        raise ConfigError(f"--output must end in .npy or .jsonl, got {out_path!r}")
    texts = iter(args.texts) if args.texts else _read_lines(args.input)
    embedder = embedder_from_args(args)
    n = 0
    chunks: list = []
    sink = open(out_path, "w", encoding="utf-8") if out_path and out_path.endswith(".jsonl") else None
    try:
        while True:
            batch = list(itertools.islice(texts, args.batch_size))
            if not batch:
                break
            vectors = embedder.embed(batch)
            if out_path and out_path.endswith(".npy"):
                chunks.append(vectors)
            else:
                stream = sink or sys.stdout
                for i, (text, vec) in enumerate(zip(batch, vectors)):
                    stream.write(
                        json.dumps({"index": n + i, "text": text, "vector": [round(float(x), 7) for x in vec]}) + "\n"
                    )
            n += len(batch)
    finally:
        if sink:
            sink.close()
        embedder.close()
    if out_path and out_path.endswith(".npy"):
        matrix = np.concatenate(chunks) if chunks else np.zeros((0, embedder.dim), dtype=np.float32)
        np.save(out_path, matrix.astype(np.float32, copy=False))
    if not getattr(args, "quiet", False):
        print(
            f"embedded {n} texts with {embedder.model_id} ({embedder.dim} dims): "
            f"{embedder.texts_embedded} computed, {n - embedder.texts_embedded} from cache or repeated, "
            f"{embedder.truncated} truncated to {embedder.model_window} tokens"
            + (f"; wrote {out_path}" if out_path else ""),
            file=sys.stderr,
        )
    return 0
