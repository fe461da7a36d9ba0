"""How big is a `chunkwise viz` report for a 100-page document, and how long does it take to make?

    python benchmarks/bench_viz_size.py [--pages 100] [--out DIR]

Data: a PDF of ``--pages`` pages (about 2,800 characters each, DejaVu-free core font) written with fpdf2
from the Markdown corpora of Chroma's chunking evaluation (``../shared/data/chroma-eval/corpora``; the
shipped ``examples/`` when that folder is missing), loaded by chunkwise's PDF loader so chunks carry pages.
Reports are made for one column (semantic, MiniLM) and for four columns (semantic, maxmin, recursive,
fixed) at ``max_tokens=256``; printed: file size, the share that is the embedded (gzip+base64) plotly.js, the gzip size (what a mail
attachment compresses to) and the wall time.
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"


def source_text(chars: int) -> str:
    files = sorted(CORPORA.glob("*.md")) if CORPORA.is_dir() else sorted((ROOT / "examples").glob("*.md"))
    text = "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
    while len(text) < chars:
        text += "\n\n" + text
    return text[:chars]


def make_pdf(path: Path, pages: int, per_page: int = 2800) -> None:
    from fpdf import FPDF

    text = source_text(pages * per_page).encode("latin-1", "replace").decode("latin-1")
    pdf = FPDF()
    pdf.set_font("Helvetica", size=9)
    for k in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 4, text[k * per_page : (k + 1) * per_page])
    pdf.output(str(path))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--out", default=None, help="keep the reports in this folder")
    args = ap.parse_args()
    from chunkwise.formats import load
    from chunkwise.viz import report
    from chunkwise.viz.plots import plotly_js, plotly_js_gzip_base64

    out = Path(args.out or tempfile.mkdtemp(prefix="viz-size-"))
    out.mkdir(parents=True, exist_ok=True)
    pdf = out / f"doc-{args.pages}p.pdf"
    make_pdf(pdf, args.pages)
    doc = load(pdf)
    full, js = len(plotly_js().encode("utf-8")), len(plotly_js_gzip_base64())
    print(
        f"document: {len(doc.pages)} pages, {len(doc.text):,} characters; plotly.js {full / 1e6:.2f} MB, "
        f"embedded gzip+base64 {js / 1e6:.2f} MB"
    )
    for name, strategies in (("1 column", ["semantic"]), ("4 columns", ["semantic", "maxmin", "recursive", "fixed"])):
        t0 = time.perf_counter()
        page = report(doc, strategies, path=out / f"report-{len(strategies)}.html", max_tokens=256)
        seconds = time.perf_counter() - t0
        size = len(page.encode("utf-8"))
        gz = len(gzip.compress(page.encode("utf-8")))
        print(
            f"{name:<10} {size / 1e6:6.2f} MB (plotly.js {100 * js / size:.0f}%), gzip {gz / 1e6:.2f} MB, "
            f"{seconds:.1f}s"
        )
    print(f"reports in {out}")


if __name__ == "__main__":
    main()
