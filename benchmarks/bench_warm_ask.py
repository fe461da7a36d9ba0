"""What a warm ``ask --interactive`` question costs: CPU per new question in one open process, split into the
search, the relevance of the hits (their cosine to the question) and the offline extractive reader.

    python benchmarks/bench_warm_ask.py --repos /work/.mirror --db /tmp/bench-warm-ask.db [--rounds 2] \\
        [--old-src OLD_TREE/src] [--cache]

The index: FastAPI's documentation (``docs/en/docs`` of a bare clone ``<repos>/fastapi+fastapi/repo``, MIT;
about 155 Markdown pages and 3,200 chunks), indexed with the defaults (MiniLM, the default strategy, the
persistent embedding cache on so that a rebuild is cheap); built once and reused. Each round runs one fresh
interpreter per source tree (``--src``, and ``--old-src`` when given, interleaved round by round so the
machine's load hits both): it opens the index as ``ask --interactive`` does, asks one warm-up question, then
the 12 questions below with the offline reader, and reports CPU (user + system of the process, every thread)
per question. By default the embedding cache is off in the asking process, so every text the reader needs is
really embedded (the worst case: a question whose passages no earlier question saw); ``--cache`` keeps it on.
Answers of the trees are compared: how many are the same text, and how many cite the same first passage.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARM_UP = "How do I install FastAPI?"
QUESTIONS = [
    "How do I declare a path parameter with a type?",
    "How do I change the status code of a response?",
    "How do I use Depends to share a database session?",
    "How do I upload several files at once?",
    "How do I allow requests from another origin with CORS?",
    "How do I add a description and tags to my OpenAPI docs?",
    "How do I make a query parameter optional with a default value?",
    "How do I return a custom JSON response with extra headers?",
    "How do I declare a request body with a Pydantic model?",
    "How do I run code before every request with middleware?",
    "How do I deploy FastAPI with Docker?",
    "How do I read a header from the request?",
]

ASK = r"""
import json, sys, time
import chunkwise.llm.answer as answer_mod
from chunkwise import Index
from chunkwise.llm.extractive import ExtractiveLLM

spent = {"search": 0.0, "relevance": 0.0, "reader": 0.0}

def timed(name, fn):
    def wrapper(*a, **kw):
        c0 = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            spent[name] += time.process_time() - c0
    return wrapper

answer_mod.relevance = timed("relevance", answer_mod.relevance)
ExtractiveLLM.answer = timed("reader", ExtractiveLLM.answer)
db, cache, questions = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
rows = []
with Index(db, cache=cache) as index:
    index.search = timed("search", index.search)
    index.ask(questions[0])  # warm-up: the embedder, the engine and the in-process copies loaded
    for q in questions[1:]:
        for k in spent:
            spent[k] = 0.0
        c0 = time.process_time()
        ans = index.ask(q)
        cpu = time.process_time() - c0
        first = ans.cited_passages[0] if ans.cited_passages else None
        rows.append({"question": q, "cpu": cpu, **dict(spent), "answer": ans.text, "confident": ans.confident,
                     "first": None if first is None else [str(first.source), first.start]})
print(json.dumps(rows))
"""


def write_corpus(repos: Path, dest: Path) -> int:
    git = repos / "fastapi+fastapi" / "repo"
    names = subprocess.run(
        ["git", "-C", str(git), "ls-tree", "-r", "--name-only", "HEAD", "docs/en/docs"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    n = 0
    for name in names:
        if not name.endswith(".md"):
            continue
        out = dest / name.removeprefix("docs/en/docs/")
        out.parent.mkdir(parents=True, exist_ok=True)
        text = subprocess.run(["git", "-C", str(git), "show", f"HEAD:{name}"], capture_output=True, check=True).stdout
        out.write_bytes(text)
        n += 1
    return n


def build(db: str, repos: Path, src: str) -> None:
    corpus = Path(tempfile.mkdtemp(prefix="bench-warm-ask-")) / "docs"
    corpus.mkdir()
    pages = write_corpus(repos, corpus)
    code = (
        "import sys; from chunkwise import Index\n"
        "with Index(sys.argv[1]) as ix:\n    ix.add(sys.argv[2])\n    print(ix.count())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, db, str(corpus)],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"built {db}: {pages} pages, {out.stdout.strip().splitlines()[-1]} chunks", file=sys.stderr)


def ask(src: str, db: str, cache: bool) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-c", ASK, db, "1" if cache else "0", json.dumps([WARM_UP, *QUESTIONS])],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repos", type=Path, default=Path("/work/.mirror"), help="folder of bare clones <owner>+<name>/repo"
    )
    ap.add_argument("--db", default="/tmp/chunkwise-bench-warm-ask.db", help="the index (built when absent)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--src", default=str(HERE.parent / "src"))
    ap.add_argument("--old-src", default=None, help="another source tree, run interleaved on the same index")
    ap.add_argument("--cache", action="store_true", help="keep the persistent embedding cache on while asking")
    ap.add_argument("-o", "--output", default=None, help="JSON file for every row")
    args = ap.parse_args()
    if not Path(args.db).exists():
        build(args.db, args.repos, args.src)
    trees = {"this tree": args.src, **({"old tree": args.old_src} if args.old_src else {})}
    runs: dict[str, list[list[dict]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            runs[name].append(ask(src, args.db, args.cache))
    load = os.getloadavg()[0]
    print(
        f"\n{args.db}, {len(QUESTIONS)} questions x {args.rounds} rounds, cache {'on' if args.cache else 'off'}, "
        f"load {load:.1f}; CPU ms per question (median)\n"
    )
    print(f"{'tree':10} {'question':>9} {'search':>7} {'relevance':>10} {'reader':>7}")
    for name, rounds in runs.items():
        rows = [r for rs in rounds for r in rs]
        med = {k: 1000 * statistics.median(r[k] for r in rows) for k in ("cpu", "search", "relevance", "reader")}
        print(f"{name:10} {med['cpu']:9.0f} {med['search']:7.0f} {med['relevance']:10.0f} {med['reader']:7.0f}")
    if args.old_src:
        new, old = runs["this tree"][0], runs["old tree"][0]
        same = sum(a["answer"] == b["answer"] for a, b in zip(new, old))
        first = sum(a["first"] == b["first"] for a, b in zip(new, old))
        conf = sum(a["confident"] == b["confident"] for a, b in zip(new, old))
        print(
            f"\nanswers: {same}/{len(new)} the same text, {first}/{len(new)} the same first cited passage, "
            f"{conf}/{len(new)} the same confidence"
        )
    if args.output:
        Path(args.output).write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
