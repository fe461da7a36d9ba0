"""Does ``questions -> tune -> index with the winner`` help on human questions?

Why: chunkwise tells users without labelled queries to generate questions from their documents, tune on
them and index with the configuration ``tune`` writes. This script follows that path literally, with the
CLI's own commands and default options except a smaller ``--trials``/``--time`` (``chunkwise questions DOCS
-o gen``; ``chunkwise tune gen --trials N -o best.json``), on public sets whose documents come with
*human* queries never used for tuning, then evaluates the written configuration against the default one on
those human queries: the paired bootstrap 95 % interval of ``tuned - default`` on span recall@5 and nDCG@10.
It also reports how hard the generated set was (the tuner's saturation line), the copied-run and markup
shares of the generated questions, and Kendall's tau between the generated and the human ranking of every
configuration the tuner tried.

Sets (converted by the loaders of benchmarks/bench_retrieval.py, subsampled so a set runs in minutes):

- ``scifact``: scientific claims over abstracts (github.com/Kirloxious/CSI4107_Assignment2 claims and
  qrels, github.com/nice-hku-coder/coder_data abstracts); ``--claims`` claims, their abstracts plus
  ``--abstract-distractors`` others;
- ``qmsum``: meeting transcripts with human queries (github.com/Yale-LILY/QMSum), ``--meetings``;
- ``chroma``: Chroma's chunking-evaluation corpora (long articles, ``--chroma-corpora``), human-checked
  questions with excerpts, ``../shared/data/chroma-eval``;
- ``cosqa``: Python functions with human web queries (github.com/Jun-jie-Huang/CoCLR).

    python benchmarks/bench_tuning.py --scifact claims.git --scifact-abstracts abstracts.git \\
        --qmsum qmsum.git --cosqa coclr.git --chroma ../shared/data/chroma-eval -o tuning.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

METRICS = ("recall@5", "ndcg@10")


def human_eval(folder: Path, configs: dict[str, object], embedder) -> dict[str, object]:
    """Every configuration's RunResult on the human queries of ``folder``."""
    from chunkwise.evaluation import Evaluator, load_dataset

    ev = Evaluator(load_dataset(folder), embedder, k=5)
    return {name: ev.run(cfg) for name, cfg in configs.items()}


def measure_set(name: str, folder: Path, work: Path, args, embedder) -> dict:
    from scipy.stats import kendalltau

    from chunkwise.cli import main as cli
    from chunkwise.evaluation import metrics as M
    from chunkwise.evaluation.spec import spec_from_params
    from chunkwise.evaluation.tune_grid import default_spec
    from chunkwise.pipeline.config import PipelineConfig

    gen, best = work / f"{name}-gen", work / f"{name}-best.json"
    t0 = time.perf_counter()
    argv = ["-q", "questions", str(folder / "docs"), "-o", str(gen), "-n", str(args.questions), "--force"]
    argv += ["--all-files"] + (["--method", args.method] if args.method else [])
    assert cli(argv) == 0
    t1 = time.perf_counter()
    assert cli(["-q", "tune", str(gen), "--trials", str(args.trials), "--time", args.time, "-o", str(best)]) == 0
    t2 = time.perf_counter()
    tuned = PipelineConfig.load(best)
    info = json.loads(best.read_text())["tuned"]
    manifest = json.loads((gen / "questions.json").read_text())
    default = spec_from_params(*default_spec({}))
    trials = [json.loads(line) for line in best.with_name(best.stem + ".trials.jsonl").read_text().splitlines()]
    configs = {"default": default, "tuned": tuned}
    for i, t in enumerate(trials):
        if "config" in t and not t["default"]:
            configs[f"trial{i}"] = PipelineConfig.from_mapping(t["config"])
    runs = human_eval(folder, configs, embedder)
    t3 = time.perf_counter()
    row: dict = {
        "set": name,
        "documents": len(list((folder / "docs").rglob("*"))),
        "human_queries": len(runs["default"].per_query["recall@5"]),
        "generated": manifest["kept"],
        "method": manifest["method"],
        "measures": manifest["measures"],
        "question_set": info.get("question_set"),
        "decision": info.get("decision"),
        "written": {k: v for k, v in tuned.to_mapping().items() if k != "tuned"},
        "trials": len(trials) - 1,
        "seconds": {"questions": round(t1 - t0, 1), "tune": round(t2 - t1, 1), "human eval": round(t3 - t2, 1)},
    }
    for m in METRICS:
        ci = M.paired_bootstrap(runs["tuned"].per_query[m], runs["default"].per_query[m], 1000, 0)
        row[m] = {
            "default": runs["default"].scores[m],
            "tuned": runs["tuned"].scores[m],
            "diff": ci["diff"],
            "ci95": [ci["lo"], ci["hi"]],
        }
        names = [n for n in runs if n.startswith("trial")] + ["default"]
        gen_scores = [t["scores"][m] for t in trials if "scores" in t and not t["default"]]
        gen_scores.append(next(t["scores"][m] for t in trials if t["default"]))
        hum = [runs[n].scores[m] for n in names]
        row[m]["tau"] = float(kendalltau(gen_scores, hum).statistic) if len(set(gen_scores)) > 1 else float("nan")
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    from bench_retrieval import prepare_chroma, prepare_cosqa, prepare_qmsum, prepare_scifact

    from chunkwise.embeddings import get_embedder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scifact")
    ap.add_argument("--scifact-abstracts")
    ap.add_argument("--claims", type=int, default=60)
    ap.add_argument("--abstract-distractors", type=int, default=100)
    ap.add_argument("--qmsum")
    ap.add_argument("--meetings", type=int, default=6)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--cosqa")
    ap.add_argument("--code-queries", type=int, default=60)
    ap.add_argument("--code-distractors", type=int, default=100)
    ap.add_argument("--chroma", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--chroma-corpora", default="wikitexts")
    ap.add_argument("--doc-chars", type=int, default=4000)
    ap.add_argument("--questions", type=int, default=100, help="generated questions per set (questions' default)")
    ap.add_argument("--method", default=None, help="question method (default: the questions command's)")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--time", default="4m")
    ap.add_argument("--only", default=None, help="comma-separated set names")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="/tmp/chunkwise-bench-tuning")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    sets = []
    if args.scifact and args.scifact_abstracts:
        sets.append(
            (
                "scifact",
                lambda: prepare_scifact(
                    args.scifact,
                    args.scifact_abstracts,
                    work / "scifact",
                    args.claims,
                    args.seed,
                    args.abstract_distractors,
                ),
            )
        )
    if args.qmsum:
        sets.append(("qmsum", lambda: prepare_qmsum(args.qmsum, work / "qmsum", args.meetings, args.turns, args.seed)))
    if args.chroma and Path(args.chroma).exists():
        sets.append(
            (
                "chroma",
                lambda: prepare_chroma(args.chroma, work / "chroma", args.chroma_corpora.split(","), args.doc_chars),
            )
        )
    if args.cosqa:
        sets.append(
            (
                "cosqa",
                lambda: prepare_cosqa(args.cosqa, work / "cosqa", args.code_queries, args.code_distractors, args.seed),
            )
        )
    only = set(args.only.split(",")) if args.only else None
    embedder = get_embedder("minilm")
    rows = []
    for name, prepare in sets:
        if only and name not in only:
            continue
        rows.append(measure_set(name, prepare(), work, args, embedder))
        if args.output:
            Path(args.output).write_text(json.dumps(rows, indent=1))
    print_table(rows)


def _ci(d: dict) -> str:
    return f"{d['default']:.3f} | {d['tuned']:.3f} | {d['diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"


def print_table(rows: list[dict]) -> None:
    print(
        "\n| set | docs / human q / generated q | generated set: best, answered by all | written | "
        "recall@5: default / tuned / tuned − default [95 % CI] | nDCG@10: default / tuned / diff [CI] | "
        "τ recall@5 / nDCG@10 |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        qs = r["question_set"] or {}
        w = r["written"]
        written = f"{w['strategy']} {json.dumps(w.get('params', {}))} {json.dumps(w.get('run', {}))}"
        print(
            f"| {r['set']} | {r['documents']} / {r['human_queries']} / {r['generated']} | "
            f"{qs.get('best', float('nan')):.3f}, {qs.get('answered_by_all', float('nan')):.0%}"
            f"{' (saturated)' if qs.get('saturated') else ''} | {written} | {_ci(r['recall@5'])} | "
            f"{_ci(r['ndcg@10'])} | {r['recall@5']['tau']:+.2f} / {r['ndcg@10']['tau']:+.2f} |"
        )


if __name__ == "__main__":
    main()
