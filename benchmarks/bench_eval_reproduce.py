"""Reproduce Chroma's published all-MiniLM-L6-v2 table with chunkwise's own strategies.

Chroma ("Evaluating Chunking Strategies for Retrieval", 2024) evaluated LangChain-style chunkers on its
general evaluation set (5 corpora, 472 questions, all corpora in one collection, n = 5 retrieved chunks).
Configured like theirs -- cl100k token counts, their separators, all-MiniLM-L6-v2 truncated at 256
positions as sentence-transformers does (``minilm`` with ``model_window=254``, 256 positions) -- our strategies should land
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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chroma-eval"
CHROMA_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]

#: label, run spec, published (recall, IoU) at n = 5
CONFIGS = [
    (
        "Recursive 200/0",
        "recursive",
        {"max_tokens": 200, "overlap": 0, "tokenizer": "cl100k", "separators": CHROMA_SEPARATORS},
        (75.7, 6.5),
    ),
    ("TokenText 250/125", "fixed", {"max_tokens": 250, "overlap": 125, "tokenizer": "cl100k"}, (82.4, 3.5)),
    # Chroma's ClusterSemanticChunker has no layout prior, no heading walls and no minimum size: pinned
    (
        "Cluster 200",
        "cohesion",
        {"max_tokens": 200, "tokenizer": "cl100k", "min_tokens": 0, "break_reward": 0.0, "respect_sections": 0},
        (75.2, 7.2),
    ),
]


def run(data: Path, docs: list[str] | None = None, window: int = 256, configs=CONFIGS, progress=None, on_row=None):
    """Evaluate the configurations; returns ``(report, rows)`` with rows of (label, published, ours, result).

    ``on_row(row)`` is called as each configuration finishes (a long cold run shows results as it goes).
    """
    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, RunSpec, load_dataset
    from chunkwise.evaluation.runner import EvaluationReport

    ds = load_dataset(data)
    if docs:
        ds = ds.subset(docs)
    embedder = get_embedder("minilm", model_window=window - 2)  # window: positions, [CLS]/[SEP] included
    ev = Evaluator(ds, embedder, k=5, progress=progress)
    t0 = time.perf_counter()
    rows, results = [], []
    for label, name, params, published in configs:
        r = ev.run(RunSpec(name, dict(params), label=label, hybrid=False))  # Chroma's published runs are dense
        results.append(r)
        row = (label, published, (100 * r.scores["recall@5"], 100 * r.scores["iou@5"]), r)
        rows.append(row)
        if on_row:
            on_row(row)
    report = EvaluationReport(
        ds.path,
        ds.summary(),
        ev.embedder.model_id,
        ev.k,
        ev.count_tokenizer.name,
        len(ds.queries),
        results,
        ev.compare(results),
        list(ds.problems),
        time.perf_counter() - t0,
    )
    return report, rows


HEAD = (
    f"{'configuration':20} {'recall':>7} {'(pub)':>6} {'Δ':>6}   {'IoU':>5} {'(pub)':>6} {'Δ':>5}   "
    f"{'prec':>5} {'precΩ':>6}  {'IoU·set':>7}  {'chunks':>6} {'embedded':>8} {'seconds':>7}"
)


def format_row(row) -> str:
    label, (p_rec, p_iou), (rec, iou), r = row
    within = abs(rec - p_rec) <= 2 and abs(iou - p_iou) <= 1
    return (
        f"{label:20} {rec:7.1f} {p_rec:6.1f} {rec - p_rec:+6.1f}   {iou:5.1f} {p_iou:6.1f} {iou - p_iou:+5.1f}   "
        f"{100 * r.scores['precision@5']:5.1f} {100 * r.scores['precision_omega']:6.1f}  "
        f"{100 * r.scores['iou_set@5']:7.1f}  {r.stats['chunks']:6d} {r.stats['texts_embedded']:8d} "
        f"{r.stats['seconds']:7.1f}{'' if within else '   (outside ±2 / ±1)'}"
    )


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
    print(f"Chroma general evaluation set, n = 5, all-MiniLM-L6-v2 (window {args.window})\n")
    print(HEAD)
    print("-" * len(HEAD), flush=True)
    report, rows = run(
        Path(args.data),
        args.docs.split(",") if args.docs else None,
        args.window,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
        on_row=lambda row: print(format_row(row), flush=True),
    )
    print(f"\n{report.dataset_summary}; embedder {report.embedder}; total {time.perf_counter() - t0:.1f} s")
    if args.json:
        from chunkwise.evaluation.report import format_json

        Path(args.json).write_text(format_json(report), encoding="utf-8")
    ok = all(abs(rec - p_rec) <= 2 and abs(iou - p_iou) <= 1 for _, (p_rec, p_iou), (rec, iou), _ in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
