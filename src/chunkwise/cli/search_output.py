"""What `chunkwise search` prints: hits or expanded passages as a table for people, or JSONL (each one's
``to_dict``) for programs."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap


def print_results(args: argparse.Namespace, results, table=None) -> int:
    """Search hits or expanded passages as JSONL (their ``to_dict``) or a table (``table``, default the hits')."""
    if args.format == "jsonl":
        for r in results:
            sys.stdout.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    elif results:
        print((table or format_table)(results, args.max_chars))
    elif not args.quiet:
        print("chunkwise: no results", file=sys.stderr)
    return 0


def format_table(results, max_chars: int) -> str:
    width = max(40, shutil.get_terminal_size((100, 20)).columns)
    lines = []
    for r in results:
        page = ""
        if r.page_start is not None:
            from ..document import page_label

            unit = page_label(r.source)
            page = f"{'p.' if unit == 'p' else unit}{r.page_start}" + (
                f"-{r.page_end}" if r.page_end not in (None, r.page_start) else ""
            )
        elif r.start_time is not None:
            from ..timefmt import format_time_range

            page = format_time_range(r.start_time, r.end_time)
        head = [f"#{r.rank}", f"{r.score:.4f}", r.source]
        if page:
            head.append(page)
        if r.section:
            head.append(" > ".join(r.section))
        clip = r.metadata.get("video") if isinstance(r.metadata, dict) else None
        if clip:
            head.append(
                f"frames {clip.get('start_frame')}-{clip.get('end_frame')} ids "
                + ",".join(str(i) for i in clip.get("track_ids", []))
            )
        lines.append("  ".join(head))
        lines += indented(r.text, max_chars, width)
    return "\n".join(lines).rstrip("\n")


def indented(text: str, max_chars: int, width: int) -> list[str]:
    """A hit's text on one logical line, cut at ``max_chars`` (``…`` says so), wrapped and indented, then a
    blank line."""
    text = " ".join(text.split())
    if max_chars and len(text) > max_chars:
        text = text[:max_chars].rstrip() + " …"
    return [*(textwrap.wrap(text, width=width - 4, initial_indent="    ", subsequent_indent="    ") or ["    "]), ""]


def format_passages(passages, max_chars: int) -> str:
    width = max(40, shutil.get_terminal_size((100, 20)).columns)
    lines = []
    for p in passages:
        from ..llm.base import provenance

        hits = ",".join(f"#{n}" for n in p.hits)
        score = f"{p.score:.4f}" if p.score is not None else "-"
        lines.append(
            f"[{p.rank}] {score}  {provenance(p)}  chars {p.start}-{p.end}  chunks "
            f"{p.chunks[0]}-{p.chunks[-1]}  hits {hits}  {p.token_count} tokens ({p.tokenizer})"
        )
        lines += indented(p.text, max_chars, width)
    return "\n".join(lines).rstrip("\n")


__all__ = ["print_results", "format_table", "format_passages"]
