"""Do generated questions rank pipelines the way human questions do?

Why: ``chunkwise questions`` lets users without labelled queries run ``eval``/``tune``, but a proxy is only
useful if the pipeline it picks is the pipeline real questions would pick. This script ranks a fixed list of
pipelines (strategies x sizes x dense/hybrid) on public sets twice: with their own human (or human-checked)
questions, and with questions generated from the same documents by each offline proxy of
:mod:`chunkwise.evaluation.questions`. It reports Kendall's tau between the two rankings (scipy) and whether
both put the same pipeline first.

Sets (the loaders of benchmarks/bench_retrieval.py, same subsampling flags and defaults):

- ``qmsum``: meeting transcripts with human queries (github.com/Yale-LILY/QMSum);
- ``cosqa``: Python functions with human web queries (github.com/Jun-jie-Huang/CoCLR);
- ``chroma``: Chroma's chunking-evaluation corpora (LLM-written, human-checked questions with excerpts).

    git clone --bare https://github.com/Yale-LILY/QMSum qmsum.git
    git clone --bare https://github.com/Jun-jie-Huang/CoCLR coclr.git
    python benchmarks/bench_questions.py --qmsum qmsum.git --cosqa coclr.git --chroma ../shared/data/chroma-eval

Each generated set has ``--questions`` questions (seeded, ``--seed``); the metric is document nDCG@10 (and
span recall@5 beside it), with the default MiniLM embedder. The generated sets are written under ``--work``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the pipelines ranked: three strategies x two sizes x dense/hybrid (z-score fusion, the default)
PIPELINES = {
    f"{s}{m}{'' if r == 'hybrid' else ' dense'}": f"{s}:max_tokens={m},overlap={m // 8 if s == 'fixed' else 0},"
    + ("hybrid=true,fusion=zscore" if r == "hybrid" else "hybrid=false")
    for s in ("fixed", "sentence", "recursive")
    for m in (128, 256)
    for r in ("dense", "hybrid")
}
METRICS = ("ndcg@10", "recall@5")


def scores(folder: Path, embedder, label: str) -> dict[str, dict[str, float]]:
    """Each pipeline's mean of each metric on one dataset."""
    from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec

    ds = load_dataset(folder)
    ev = Evaluator(ds, embedder, k=10)
    t0 = time.perf_counter()
    out = {}
    for name, spec in PIPELINES.items():
        r = ev.run(parse_run_spec(spec))
        out[name] = {m: float(r.scores[m]) for m in METRICS}
    print(
        f"  {label}: {len(ds.queries)} queries, {len(PIPELINES)} pipelines, {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return out


def _tau(human: dict, gen: dict, names: list[str], metric: str) -> float:
    """Kendall's tau of two rankings of ``names``; NaN when one set of scores is constant (no ranking)."""
    from scipy.stats import kendalltau

    return float(kendalltau([human[n][metric] for n in names], [gen[n][metric] for n in names]).statistic)


def agreement(human: dict[str, dict[str, float]], gen: dict[str, dict[str, float]], metric: str) -> dict:
    """Kendall's tau over all pipelines, and within each retrieval mode (the strategy x size ranking alone);
    top-1 agreement; on how many chunkings both question sets agree that hybrid beats dense."""
    names = list(PIPELINES)
    hybrid = [n for n in names if not n.endswith(" dense")]
    dense = [n for n in names if n.endswith(" dense")]
    top_h = max(names, key=lambda n: human[n][metric])
    top_g = max(names, key=lambda n: gen[n][metric])
    same_sign = sum(
        (human[n][metric] - human[f"{n} dense"][metric]) * (gen[n][metric] - gen[f"{n} dense"][metric]) > 0
        for n in hybrid
    )
    return {
        "tau": _tau(human, gen, names, metric),
        "tau_hybrid": _tau(human, gen, hybrid, metric),
        "tau_dense": _tau(human, gen, dense, metric),
        "top1": top_h == top_g,
        "top_human": top_h,
        "top_generated": top_g,
        "hybrid_sign": f"{same_sign}/{len(hybrid)}",
    }


def main() -> None:
    from bench_retrieval import prepare_chroma, prepare_cosqa, prepare_qmsum

    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation.questions import OFFLINE_METHODS, make_questions

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qmsum", help="a git dir of github.com/Yale-LILY/QMSum")
    ap.add_argument("--cosqa", help="a git dir of github.com/Jun-jie-Huang/CoCLR")
    ap.add_argument("--chroma", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--work", default="/tmp/chunkwise-bench-questions")
    ap.add_argument("--meetings", type=int, default=6)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--code-queries", type=int, default=150)
    ap.add_argument("--code-distractors", type=int, default=300)
    ap.add_argument("--chroma-corpora", default="state_of_the_union,chatlogs")
    ap.add_argument("--doc-chars", type=int, default=4000)
    ap.add_argument("--questions", type=int, default=150, help="generated questions per set and method")
    ap.add_argument("--methods", default=",".join(OFFLINE_METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", default=None, help="JSON file for the rows")
    args = ap.parse_args()

    work = Path(args.work)
    sets: list[tuple[str, Path]] = []
    if args.qmsum:
        sets.append(("qmsum", prepare_qmsum(args.qmsum, work / "qmsum", args.meetings, args.turns, args.seed)))
    if args.cosqa:
        sets.append(
            ("cosqa", prepare_cosqa(args.cosqa, work / "cosqa", args.code_queries, args.code_distractors, args.seed))
        )
    if args.chroma and Path(args.chroma).exists():
        sets.append(
            ("chroma", prepare_chroma(args.chroma, work / "chroma", args.chroma_corpora.split(","), args.doc_chars))
        )
    embedder = get_embedder("minilm")
    rows = []
    for name, folder in sets:
        print(f"{name}:", flush=True)
        human = scores(folder, embedder, "human")
        for method in args.methods.split(","):
            out = work / f"{name}-{method}"
            try:
                qs = make_questions([folder / "docs"], out, method=method, n=args.questions, seed=args.seed, force=True)
            except Exception as exc:  # a proxy that cannot make questions here (no headings...) is a row too
                rows.append({"set": name, "method": method, "questions": 0, "error": str(exc)})
                print(f"  {method}: {exc}", flush=True)
                continue
            gen = scores(out, embedder, method)
            row = {"set": name, "method": method, "questions": len(qs.questions)}
            for m in METRICS:
                row[m] = agreement(human, gen, m)
            row["human"] = human
            row["generated"] = gen
            rows.append(row)
            print_row(row)
    print_table(rows)
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=1))


def _t(x: float) -> str:
    return "n/a" if x != x else f"{x:+.2f}"  # NaN: the generated scores were all equal


def print_row(r: dict) -> None:
    if "error" in r:
        return
    n, s = r["ndcg@10"], r["recall@5"]
    print(
        f"  {r['method']:10s} {r['questions']:4d} q  nDCG tau {_t(n['tau'])} top1 {'yes' if n['top1'] else 'no'} "
        f"hybrid sign {n['hybrid_sign']}  | recall@5 tau {_t(s['tau'])} top1 {'yes' if s['top1'] else 'no'}",
        flush=True,
    )


def print_table(rows: list[dict]) -> None:
    print(
        "\n| set | proxy | questions | nDCG@10: tau all / hybrid-only / dense-only | top-1 | hybrid > dense agrees "
        "| recall@5: tau all / hybrid-only / dense-only | top-1 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['set']} | {r['method']} | 0 | – | – | – | – | – |")
            continue
        n, s = r["ndcg@10"], r["recall@5"]
        print(
            f"| {r['set']} | {r['method']} | {r['questions']} | {_t(n['tau'])} / {_t(n['tau_hybrid'])} / "
            f"{_t(n['tau_dense'])} | {'yes' if n['top1'] else 'no'} | {n['hybrid_sign']} | {_t(s['tau'])} / "
            f"{_t(s['tau_hybrid'])} / {_t(s['tau_dense'])} | {'yes' if s['top1'] else 'no'} |"
        )


if __name__ == "__main__":
    main()
