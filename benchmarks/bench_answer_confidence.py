"""Is ``ask``'s ``confident`` right? Precision of confident answers and the share hedged, on a corpus with
questions it answers and questions it does not.

Data: Chroma's chunking evaluation (github.com/brandonstarxel/chunking_evaluation, MIT; the folder with
``corpora/*.md`` and ``questions_df.csv``). The corpus is ``state_of_the_union.md``; answerable: its own
questions (a confident answer is right when its first cited passage overlaps a reference span);
unanswerable: the first ``--others`` questions of each other corpus (chatlogs, finance, pubmed, wikitexts),
which the speech does not answer (a confident answer to one is wrong). Index: the defaults (MiniLM, the
default chunking, hybrid search), ``ask`` with the offline extractive reader.

    python benchmarks/bench_answer_confidence.py --chroma ../shared/data/chroma-eval [--out result.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chroma", type=Path, required=True)
    ap.add_argument("--corpus", default="state_of_the_union")
    ap.add_argument("--others", type=int, default=19, help="questions taken from each other corpus")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from chunkwise import Index

    rows = list(csv.DictReader((args.chroma / "questions_df.csv").open(encoding="utf-8")))
    own = [r for r in rows if r["corpus_id"] == args.corpus]
    others: list[dict] = []
    for corpus in sorted({r["corpus_id"] for r in rows} - {args.corpus}):
        others += [r for r in rows if r["corpus_id"] == corpus][: args.others]
    work = Path(tempfile.mkdtemp(prefix="chunkwise-confidence-"))
    src = work / f"{args.corpus}.md"
    src.write_text((args.chroma / "corpora" / f"{args.corpus}.md").read_text(encoding="utf-8"), encoding="utf-8")
    out = []
    with Index(work / "index.db") as index:
        t0 = time.perf_counter()
        index.add(str(src))
        print(f"indexed in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        for r, answerable in [(r, True) for r in own] + [(r, False) for r in others]:
            ans = index.ask(r["question"])
            refs = [(x["start_index"], x["end_index"]) for x in json.loads(r["references"])] if answerable else []
            cited = ans.cited_passages or ans.passages[:1]
            right = bool(cited) and any(
                cited[0].start is not None and cited[0].start < b and cited[0].end > a for a, b in refs
            )
            out.append({"answerable": answerable, "confident": ans.confident, "right": right, "best": ans.best_score})
    conf = [o for o in out if o["confident"]]
    own_n = sum(o["answerable"] for o in out)
    summary = {
        "answerable": own_n,
        "unanswerable": len(out) - own_n,
        "precision_of_confident": sum(o["answerable"] and o["right"] for o in conf) / len(conf) if conf else None,
        "hedged_share": 1 - len(conf) / len(out),
        "hedged_answerable": sum(o["answerable"] and not o["confident"] for o in out) / own_n,
        "confident_wrong_answerable": sum(o["answerable"] and o["confident"] and not o["right"] for o in out) / own_n,
        "confident_unanswerable": sum(not o["answerable"] and o["confident"] for o in out) / (len(out) - own_n),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": out}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
