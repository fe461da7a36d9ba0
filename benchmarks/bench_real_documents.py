"""Real documents nobody here wrote: extraction quality of chunkwise's loaders, as numbers.

Every file comes from a public repository listed in :data:`MANIFEST` (repository, commit seen, paths). The
script reads them from a cache folder laid out as ``CACHE/owner+name/<path in the repository>``:

    python benchmarks/bench_real_documents.py --cache ~/.cache/chunkwise-real        # all checks
    python benchmarks/bench_real_documents.py --cache DIR --only html --limit 200     # a quicker HTML run
    python benchmarks/bench_real_documents.py --cache DIR --fetch                     # fill the cache first

``--fetch`` fills a missing repository folder with ``git clone --depth 1`` (network needed; the tests never
need it), or, with ``--mirrors ROOT``, from bare git directories ``ROOT/owner+name[/repo]`` by
``git archive``. The checks:

- **html**: trafilatura's own evaluation corpus (``tests/evaldata.json``: for each page, text segments that
  must and must not be in the main text; pages under ``tests/cache`` and ``tests/eval``), scored exactly as
  its ``tests/eval_common.py`` does (whitespace-normalised substring matching; precision, recall, F1 over
  the segments), chunkwise's ``load(html_mode="main")`` text and trafilatura alone (``extract(fast=False,
  include_comments=False, include_tables=True)``, the "trafilatura" runner of its ``evaluate.py``) side by
  side in one run; plus The Verge body and Wikipedia furniture checks.
- **pdf**: GeoTopo-komprimiert.pdf (py-pdf/sample-files): running headers left (the first/last lines of
  pypdf's raw page text shaped like ``19 1.6. WEGE UND KNOTEN``, counted again in the loaded text), ligature
  characters (U+FB00-FB06) left, chunks ending in a heading, 0-token chunks; default strategy.
- **markdown**: the FastAPI docs (``docs/en/docs``) with the default strategy: chunks whose text ends with
  a section heading (its body starts the next chunk), chunks that are only a heading, 0-token chunks.
- **subtitles**: every test file of webvtt-py and pysrt, accepted by them vs by chunkwise ("accepted": read
  without an exception and at least one cue with text, since a file with no text has nothing to chunk).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

#: repository -> (commit the numbers in docs/formats.md were measured on, paths used)
MANIFEST = {
    "adbar/trafilatura": (
        "e90b0ef51ab026fdb905fb6c5b3c84dd3d784fd5",
        ["tests/evaldata.json", "tests/cache", "tests/eval"],
    ),
    "py-pdf/sample-files": (
        "6921079eb3e1ed0944db5ec75016910d59da7fdb",
        ["009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"],
    ),
    "fastapi/fastapi": ("c3f316b7e814667e8ee81e03a7330d00ee61e45c", ["docs/en/docs"]),
    "glut23/webvtt-py": ("2f78325d96f260540fe4ba729d3624daaf3f9be6", ["tests/subtitles"]),
    "byroot/pysrt": ("93f52f6d4f70f4e18dc71deeaae0ec1e9100a50f", ["tests/static"]),
}


def repo_dir(cache: Path, repo: str) -> Path:
    return cache / repo.replace("/", "+")


def fetch(cache: Path, mirrors: Path | None) -> None:
    """Fill missing repository folders of the cache (from bare mirrors when given, else git clone)."""
    for repo, (_commit, paths) in MANIFEST.items():
        target = repo_dir(cache, repo)
        if target.exists():
            continue
        target.mkdir(parents=True)
        if mirrors is not None:
            git_dir = mirrors / repo.replace("/", "+")
            if (git_dir / "repo").is_dir():
                git_dir = git_dir / "repo"
            archive = subprocess.run(
                ["git", "--git-dir", str(git_dir), "archive", "HEAD", *paths], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "x", "-C", str(target)], input=archive, check=True)
        else:
            subprocess.run(["git", "clone", "--depth", "1", f"https://github.com/{repo}", str(target)], check=True)


# -- HTML ------------------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _count(item: dict, result: str | None) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) as trafilatura's tests/eval_common.py count_item."""
    if isinstance(result, str):
        res = _norm(result)
        tp = sum(1 for w in item["with"] if _norm(w) in res)
        fp = sum(1 for w in item["without"] if _norm(w) in res)
    else:
        tp = fp = 0
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def _scores(c: list[int]) -> dict:
    tp, fp, fn, tn = c
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp else 0.0}


def check_html(cache: Path, limit: int | None) -> dict:
    from trafilatura import extract

    from chunkwise.errors import InputError
    from chunkwise.formats import load_bytes

    root = repo_dir(cache, "adbar/trafilatura") / "tests"
    evaldata = json.loads((root / "evaldata.json").read_text(encoding="utf-8"))
    items = sorted(evaldata.items())[:limit] if limit else sorted(evaldata.items())
    totals = {"chunkwise": [0, 0, 0, 0], "trafilatura": [0, 0, 0, 0]}
    seconds = {"chunkwise": 0.0, "trafilatura": 0.0}
    warned = failed = 0
    for _url, item in items:
        path = next((root / d / item["file"] for d in ("cache", "eval") if (root / d / item["file"]).is_file()), None)
        if path is None:
            continue
        data = path.read_bytes()
        t = time.perf_counter()
        ours = extract(data, fast=False, include_comments=False, include_tables=True, include_formatting=False)
        seconds["trafilatura"] += time.perf_counter() - t
        totals["trafilatura"] = [a + b for a, b in zip(totals["trafilatura"], _count(item, ours))]
        t = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                doc = load_bytes(data, str(path), name=path.name)
            text = doc.text
            warned += bool([w for w in doc.metadata["warnings"] if "main-content" in w or "main content" in w])
        except InputError:
            text, failed = None, failed + 1
        seconds["chunkwise"] += time.perf_counter() - t
        totals["chunkwise"] = [a + b for a, b in zip(totals["chunkwise"], _count(item, text))]
    out = {
        "pages": len(items),
        "chunkwise_failed": failed,
        "chunkwise_warned": warned,
        "scores": {k: _scores(v) for k, v in totals.items()},
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    out.update(_html_spot_checks(root))
    return out


def _html_spot_checks(root: Path) -> dict:
    """The Verge body (the page the old rule-based extractor lost) and Wikipedia furniture."""
    from chunkwise.formats import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verge = load(root / "cache" / "theverge.com.ios13.html")
        wiki = load(root / "cache" / "en.wikipedia.org.tsne.html")
    body = [
        "iOS 13’s third developer beta includes a new feature",
        "FaceTime Attention Correction",
        "Dave Schukin explains",
        "public-facing beta next week",
    ]
    return {
        "verge_body_sentences_found": f"{sum(s in verge.text for s in body)}/{len(body)}",
        "verge_characters": len(verge.text),
        "wikipedia_edit_in_sections": sum("[edit]" in " ".join(s.path) for s in wiki.sections),
        "wikipedia_jump_to_navigation": wiki.text.count("Jump to navigation"),
        "wikipedia_sections": len(wiki.sections),
    }


# -- PDF ---------------------------------------------------------------------------------------------------

#: a running header of a LaTeX book as pypdf extracts it: page number, section number, title in capitals
_RUNNING_HEADER = re.compile(
    r"^\d{1,3} (?:KAPITEL )?\d+(?:\.\d+)*\.? [A-ZÄÖÜ][A-ZÄÖÜß0-9 ,.\-]{2,}$"
    r"|^(?:KAPITEL )?\d+(?:\.\d+)*\.? [A-ZÄÖÜ][A-ZÄÖÜß0-9 ,.\-]{2,}? \d{1,3}$"
)


def _raw_headers(path: Path) -> list[str]:
    """The running headers in pypdf's raw text: a page's first or last line of the header shape."""
    import pypdf

    found = []
    for page in pypdf.PdfReader(str(path)).pages:
        lines = [ln.strip() for ln in (page.extract_text() or "").split("\n") if ln.strip()]
        found.extend(ln for ln in lines[:1] + lines[-1:] if _RUNNING_HEADER.match(ln))
    return found


_LIGATURES = re.compile("[\ufb00-\ufb06]")


def _heading_end_chunks(doc, chunks) -> int:
    """Chunks whose text ends with a section heading (the heading's body is in the next chunk)."""
    ends = {s.heading_end for s in doc.sections if s.heading_end is not None and s.heading_end > s.heading_start}
    n = 0
    for c in chunks:
        stripped = c.start + len(c.text.rstrip())
        if stripped in ends and c.index < len(chunks) - 1:
            n += 1
    return n


def _heading_only_chunks(doc, chunks) -> int:
    spans = {(s.heading_start, s.heading_end) for s in doc.sections if s.heading_end}
    n = 0
    for c in chunks:
        lead = len(c.text) - len(c.text.lstrip())
        if (c.start + lead, c.start + len(c.text.rstrip())) in spans:
            n += 1
    return n


def check_pdf(cache: Path) -> dict:
    import chunkwise
    from chunkwise.formats import load

    path = repo_dir(cache, "py-pdf/sample-files") / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
    if not path.is_file():
        return {"skipped": f"{path} not in the cache"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = load(path)
    chunks = chunkwise.chunk(doc)
    headers = _raw_headers(path)
    return {
        "pages": len(doc.pages),
        "chunks": len(chunks),
        "running_headers_in_raw_text": len(headers),
        "running_headers_left": sum(doc.text.count(h) for h in set(headers)),
        "chunks_with_ligatures": sum(bool(_LIGATURES.search(c.text)) for c in chunks),
        "ligatures_left": len(_LIGATURES.findall(doc.text)),
        "chunks_ending_in_heading": _heading_end_chunks(doc, chunks),
        "zero_token_chunks": sum(c.token_count == 0 for c in chunks),
    }


# -- Markdown ----------------------------------------------------------------------------------------------


def check_markdown(cache: Path) -> dict:
    import chunkwise
    from chunkwise.formats import iter_documents

    folder = repo_dir(cache, "fastapi/fastapi") / "docs" / "en" / "docs"
    if not folder.is_dir():
        return {"skipped": f"{folder} not in the cache"}
    n_docs = n_chunks = end_heading = heading_only = zero = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _source, doc in iter_documents([folder], include=["*.md"]):
            if isinstance(doc, Exception):
                continue
            chunks = chunkwise.chunk(doc)
            n_docs += 1
            n_chunks += len(chunks)
            end_heading += _heading_end_chunks(doc, chunks)
            heading_only += _heading_only_chunks(doc, chunks)
            zero += sum(c.token_count == 0 for c in chunks)
    return {
        "documents": n_docs,
        "chunks": n_chunks,
        "chunks_ending_in_heading": end_heading,
        "chunks_ending_in_heading_pct": round(100 * end_heading / max(1, n_chunks), 2),
        "heading_only_chunks": heading_only,
        "zero_token_chunks": zero,
    }


# -- subtitles ---------------------------------------------------------------------------------------------


def _webvtt_accepts(path: Path) -> bool:
    import webvtt

    try:
        captions = webvtt.read(str(path)) if path.suffix == ".vtt" else webvtt.from_srt(str(path))
        return any((c.text or "").strip() for c in captions)
    except Exception:  # noqa: BLE001 - any refusal counts as "not accepted"
        return False


def _pysrt_accepts(path: Path) -> bool | None:
    try:
        import pysrt
    except ImportError:
        return None
    try:
        return any((item.text or "").strip() for item in pysrt.open(str(path)))
    except Exception:  # noqa: BLE001
        return False


def check_subtitles(cache: Path) -> dict:
    from chunkwise.errors import InputError
    from chunkwise.formats import load

    files = sorted(
        [
            *(repo_dir(cache, "glut23/webvtt-py") / "tests" / "subtitles").glob("*.vtt"),
            *(repo_dir(cache, "glut23/webvtt-py") / "tests" / "subtitles").glob("*.srt"),
            *(repo_dir(cache, "byroot/pysrt") / "tests" / "static").glob("*.srt"),
        ]
    )
    rows = []
    for f in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                load(f)
                ours, why = True, "; ".join(str(w.message).split(": ", 1)[-1] for w in caught)
            except InputError as exc:
                ours, why = False, exc.problem
        rows.append(
            {
                "file": f"{f.parent.parent.parent.name}/{f.name}",
                "webvtt_py": _webvtt_accepts(f),
                "pysrt": _pysrt_accepts(f) if f.suffix == ".srt" else None,
                "chunkwise": ours,
                "note": why,
            }
        )
    ecosystem = [r for r in rows if r["webvtt_py"] or r["pysrt"]]
    return {
        "files": len(rows),
        "accepted_by_webvtt_py_or_pysrt": len(ecosystem),
        "of_those_accepted_by_chunkwise": sum(r["chunkwise"] for r in ecosystem),
        "accepted_by_chunkwise": sum(r["chunkwise"] for r in rows),
        "rows": rows,
    }


CHECKS = {"html": check_html, "pdf": check_pdf, "markdown": check_markdown, "subtitles": check_subtitles}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, type=Path, help="folder with CACHE/owner+name/<path>")
    ap.add_argument("--fetch", action="store_true", help="fill missing repositories first")
    ap.add_argument("--mirrors", type=Path, default=None, help="bare git dirs ROOT/owner+name for --fetch")
    ap.add_argument("--only", action="append", choices=sorted(CHECKS), help="run only these checks")
    ap.add_argument("--limit", type=int, default=None, help="html: first N annotated pages only")
    ap.add_argument("-o", "--output", type=Path, default=None, help="also write the results as JSON here")
    args = ap.parse_args()
    if args.fetch:
        fetch(args.cache, args.mirrors)
    results = {}
    for name in args.only or list(CHECKS):
        t = time.perf_counter()
        results[name] = CHECKS[name](args.cache, args.limit) if name == "html" else CHECKS[name](args.cache)
        results[name]["check_seconds"] = round(time.perf_counter() - t, 1)
        print(json.dumps({name: results[name]}, ensure_ascii=False, indent=1), flush=True)
    if args.output:
        args.output.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
