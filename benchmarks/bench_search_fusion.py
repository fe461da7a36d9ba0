"""How close `chunkwise search --hybrid --fusion zscore` comes to what `chunkwise eval` measures.

Evaluation z-normalises the vector and BM25 scores of *all* chunks per query; a vector database returns only
the top candidates of each side, so `Index.search` z-normalises over the union of the top ``depth`` (50 for
k <= 12) candidates of each side. This script evaluates the tuned configuration (docs/best-config.json) on
Chroma's chunking-evaluation data both ways in one run and prints recall@5 / IoU@5 side by side.

    python benchmarks/bench_search_fusion.py [../shared/data/chroma-eval] [--config docs/best-config.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import chunkwise.evaluation.runner as runner
from chunkwise.embeddings import get_embedder
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.retrieval.fusion import candidate_zscore_matrix

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--config", default=str(ROOT / "docs" / "best-config.json"))
    ap.add_argument(
        "--depth",
        type=int,
        nargs="+",
        default=[50, 100, 200],
        help="candidates per side (Index.search uses max(50, 4k))",
    )
    ap.add_argument(
        "--sparse-depth",
        type=int,
        default=None,
        help="BM25 candidates (default: the same as --depth); vectors keep --depth",
    )
    ap.add_argument("--embed-window", type=int, default=256)
    args = ap.parse_args()

    from chunkwise.cli.options import load_config

    name, params, run = load_config(args.config)
    spec = runner.spec_from_params(name, params, run=run)
    dataset = load_dataset(args.data)
    embedder = get_embedder("minilm", model_window=args.embed_window - 2)  # the flag counts [CLS]/[SEP]
    full_fn = runner.Evaluator._zscore_fused
    rows = []

    def measure(label: str, run_spec) -> None:
        t0 = time.perf_counter()
        report = runner.Evaluator(dataset, embedder, k=5).evaluate([run_spec])
        s = report.runs[0].scores
        rows.append((label, 100 * s["recall@5"], 100 * s["iou@5"], time.perf_counter() - t0))

    measure("full-corpus z-score (eval)", spec)
    for depth in args.depth:

        def cand(self, spec, store, sims, depth=depth):
            return candidate_zscore_matrix(
                sims, self._bm25_scores(store), depth, spec.dense_weight, sparse_depth=args.sparse_depth
            )

        runner.Evaluator._zscore_fused = cand
        bm25 = "" if args.sparse_depth is None else f", BM25 {args.sparse_depth}"
        measure(f"candidate z-score, depth {depth}{bm25} (search)", spec)
    runner.Evaluator._zscore_fused = full_fn
    measure(
        "reciprocal rank fusion (search default)", runner.spec_from_params(name, params, run={**run, "fusion": "rrf"})
    )
    print(f"{'fusion':45s} {'recall@5':>9s} {'IoU@5':>7s} {'s':>6s}")
    for label, r, i, t in rows:
        print(f"{label:45s} {r:9.1f} {i:7.1f} {t:6.0f}")


if __name__ == "__main__":
    main()
