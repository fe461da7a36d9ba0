"""PDF loading against pypdf's own text extraction, as a CPU-time ratio in one run.

    python benchmarks/bench_pdf.py [PDF ...] [--rounds 3]

For each PDF (default: GeoTopo, the 117-page LaTeX book of py-pdf's sample files, at
``/tmp/GeoTopo.pdf`` or ``/tmp/GeoTopo-komprimiert.pdf``, and ``examples/lighthouse-manual.pdf``),
interleaved over ``--rounds`` rounds, best round counts:

- **pypdf**: ``PdfReader(f).pages[i].extract_text()`` over every page (the text alone);
- **load_pdf**: :func:`chunkwise.formats.pdf.load_pdf` with its defaults: plain text, layout hints
  (pypdf's layout mode: paragraph ends, table rows), glyph repair, cleaning, outline sections;
- **load_pdf, parsed per call**: the same with every extraction parsing the page's content stream itself
  (what :func:`chunkwise.formats.pdf_pages.parsed_once` saves).

Printed: CPU seconds (``time.process_time``) and the ratio to pypdf. The target is load_pdf within 2x of
pypdf.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DEFAULTS = ["/tmp/GeoTopo.pdf", "/tmp/GeoTopo-komprimiert.pdf", str(ROOT / "examples" / "lighthouse-manual.pdf")]


def _pypdf(data: bytes) -> None:
    from pypdf import PdfReader

    for page in PdfReader(io.BytesIO(data)).pages:
        page.extract_text()


def _chunkwise(data: bytes) -> None:
    from chunkwise.formats.pdf import load_pdf

    load_pdf(data, "bench.pdf")


def _chunkwise_unshared(data: bytes) -> None:
    import chunkwise.formats.pdf as pdf

    @contextmanager
    def unparsed(page):
        yield None

    shared = pdf.parsed_once
    pdf.parsed_once = unparsed
    try:
        pdf.load_pdf(data, "bench.pdf")
    finally:
        pdf.parsed_once = shared


def _cpu(fn, data: bytes) -> float:
    start = time.process_time()
    fn(data)
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="*")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    paths = [Path(p) for p in (args.pdfs or DEFAULTS) if Path(p).is_file() and Path(p).stat().st_size > 0]
    if not paths:
        print("no PDF found (give one)", file=sys.stderr)
        return 1
    rows = [
        ("pypdf extract_text", _pypdf),
        ("load_pdf", _chunkwise),
        ("load_pdf, parsed per call", _chunkwise_unshared),
    ]
    for path in paths:
        data = path.read_bytes()
        _pypdf(data)  # imports and pypdf's module-level caches out of the first timing
        best = {name: float("inf") for name, _ in rows}
        for _ in range(args.rounds):
            for name, fn in rows:
                best[name] = min(best[name], _cpu(fn, data))
        base = best[rows[0][0]]
        print(f"\n{path.name} ({len(data) / 1e6:.1f} MB), best of {args.rounds}, CPU s:")
        for name, _ in rows:
            print(f"  {name:28s} {best[name]:7.2f} s   {best[name] / base:5.2f}x pypdf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
