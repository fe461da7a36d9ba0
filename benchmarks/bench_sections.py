"""Versioned documents: does search find the right version's section, and does ask say "not found" when
the version (or the topic) is not there?

Why: in a changelog every ``## <version>`` section looks like its siblings (``### Added``, ``### Fixed``),
so a question about one version is only answerable if retrieval tells ``0.27.1`` from ``0.27.0`` and
``0.17.1``, and an answer about another version must not be marked confident.

Data (public, fetched once; nothing is downloaded here): the changelogs of five projects, each cut to its
newest ``--versions`` version sections (and the text above them):

    httpx      encode/httpx          CHANGELOG.md            BSD-3-Clause
    pydantic   pydantic/pydantic     HISTORY.md              MIT
    black      psf/black             CHANGES.md              MIT
    rich       Textualize/rich       CHANGELOG.md            MIT
    starlette  encode/starlette      docs/release-notes.md   BSD-3-Clause

``--repos ROOT`` reads them from bare git clones ``ROOT/<owner>+<name>/repo`` (``git show HEAD:path``),
``--data DIR`` from files ``DIR/<product>-changelog.md`` (written by a ``--repos`` run).

Questions (generated from the headings): per version section one question, "What new features were
introduced in <product> <version>?" where it has an Added/Features subsection (gold: that subsection),
else "What bugs were fixed in ..." (Fixed/Fixes), else "What changed in ...". A search hit is a top-5 chunk
inside the gold version section (``hit@5``) or inside the gold subsection (``sub@5``). Unanswerable: per
product four versions that do not exist (an existing version with its last number changed, checked absent
from the whole changelog) and eight topics absent from every changelog. ``ask`` (the offline extractive
reader, the default) is *confident and wrong* when it is confident and, for an answerable question, its
first citation lies outside the gold version section; for an unanswerable one, whenever it is confident.

    python benchmarks/bench_sections.py --repos /work/.mirror --out benchmarks/results/sections.json
    python benchmarks/bench_sections.py --data /tmp/sections-data --context headings
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SOURCES = {
    "httpx": ("encode/httpx", "CHANGELOG.md"),
    "pydantic": ("pydantic/pydantic", "HISTORY.md"),
    "black": ("psf/black", "CHANGES.md"),
    "rich": ("Textualize/rich", "CHANGELOG.md"),
    "starlette": ("encode/starlette", "docs/release-notes.md"),
}
ABSENT_TOPICS = [
    "How do I bake sourdough bread?",
    "What is the capital of Australia?",
    "How do I change the oil in my car?",
    "Which vaccines do infants need in their first year?",
    "How do I replace a bicycle chain?",
    "What does the Federal Reserve do when inflation rises?",
    "How do I configure horizontal pod autoscaling in Kubernetes?",
    "What are the rules of cricket?",
]
_VERSION = re.compile(r"\bv?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|rc|alpha|beta|post|dev)\.?\d*)?)\b")
_H2 = re.compile(r"^## (.+)$", re.M)
_SUB = re.compile(r"^#{3,4} (.+)$", re.M)


@dataclass
class Question:
    product: str
    text: str
    kind: str  # features | fixes | changes | absent-version | absent-topic
    version: str | None = None
    gold: tuple[int, int] | None = None  # the version section's offsets
    sub: tuple[int, int] | None = None  # the Added/Fixed subsection's offsets


def read_sources(repos: Path | None, data: Path | None, out_dir: Path) -> dict[str, str]:
    texts = {}
    for product, (repo, path) in SOURCES.items():
        if data is not None:
            texts[product] = (data / f"{product}-changelog.md").read_text(encoding="utf-8")
            continue
        assert repos is not None
        git = repos / repo.replace("/", "+") / "repo"
        texts[product] = subprocess.run(
            ["git", "-C", str(git), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
        ).stdout
        commit = subprocess.run(["git", "-C", str(git), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        print(f"{product}: {repo} {path} @ {commit.strip()[:12]}", file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    for product, text in texts.items():
        (out_dir / f"{product}-changelog.md").write_text(text, encoding="utf-8")
    return texts


def cut(text: str, versions: int) -> tuple[str, list[tuple[str, int, int]]]:
    """The text up to the newest ``versions`` version sections, and those sections ``(version, start, end)``."""
    heads = [(m.start(), _VERSION.search(m.group(1))) for m in _H2.finditer(text)]
    sections = []
    for n, (start, ver) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(text)
        if ver is not None and len(sections) < versions:
            sections.append((ver.group(1), start, end))
    limit = sections[-1][2] if sections else len(text)
    return text[:limit], sections


def questions_for(product: str, full: str, text: str, sections) -> list[Question]:
    out = []
    for version, start, end in sections:
        body = text[start:end]
        subs = [(m.group(1), start + m.start()) for m in _SUB.finditer(body)]
        bounds = [(name, a, subs[i + 1][1] if i + 1 < len(subs) else end) for i, (name, a) in enumerate(subs)]
        feat = next((b for b in bounds if re.search(r"add|feature|new", b[0], re.I)), None)
        fix = next((b for b in bounds if re.search(r"fix", b[0], re.I)), None)
        if feat:
            q = Question(product, f"What new features were introduced in {product} {version}?", "features")
            q.sub = (feat[1], feat[2])
        elif fix:
            q = Question(product, f"What bugs were fixed in {product} {version}?", "fixes")
            q.sub = (fix[1], fix[2])
        else:
            q = Question(product, f"What changed in {product} {version}?", "changes")
        q.version, q.gold = version, (start, end)
        out.append(q)
    made = 0
    for version, _, _ in sections:
        nums = re.findall(r"\d+", version)
        fake = version[: version.rfind(nums[-1])] + str(int(nums[-1]) + 37)
        if re.search(rf"(?<![\w.]){re.escape(fake)}(?![\w])", full) or made >= 4:
            continue
        out.append(Question(product, f"What new features were introduced in {product} {fake}?", "absent-version"))
        made += 1
    return out


def overlaps(a: int | None, b: int | None, span: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and span is not None and a < span[1] and b > span[0]


def run(args) -> dict:
    from chunkwise import Index

    work = Path(tempfile.mkdtemp(prefix="chunkwise-sections-"))
    texts = read_sources(args.repos, args.data, work / "data")
    corpus = work / "corpus"
    corpus.mkdir()
    qs: list[Question] = []
    for product, full in texts.items():
        text, sections = cut(full, args.versions)
        (corpus / f"{product}-changelog.md").write_text(text, encoding="utf-8")
        qs += questions_for(product, full, text, sections)
    qs += [Question("-", t, "absent-topic") for t in ABSENT_TOPICS]
    index = Index(work / "index.db")
    t0 = time.perf_counter()
    report = index.add(str(corpus), **({"context": args.context} if args.context else {}))
    print(f"indexed {report.total_chunks} chunks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows = []
    for q in qs:
        source = str(corpus / f"{q.product}-changelog.md")
        opts = {"sections": False} if args.no_sections else {}
        hits = index.search(q.text, k=5, hybrid=not args.dense, **opts)
        in_doc = [h for h in hits if h.source == source]
        hit = any(overlaps(h.start, h.end, q.gold) for h in in_doc)
        sub = any(overlaps(h.start, h.end, q.sub) for h in in_doc)
        row = {"product": q.product, "kind": q.kind, "question": q.text, "hit@5": hit, "sub@5": sub}
        if not args.no_ask:
            ans = index.ask(q.text, hybrid=not args.dense)
            cited = ans.cited_passages or ans.passages[:1]
            right = bool(cited) and cited[0].source == source and overlaps(cited[0].start, cited[0].end, q.gold)
            row.update(confident=ans.confident, right=right, answer=ans.text[:200])
        rows.append(row)
    index.close()
    return {"chunks": report.total_chunks, "rows": rows, "summary": summarize(rows, not args.no_ask)}


def summarize(rows: list[dict], asked: bool) -> dict:
    answerable = [r for r in rows if not r["kind"].startswith("absent")]
    unanswerable = [r for r in rows if r["kind"].startswith("absent")]
    s: dict = {
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "hit@5": sum(r["hit@5"] for r in answerable) / len(answerable),
        "sub@5": sum(r["sub@5"] for r in answerable if r["kind"] != "changes")
        / max(1, sum(r["kind"] != "changes" for r in answerable)),
    }
    if asked:
        conf = [r for r in rows if r["confident"]]
        s["confident_wrong_answerable"] = sum(r["confident"] and not r["right"] for r in answerable) / len(answerable)
        s["confident_unanswerable"] = sum(r["confident"] for r in unanswerable) / len(unanswerable)
        s["precision_of_confident"] = (
            sum(not r["kind"].startswith("absent") and r["right"] for r in conf) / len(conf) if conf else None
        )
        s["hedged_share"] = 1 - len(conf) / len(rows)
        s["right_answerable"] = sum(r["right"] for r in answerable) / len(answerable)
    per = {}
    for p in SOURCES:
        rs = [r for r in answerable if r["product"] == p]
        per[p] = round(sum(r["hit@5"] for r in rs) / max(1, len(rs)), 3)
    s["hit@5_per_product"] = per
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=Path, help="folder of bare clones <owner>+<name>/repo")
    ap.add_argument("--data", type=Path, help="folder of <product>-changelog.md files")
    ap.add_argument("--versions", type=int, default=20, help="newest version sections kept per changelog")
    ap.add_argument("--context", default=None, help="index with this --context mode (e.g. headings)")
    ap.add_argument("--dense", action="store_true", help="vectors only (default: hybrid, the default search)")
    ap.add_argument("--no-ask", action="store_true", help="search only")
    ap.add_argument("--no-sections", action="store_true", help="search without the section-first pass")
    ap.add_argument("--out", type=Path, help="write every row and the summary here (JSON)")
    args = ap.parse_args()
    if (args.repos is None) == (args.data is None):
        ap.error("give exactly one of --repos and --data")
    res = run(args)
    print(json.dumps(res["summary"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
