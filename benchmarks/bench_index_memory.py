"""Peak memory of ``Index.add`` as the corpus grows: is the local index path streaming?

For each corpus size (default 2, 10 and 50 MB of plain text in 200 KB files: ``--text chroma``, the default,
is Chroma's public evaluation corpora (``../shared/data/chroma-eval/corpora``, 1.4 MB of English: chat logs,
finance, PubMed, the State of the Union, Wikipedia) repeated, each repetition starting some words later so no
two chunks are equal; ``--text random`` is paragraphs of 30 words drawn from a fixed seed)
a fresh process indexes the folder and prints its peak resident set size (``VmHWM``) and time, and where
the memory is: the Python objects alive at the end (``py blocks``: :func:`sys.getallocatedblocks`, which
counts chunkwise's own objects, the markers, the loaded modules) and, for the server store, the Milvus Lite
server's own resident memory (its whole process group) at the end. Two stores:

- ``lite``: Milvus Lite in process (the default ``chunkwise index``): the peak includes the Milvus Lite
  engine, which holds its own data structures in the same process;
- ``server``: a Milvus Lite *server* in another process (``--uri``): the peak is chunkwise's own
  (load -> chunk -> embed -> write), which is what the streaming design bounds;
- ``milvus``: a Milvus 2.3.5 standalone (``pip install milvus==2.3.5``) in another process, the documented
  store for large corpora: chunkwise's own peak again, and the server's resident memory beside it.

The embedder is a hashed bag of words (a few microseconds per chunk) so that the run measures the
pipeline and the store, not a model; chunking is ``recursive`` with ``max_tokens=256`` words by default
(``--strategy fixed --max-tokens 1024`` makes a 1 GB run affordable on a small machine).

If the Python blocks stay flat while the in-process peak climbs, the growth is Milvus Lite's native engine,
not chunkwise; the server store then shows the same growth in the server process.

    .venv/bin/python benchmarks/bench_index_memory.py [--sizes 2 10 50] [--stores lite server]
        [--text chroma|random] [--env MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES=16777216]

Each row also prints the child's CPU seconds (user + system) and CPU per MB (with and without the imports,
a fixed ~0.4 CPU-s; the set-up inside the run, importing and opening the engine, is ~0.9 more), and at the end the CPU per MB of every
size with its spread beside the CPU per *added* MB between consecutive sizes (what each further MB costs, the
fixed cost removed); for the in-process store
what Milvus Lite's engine holds at the end (``engine MB``: pyarrow's allocated memory, the loaded segments'
Arrow tables and vector arrays, the number of segments); ``--env`` sets variables for
the child (Milvus Lite reads its memtable and write-ahead-log budgets from the environment at import).
``--default-install`` runs the child as ``pip install chunkwise`` would (pymilvus and pandas hidden, as
``bench_startup.py``'s default-install rows do): this venv has both for the servers and the tests, and
pyarrow imports pandas wherever it is installed.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import gc, hashlib, json, re, resource, sys, time
import numpy as np
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.retrieval import Index

class HashEmbedder(Embedder):
    dim, model_window, model_id = 64, 512, "hash-bow-64"
    def __init__(self):
        self._tok = get_tokenizer("words")
    @property
    def tokenizer(self):
        return self._tok
    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split()[:64]:
                out[i, hash(w) % self.dim] += 1.0
        out[:, 0] += 1e-3
        return l2_normalize(out)

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

folder, where, how = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
base = rss("VmRSS")
t = time.perf_counter()
start = resource.getrusage(resource.RUSAGE_SELF)  # the imports: a fixed cost, whatever the corpus
def engine_mb(ix):
    # what Milvus Lite's engine holds in this process at the end: Arrow memory, its loaded segments' tables
    # and vectors (every collection), in MB; None for a server store
    try:
        import pyarrow as pa
        db = ix.store.connect()._db
    except Exception:
        return None
    tables = vectors = segments = 0
    for col in list(db._collections.values()):
        for seg in list(getattr(col, "_segment_cache", {}).values()):
            segments += 1
            # only the tables a segment holds: one read back on demand (store/lite_memory.py) is not loaded
            # here just to be measured
            table = getattr(seg, "_held", None) if hasattr(type(seg), "_held") else seg.table
            if table is not None:
                tables += table.nbytes
                vectors += seg.vectors.nbytes
    return {"arrow": round(pa.total_allocated_bytes() / 2**20), "tables": round(tables / 2**20),
            "vectors": round(vectors / 2**20), "segments": segments}

with Index(**where, embedder=HashEmbedder(), cache=False) as ix:
    rep = ix.add(folder, strategy=how["strategy"], params={"max_tokens": how["max_tokens"], "tokenizer": "words"})
    engine = engine_mb(ix)
gc.collect()
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"chunks": rep.chunks, "seconds": time.perf_counter() - t, "base_mb": base / 1024,
                  "cpu": use.ru_utime + use.ru_stime,
                  "import_cpu": start.ru_utime + start.ru_stime,
                  "peak_mb": rss("VmHWM") / 1024, "py_blocks_k": sys.getallocatedblocks() // 1000, "engine": engine,
                  "timings": {k: round(v, 1) for k, v in rep.timings.items()}}))
"""

WORDS = (
    "river stone lamp keeper harbor winter bread oven flour garden rose train ticket night bee honey wax "
    "queen storm fog lens glass tower bell copper salt anchor rope sail gull"
).split()


def make_corpus(folder: Path, megabytes: int, file_kb: int = 200, seed: int = 0) -> None:
    """``megabytes`` of paragraphs of random words, in files of ``file_kb`` KB."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(megabytes * 1024 // file_kb):
        paras, size = [], 0
        while size < file_kb * 1024:
            p = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))).capitalize() + "."
            paras.append(p)
            size += len(p) + 2
        (folder / f"f{n:05d}.txt").write_text("\n\n".join(paras), encoding="utf-8")


def make_public_corpus(folder: Path, megabytes: int, file_kb: int = 200) -> None:
    """``megabytes`` of Chroma's evaluation corpora, repeated (each repetition shifted by 37 words more), in
    files of ``file_kb`` KB."""
    source = next(
        (d for d in (r / "shared" / "data" / "chroma-eval" / "corpora" for r in ROOT.parents) if d.is_dir()),
        ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora",
    )
    words = [w for f in sorted(source.glob("*.md")) for w in f.read_text(encoding="utf-8", errors="replace").split()]
    if not words:
        raise SystemExit(f"no corpora in {source}")
    folder.mkdir(parents=True, exist_ok=True)
    rep, pos, n = 0, 0, 0
    while n < megabytes * 1024 // file_kb:
        parts, size = [], 0
        while size < file_kb * 1024:
            if pos >= len(words):
                rep, pos = rep + 1, 0
            shift = (rep * 37) % len(words)
            para = " ".join(words[(shift + pos + i) % len(words)] for i in range(80))
            pos += 80
            parts.append(para)
            size += len(para) + 2
        (folder / f"f{n:05d}.txt").write_text("\n\n".join(parts), encoding="utf-8")
        n += 1


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in a process group (the Milvus Lite server and its children)."""
    import os

    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def measure(folder: Path, where: dict, how: dict, env: dict | None = None, default_install: bool = False) -> dict:
    import os

    from bench_first_run import DEFAULT  # pymilvus and pandas hidden, as ``pip install chunkwise`` has neither

    code = DEFAULT + CHILD if default_install else CHILD
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder), json.dumps(where), json.dumps(how)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_summary(runs: list[tuple[int, float]]) -> str:
    """CPU per MB at each size and its spread (largest / smallest), then the CPU per *added* MB between
    consecutive sizes and its spread: the first includes the run's fixed cost (the imports, opening the
    engine, ~1.3 CPU-s here), which dominates the smallest run; the second is what each further MB costs."""
    per_mb = [cpu / mb for mb, cpu in runs]
    slopes = [(c2 - c1) / (m2 - m1) for (m1, c1), (m2, c2) in zip(runs, runs[1:])]
    text = f"CPU per MB {' / '.join(f'{v:.2f}' for v in per_mb)} (spread {max(per_mb) / min(per_mb):.2f}x)"
    if slopes and min(slopes) > 0:
        text += f"; per added MB {' / '.join(f'{v:.2f}' for v in slopes)} (spread {max(slopes) / min(slopes):.2f}x)"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 50], help="corpus sizes in MB")
    ap.add_argument("--stores", nargs="+", default=["lite", "server"], choices=["lite", "server", "milvus"])
    ap.add_argument("--strategy", default="recursive", help="chunking strategy (fixed makes 1 GB runs affordable)")
    ap.add_argument("--max-tokens", type=int, default=256, help="chunk cap, in words")
    ap.add_argument(
        "--tmp", default=None, help="where the corpora and the servers' data go (needs ~1.1x the largest size)"
    )
    ap.add_argument("--text", default="chroma", choices=["chroma", "random"], help="public text or random words")
    ap.add_argument("--env", nargs="*", default=[], metavar="KEY=VALUE", help="variables for the indexing child")
    ap.add_argument(
        "--default-install",
        action="store_true",
        help="hide pymilvus and pandas from the child, as `pip install chunkwise` has neither (pyarrow imports "
        "pandas wherever it is installed: ~0.3 CPU-s and ~35 MB in every run)",
    )
    args = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in args.env)
    from milvus_servers import start_milvus_235, start_milvus_lite

    print(
        f"{'store':8} {'MB':>5} {'chunks':>8} {'s':>7} {'chunks/s':>9} {'base MB':>8} {'peak MB':>8} "
        f"{'py blocks':>10} {'server MB':>10}"
    )
    results = {}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for mb in args.sizes:
            corpus = Path(tmp) / f"corpus{mb}"
            (make_public_corpus if args.text == "chroma" else make_corpus)(corpus, mb)
            for store in args.stores:
                server = None
                if store in ("server", "milvus"):
                    start = start_milvus_lite if store == "server" else start_milvus_235
                    server = start(Path(tmp) / f"srv{store}{mb}")
                    where = {"uri": server.uri, "token": server.token, "collection": "mem"}
                else:
                    where = {"db": str(Path(tmp) / f"lite{mb}.db"), "collection": "mem"}
                try:
                    r = measure(
                        corpus,
                        where,
                        {"strategy": args.strategy, "max_tokens": args.max_tokens},
                        env,
                        args.default_install,
                    )
                    r["server_mb"] = group_rss_mb(server.proc.pid) if server is not None else None
                finally:
                    if server is not None:
                        server.kill()
                results[(store, mb)] = r
                print(
                    f"{store:8} {mb:5d} {r['chunks']:8d} {r['seconds']:7.1f} {r['chunks'] / r['seconds']:9.0f} "
                    f"{r['base_mb']:8.0f} {r['peak_mb']:8.0f} {r['py_blocks_k']:9d}k "
                    f"{'-' if r['server_mb'] is None else format(r['server_mb'], '.0f'):>10}  "
                    f"CPU {r['cpu']:.1f} s, {r['cpu'] / mb:.2f} s/MB ({(r['cpu'] - r['import_cpu']) / mb:.2f} after the imports)  "
                    f"{r['timings']}  engine MB {r.get('engine')}",
                    flush=True,
                )
    lo, hi = min(args.sizes), max(args.sizes)
    for store in args.stores:
        if (store, lo) in results and (store, hi) in results and lo != hi:
            ratio = results[(store, hi)]["peak_mb"] / results[(store, lo)]["peak_mb"]
            print(f"{store}: peak RSS {hi} MB / {lo} MB = {ratio:.2f}")
            print(f"{store}: {cpu_summary([(mb, results[(store, mb)]['cpu']) for mb in sorted(set(args.sizes))])}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
