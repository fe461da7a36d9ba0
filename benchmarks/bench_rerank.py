"""A second stage and several chunk sizes, against the default retrieval, on the public sets of bench_retrieval.

Why: rerankers (``rerank=maxsim|llm|cross:PATH``, :mod:`chunkwise.retrieval.rerank`) and multi-granularity
retrieval (``granularities=[128, 512]``, after Bhat et al. 2025: small chunks for factoid questions, large
ones for narrative ones) are both claimed to help; neither is switched on unless it measures better here.

Sets: the converted folders ``benchmarks/bench_retrieval.py`` writes (``--work``, default
/tmp/chunkwise-bench-retrieval/{qmsum,cosqa,chroma}); rebuild them with that script (its docstring names the
public repositories and the subsampling). Embedder: MiniLM, as bench_retrieval. First stage everywhere: the
default retrieval (BM25 + vectors, z-score fusion, dense weight 0.8).

1. **Rerank** (fixed 256/32 chunks): no rerank vs ``maxsim`` (ColBERT MaxSim over MiniLM's token vectors of
   the query and of each of the first ``--depth`` candidates) and ``maxsim w0.5`` (``rerank=maxsim:0.5``:
   MaxSim z-fused with the first-stage score). Only offline rerankers run here: ``llm`` needs a chat endpoint and ``cross:PATH`` a
   local cross-encoder model, and this machine has neither.
2. **Granularities**: fixed 128/32, 256/32 and 512/32 alone vs the rankings of 128+512 and 128+256+512 fused
   (reciprocal rank fusion over all their chunks); each fused run is compared with the best single size of
   that set on each metric (chosen on the same queries, which favours the single size); tokens retrieved at
   10 chunks say how much text each run hands on.

Reported: document nDCG@10, document recall@10, span recall@10 and span recall at a 2,000-token budget
(the fair one across chunk sizes: the same amount of text for every run), and each run minus its reference with a
paired bootstrap 95 % interval (1,000 resamples). ``--max-queries`` subsamples each set's queries (seeded)
to keep CPU modest; the table says how many ran.

    .venv/bin/python benchmarks/bench_rerank.py [--only qmsum,cosqa] [--max-queries 150] [-o rows.json]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

METRICS = ("ndcg@10", "doc_recall@10", "recall@10", "span_recall@2k")
CHUNKING = "fixed:max_tokens=256,overlap=32"
SIZES = (128, 256, 512)


def rerank_runs(depth: int) -> dict[str, str]:
    extra = f",rerank_depth={depth}" if depth != 30 else ""
    return {
        "no rerank": CHUNKING,
        "maxsim": CHUNKING + ",rerank=maxsim" + extra,
        "maxsim w0.5": CHUNKING + ",rerank=maxsim:0.5" + extra,
    }


def granularity_runs() -> dict[str, str]:
    runs = {f"size {n}": f"fixed:max_tokens={n},overlap=32" for n in SIZES}
    runs["fused 128+512"] = "fixed:overlap=32,granularities=[128,512]"
    runs["fused 128+256+512"] = "fixed:overlap=32,granularities=[128,256,512]"
    return runs


def run_label(label: str) -> str:
    """A table label as a run's ``LABEL=`` (no spaces, colons or plus signs)."""
    return label.replace(" ", "_").replace("+", "_").replace(":", "_")


def load(folder: Path, max_queries: int | None, seed: int):
    from chunkwise.evaluation import load_dataset

    ds = load_dataset(folder)
    if max_queries and len(ds.queries) > max_queries:
        keep = set(random.Random(seed).sample(range(len(ds.queries)), max_queries))
        ds.queries = [q for i, q in enumerate(ds.queries) if i in keep]
    return ds


def rows_for(name, ds, results: dict, reference, n_boot: int, part: str) -> list[dict]:
    """One row per run: its scores, tokens retrieved at 10 and, against its reference run for each metric
    (``reference(label, metric)``, ``None`` for none), the paired bootstrap difference."""
    from chunkwise.evaluation.metrics import paired_bootstrap

    rows = []
    for label, res in results.items():
        row = {"set": name, "part": part, "queries": len(ds.queries), "run": label, "seconds": res.stats["seconds"]}
        row["tokens@10"] = float(res.scores["tokens_retrieved@10"])
        for m in METRICS:
            row[m] = float(res.scores[m])
            ref = reference(label, m)
            if ref:
                b = paired_bootstrap(res.per_query[m], results[ref].per_query[m], n_boot=n_boot, seed=0)
                row[f"{m} diff"] = (b["diff"], b["lo"], b["hi"])
                row[f"{m} vs"] = ref
        rows.append(row)
    return rows


def measure(name: str, ds, embedder, args) -> list[dict]:
    from chunkwise.evaluation import Evaluator, parse_run_spec

    ev = Evaluator(ds, embedder, k=10, n_boot=args.bootstrap)
    rows: list[dict] = []
    if "rerank" in args.parts:
        runs = rerank_runs(args.depth)
        results = {}
        for label, spec in runs.items():
            t0 = time.perf_counter()
            results[label] = ev.run(parse_run_spec(f"{run_label(label)}={spec}"))
            print(f"{name} {label}: {time.perf_counter() - t0:.0f} s", flush=True)
        rows += rows_for(
            name, ds, results, lambda run, m: None if run == "no rerank" else "no rerank", args.bootstrap, "rerank"
        )
    if "granularity" in args.parts:
        results = {}
        for label, spec in granularity_runs().items():
            t0 = time.perf_counter()
            results[label] = ev.run(parse_run_spec(f"{run_label(label)}={spec}"))
            print(f"{name} {label}: {time.perf_counter() - t0:.0f} s", flush=True)
        singles = [f"size {n}" for n in SIZES]

        def best_single(run: str, metric: str) -> str | None:
            """The best single size on this metric (chosen on the same queries: it favours the single size)."""
            return max(singles, key=lambda r: results[r].scores[metric]) if run.startswith("fused") else None

        rows += rows_for(name, ds, results, best_single, args.bootstrap, "granularity")
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'set':7s} {'qs':>4s} {'run':18s} {'tok@10':>7s} " + " ".join(f"{m:>36s}" for m in METRICS))
    for r in rows:
        cells = []
        for m in METRICS:
            d = r.get(f"{m} diff")
            vs = f" vs {r[m + ' vs'].replace('size ', '')}" if d else ""
            cells.append(f"{r[m]:.3f}" + (f" {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]{vs}" if d else " " * 30))
        print(
            f"{r['set']:7s} {r['queries']:4d} {r['run']:18s} {r['tokens@10']:7.0f} "
            + " ".join(f"{c:>36s}" for c in cells)
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/chunkwise-bench-retrieval", help="the converted sets (bench_retrieval)")
    ap.add_argument("--only", default="qmsum,cosqa,chroma", help="comma-separated subset of the sets")
    ap.add_argument("--parts", default="rerank,granularity", help="rerank, granularity or both")
    ap.add_argument("--depth", type=int, default=30, help="candidates the reranker re-orders (rerank_depth)")
    ap.add_argument("--max-queries", type=int, default=None, help="seeded subsample of each set's queries")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("-o", "--output", default=None, help="JSON file for the rows")
    args = ap.parse_args()
    args.parts = set(args.parts.split(","))

    from chunkwise.embeddings import get_embedder

    embedder = get_embedder("minilm")
    rows: list[dict] = []
    for name in args.only.split(","):
        folder = Path(args.work) / name
        if not (folder / "queries.jsonl").exists():
            print(f"{name}: no converted set at {folder} (run benchmarks/bench_retrieval.py first); skipped")
            continue
        rows += measure(name, load(folder, args.max_queries, args.seed), embedder, args)
        print_table(rows)
        if args.output:
            Path(args.output).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
