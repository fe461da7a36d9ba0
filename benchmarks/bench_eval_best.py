"""Check the tuned configuration (docs/best-config.json) against the best published all-MiniLM-L6-v2 rows.

Issue 7's target: recall > 82.4 (TokenText 250/125) **and** IoU > 7.2 (Cluster 200) at n = 5 on Chroma's
general evaluation set, with all-MiniLM-L6-v2 (``minilm`` truncated at 256 positions). This evaluates the
configuration ``chunkwise tune`` wrote, beside our reproductions of those rows, and prints the paired
bootstrap intervals of the differences. Exit status 1 when the target is missed.

Usage: python benchmarks/bench_eval_best.py [--data ../shared/data/chroma-eval] [--config docs/best-config.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chroma-eval"
TARGET = (82.4, 7.2)
ROWS = [  # the published rows retrieve by vectors alone (hybrid is chunkwise's default since)
    "TokenText 250/125=fixed:max_tokens=250,overlap=125,tokenizer=cl100k,hybrid=false",
    "Cluster 200=cohesion:max_tokens=200,tokenizer=cl100k,hybrid=false",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--config", default=str(ROOT / "docs" / "best-config.json"))
    a = ap.parse_args(argv)

    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, load_dataset
    from chunkwise.evaluation.runner import parse_run_spec, spec_from_params

    cfg = json.loads(Path(a.config).read_text(encoding="utf-8"))
    best = spec_from_params(cfg["strategy"], cfg["params"], label="best-config", run=cfg.get("run"))
    ev = Evaluator(load_dataset(a.data), get_embedder("minilm", model_window=254), k=5)
    report = ev.evaluate([best, *[parse_run_spec(r) for r in ROWS]])
    print(f"{'run':20s} {'recall@5':>9s} {'IoU@5':>7s}   Δ recall [95% CI]        Δ IoU [95% CI]")
    for r in report.runs:
        line = f"{r.name:20s} {100 * r.scores['recall@5']:9.2f} {100 * r.scores['iou@5']:7.2f}"
        if r.name != "best-config":
            parts = []
            for m in ("recall@5", "iou@5"):
                c = report.comparison("best-config", r.name, m)
                mark = "" if c.significant else " ≈"
                parts.append(f"{100 * c.diff:+5.1f} [{100 * c.lo:+5.1f}, {100 * c.hi:+5.1f}]{mark}")
            line += "   " + "   ".join(parts)
        print(line)
    rec, iou = 100 * report.runs[0].scores["recall@5"], 100 * report.runs[0].scores["iou@5"]
    ok = rec > TARGET[0] and iou > TARGET[1]
    print(
        f"\nbest-config {json.dumps(best.to_config())}:\nrecall {rec:.2f} > {TARGET[0]} and IoU {iou:.2f} > {TARGET[1]}: "
        f"{'met' if ok else 'NOT met'} (Δ = best-config − row; ≈ not significant)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
