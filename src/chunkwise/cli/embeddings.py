"""``chunkwise distill`` and ``chunkwise cache stats|clear``: the embedding side of the command line.

The embedder itself is chosen by the global ``--embedder`` option (see :func:`chunkwise.embeddings.
embedder_from_args`); these commands manage what the embedders keep on disk.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "distill", help="distil the static embedding model from MiniLM (once, into the cache directory)",
        description="Distil a model2vec static model from the local all-MiniLM-L6-v2 (ONNX, no torch) and "
                    "save it under CACHE_DIR/static/NAME, where `--embedder static` finds it.")
    p.add_argument("--pca-dims", type=int, default=256, help="output dimensions (default 256)")
    p.add_argument("--sif-coefficient", type=float, default=1e-4, help="Zipf/SIF weighting (default 1e-4)")
    p.add_argument("--name", default=None, help="model folder name (default minilm-static-256)")
    p.add_argument("--force", action="store_true", help="distil again even if the model exists")
    p.set_defaults(func=run_distill)

    c = subparsers.add_parser("cache", help="inspect or clear the embedding cache",
                              description="The persistent embedding cache (SQLite, keyed by model and text hash).")
    csub = c.add_subparsers(dest="cache_command", metavar="ACTION")
    s = csub.add_parser("stats", help="location, size and entries per model")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=run_cache_stats)
    x = csub.add_parser("clear", help="delete cached embeddings (all, or one model's)")
    x.add_argument("--model", default=None, help="only this model id (as listed by `cache stats`)")
    x.set_defaults(func=run_cache_clear)
    c.set_defaults(func=lambda args: (c.print_help(), 2)[1])


def _human(n: int) -> str:
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

    path = distill_static(args.cache_dir, name=name, pca_dims=args.pca_dims,
                          sif_coefficient=args.sif_coefficient, force=args.force, progress=progress)
    if not quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    meta = StaticEmbedder(path).metadata
    print(f"static model written to {path} ({meta.get('vocab_size')} tokens x {args.pca_dims} dims, "
          f"PCA keeps {meta.get('explained_variance', 0):.1%} of the variance, {time.time() - started:.0f} s); "
          "use it with --embedder static")
    return 0


def run_cache_stats(args: argparse.Namespace) -> int:
    from ..embeddings.cache import EmbeddingCache

    with EmbeddingCache(args.cache_dir) as cache:
        info = cache.stats()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"cache:    {info['path']}{'' if info['exists'] else ' (not created yet)'}")
    print(f"size:     {_human(info['file_bytes'])} on disk, {_human(info['used_bytes'])} live, "
          f"bound {_human(info['max_bytes'])}")
    print(f"entries:  {info['entries']}")
    for model, m in info["models"].items():
        print(f"  {model:<40} {m['entries']:>9} vectors  {_human(m['vector_bytes'])}")
    return 0


def run_cache_clear(args: argparse.Namespace) -> int:
    from ..embeddings.cache import EmbeddingCache

    with EmbeddingCache(args.cache_dir) as cache:
        n = cache.clear(args.model)
        path = cache.path
    what = f"model {args.model!r}" if args.model else "all models"
    print(f"deleted {n} cached embeddings ({what}) from {path}")
    return 0
