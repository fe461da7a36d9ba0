"""Reproduce Chroma's published all-MiniLM-L6-v2 table with chunkwise's own strategies.

Chroma ("Evaluating Chunking Strategies for Retrieval", 2024) evaluated LangChain-style chunkers on its
general evaluation set (5 corpora, 472 questions, all corpora in one collection, n = 5 retrieved chunks).
Configured like theirs -- cl100k token counts, their separators, all-MiniLM-L6-v2 truncated at 256
positions as sentence-transformers does (``minilm`` with ``window=256``) -- our strategies should land
within +-2 recall and +-1 IoU of the published numbers:

    Recursive 200/0   recall 75.7  IoU 6.5
    TokenText 250/125 recall 82.4  IoU 3.5
    Cluster 200       recall 75.2  IoU 7.2

Usage: python benchmarks/bench_eval_reproduce.py [--data ../shared/data/chroma-eval] [--docs ID,ID]
       [--window 256] [--json out.json]. Prints the table and the time of each run (cold or warm cache: run
it twice to see both; CHUNKWISE_CACHE_DIR selects the cache).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chroma-eval"
CHROMA_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]

#: label, run spec, published (recall, IoU) at n = 5
CONFIGS = [
    ("Recursive 200/0", "recursive", {"max_tokens": 200, "overlap": 0, "tokenizer": "cl100k",
                                       "separators": CHROMA_SEPARATORS}, (75.7, 6.5)),
    ("TokenText 250/125", "fixed", {"max_tokens": 250, "overlap": 125, "tokenizer": "cl100k"}, (82.4, 3.5)),
    ("Cluster 200", "cohesion", {"max_tokens": 200, "tokenizer": "cl100k"}, (75.2, 7.2)),
]


def run(data: Path, docs: list[str] | None = None, window: int = 256, configs=CONFIGS, progress=None):
    """Evaluate the configurations; returns ``(report, rows)`` with rows of (label, published, ours)."""
    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, RunSpec, load_dataset

    ds = load_dataset(data)
    if docs:
        ds = ds.subset(docs)
    embedder = get_embedder("minilm", window=window)
    ev = Evaluator(ds, embedder, k=5, progress=progress)
    specs = [RunSpec(name, dict(params), label=label) for label, name, params, _ in configs]
    report = ev.evaluate(specs)
    rows = []
    for (label, _, _, published), r in zip(configs, report.runs):
        rows.append((label, published, (100 * r.scores["recall@5"], 100 * r.scores["iou@5"]), r))
    return report, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--docs", default=None, help="comma-separated corpus ids (default: all five)")
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if not Path(args.data).exists():
        print(f"{args.data} not found", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    report, rows = run(Path(args.data), args.docs.split(",") if args.docs else None, args.window,
                       progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    print(f"{report.dataset_summary}; embedder {report.embedder}; n = 5\n")
    head = (f"{'configuration':20} {'recall':>7} {'(pub)':>6} {'Δ':>6}   {'IoU':>5} {'(pub)':>6} {'Δ':>5}   "
            f"{'prec':>5} {'precΩ':>6}  {'IoU·set':>7}  {'chunks':>6} {'embedded':>8} {'seconds':>7}")
    print(head)
    print("-" * len(head))
    ok = True
    for label, (p_rec, p_iou), (rec, iou), r in rows:
        within = abs(rec - p_rec) <= 2 and abs(iou - p_iou) <= 1
        ok &= within
        print(f"{label:20} {rec:7.1f} {p_rec:6.1f} {rec - p_rec:+6.1f}   {iou:5.1f} {p_iou:6.1f} {iou - p_iou:+5.1f}   "
              f"{100 * r.scores['precision@5']:5.1f} {100 * r.scores['precision_omega']:6.1f}  "
              f"{100 * r.scores['iou_set@5']:7.1f}  {r.stats['chunks']:6d} {r.stats['texts_embedded']:8d} "
              f"{r.stats['seconds']:7.1f}{'' if within else '   (outside ±2 / ±1)'}")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    if args.json:
        from chunkwise.evaluation.report import format_json

        Path(args.json).write_text(format_json(report), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
