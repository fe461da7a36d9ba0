"""HTML tables split across chunks: does every later piece carry the table's header row?

    python benchmarks/bench_html_tables.py --max-tokens 256 FOLDER [FOLDER...]

Public HTML pages with tables are few in the repositories at hand, so the pages are made the way a docs
site makes them: every Markdown file of the folders (e.g. fastapi's ``docs/en/docs``, pydantic's ``docs/``,
the anthropic cookbook, as cloned) that holds a pipe table is rendered to HTML by markdown-it-py
(CommonMark + tables) inside ``<main><article>``, and read by the HTML loader (``main`` mode, what
``chunkwise chunk page.html`` does). Counted: tables found (``doc.tables``), chunks, and the chunks that start
in a table's body after its header row, with how many carry that header as their ``context``.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from markdown_it import MarkdownIt

from chunkwise.formats import load_bytes
from chunkwise.strategies import get_strategy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    md = MarkdownIt("commonmark").enable("table")
    auto = get_strategy("auto", max_tokens=args.max_tokens)
    pages = tables = chunks = inside = with_header = 0
    for root in args.folders:
        for p in sorted(root.rglob("*.md")):
            body = md.render(p.read_text(encoding="utf-8"))
            if "<table" not in body:
                continue
            html = (
                f"<html><head><title>{p.stem}</title></head><body><main><article>{body}</article></main></body></html>"
            )
            doc = load_bytes(html.encode(), source=str(p.with_suffix(".html")), name=p.stem + ".html")
            pages += 1
            tables += len(doc.tables)
            for c in auto.chunk(doc):
                chunks += 1
                t = next((t for t in doc.tables if t.header_end <= c.start < t.end), None)
                if t is not None and not (c.start <= t.header_start and t.header_end <= c.end):
                    inside += 1
                    with_header += c.context == doc.text[t.header_start : t.header_end]
    print(
        f"max_tokens={args.max_tokens}: pages with a table {pages}, tables found {tables}, chunks {chunks}, "
        f"chunks starting in a table body after its header {inside}, carrying the header {with_header}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
