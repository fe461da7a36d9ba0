"""Sentence boundaries and speed of the sentence back-ends, side by side in one run.

    python benchmarks/bench_sentences.py [--corpora DIR] [--rounds 3] [--no-speed]

1. **Quality.** Boundary precision, recall and F1 of ``chunkwise``, ``pysbd`` and ``blingfire`` on the
   hand-written gold set in ``tests/data/sentences/`` (English, German, Chinese, Japanese), per language
   and overall, and overall on the ``heldout`` documents alone (written after the rules and never tuned
   on). A boundary is the end offset of a sentence; one character off counts as wrong. Every back-end gets
   the document's language (pysbd picks its rules by it).
2. **Speed.** Each back-end splits the five Chroma corpora (``../shared/data/chroma-eval/corpora/*.md``,
   1.45 MB) through :func:`split_sentences`, i.e. *with exact offsets* (peers run paragraph by paragraph and
   are aligned back onto the text). Printed: MB/s, sentences found, sentences/s, and MB/s as a ratio to the
   fastest back-end. Rows are timed ``--rounds`` times, interleaved, best round counts (pysbd, which takes
   tens of seconds, once). For reference the raw peers (strings, no offsets, whole text in one call) are
   timed too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chunkwise.segmentation.sentences import SENTENCE_BACKENDS, split_sentences  # noqa: E402

GOLD_DIR = ROOT / "tests" / "data" / "sentences"
DEFAULT_CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
LANGUAGES = ("en", "de", "zh", "ja")


def load_gold(lang: str) -> list[dict]:
    """Documents of ``lang`` with their text and gold boundary offsets (see tests/data/sentences/README.md)."""
    docs = json.loads((GOLD_DIR / f"{lang}.json").read_text(encoding="utf-8"))
    for doc in docs:
        sentences = doc["sentences"]
        seps = doc.get("seps") or [doc.get("sep", " " if lang in ("en", "de") else "")] * (len(sentences) - 1)
        text, gold = "", set()
        for i, sentence in enumerate(sentences):
            text += sentence
            if i < len(sentences) - 1:
                gold.add(len(text))
                text += seps[i]
        doc["text"], doc["gold"] = text, gold
    return docs


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def quality_table() -> None:
    gold = {lang: load_gold(lang) for lang in LANGUAGES}
    n_gold = {lang: sum(len(d["gold"]) for d in docs) for lang, docs in gold.items()}
    n_held = sum(len(d["gold"]) for docs in gold.values() for d in docs if d.get("set") == "heldout")
    print(f"Boundary precision / recall / F1 on the gold set ({sum(n_gold.values())} boundaries: "
          + ", ".join(f"{lang} {n}" for lang, n in n_gold.items()) + f"; held-out {n_held})\n")
    header = ["back-end"] + [lang for lang in LANGUAGES] + ["overall P", "overall R", "overall F1", "held-out F1"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for backend in SENTENCE_BACKENDS:
        cells, total, held = [backend], [0, 0, 0], [0, 0, 0]
        for lang in LANGUAGES:
            counts = [0, 0, 0]
            for doc in gold[lang]:
                pred = {e for _, e in split_sentences(doc["text"], backend=backend, language=lang)[:-1]}
                c = (len(pred & doc["gold"]), len(pred - doc["gold"]), len(doc["gold"] - pred))
                for acc in (counts, total) + ((held,) if doc.get("set") == "heldout" else ()):
                    for i in range(3):
                        acc[i] += c[i]
            cells.append(f"{prf(*counts)[2]:.3f}")
        p, r, f = prf(*total)
        cells += [f"{p:.3f}", f"{r:.3f}", f"**{f:.3f}**", f"{prf(*held)[2]:.3f}"]
        print("| " + " | ".join(cells) + " |")
    print()


def raw_peers() -> dict:
    """The peers as people call them: strings, whole text at once, no offsets."""
    out = {}
    try:
        import blingfire

        out["blingfire (raw strings)"] = lambda t: blingfire.text_to_sentences(t).split("\n")
    except ImportError:
        pass
    try:
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False)
        out["pysbd (raw strings)"] = seg.segment
    except ImportError:
        pass
    return out


def speed_table(corpora: Path, rounds: int, raw_peers_too: bool = True) -> None:
    paths = sorted(corpora.glob("*.md"))
    if not paths:
        print(f"(no corpora under {corpora}; speed table skipped)")
        return
    texts = [p.read_text(encoding="utf-8") for p in paths]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    rows = {b: (lambda t, b=b: split_sentences(t, backend=b)) for b in SENTENCE_BACKENDS}
    best: dict[str, float] = {}
    found: dict[str, int] = {}
    for r in range(rounds):
        for name, fn in rows.items():
            if name == "pysbd" and r > 0:
                continue  # tens of seconds a round; one is enough to rank it
            t0 = time.perf_counter()
            found[name] = sum(len(fn(t)) for t in texts)
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    fastest = min(best.values())
    print(f"Speed on the Chroma corpora ({len(texts)} files, {mb:.2f} MB), with exact offsets; best of {rounds}\n")
    print("| back-end | MB/s | sentences | sentences/s | speed vs fastest |")
    print("|---|---|---|---|---|")
    for name in rows:
        s = best[name]
        print(f"| {name} | {mb / s:.2f} | {found[name]} | {found[name] / s:,.0f} | {fastest / s:.2f}x |")
    print()
    raw = raw_peers()
    if raw and raw_peers_too:
        print("For reference, raw peers (strings, no offsets, whole corpus file per call; pysbd with English rules):\n")
        print("| peer | MB/s | sentences | speed vs fastest offset back-end |")
        print("|---|---|---|---|")
        for name, fn in raw.items():
            t0 = time.perf_counter()
            n = sum(len(fn(t)) for t in texts)
            s = time.perf_counter() - t0
            print(f"| {name} | {mb / s:.2f} | {n} | {fastest / s:.2f}x |")
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-speed", action="store_true", help="only the quality table")
    ap.add_argument("--no-raw", action="store_true", help="skip timing the raw peers (raw pysbd takes over a minute)")
    args = ap.parse_args()
    quality_table()
    if not args.no_speed:
        speed_table(args.corpora, args.rounds, raw_peers_too=not args.no_raw)


if __name__ == "__main__":
    main()
