"""Print the module map of docs/ARCHITECTURE.md: every module under src/chunkwise with the first line of its
docstring, grouped by package. `--write` replaces the map section in docs/ARCHITECTURE.md;
tests/test_architecture_doc.py checks that every module is named there and every named module exists.

    python scripts/module_map.py --write
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "chunkwise"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
HEADING = "## Module map"


def summary(path: Path) -> str:
    """The first sentence of the module's docstring (or its first line), on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    end = first.find(". ")
    if 0 < end < 160:
        return first[: end + 1]
    return (first if len(first) <= 160 else first[:160].rsplit(" ", 1)[0] + " ...") or "(no docstring)"


def module_map() -> str:
    lines = [
        HEADING,
        "",
        "Every module, by package, with the first sentence of its docstring (`python scripts/module_map.py",
        "--write` regenerates this section; `tests/test_architecture_doc.py` checks it against the tree).",
        "",
    ]
    modules = sorted(PACKAGE.rglob("*.py"), key=lambda p: (len(p.relative_to(PACKAGE).parts) > 1, p))
    package = None
    for path in modules:
        rel = path.relative_to(PACKAGE)
        pkg = rel.parts[0] if len(rel.parts) > 1 else "(top level)"
        if pkg != package:
            lines += ["", f"**{pkg}**", ""] if package is not None else [f"**{pkg}**", ""]
            package = pkg
        lines.append(f"- `{rel.as_posix()}`: {summary(path).replace('|', '/')}")
    return "\n".join(lines) + "\n"


def write(doc: Path = DOC) -> None:
    text = doc.read_text(encoding="utf-8")
    start = text.find(HEADING)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + module_map()
    else:
        nxt = text.find("\n## ", start + len(HEADING))
        text = text[:start] + module_map() + (text[nxt:] if nxt >= 0 else "")
    doc.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the section in docs/ARCHITECTURE.md")
    args = parser.parse_args(argv)
    if args.write:
        write()
    else:
        sys.stdout.write(module_map())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
