"""Does the text change what a token costs to embed? CPU seconds a token of the default embedder (MiniLM, int8
ONNX, no cache or memo) on different parts of one folder and on chunks of different lengths, measured in
interleaved rounds in one process so that the machine's load hits every kind alike.

Why: the progress ETA (``chunkwise.progress``) takes the embedding cost a token from wall time. If
texts differed much in CPU a token, a dearer text would be read as a slower machine; this measures how much
they differ. The figures in benchmarks/results/progress.md are FastAPI's docs (``docs/en/docs`` of
github.com/fastapi/fastapi)::

    python benchmarks/bench_embed_token_cost.py /tmp/fastapi/docs/en/docs [--rounds 3]

Parts: 192 chunks (default strategy) of the first top-level pages, of the middle of ``release-notes.md``
and of ``tutorial/``; lengths: chunks of ``release-notes.md`` cut at 32, 128 and 480 tokens.
"""

from __future__ import annotations

import argparse
import glob
import os
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="FastAPI's docs/en/docs")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from chunkwise import chunk_file
    from chunkwise.embeddings.minilm import MiniLMEmbedder

    d = args.folder.rstrip("/") + "/"

    def take(files, n=192):
        out = []
        for f in files:
            out += chunk_file(f)
            if len(out) >= n:
                break
        return out[:n]

    kinds = {
        "first pages": take([d + f for f in ("alternatives.md", "async.md", "index.md", "features.md")]),
        "release notes (middle)": take([d + "release-notes.md"], 640)[-192:],
        "tutorial": take(sorted(glob.glob(d + "tutorial/*.md"))),
    }
    for size in (32, 128, 480):
        cut = chunk_file(d + "release-notes.md", strategy="recursive", max_tokens=size)
        kinds[f"release notes at {size} tokens"] = [c for c in cut if c.token_count >= 0.6 * size][
            : max(64, 64 * 160 // size)
        ]
    embedder = MiniLMEmbedder()
    embedder.embed([c.text for c in kinds["first pages"][:64]])  # the first call loads the model
    spent = {k: [0.0, 0.0, 0] for k in kinds}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for kind, chunks in kinds.items():
            for i in range(0, len(chunks), 64):
                part = chunks[i : i + 64]
                wall, cpu = time.monotonic(), time.process_time()
                embedder.embed([c.text for c in part])
                spent[kind][0] += time.monotonic() - wall
                spent[kind][1] += time.process_time() - cpu
                spent[kind][2] += sum(c.token_count or 0 for c in part)
        load.append(os.getloadavg()[0])
    print(f"1-min load during the rounds: {min(load):.1f}-{max(load):.1f}")
    print(f"{'chunks':28s} {'tokens a chunk':>14s} {'CPU ms a token':>14s} {'wall/CPU':>8s}")
    for kind, (wall, cpu, tokens) in spent.items():
        per_chunk = tokens / args.rounds / len(kinds[kind])
        print(f"{kind:28s} {per_chunk:14.1f} {1000 * cpu / tokens:14.3f} {wall / cpu:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
