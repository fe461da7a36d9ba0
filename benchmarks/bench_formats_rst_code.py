"""reStructuredText and source code as cloned repositories hold them: what ``chunkwise chunk REPO`` gives.

    python benchmarks/bench_formats_rst_code.py REPO [REPO...] [--max-tokens 256]

A repository is a folder (a clone, or ``git archive HEAD`` of one: the ``fetch`` tool's bare copy of a public
GitHub repository, e.g. pallets/flask or psf/requests). For each it reports, with the defaults (``auto``):

- rst: chunks, the share that carry a section, chunks that end on a title (found by the adornment in the
  chunk text, not by the parser under test), and the same figures for rst read as plain text (before);
- code (``.py``, read with ``--code``): chunks, and the share that start at a statement, a decorator or a
  comment line by Python's own ``ast`` (the tree-sitter strategy vs ``recursive -p separators=code``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import warnings
from pathlib import Path

from chunkwise.formats import iter_documents, load
from chunkwise.strategies import get_strategy

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


def long_literals(src: str) -> list[tuple[int, int]]:
    """Spans of string statements (docstrings, module strings): a piece of one too long for a chunk starts
    inside it, at a paragraph or a line, never at a statement."""
    starts = [0] + [m.end() for m in re.finditer("\n", src)]
    out = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Expr | ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                out.append(
                    (starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset)
                )
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


def code_figures(repo: Path, max_tokens: int) -> dict:
    out = {}
    docs = [d for _, d in iter_documents([repo], include=["*.py"]) if not isinstance(d, Exception)]
    for name, strategy in (
        ("code", get_strategy("auto", max_tokens=max_tokens)),
        ("recursive-code", get_strategy("recursive", max_tokens=max_tokens, separators="code")),
    ):
        row = {"files": 0, "chunks": 0, "at_boundary": 0, "in_docstring": 0, "section": 0}
        for doc in docs:
            starts = statement_starts(doc.text)
            if starts is None:
                continue
            row["files"] += 1
            strings = long_literals(doc.text)
            for c in strategy.chunk(doc):
                row["chunks"] += 1
                row["at_boundary"] += c.start in starts
                row["in_docstring"] += c.start not in starts and any(a < c.start < b for a, b in strings)
                row["section"] += bool(c.section)
        out[name] = row
    return out


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} %" if d else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for repo in args.repos:
        r = rst_figures(repo, args.max_tokens)
        a, b = r["after"], r["before"]
        print(f"## {repo.name} (max_tokens={args.max_tokens})")
        print(f"rst files {a['files']}, warnings {a['warnings']}")
        print(
            f"rst before (text): chunks {b['chunks']}, with a section {b['section']} ({pct(b['section'], b['chunks'])}), "
            f"ending on a title {b['ends_on_title']}"
        )
        print(
            f"rst after (rst):   chunks {a['chunks']}, with a section {a['section']} ({pct(a['section'], a['chunks'])}), "
            f"ending on a title {a['ends_on_title']}"
        )
        for name, row in code_figures(repo, args.max_tokens).items():
            print(
                f"py {name:15s} files {row['files']}, chunks {row['chunks']}, start at a statement "
                f"{row['at_boundary']} ({pct(row['at_boundary'], row['chunks'])}), inside a docstring too long "
                f"for a chunk {row['in_docstring']} ({pct(row['in_docstring'], row['chunks'])}), with a section "
                f"{row['section']} ({pct(row['section'], row['chunks'])})"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
