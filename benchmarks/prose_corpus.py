"""Build a corpus of English prose from text already on this machine (not the Chroma corpora).

    python benchmarks/prose_corpus.py OUT_DIR [--mb 2.0]

Sources, in this order until ``--mb`` megabytes: the licence texts in ``/usr/share/common-licenses``
(each text once, symlinked duplicates skipped), the first man pages of ``/usr/share/man/man1`` rendered
to plain text (``man -l``, 80 columns, ``col -b``), and READMEs / copyright files under ``/usr/share/doc``
(``.gz`` unpacked). Every source file becomes one ``.md`` document in ``OUT_DIR`` (the name only matters to
``bench_classic.py --corpora``, which reads ``*.md``). The selection is sorted by path, so one machine
builds the same corpus every time; other machines build a similar one (document the size you measured).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path


def _read(path: Path) -> str | None:
    """A text file (gzipped or not) as UTF-8 text, or None when it is binary or unreadable."""
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None
    return text if text.strip() and "\x00" not in text else None


def _man(path: Path) -> str | None:
    """One man page rendered to plain text (no overstrike), or None when rendering fails."""
    env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0")
    try:
        out = subprocess.run(
            f"man -l {str(path)!r} 2>/dev/null | col -b", shell=True, env=env, capture_output=True, timeout=20
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out if len(out) > 200 else None


def sources():
    """(name, text) of every candidate document, in a fixed order."""
    for p in sorted(Path("/usr/share/common-licenses").glob("*")):
        if p.is_file() and not p.is_symlink() and (t := _read(p)):
            yield f"license-{p.name}", t
    for p in sorted(Path("/usr/share/man/man1").glob("*.1*"))[:400]:
        if not p.is_symlink() and (t := _man(p)):
            yield f"man-{p.name}", t
    docs = sorted(Path("/usr/share/doc").rglob("*"))
    for p in docs:
        if p.is_file() and not p.is_symlink() and (p.name.startswith("README") or p.name == "copyright"):
            if t := _read(p):
                yield f"doc-{p.parent.name}-{p.name}", t


def build(out: Path, mb: float) -> float:
    """Write documents to ``out`` until ``mb`` MB (UTF-8); identical texts once. Returns the MB written."""
    out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    total = 0
    for name, text in sources():
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in name)
        (out / f"{safe}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
        if total >= mb * 1e6:
            break
    return total / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=2.0)
    args = ap.parse_args(argv)
    mb = build(args.out, args.mb)
    print(f"{args.out}: {len(list(args.out.glob('*.md')))} documents, {mb:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
