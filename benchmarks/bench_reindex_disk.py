"""Re-indexing a folder whose every file changed: do the rows on disk, the tombstones and the peak memory
stay bounded?

Round 0 indexes ``--size`` MB of Chroma's public evaluation corpora (``bench_index_memory.make_corpus``) into
a fresh Milvus Lite database; each later round changes every paragraph of every file (a word appended) and
indexes the folder again, in a fresh process, so each round deletes the last round's chunks. Each round
prints the live chunks, the rows in the database's data files, the data files, the tombstones Milvus Lite
holds, and the round's peak RSS (``VmHWM``). The embedder is the hashed bag of words of
``bench_index_memory.py``, so the run measures the store.

    .venv/bin/python benchmarks/bench_reindex_disk.py [--size 10] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

ROUND = r"""
import json, re, sys
from pathlib import Path
import numpy as np
import pyarrow.parquet as pq
sys.path.insert(0, sys.argv[4])
import bench_index_memory as bench
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.retrieval import Index
from chunkwise.segmentation.tokenizers import get_tokenizer

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

folder, db, rnd, size = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[5])
if rnd == 0:
    bench.make_corpus(folder, size)
else:
    for f in sorted(folder.iterdir()):
        f.write_text(re.sub(r"\n\n", f" round{rnd}\n\n", f.read_text()))
with Index(db, embedder=HashEmbedder(), cache=False) as ix:
    ix.add(folder, strategy="recursive", params={"max_tokens": 256, "tokenizer": "words"})
    col = ix.store.connect()._db.get_collection(ix.store.collection)
    col._wait_for_bg()
    files = [Path(col._data_dir) / "partitions" / p / r for p, rels in col._manifest.get_all_data_files().items() for r in rels]
    peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
    print(json.dumps({"round": rnd, "live": ix.count(), "on_disk": sum(pq.ParquetFile(f).metadata.num_rows for f in files),
                      "files": len(files), "tombstones": len(col._delta_index), "peak_MB": peak}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10, help="corpus size in MB")
    ap.add_argument("--rounds", type=int, default=4, help="index runs (the first one fresh)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp) / "corpus", Path(tmp) / "index.db"
        folder.mkdir()
        for rnd in range(args.rounds):
            out = subprocess.run(
                [sys.executable, "-c", ROUND, str(folder), str(db), str(rnd), str(HERE), str(args.size)],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            )
            print(json.dumps(json.loads(out.stdout.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
