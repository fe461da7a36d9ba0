"""reStructuredText and source code as cloned repositories hold them: what ``chunkwise chunk REPO`` gives.

    python benchmarks/bench_formats_rst_code.py REPO [REPO...] [--max-tokens 256]

A repository is a folder (a clone, or ``git archive HEAD`` of one: the ``fetch`` tool's bare copy of a public
GitHub repository, e.g. pallets/flask or psf/requests). For each it reports, with the defaults (``auto``):

- rst: chunks, the share that carry a section, chunks that end on a title (found by the adornment in the
  chunk text, not by the parser under test), and the same figures for rst read as plain text (before);
- code (``.py``, read with ``--code``): chunks, and the share that start at a statement, a decorator or a
  comment line by Python's own ``ast`` (the tree-sitter strategy vs ``recursive -p separators=code``);
  then, of the other starts, those at a paragraph of a docstring (or string statement) longer than one
  chunk with the ``def``/``class`` line before it (after a blank line inside it), at another line of one,
  and elsewhere (inside a long literal or expression). A docstring over the cap must be cut inside; the
  floor is the sum of ``ceil(tokens / max_tokens) - 1`` over such docstrings, printed too.
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import sys
import warnings
from pathlib import Path

from chunkwise.formats import iter_documents, load
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.tidy import paragraph_break

_ADORN = re.compile(r"([!-/:-@\[-`{-~])\1+")


def ends_on_title(text: str) -> bool:
    lines = [ln.rstrip() for ln in text.rstrip().split("\n")]
    return len(lines) >= 2 and bool(_ADORN.fullmatch(lines[-1])) and len(lines[-1]) >= len(lines[-2].strip()) > 0


def statement_starts(src: str) -> set[int] | None:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    starts = [0] + [m.end() for m in re.finditer("\n", src)]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt | ast.ExceptHandler | ast.match_case):
            line, col = (
                (node.pattern.lineno, node.pattern.col_offset - 5)
                if isinstance(node, ast.match_case)
                else (node.lineno, node.col_offset)
            )
            out.add(starts[line - 1] + col)
            for dec in getattr(node, "decorator_list", []):
                out.add(starts[dec.lineno - 1] + dec.col_offset - 1)
    for m in re.finditer(r"(?m)^[ \t]*(#|(?:else|elif|finally)\b)", src):  # comments; clauses ast does not place
        out.add(m.start(1))
    return out


def long_literals(src: str) -> list[tuple[int, int, int]]:
    """Spans of string statements (docstrings, module strings) as ``(start, end, lead)``: a piece of one too
    long for a chunk starts inside it, at a paragraph or a line, never at a statement. ``lead`` is where the
    text that must stay with it starts: the ``def``/``class`` line of a docstring (a chunk never ends on a
    signature), else the string itself."""
    starts = [0] + [m.end() for m in re.finditer("\n", src)]
    nodes = list(ast.walk(ast.parse(src)))
    leads = {
        id(node.body[0]): starts[node.lineno - 1] + node.col_offset
        for node in nodes
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body
    }
    out = []
    for node in nodes:
        if isinstance(node, ast.Expr | ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                a = starts[node.lineno - 1] + node.col_offset
                b = starts[node.end_lineno - 1] + node.end_col_offset
                out.append((a, b, leads.get(id(node), a)))
    return out


def after_strings(src: str) -> dict[tuple[int, int], int]:
    """For each string statement followed by another statement in the same body: where that statement
    starts (its decorator, or the comment lines right above it)."""
    starts = [0] + [m.end() for m in re.finditer("\n", src)]
    out = {}
    for node in ast.walk(ast.parse(src)):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for stmt, nxt in zip(body, body[1:]):
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    if isinstance(stmt.value.value, str):
                        a = starts[stmt.lineno - 1] + stmt.col_offset
                        b = starts[stmt.end_lineno - 1] + stmt.end_col_offset
                        line, col = nxt.lineno, nxt.col_offset
                        decorators = getattr(nxt, "decorator_list", [])
                        if decorators:
                            line, col = decorators[0].lineno, decorators[0].col_offset - 1
                        pos = starts[line - 1] + col
                        while line > 1 and src[starts[line - 2] : starts[line - 1]].lstrip().startswith("#"):
                            line -= 1  # a comment right above the statement belongs to it
                            pos = (
                                starts[line - 1]
                                + len(src[starts[line - 1] :])
                                - len(src[starts[line - 1] :].lstrip(" \t"))
                            )
                        out[(a, b)] = pos
    return out


def rst_figures(repo: Path, max_tokens: int) -> dict:
    auto = get_strategy("auto", max_tokens=max_tokens)
    files = sorted(p for p in repo.rglob("*.rst") if p.is_file())
    after = {"files": len(files), "chunks": 0, "section": 0, "ends_on_title": 0, "warnings": 0}
    before = {"chunks": 0, "section": 0, "ends_on_title": 0}
    for path in files:
        doc = load(path)
        after["warnings"] += len(doc.metadata.get("warnings") or [])
        for c in auto.chunk(doc):
            after["chunks"] += 1
            after["section"] += bool(c.section)
            after["ends_on_title"] += ends_on_title(c.text)
        for c in auto.chunk(load(path, format="text")):
            before["chunks"] += 1
            before["section"] += bool(c.section)
            before["ends_on_title"] += ends_on_title(c.text)
    return {"after": after, "before": before}


def start_kind(text: str, pos: int, starts: set[int], long_strings: list[tuple[int, int]]) -> str:
    """Where a chunk starting at ``pos`` starts: ``statement``; inside a string statement longer than a
    chunk at a ``paragraph`` (a blank line before it) or a ``line``; ``other``."""
    if pos in starts:
        return "statement"
    if any(a < pos < b for a, b in long_strings):
        if paragraph_break(text, pos):
            return "paragraph"
        if not text[text.rfind("\n", 0, pos) + 1 : pos].strip():
            return "line"
    return "other"


def code_figures(repo: Path, max_tokens: int) -> dict:
    out = {}
    tok = get_tokenizer("minilm")
    docs = [d for _, d in iter_documents([repo], include=["*.py"]) if not isinstance(d, Exception)]
    for name, strategy in (
        ("code", get_strategy("auto", max_tokens=max_tokens)),
        ("recursive-code", get_strategy("recursive", max_tokens=max_tokens, separators="code")),
    ):
        row = {"files": 0, "chunks": 0, "statement": 0, "paragraph": 0, "line": 0, "other": 0}
        row.update(section=0, floor=0, split_docstrings=0, code_after_starts=0)
        for doc in docs:
            starts = statement_starts(doc.text)
            if starts is None:
                continue
            row["files"] += 1
            long_strings = []
            for a, b, lead in long_literals(doc.text):
                n = tok.count(doc.text[lead:b])
                if n > max_tokens:
                    long_strings.append((a, b))
                    row["floor"] += math.ceil(n / max_tokens) - 1
            chunks = strategy.chunk(doc)
            chunk_starts = {c.start for c in chunks}
            after = after_strings(doc.text)
            for a, b, _ in long_literals(doc.text):
                if (a, b) in after and any(a < s < b for s in chunk_starts):  # a docstring that was cut
                    row["split_docstrings"] += 1
                    row["code_after_starts"] += after[(a, b)] in chunk_starts
            for c in chunks:
                row["chunks"] += 1
                row[start_kind(doc.text, c.start, starts, long_strings)] += 1
                row["section"] += bool(c.section)
        out[name] = row
    return out


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} %" if d else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--only", choices=("rst", "code"), help="only the rst or only the code figures")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for repo in args.repos:
        print(f"## {repo.name} (max_tokens={args.max_tokens})")
        if args.only != "code":
            r = rst_figures(repo, args.max_tokens)
            a, b = r["after"], r["before"]
            print(f"rst files {a['files']}, warnings {a['warnings']}")
            print(
                f"rst before (text): chunks {b['chunks']}, with a section {b['section']} "
                f"({pct(b['section'], b['chunks'])}), ending on a title {b['ends_on_title']}"
            )
            print(
                f"rst after (rst):   chunks {a['chunks']}, with a section {a['section']} "
                f"({pct(a['section'], a['chunks'])}), ending on a title {a['ends_on_title']}"
            )
        if args.only == "rst":
            continue
        for name, row in code_figures(repo, args.max_tokens).items():
            n = row["chunks"]
            print(
                f"py {name:15s} files {row['files']}, chunks {n}, start at a statement {row['statement']} "
                f"({pct(row['statement'], n)}); or at a paragraph of a docstring longer than a chunk "
                f"{row['statement'] + row['paragraph']} ({pct(row['statement'] + row['paragraph'], n)}); "
                f"other starts: at a line of such a docstring {row['line']}, elsewhere {row['other']}; "
                f"forced docstring pieces (floor) {row['floor']}; docstrings cut inside and followed by a "
                f"statement: {row['split_docstrings']}, that statement starting a chunk: {row['code_after_starts']}; "
                f"with a section {row['section']} ({pct(row['section'], n)})"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
