"""What the first search after a write costs: adding one document, then searching in a new process, next
to a search in a new process that finds its in-process copies saved (nothing written since).

    python benchmarks/bench_search_after_write.py --db /tmp/bench-expand-30k.db [--rounds 3] [--old-src DIR]

The index is any Milvus Lite index built with ``bench_search.py``'s hashed embedder (``bench_expand.py --cost``
and ``bench_search.py`` build one). Each row runs a fresh interpreter (as the CLI runs) and reports, from
inside it, the CPU seconds (user + system) of opening the index and its first hybrid search (k=5), and its
peak RSS. ``--old-src`` runs the same steps with another source tree (e.g. the commit before the copies were
kept up to date by the writer) on its own copy of the database, interleaved round by round.
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


def run(src: str, code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", code.format(bench=str(HERE)), *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", default=str(HERE.parent / "src"))
    ap.add_argument("--old-src", default=None)
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    trees = {"this tree": args.src, **({"old tree": args.old_src} if args.old_src else {})}
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


if __name__ == "__main__":
    main()
