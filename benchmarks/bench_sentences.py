"""Sentence boundaries and speed of the sentence back-ends, side by side in one run.

    python benchmarks/bench_sentences.py [--corpora DIR] [--rounds 3] [--no-speed] [--baseline REV]

1. **Quality.** Boundary precision, recall and F1 of ``chunkwise``, ``pysbd`` and ``blingfire`` on the
   hand-written gold set in ``tests/data/sentences/`` (English, German, Chinese, Japanese), per language
   and overall, and overall on the ``heldout`` documents alone (written after the rules and never tuned
   on). A boundary is the end offset of a sentence; one character off counts as wrong. Every back-end gets
   the document's language (pysbd picks its rules by it).
2. **Golden Rules.** pySBD's public case lists (tests/data/golden_rules/, vendored by
   scripts/make_golden_rules.py): cases reproduced exactly, per language, for each back-end through
   :func:`split_sentences`, and for raw pysbd called as pySBD's own tests call it (``clean`` as the list
   says). Lists that pySBD runs with ``clean=True`` are compared ignoring whitespace.
3. **Speed.** Each back-end splits the five Chroma corpora (``../shared/data/chroma-eval/corpora/*.md``,
   1.45 MB) through :func:`split_sentences`, i.e. *with exact offsets* (peers run paragraph by paragraph and
   are aligned back onto the text). Printed: MB/s, sentences found, sentences/s, and MB/s as a ratio to the
   fastest back-end. Rows are timed ``--rounds`` times, interleaved, best round counts (pysbd, which takes
   tens of seconds, once). Time is the process's CPU time (:func:`time.process_time`; every back-end is
   single-threaded), so other jobs on a shared machine distort it far less than wall-clock time. ``chunkwise@REV`` is the chunkwise back-end as it was at git revision
   ``--baseline`` (loaded from ``git show``), timed in the same rounds, so the before/after ratio is
   measured on the same machine at the same time. For reference the raw peers (strings, no offsets, whole
   text in one call) are timed too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chunkwise.segmentation.sentences import SENTENCE_BACKENDS, split_sentences  # noqa: E402

GOLD_DIR = ROOT / "tests" / "data" / "sentences"
GOLDEN_DIR = ROOT / "tests" / "data" / "golden_rules"
GOLDEN_LANGUAGES = ("en", "de", "es", "fr", "it", "nl", "zh", "ja")
#: The last commit before the Golden Rules work: the "before" of the speed ratio.
DEFAULT_BASELINE = "476b49d"
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
    print(
        f"Boundary precision / recall / F1 on the gold set ({sum(n_gold.values())} boundaries: "
        + ", ".join(f"{lang} {n}" for lang, n in n_gold.items())
        + f"; held-out {n_held})\n"
    )
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


def golden_ok(got: list[str], expected: list[str], clean: bool) -> bool:
    """Exact match of the stripped sentences; whitespace ignored for lists pySBD runs with clean=True."""
    if clean:
        return ["".join(s.split()) for s in got] == ["".join(s.split()) for s in expected]
    return [s.strip() for s in got if s.strip()] == [s.strip() for s in expected]


def golden_table(baseline: str | None = None) -> None:
    """Cases of pySBD's Golden Rules reproduced exactly, per language and back-end."""
    import pysbd

    suites = {
        lang: json.loads((GOLDEN_DIR / f"{lang}.json").read_text(encoding="utf-8"))["suites"]
        for lang in GOLDEN_LANGUAGES
    }
    print("pySBD Golden Rules: cases reproduced exactly (every case list of the language's pySBD test file)\n")
    header = ["back-end"] + list(GOLDEN_LANGUAGES) + ["all"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = {
        b: (lambda t, lang, clean, b=b: [t[x:y] for x, y in split_sentences(t, backend=b, language=lang)])
        for b in SENTENCE_BACKENDS
    }

    def raw_pysbd(text, lang, clean, name=""):
        seg = pysbd.Segmenter(language=lang, clean=clean, doc_type="pdf" if "PDF" in name else None)
        return seg.segment(text)

    rows["pysbd (raw, as its tests call it)"] = raw_pysbd
    old = baseline_splitter(baseline) if baseline else None
    if old:
        rows = {
            "chunkwise": rows["chunkwise"],
            f"chunkwise@{baseline}": lambda t, lang, clean: [t[x:y] for x, y in old(t, language=lang)],
            **rows,
        }
    for name, fn in rows.items():
        cells, ok_all, n_all = [name], 0, 0
        for lang in GOLDEN_LANGUAGES:
            ok = n = 0
            for suite in suites[lang]:
                for case in suite["cases"]:
                    args = (case["text"], lang, suite["clean"]) + ((suite["name"],) if fn is raw_pysbd else ())
                    ok, n = ok + golden_ok(fn(*args), case["sentences"], suite["clean"]), n + 1
            cells.append(f"{ok}/{n}")
            ok_all, n_all = ok_all + ok, n_all + n
        cells.append(f"**{ok_all}/{n_all}**")
        print("| " + " | ".join(cells) + " |")
    print()


def baseline_splitter(rev: str):
    """``split_sentences`` of the chunkwise back-end as it was at git revision ``rev`` (None if unavailable)."""
    path = "src/chunkwise/segmentation/sentences.py"
    res = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True)
    if res.returncode != 0:
        print(f"(baseline {rev} not available: {res.stderr.strip()})")
        return None
    module = types.ModuleType("chunkwise.segmentation._sentences_baseline")
    module.__package__ = "chunkwise.segmentation"  # so its relative imports resolve
    exec(compile(res.stdout, f"{rev}:{path}", "exec"), module.__dict__)
    return module.split_sentences


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


def speed_table(corpora: Path, rounds: int, raw_peers_too: bool = True, baseline: str | None = None) -> None:
    paths = sorted(corpora.glob("*.md"))
    if not paths:
        print(f"(no corpora under {corpora}; speed table skipped)")
        return
    texts = [p.read_text(encoding="utf-8") for p in paths]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    rows = {b: (lambda t, b=b: split_sentences(t, backend=b)) for b in SENTENCE_BACKENDS}
    old = baseline_splitter(baseline) if baseline else None
    if old:
        rows = {"chunkwise": rows["chunkwise"], f"chunkwise@{baseline}": old, **rows}
    best: dict[str, float] = {}
    found: dict[str, int] = {}
    for r in range(rounds):
        for name, fn in rows.items():
            if name == "pysbd" and r > 0:
                continue  # tens of seconds a round; one is enough to rank it
            t0 = time.process_time()
            found[name] = sum(len(fn(t)) for t in texts)
            best[name] = min(best.get(name, float("inf")), time.process_time() - t0)
    fastest = min(best.values())
    print(
        f"Speed on the Chroma corpora ({len(texts)} files, {mb:.2f} MB), with exact offsets; CPU time, best of "
        f"{rounds}\n"
    )
    print("| back-end | MB/s | sentences | sentences/s | speed vs fastest |")
    print("|---|---|---|---|---|")
    for name in rows:
        s = best[name]
        print(f"| {name} | {mb / s:.2f} | {found[name]} | {found[name] / s:,.0f} | {fastest / s:.2f}x |")
    if old:
        print(
            f"chunkwise now vs chunkwise@{baseline}: {best[f'chunkwise@{baseline}'] / best['chunkwise']:.2f}x "
            "the speed (MB/s; over 1 = faster now)\n"
        )
    raw = raw_peers()
    if raw and raw_peers_too:
        print("For reference, raw peers (strings, no offsets, whole corpus file per call; pysbd with English rules):\n")
        print("| peer | MB/s | sentences | speed vs fastest offset back-end |")
        print("|---|---|---|---|")
        for name, fn in raw.items():
            t0 = time.process_time()
            n = sum(len(fn(t)) for t in texts)
            s = time.process_time() - t0
            print(f"| {name} | {mb / s:.2f} | {n} | {fastest / s:.2f}x |")
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-speed", action="store_true", help="only the quality table")
    ap.add_argument("--no-raw", action="store_true", help="skip timing the raw peers (raw pysbd takes over a minute)")
    ap.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        help="git revision whose chunkwise back-end is timed beside today's ('' to skip)",
    )
    args = ap.parse_args()
    quality_table()
    golden_table(args.baseline or None)
    if not args.no_speed:
        speed_table(args.corpora, args.rounds, raw_peers_too=not args.no_raw, baseline=args.baseline or None)


if __name__ == "__main__":
    main()
