"""What the first search after a write costs: adding one document, then searching in a new process, next
to a search in a new process that finds its in-process copies saved (nothing written since).

    python benchmarks/bench_search_after_write.py --db /tmp/bench-expand-30k.db [--rounds 3] [--old-src DIR]

The index is any Milvus Lite index built with ``bench_search.py``'s hashed embedder (``bench_expand.py --cost``
and ``bench_search.py`` build one). Each row runs a fresh interpreter (as the CLI runs) and reports, from
inside it, the CPU seconds (user + system) of opening the index and its first hybrid search (k=5), and its
peak RSS. ``--old-src`` runs the same steps with another source tree (e.g. the commit before the copies were
kept up to date by the writer) on its own copy of the database, interleaved round by round.

    python benchmarks/bench_search_after_write.py --fresh 30000 [--rounds 2] [--old-src DIR]

``--fresh N`` measures the run that builds an index instead: each round builds a new N-chunk index in a fresh
interpreter (``bench_search.py``'s documents and hashed embedder, ``recreate=True``; its CPU and peak RSS),
then runs the first search after that build and a second search that finds its copies.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEARCH = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from bench_search import HashEmbedder
from chunkwise import Index
c0 = time.process_time()
with Index(sys.argv[1], embedder=HashEmbedder(), cache=False) as ix:
    ix.search("the keeper said that the harbour lamp", k=5)
    cpu = time.process_time() - c0
print(json.dumps({{"cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
ADD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from bench_search import WORDS_PER_CHUNK, HashEmbedder
from chunkwise import Document, Index
from chunkwise.strategies import get_strategy
c0 = time.process_time()
with Index(sys.argv[1], embedder=HashEmbedder(), cache=False) as ix:
    text = "A new note about the harbour lamp and the keeper, round " + sys.argv[2] + ". " * 3
    ix.add([Document(text, source="<bench-added-" + sys.argv[2] + ">")],
           strategy=get_strategy("fixed", max_tokens=WORDS_PER_CHUNK, tokenizer="words"))
cpu = time.process_time() - c0
print(json.dumps({{"cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
BUILD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from bench_search import WORDS_PER_CHUNK, HashEmbedder, documents, source_words
from chunkwise import Index
from chunkwise.strategies import get_strategy
docs = documents(source_words(), int(sys.argv[2]))
c0 = time.process_time()
with Index(sys.argv[1], embedder=HashEmbedder(), cache=False) as ix:
    ix.add(docs, strategy=get_strategy("fixed", max_tokens=WORDS_PER_CHUNK, tokenizer="words"), recreate=True)
    n = ix.count()
cpu = time.process_time() - c0
print(json.dumps({{"cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "chunks": n}}))
"""


def run(src: str, code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", code.format(bench=str(HERE)), *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="an existing index (not with --fresh)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", default=str(HERE.parent / "src"))
    ap.add_argument("--old-src", default=None)
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--fresh", type=int, default=0, help="build an index of this many chunks each round")
    args = ap.parse_args()
    trees = {"this tree": args.src, **({"old tree": args.old_src} if args.old_src else {})}
    if args.fresh:
        return fresh(args, trees)
    if not args.db:
        ap.error("--db or --fresh is required")
    work = Path(tempfile.mkdtemp(prefix="bench-after-write-"))
    dbs = {}
    for name, src in trees.items():
        dbs[name] = str(work / (name.replace(" ", "-") + ".db"))
        shutil.copytree(args.db, dbs[name])
        run(src, SEARCH, dbs[name])  # the copies built and saved once, as after any earlier search
    rows: dict[str, dict[str, list]] = {
        n: {"search, copies found": [], "add one document": [], "first search after the add": []} for n in trees
    }
    for r in range(args.rounds):
        for name, src in trees.items():
            rows[name]["search, copies found"].append(run(src, SEARCH, dbs[name]))
            rows[name]["add one document"].append(run(src, ADD, dbs[name], str(r)))
            rows[name]["first search after the add"].append(run(src, SEARCH, dbs[name]))
    print(f"\n{args.db}, {args.rounds} rounds, median CPU s (open + first hybrid search, or open + add) and peak RSS\n")
    for name in trees:
        base = statistics.median(x["cpu"] for x in rows[name]["search, copies found"])
        for step, values in rows[name].items():
            cpu = statistics.median(x["cpu"] for x in values)
            rss = statistics.median(x["rss_mb"] for x in values)
            print(f"{name:10} {step:30} {cpu:7.2f} CPU-s {cpu / base:6.2f}x  peak RSS {rss:6.0f} MB")
    shutil.rmtree(work, ignore_errors=True)
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def fresh(args: argparse.Namespace, trees: dict[str, str]) -> None:
    """Build, first search after the build, search with its copies found: per tree, interleaved by round."""
    work = Path(tempfile.mkdtemp(prefix="bench-after-build-"))
    steps = ("build (index run)", "first search after the build", "search, copies found")
    rows: dict[str, dict[str, list]] = {n: {s: [] for s in steps} for n in trees}
    try:
        for _ in range(args.rounds):
            for name, src in trees.items():
                db = str(work / (name.replace(" ", "-") + ".db"))
                shutil.rmtree(db, ignore_errors=True)
                rows[name][steps[0]].append(run(src, BUILD, db, str(args.fresh)))
                rows[name][steps[1]].append(run(src, SEARCH, db))
                rows[name][steps[2]].append(run(src, SEARCH, db))
                print(name, {s: v[-1] for s, v in rows[name].items()}, "load", os.getloadavg()[0], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    chunks = rows[next(iter(trees))][steps[0]][0]["chunks"]
    print(f"\nfresh {chunks}-chunk index, {args.rounds} rounds, median CPU s and peak RSS\n")
    for name in trees:
        base = statistics.median(x["cpu"] for x in rows[name][steps[2]])
        for step, values in rows[name].items():
            cpu = statistics.median(x["cpu"] for x in values)
            rss = statistics.median(x["rss_mb"] for x in values)
            print(f"{name:10} {step:30} {cpu:7.2f} CPU-s {cpu / base:6.2f}x  peak RSS {rss:6.0f} MB")
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
