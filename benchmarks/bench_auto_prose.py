"""``auto`` on plain text without layout: ``recursive`` (what it did) against ``semantic`` (what it does).

Why: text with no blank line gives ``recursive`` nothing but sentence ends to cut at, so unrelated sentences
share a chunk. ``auto`` now resolves such text to ``semantic``; this measures whether retrieval stays as good
(the rule is adopted only if it is not significantly worse) on sets where the branch triggers. In each run
``before=recursive`` is exactly what ``auto`` resolved to before on these documents (plain-text files
without headings), ``after=auto`` is the new rule.

Sets, written under ``--work`` (nothing is copied into the project):

- ``chroma``: Chroma's evaluation set as published (``../shared/data/chroma-eval``). Its layout is read as
  plain text; only ``wikitexts`` (no blank line in 118 k characters) takes the new branch.
- ``chroma-flat``: the same corpora with every run of blank lines replaced by spaces and one newline of the
  same length (offsets, so the questions, unchanged): every corpus takes the new branch.
- ``flat-mix``: 40 flat documents of 4 passages each, every passage around one Chroma question's
  references and from a different corpus, joined by a space; gold topic boundaries at the passage starts
  (Pk, WindowDiff) and the questions with their offsets moved (160 queries).
- ``qmsum``: meeting transcripts one ``Speaker: text`` line per turn (no blank line), as in
  ``bench_retrieval.py`` (12 test meetings, 40 turns per document, 79 queries); needs ``--qmsum`` (a git
  dir of github.com/Yale-LILY/QMSum).

Run: ``python benchmarks/bench_auto_prose.py [--qmsum DIR]``; it prints the ``chunkwise eval`` commands'
tables (paired bootstrap 95 % intervals, after - before).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import random
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLANK_RUN = re.compile(r"[^\S\n]*\n(?:[^\S\n]*\n)+[^\S\n]*")
SENT = re.compile(r"(?<=[.!?])\s+")


def flatten(chroma: Path, out: Path) -> Path:
    """Chroma's corpora without blank lines, offsets kept (``.txt``), and its questions."""
    (out / "corpora").mkdir(parents=True, exist_ok=True)
    for f in sorted((chroma / "corpora").glob("*.md")):
        text = f.read_text(encoding="utf-8")
        flat = BLANK_RUN.sub(lambda m: " " * (len(m.group()) - 1) + "\n", text)
        assert len(flat) == len(text) and not re.search(r"\n[^\S\n]*\n", flat.strip())
        (out / "corpora" / f"{f.stem}.txt").write_text(flat, encoding="utf-8")
    rows = list(csv.DictReader(open(chroma / "questions_df.csv", encoding="utf-8")))
    with open(out / "questions_df.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["question", "references", "corpus_id"])
        w.writeheader()
        for r in rows:
            flat = (out / "corpora" / f"{r['corpus_id']}.txt").read_text(encoding="utf-8")
            refs = json.loads(r["references"])
            for x in refs:
                x["content"] = flat[x["start_index"] : x["end_index"]]
            w.writerow({**r, "references": json.dumps(refs)})
    return out


def _next_sentence(text: str, i: int) -> int:
    m = SENT.search(text, i)
    return m.end() if m else len(text)


def flat_mix(flat: Path, out: Path, n_docs: int = 40, seed: int = 0) -> Path:
    """Documents of 4 passages from different corpora joined by a space, with gold boundaries."""
    (out / "docs").mkdir(parents=True, exist_ok=True)
    corp = {f.stem: f.read_text(encoding="utf-8") for f in (flat / "corpora").glob("*.txt")}
    rng = random.Random(seed)
    items: dict[str, list] = collections.defaultdict(list)
    for r in csv.DictReader(open(flat / "questions_df.csv", encoding="utf-8")):
        refs = json.loads(r["references"])
        lo, hi = min(x["start_index"] for x in refs), max(x["end_index"] for x in refs)
        if hi - lo > 1200:
            continue
        t = corp[r["corpus_id"]]
        a = min(_next_sentence(t, lo - 500) if lo > 500 else 0, lo)
        b = max(_next_sentence(t, hi + 300), hi)
        passage = t[a:b].strip()
        off = a + (len(t[a:b]) - len(t[a:b].lstrip()))
        if passage and off <= lo and off + len(passage) >= hi:
            items[r["corpus_id"]].append(
                (r["question"], [(x["start_index"] - off, x["end_index"] - off) for x in refs], passage)
            )
    for k in sorted(items):
        rng.shuffle(items[k])
    names = sorted(items)
    merged: dict[tuple[str, str], list] = {}
    bounds = []
    for n in range(n_docs):
        pick = [c for c in rng.sample(names, 4) if items[c]]
        if len(pick) < 4:
            break
        doc, text, starts = f"mix{n:02d}.txt", "", []
        for c in pick:
            q, refs, passage = items[c].pop()
            text += " " if text else ""
            starts.append(len(text))
            merged.setdefault((q, doc), []).extend(
                {"doc": doc, "start": len(text) + s, "end": len(text) + e} for s, e in refs
            )
            text += passage
        (out / "docs" / doc).write_text(text, encoding="utf-8")
        bounds.append({"doc": doc, "boundaries": starts[1:]})
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fh:
        for (q, _), refs in merged.items():
            fh.write(json.dumps({"query": q, "references": refs}) + "\n")
    with open(out / "boundaries.jsonl", "w", encoding="utf-8") as fh:
        for b in bounds:
            fh.write(json.dumps(b) + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chroma", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--qmsum", default=None, help="a git dir of github.com/Yale-LILY/QMSum")
    ap.add_argument("--work", default="/tmp/chunkwise-bench-auto-prose")
    args = ap.parse_args()
    work = Path(args.work)
    sets = {"chroma": Path(args.chroma)}
    sets["chroma-flat"] = flatten(Path(args.chroma), work / "chroma-flat")
    sets["flat-mix"] = flat_mix(sets["chroma-flat"], work / "flat-mix")
    if args.qmsum:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_retrieval import prepare_qmsum

        sets["qmsum"] = prepare_qmsum(args.qmsum, work / "qmsum", 12, 40, 0)
    for name, path in sets.items():
        print(f"== {name}", flush=True)
        cmd = ["chunkwise", "eval", str(path), "--run", "before=recursive", "--run", "after=auto"]
        subprocess.run([*cmd, "-o", str(work / f"{name}.json")], check=True)


if __name__ == "__main__":
    main()
