"""Notebooks and tables in a repository as cloned: what `chunkwise chunk` makes of them, as counts.

Run ``chunkwise chunk FOLDER -o chunks.jsonl`` (defaults) on a checkout, then:

    python benchmarks/bench_notebooks_tables.py chunks.jsonl [more.jsonl ...]

Per extension: chunks, chunks holding base64 data (``base64,`` or a run of 200+ base64 characters),
chunks holding notebook JSON keys (``"cell_type":``, ``"execution_count":``, ``"output_type":``,
``"nbformat":``), chunks with a section, and for CSV/TSV the chunks that carry their file's header row (the
chunk text starts with it, or its ``context`` is it). The numbers in ``benchmarks/results/formats.md`` come
from anthropics/anthropic-cookbook (public, MIT), fetched as a bare git directory and written out with
``git cat-file`` (its two largest notebooks are not in that snapshot).
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

BASE64 = re.compile(r"base64,|[A-Za-z0-9+/]{200,}={0,2}")
NOTEBOOK_KEYS = re.compile(r'"(cell_type|execution_count|output_type|nbformat|nbformat_minor)"\s*:')


def _header(source: str, cache: dict[str, str]) -> str:
    if source not in cache:
        with open(source, encoding="utf-8", errors="replace", newline="") as fh:
            cache[source] = fh.readline().rstrip("\r\n")
    return cache[source]


def counts(path: str) -> tuple[int, dict[str, collections.Counter]]:
    """Total chunks and, per extension, the counters described in the module doc."""
    by: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    headers: dict[str, str] = {}
    total = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            total += 1
            name = Path(c["source"]).name
            ext = Path(name).suffix.lower() or "(none)"
            s = by[ext]
            s["chunks"] += 1
            s["base64"] += bool(BASE64.search(c["text"]))
            s["notebook JSON"] += bool(NOTEBOOK_KEYS.search(c["text"]))
            s["section"] += bool(c["section"])
            if ext in (".csv", ".tsv"):
                head = _header(c["source"], headers)
                s["header"] += c["text"].startswith(head) or (c.get("context") or "").strip() == head.strip()
    return total, by


def main(paths: list[str]) -> None:
    for path in paths:
        total, by = counts(path)
        print(f"{path}: {total:,} chunks")
        for ext, s in sorted(by.items(), key=lambda kv: -kv[1]["chunks"]):
            extra = ", ".join(f"{k} {s[k]:,}" for k in ("base64", "notebook JSON", "section", "header") if s[k])
            print(f"  {ext}: {s['chunks']:,} chunks" + (f"; {extra}" if extra else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
