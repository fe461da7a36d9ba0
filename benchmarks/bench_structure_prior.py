"""Real documents: do chunks follow the document's structure, and are there junk chunks?

For every file and strategy this reports, side by side in one run:

- ``cuts@struct``: the share of cuts (chunk starts after the first) that fall on a structural break (a blank
  line, a heading, the end of a list), next to ``chance``: the share of sentence gaps that are such breaks
  (what a cut placed at a random sentence gap would score);
- ``end heading``: chunks (not the last) whose last line is a heading; ``heading only``: chunks that are
  nothing but headings (not the last); ``<5 tok``, ``0 tok``, ``symbols``: junk chunks.

Data (public, fetched outside the repository; give the paths as arguments):

- FastAPI docs: ``git clone https://github.com/fastapi/fastapi`` then ``docs/en/docs`` (155 Markdown files);
- HTML pages from trafilatura's test cache (``https://github.com/adbar/trafilatura``, ``tests/cache``), e.g.
  ``github.blog.spiceland.html``, ``mercurynews.com.2023.01.16.letters-1119.html``,
  ``theguardian.com.academics.html``.

    .venv/bin/python benchmarks/bench_structure_prior.py FASTAPI/docs/en/docs PAGE.html ... \\
        [--semantic-every 5]   # semantic strategies on every 5th Markdown file (embedding is the cost)
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from chunkwise.formats import load
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.tidy import is_junk
from chunkwise.strategies.units import sentence_spans, structure_breaks

ATX = re.compile(r" {0,3}#{1,6}[ \t]")

SETTINGS = [
    ("recursive", {}),
    ("markdown", {}),
    ("auto", {}),
    ("semantic", {"break_distance": 0.0, "respect_sections": 0, "min_tokens": 0}),
    ("semantic", {}),
    ("maxmin", {"break_similarity": 0.0, "respect_sections": 0, "min_tokens": 0}),
    ("maxmin", {}),
    ("cohesion", {"break_reward": 0.0, "respect_sections": 0, "min_tokens": 0}),
    ("cohesion", {}),
]


def heading_ends(doc) -> set[int]:
    """Ends of headings that have a body (a heading directly over a higher-level one has none)."""
    return {
        s.heading_end
        for s in doc.sections
        if s.heading_end > s.heading_start >= 0 and doc.text[s.heading_end : s.end].strip()
    }


def structural_positions(doc) -> tuple[set[int], int, int]:
    """Sentence starts that follow a structural break, and (breaks, gaps) counts for the chance rate."""
    text = doc.text
    spans = sentence_spans(text, 0, len(text))
    heads = {s.heading_start for s in doc.sections if s.heading_start >= 0}
    strength = structure_breaks(text, spans, heads)
    starts = {spans[k + 1][0] for k in range(len(spans) - 1) if strength[k] >= 1.0}
    return starts, int((strength >= 1.0).sum()), max(1, len(spans) - 1)


def measure(files, name, params, tok) -> dict:
    strat = get_strategy(name, **params)
    out = dict(
        files=0,
        chunks=0,
        cuts=0,
        struct_cuts=0,
        breaks=0,
        gaps=0,
        end_heading=0,
        heading_only=0,
        under5=0,
        zero=0,
        symbols=0,
        tokens=0,
    )
    t0 = time.perf_counter()
    for f in files:
        doc = load(f)
        chunks = strat.chunk(doc)
        struct, breaks, gaps = structural_positions(doc)
        hends = heading_ends(doc)
        out["files"] += 1
        out["breaks"] += breaks
        out["gaps"] += gaps
        for k, c in enumerate(chunks):
            out["chunks"] += 1
            out["tokens"] += c.token_count
            last = k == len(chunks) - 1
            if k:
                out["cuts"] += 1
                pos = c.start
                out["struct_cuts"] += pos in struct or bool(ATX.match(doc.text, pos))
            lines = [ln for ln in c.text.splitlines() if ln.strip()]
            if not last and lines and ((ATX.match(lines[-1]) and not doc.sections) or c.end in hends):
                out["end_heading"] += 1
            if not last and lines and all(ATX.match(ln) for ln in lines):
                out["heading_only"] += 1
            if len(chunks) > 1 and c.token_count < 5:
                out["under5"] += 1
            out["zero"] += c.token_count == 0
            out["symbols"] += is_junk(c.text)
    out["seconds"] = time.perf_counter() - t0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="Markdown folders or files, HTML/PDF files")
    ap.add_argument("--semantic-every", type=int, default=5, help="semantic strategies on every N-th Markdown file")
    ap.add_argument("--only", default=None, help="regex over setting labels")
    args = ap.parse_args(argv)
    md, other = [], []
    for p in map(Path, args.paths):
        if p.is_dir():
            md += sorted(p.rglob("*.md"))
        elif p.suffix == ".md":
            md.append(p)
        else:
            other.append(p)
    tok = get_tokenizer("minilm")
    print(f"{len(md)} Markdown files, {len(other)} other files\n")
    print(
        "| corpus | setting | chunks | mean tok | cuts@struct | chance | end heading | heading only | <5 tok "
        "| 0 tok | symbols | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for corpus, files in (("markdown", md), ("html/pdf", other)):
        for name, params in SETTINGS:
            label = name + (" " + " ".join(f"{k}={v}" for k, v in params.items()) if params else " (defaults)")
            if args.only and not re.search(args.only, label):
                continue
            use = files
            if name in ("semantic", "maxmin", "cohesion") and corpus == "markdown":
                use = files[:: max(1, args.semantic_every)]
            if not use:
                continue
            r = measure(use, name, params, tok)
            share = r["struct_cuts"] / max(1, r["cuts"])
            chance = r["breaks"] / max(1, r["gaps"])
            print(
                f"| {corpus} ({r['files']}) | {label} | {r['chunks']} | {r['tokens'] / max(1, r['chunks']):.0f} | "
                f"{share:.1%} | {chance:.1%} | {r['end_heading']} | {r['heading_only']} | {r['under5']} | "
                f"{r['zero']} | {r['symbols']} | {r['seconds']:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
