"""Does late chunking or contextual chunk text retrieve better? Measured on Chroma's evaluation set.

Every mode (late chunking, headings context, neighbours context; llm when an endpoint is given) is run with
the same strategy and the same embedder as a plain baseline, through chunkwise's evaluation runner (the
code behind ``chunkwise eval``): one index over all corpora, top-k retrieval by cosine similarity, Chroma's
span metrics, document-level metrics, and a paired bootstrap over the queries for every difference.

    python benchmarks/bench_context.py                       # all corpora, recursive 200, minilm
    python benchmarks/bench_context.py --corpora state_of_the_union chatlogs --limit 100
    python benchmarks/bench_context.py --llm-base-url http://localhost:8000/v1 --llm-model qwen2.5-7b

Prints a Markdown table (means and differences against the baseline with 95% intervals) and, with
``--json``, writes every number.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chroma-eval"
METRICS = ("recall@5", "iou@5", "recall_set@5", "doc_recall@5", "ndcg@10", "mrr")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="Chroma-layout dataset folder")
    ap.add_argument("--corpora", nargs="*", default=None, help="only these corpora (default: all)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N queries")
    ap.add_argument("--strategy", default="recursive")
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--tokenizer", default="minilm")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument(
        "--modes", default="late,headings,neighbors", help="comma-separated: late, headings, neighbors, llm"
    )
    ap.add_argument("--neighbors", type=int, default=2)
    ap.add_argument("--late-window", type=int, default=None)
    ap.add_argument("--late-overlap", type=int, default=None)
    ap.add_argument("--llm-base-url", default=None)
    ap.add_argument("--llm-model", default=None)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument(
        "--speed-doc",
        default="state_of_the_union",
        help="corpus for the speed comparison (embedding without cache; '' to skip)",
    )
    ap.add_argument("--json", default=None, help="write all numbers to this file (rewritten after every run)")
    ap.add_argument("--resume", action="store_true", help="reuse the runs already in --json (same settings)")
    args = ap.parse_args(argv)

    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import load_dataset
    from chunkwise.evaluation import metrics as M
    from chunkwise.evaluation.runner import Evaluator, RunSpec

    ds = load_dataset(args.data)
    if args.corpora or args.limit:
        ds = ds.subset(args.corpora, args.limit)
    embedder = get_embedder(args.embedder)
    params = {"max_tokens": args.max_tokens, "tokenizer": args.tokenizer}
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if "llm" in modes and not args.llm_base_url:
        print("llm mode skipped: no --llm-base-url given (no endpoint on this machine)", file=sys.stderr)
        modes.remove("llm")
    specs = [RunSpec(args.strategy, dict(params), hybrid=False, label="baseline")]
    for mode in modes:
        if mode == "late":
            opts = {k: v for k, v in (("window", args.late_window), ("overlap", args.late_overlap)) if v is not None}
            specs.append(RunSpec(args.strategy, dict(params), hybrid=False, label="late", late=True, late_opts=opts))
        elif mode == "neighbors":
            specs.append(
                RunSpec(
                    args.strategy,
                    dict(params),
                    hybrid=False,
                    label="neighbors",
                    context="neighbors",
                    context_opts={"neighbors": args.neighbors},
                )
            )
        elif mode == "llm":
            specs.append(
                RunSpec(
                    args.strategy,
                    dict(params),
                    hybrid=False,
                    label="llm",
                    context="llm",
                    context_opts={"base_url": args.llm_base_url, "model": args.llm_model},
                )
            )
        else:
            specs.append(RunSpec(args.strategy, dict(params), hybrid=False, label=mode, context=mode))

    ev = Evaluator(
        ds, embedder, k=5, n_boot=args.n_boot, progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True)
    )
    settings = {k: v for k, v in vars(args).items() if k not in ("json", "resume", "n_boot", "modes", "speed_doc")}
    saved = _load(args.json, settings) if args.resume and args.json else {}
    results, seconds = {}, {}
    for spec in specs:
        if spec.label in saved:
            results[spec.label], seconds[spec.label] = saved[spec.label]
            print(f"  {spec.label}: reused from {args.json}", file=sys.stderr)
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = ev.run(spec)
        results[spec.label] = _Saved({m: res.per_query[m] for m in METRICS}, {"chunks": res.stats["chunks"]})
        seconds[spec.label] = time.perf_counter() - t0
        for w in caught:
            print(f"  warning ({spec.label}): {w.message}", file=sys.stderr)
        if args.json:  # after every run, so an interrupted benchmark keeps what it measured
            _save(args.json, settings, results, seconds)

    base = results["baseline"]
    print(
        f"\n{len(ds.queries)} queries, {len(ds.documents)} corpora, {args.strategy} max_tokens={args.max_tokens} "
        f"({args.tokenizer} tokens), embedder {embedder.model_id}, paired bootstrap n={args.n_boot}\n"
    )
    print("| run | chunks | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    table = {}
    for label, res in results.items():
        cells, row = [], {}
        for m in METRICS:
            mean = float(res.per_query[m].mean())
            row[m] = {"mean": mean}
            if label == "baseline":
                cells.append(f"{100 * mean:.1f}")
                continue
            bs = M.paired_bootstrap(res.per_query[m], base.per_query[m], n_boot=args.n_boot, seed=0)
            row[m].update({k: float(bs[k]) for k in ("diff", "lo", "hi")}, significant=bool(bs["significant"]))
            mark = "*" if bs["significant"] else ""
            cells.append(
                f"{100 * mean:.1f} ({100 * bs['diff']:+.1f} [{100 * bs['lo']:+.1f}, {100 * bs['hi']:+.1f}]{mark})"
            )
        print(f"| {label} | {res.stats['chunks']} | " + " | ".join(cells) + " |")
        table[label] = {"metrics": row, "seconds": seconds[label], "chunks": res.stats["chunks"]}
    print(
        "\nValues in %; in brackets: difference to the baseline and its 95% paired-bootstrap interval; "
        "* = the interval excludes 0."
    )
    if args.speed_doc:
        speed(ds, args, modes)
    if args.json:
        _save(args.json, settings, results, seconds, table)
    return 0


def speed(ds, args, modes) -> None:
    """Embedding time of each mode relative to embedding the plain chunks, on one corpus, cache off."""
    from chunkwise.context import contextualize, late_chunk_vectors
    from chunkwise.embeddings import get_embedder
    from chunkwise.strategies import get_strategy

    doc = ds.documents.get(args.speed_doc)
    if doc is None:
        return
    emb = get_embedder(args.embedder, cache=False)
    chunks = get_strategy(args.strategy, max_tokens=args.max_tokens, tokenizer=args.tokenizer).chunk(doc)
    emb.embed([c.text for c in chunks[:4]])  # warm up
    t0 = time.perf_counter()
    emb.embed([c.text for c in chunks])
    base = time.perf_counter() - t0
    rows = []
    for mode in modes:
        for c in chunks:
            c.context = None
        t0 = time.perf_counter()
        if mode == "late":
            late_chunk_vectors(doc, chunks, emb)
        else:
            opts = {"neighbors": args.neighbors} if mode == "neighbors" else {}
            if mode == "llm":
                continue
            contextualize(doc, chunks, mode, **opts)
            emb.embed([c.embed_text for c in chunks])
        rows.append((mode, (time.perf_counter() - t0) / base))
    n_tok = sum(emb.tokenizer.count_batch([c.text for c in chunks]))
    print(
        f"\nSpeed on {args.speed_doc} ({len(chunks)} chunks, {n_tok} tokens, cache off), time relative to "
        "embedding the plain chunks:\n"
    )
    print("| mode | time ratio |\n|---|---|")
    print("| plain chunks | 1.00x |")
    for mode, r in rows:
        print(f"| {mode} | {r:.2f}x |")


class _Saved:
    """The part of a run result the table needs (per-query scores and the chunk count)."""

    def __init__(self, per_query, stats):
        self.per_query = {m: np.asarray(v, dtype=np.float64) for m, v in per_query.items()}
        self.stats = stats


def _save(path, settings, results, seconds, table=None) -> None:
    data = {
        "settings": settings,
        "runs": {
            label: {
                "per_query": {m: r.per_query[m].tolist() for m in METRICS},
                "stats": r.stats,
                "seconds": seconds[label],
            }
            for label, r in results.items()
        },
    }
    if table is not None:
        data["table"] = table
    Path(path).write_text(json.dumps(data, indent=1))


def _load(path, settings) -> dict:
    p = Path(path)
    if not p.exists():
        return {}
    data = json.loads(p.read_text())
    if data.get("settings") != settings:
        print(f"  {path}: saved runs used other settings; not reused", file=sys.stderr)
        return {}
    return {label: (_Saved(r["per_query"], r["stats"]), r["seconds"]) for label, r in data["runs"].items()}


if __name__ == "__main__":
    sys.exit(main())
