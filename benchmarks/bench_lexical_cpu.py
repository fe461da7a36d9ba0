"""CPU of ``document_terms`` (the BM25 terms of every chunk, computed by ``chunkwise index``): this tree
against ``chunkwise/segmentation/lexical.py`` of another commit, interleaved (A B A B ...) in one process so
load hits both, over chunk-sized pieces (1,200 characters) of real text. Each side starts every round with
an empty memo; the terms of both sides are compared on every piece of the first round.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_lexical_cpu.py [--base COMMIT] [--mb 3] [--rounds 3]
        [FILE_OR_GLOB ...]

Default text: Chroma's evaluation corpora (``../shared/data/chroma-eval/corpora``, English prose), then
Node.js's changelogs (``/usr/share/doc/nodejs/changelogs``, versions, names, hashes) when present, each
repeated or cut to ``--mb`` MB. Prints CPU seconds (user + system) per side and round, and the load average.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from chunkwise.segmentation import lexical
from chunkwise.store.bm25 import document_terms

ROOT = Path(__file__).resolve().parents[1]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def base_module(commit: str):
    src = subprocess.run(
        ["git", "show", f"{commit}:src/chunkwise/segmentation/lexical.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "base_lexical.py"
    path.write_bytes(src)
    spec = importlib.util.spec_from_file_location("base_lexical", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def empty_memos() -> None:
    for key, memo in getattr(lexical, "_MEMOS", {}).items():
        memo.clear()
        lexical._HELD[key] = 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="files or globs (default: Chroma's corpora, Node's changelogs)")
    ap.add_argument("--base", default="6a51709", help="the commit whose lexical.py is the baseline")
    ap.add_argument("--mb", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.files:
        corpora = {"given": sorted(f for g in args.files for f in glob.glob(g))}
    else:
        chroma = next((r / "shared/data/chroma-eval/corpora" for r in ROOT.parents if (r / "shared").is_dir()), None)
        corpora = {
            "chroma (prose)": sorted(glob.glob(f"{chroma}/*.md")) if chroma else [],
            "node changelogs (identifiers)": sorted(glob.glob("/usr/share/doc/nodejs/changelogs/CHANGELOG_V*.md")),
        }
    base = base_module(args.base)
    size = int(args.mb * 1e6)
    for name, files in corpora.items():
        if not files:
            print(f"{name}: no files, skipped")
            continue
        text = "".join(Path(f).read_text(encoding="utf-8", errors="replace") for f in files)
        text = (text * (size // len(text) + 1))[:size]
        docs = [text[i : i + 1200] for i in range(0, len(text), 1200)]
        a, b = [], []
        for r in range(args.rounds):
            t = cpu()
            want = [base.lexical_terms(d, fold=True) for d in docs]
            a.append(cpu() - t)
            empty_memos()
            t = cpu()
            got = [document_terms(d) for d in docs]
            b.append(cpu() - t)
            if r == 0 and got != want:
                sys.exit(f"{name}: the terms differ from {args.base}'s")
        print(
            f"{name}: {len(text) / 1e6:.1f} MB, {len(docs)} pieces; base {min(a):.2f} CPU-s "
            f"({', '.join(f'{x:.2f}' for x in a)}), this tree {min(b):.2f} "
            f"({', '.join(f'{x:.2f}' for x in b)}); {min(a) / min(b):.1f}x less; load {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
