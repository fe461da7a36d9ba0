"""``chunkwise inspect PATH --strategy NAME [params]``: why the chunks were cut where they were.

Prints JSONL, one line per sentence (unit) of each document::

    {"source", "index", "sentence", "start", "end", "tokens", "distance_to_next", "threshold",
     "breakpoint", "cause", "chunk"}

``distance_to_next`` is the cosine distance the strategy compared (window to window for ``semantic``,
sentence to chunk for ``maxmin``, sentence to sentence for ``cohesion``); ``threshold`` is what it was
compared with (``null`` for ``cohesion``, whose cuts come from a global objective); ``breakpoint`` is true
when a chunk ends after the sentence and ``cause`` says why (``threshold``, ``objective``, ``max_tokens``,
``section``, ``end``). ``chunk`` is the index of the chunk the sentence starts in. Non-semantic strategies
are inspected too: their rows carry the breakpoints, with no distances.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings

from ..errors import ChunkwiseError, InputError
from . import add_command


def register(subparsers) -> None:
    from .chunk import add_input_options
    from .options import add_chunking_options

    p = add_command(subparsers, "inspect")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders, or - for standard input")
    add_chunking_options(p, default_strategy="semantic")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--format",
        "-f",
        choices=("jsonl", "table"),
        default="jsonl",
        help="jsonl: one object per sentence (default); table: distances with the cuts marked, for people",
    )
    add_input_options(p)
    p.set_defaults(func=run)


def format_rows(doc, rows: list[dict], width: int = 120) -> str:
    """The rows of one document as a table: sentence number, chunk, tokens, distance to the next sentence,
    threshold, ``>`` where the distance is above it, and a rule line naming the cause after every cut.
    Transcripts get a time column (``1:36:50.4``). ``width`` 0 (a pipe or a file): sentences are not cut."""
    from ..timefmt import format_time

    timed = bool(doc.cues)
    head = f"{'#':>5} {'chunk':>5} {'tok':>4} {'distance':>8} {'thresh':>8}   " + (f"{'time':>9}  " if timed else "")
    text_w = max(20, width - len(head) - 1) if width else 0
    rule = min(width or 100, 100) - 6
    lines = [f"{doc.source}: {len(rows)} sentences, {rows[-1]['chunk'] + 1 if rows else 0} chunks", head + "sentence"]

    def num(v) -> str:
        return f"{v:8.4f}" if isinstance(v, (int, float)) else f"{'-':>8}"

    for k, r in enumerate(rows):
        d, t = r.get("distance_to_next"), r.get("threshold")
        above = ">" if isinstance(d, (int, float)) and isinstance(t, (int, float)) and d > t else " "
        tokens = r.get("tokens", "")
        when = ""
        if timed:
            t0 = doc.time_span(r["start"], r["end"])[0]
            when = f"{format_time(t0):>9}  " if t0 is not None else f"{'':>9}  "
        sentence = " ".join(r["sentence"].split())
        if text_w and len(sentence) > text_w:
            sentence = sentence[: text_w - 1] + "\u2026"
        lines.append(f"{k:>5} {r['chunk']:>5} {tokens:>4} {num(d)} {num(t)} {above} {when}{sentence}")
        if r["breakpoint"]:
            lines.append(f"{'':>5} {'':-<{rule}} cut: {r.get('cause') or 'rule'}")
    return "\n".join(lines) + "\n\n"


def run(args: argparse.Namespace) -> int:
    from ..formats import iter_documents
    from ..formats.text import DecodingWarning
    from ..strategies.explain import explain_rows
    from .chunk import _build_strategy, _isatty, _open_output, input_options
    from .options import walk_options

    strategy = _build_strategy(args)
    options = input_options(args)
    out = _open_output(args.output)
    failures = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DecodingWarning)
            for source, item in iter_documents(args.paths, **walk_options(args), **options):
                if isinstance(item, InputError):
                    print(f"chunkwise: error: {source}: {item.problem}", file=sys.stderr)
                    failures += 1
                    continue
                try:
                    rows = explain_rows(strategy, item)
                except ChunkwiseError as exc:
                    print(f"chunkwise: error: {source}: {exc.problem if exc.source else exc}", file=sys.stderr)
                    failures += 1
                    continue
                if args.format == "table":
                    width = shutil.get_terminal_size((120, 24)).columns if _isatty(out) else 0
                    out.write(format_rows(item, rows, width=width))
                    continue
                for k, row in enumerate(rows):
                    line = {"source": source, "index": k, **row}
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                out.flush()
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failures else 0
