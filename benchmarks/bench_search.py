"""Where users wait on search: latency and CPU per query of dense and hybrid search at 50,000 chunks.

    python benchmarks/bench_search.py [--chunks 50000] [--db /tmp/bench-search.db] [--queries 200]

The index: public English text repeated until ``--chunks`` chunks (Chroma's evaluation corpora from
``../shared/data/chroma-eval`` when present, else the licence texts in ``/usr/share/common-licenses``), cut
into documents of 400 words, each repetition starting at another word so that no two chunks are equal, and
chunked with the ``fixed`` strategy into 64-word windows. Vectors come from a hashed bag-of-words embedder
(384 dimensions, defined here), so building takes minutes, not hours, and a query's embedding costs
nothing: what is timed is the search itself. The database is built once and reused (``--rebuild``).

Queries: ``--queries`` sentences of 6-10 words drawn (seeded) from the same text, so BM25 and the vectors
both find something. Each mode runs the same queries, interleaved query by query, after one warm-up query per mode (the first hybrid
query of an opened index builds its BM25 index; that one-time cost is reported on its own line).

Reported side by side in one run: p50/p95 wall milliseconds and CPU milliseconds per query (this process:
Milvus Lite's engine runs in it), the ratio to dense, and store round trips per query (calls on the
store's client, counted by wrapping its methods), for

- ``dense``: ``Index.search(hybrid=False)``;
- ``hybrid before``: the code path this benchmark replaced: the 1,000 vector candidates asked of Milvus Lite
  (``MilvusStore(client_vectors=False)``), which turns each into a whole row before answering; BM25 by
  bm25s as now;
- ``hybrid``: ``Index.search()`` as it is now: the vector candidates by exact cosine over the vectors held
  in process, BM25 by bm25s (both loaded or built on the first hybrid query), then one fetch of the top k.

It also prints how often the two hybrid paths agree on the top 5, and per mode ``found@5``: the share of
queries whose words (a span of the text) appear in one of the 5 chunks returned. ``--chroma`` instead indexes Chroma's
evaluation corpora with MiniLM (the default strategy) and prints recall@5 of all its questions for dense,
hybrid before and hybrid after, the same way ``benchmarks/bench_index.py`` counts a question found.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from chunkwise.document import Document
from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.segmentation.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_DOC = 400
WORDS_PER_CHUNK = 64


class HashEmbedder(Embedder):
    """Hashed bag-of-words vectors (texts that share words are similar), cheap enough for 50,000 chunks."""

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.model_window = 100_000
        self.model_id = f"bench-hash-{dim}"
        self.name = self.model_id
        self._tokenizer = get_tokenizer("words")
        self.texts_embedded = 0

    @property
    def tokenizer(self):
        return self._tokenizer

    def embed(self, texts):
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for n, text in enumerate(texts):
            for w in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[n, h % self.dim] += 1.0 if (h >> 40) & 1 else -1.0
            if not out[n].any():
                out[n, 0] = 1.0
        self.texts_embedded += len(texts)
        return l2_normalize(out)


def source_words() -> list[str]:
    chroma = next(  # ../shared beside the checkout, or beside the folder of worktrees
        (d for d in (r / "shared" / "data" / "chroma-eval" / "corpora" for r in ROOT.parents) if d.is_dir()),
        ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora",
    )
    files = sorted(chroma.glob("*.md")) if chroma.is_dir() else sorted(Path("/usr/share/common-licenses").glob("*"))
    words: list[str] = []
    for f in files:
        if f.is_file() and not f.is_symlink():
            words.extend(f.read_text(encoding="utf-8", errors="replace").split())
    return words


def documents(words: list[str], chunks: int) -> list[Document]:
    docs: list[Document] = []
    per_doc = WORDS_PER_DOC // WORDS_PER_CHUNK + 1
    rep = 0
    while len(docs) * per_doc < chunks:
        shift = (rep * 37) % len(words)
        stream = words[shift:] + words[:shift]
        for a in range(0, len(stream) - WORDS_PER_DOC, WORDS_PER_DOC):
            docs.append(Document(" ".join(stream[a : a + WORDS_PER_DOC]), source=f"<bench-{rep}-{a}>"))
            if len(docs) * per_doc >= chunks:
                break
        rep += 1
    return docs


def build(db: str, chunks: int) -> None:
    from chunkwise import Index
    from chunkwise.strategies import get_strategy

    docs = documents(source_words(), chunks)
    t0 = time.perf_counter()
    with Index(db, embedder=HashEmbedder(), cache=False) as index:
        strategy = get_strategy("fixed", max_tokens=WORDS_PER_CHUNK, tokenizer="words")
        report = index.add(docs, strategy=strategy, recreate=True)
        print(
            f"built {db}: {len(docs)} documents, {index.count()} chunks in {time.perf_counter() - t0:.0f} s "
            f"({report.summary() if hasattr(report, 'summary') else ''})",
            flush=True,
        )


def count_calls(client) -> Counter:
    """Wrap the public methods of the store's client: each call is one round trip to Milvus."""
    calls: Counter = Counter()
    for name in dir(client):
        method = getattr(client, name)
        if name.startswith("_") or not callable(method):
            continue

        def wrapped(*args, _name=name, _method=method, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(client, name, wrapped)
    return calls


def search_before(index, query: str, k: int = 5):
    """The hybrid search this benchmark replaced: the vector candidates from Milvus Lite's search."""
    store = index.store
    held, store._vectors = store._vectors, None  # a loaded copy would answer whatever client_vectors says
    store.client_vectors = False
    try:
        return index.search(query, k=k)
    finally:
        store.client_vectors, store._vectors = None, held


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def queries(words: list[str], n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        a = rng.randrange(0, len(words) - 12)
        q = " ".join(re.sub(r"[^\w'-]", "", w) for w in words[a : a + rng.randint(6, 10)]).strip()
        if q:
            out.append(q)
    return out


def words_of(text: str) -> str:
    """``text`` as the queries are made: words stripped of punctuation, one space apart."""
    return " ".join(w for w in (re.sub(r"[^\w'-]", "", w) for w in text.split()) if w)


def measure(db: str, n_queries: int, first_query: bool = True, before: bool = True) -> dict:
    from chunkwise import Index

    qs = queries(source_words(), n_queries)
    index = Index(db, embedder=HashEmbedder(), cache=False)
    n_chunks = index.count()
    calls = count_calls(index.store.connect())
    modes = {
        "dense": lambda q: index.search(q, k=5, hybrid=False),
        "hybrid before": lambda q: search_before(index, q),
        "hybrid": lambda q: index.search(q, k=5),
    }
    if not before:
        del modes["hybrid before"]
    # the one-time cost of the bm25s index on the first hybrid query of a process: built (a scan of the
    # stored texts, then indexing) when nothing is saved, loaded when an earlier process saved it
    import shutil

    from chunkwise.store.milvus import BM25_FOLDER, VECTORS_FOLDER

    first: dict[str, list[tuple[float, float]]] = {"built": [], "loaded": []}
    for how in ("built", "loaded") * 2 if first_query else ():
        if how == "built":
            for folder in (BM25_FOLDER, VECTORS_FOLDER):
                shutil.rmtree(Path(db) / folder, ignore_errors=True)
        index.store._bm25 = index.store._vectors = None
        c0, t0 = time.process_time(), time.perf_counter()
        index.search(qs[0], k=5)
        first[how].append((time.perf_counter() - t0, time.process_time() - c0))
    results: dict[str, dict] = {}
    tops: dict[str, list[list[str]]] = {name: [] for name in modes}
    samples: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": [], "trips": [], "found": []} for name in modes
    }
    for fn in modes.values():
        fn(qs[0])  # warm-up
    for q in qs:  # the modes interleaved query by query, so the machine's load hits them alike
        for name, fn in modes.items():
            calls.clear()
            c0, t0 = time.process_time(), time.perf_counter()
            hits = fn(q)
            samples[name]["wall"].append((time.perf_counter() - t0) * 1000)
            samples[name]["cpu"].append((time.process_time() - c0) * 1000)
            samples[name]["trips"].append(sum(calls.values()))
            samples[name]["found"].append(any(words_of(q) in words_of(h.text) for h in hits))
            tops[name].append([h.id for h in hits])
    for name, got in samples.items():
        wall, cpu = got["wall"], got["cpu"]
        results[name] = {
            "p50_ms": percentile(wall, 50),
            "p95_ms": percentile(wall, 95),
            "cpu_ms": float(np.mean(cpu)),
            "cpu_p50_ms": percentile(cpu, 50),
            "cpu_p95_ms": percentile(cpu, 95),
            "round_trips": float(np.mean(got["trips"])),
            "found_at_5": float(np.mean(got["found"])),
        }
    index.close()
    before_tops = tops.get("hybrid before", tops["hybrid"])
    same_top1 = np.mean([a[:1] == b[:1] for a, b in zip(before_tops, tops["hybrid"])])
    overlap5 = np.mean([len(set(a) & set(b)) / max(len(a), 1) for a, b in zip(before_tops, tops["hybrid"])])
    same5 = np.mean([a == b for a, b in zip(before_tops, tops["hybrid"])])
    dense_cpu = results["dense"]["cpu_ms"]
    print(f"\n{n_chunks} chunks, {len(qs)} queries, k=5 (CPU: this process, Milvus Lite's engine included)\n")
    print(
        f"{'mode':<14} {'p50 ms':>8} {'p95 ms':>8} {'CPU p50':>8} {'CPU p95':>8} {'CPU ms':>8} {'CPU / dense':>12} "
        f"{'round trips':>12} {'found@5':>8}"
    )
    for name, r in results.items():
        print(
            f"{name:<14} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['cpu_p50_ms']:>8.1f} {r['cpu_p95_ms']:>8.1f} "
            f"{r['cpu_ms']:>8.1f} "
            f"{r['cpu_ms'] / dense_cpu:>11.2f}x {r['round_trips']:>12.1f} {100 * r['found_at_5']:>7.0f}%"
        )
    print()
    for how, runs in first.items() if first_query else ():
        print(
            f"first hybrid query of a process, bm25s index and vectors {how}: {np.median([r[0] for r in runs]):.2f} s wall, "
            f"{np.median([r[1] for r in runs]):.2f} s CPU"
        )
    if before:
        print(
            f"hybrid before vs after: same top 5 {same5:.0%}, same top 1 {same_top1:.0%}, top-5 overlap {overlap5:.0%}"
        )
    print(
        "hybrid / dense CPU per query: "
        f"{results['hybrid']['cpu_ms'] / dense_cpu:.2f}x mean, "
        f"{results['hybrid']['cpu_p50_ms'] / results['dense']['cpu_p50_ms']:.2f}x p50 (aim: at most 2x)"
    )
    return {
        "chunks": n_chunks,
        "queries": len(qs),
        "modes": results,
        "first_query": first,
        "same_top5": same5,
        "same_top1": same_top1,
        "overlap5": overlap5,
    }


def chroma_recall(data: Path) -> None:
    """recall@5 of Chroma's questions: dense, hybrid before (Milvus's vector candidates), hybrid (exact)."""
    from chunkwise import Index
    from chunkwise.embeddings import get_embedder

    paths = sorted(str(p) for p in (data / "corpora").glob("*.md"))
    with open(data / "questions_df.csv", encoding="utf-8", newline="") as fh:
        qs = list(csv.DictReader(fh))
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        # the persistent embedding cache (checked on read) holds the same vectors; it only saves recomputing
        index = Index(Path(tmp) / "chroma.db", embedder=get_embedder("minilm"))
        report = index.add(paths)
        modes = {
            "dense": lambda q: index.search(q, k=5, hybrid=False),
            "hybrid before": lambda q: search_before(index, q),
            "hybrid": lambda q: index.search(q, k=5),
        }
        found: dict[str, list[bool]] = {}
        for name, fn in modes.items():
            found[name] = []
            for q in qs:
                hits = fn(q["question"])
                refs = json.loads(q["references"])
                found[name].append(
                    all(
                        any(
                            h.source.endswith(f"{q['corpus_id']}.md")
                            and h.start < r["end_index"]
                            and r["start_index"] < h.end
                            for h in hits
                        )
                        for r in refs
                    )
                )
        index.close()
    print(f"\nChroma's evaluation: {report.chunks} chunks, {len(qs)} questions, recall@5")
    for name, f in found.items():
        print(f"{name:<14} {100 * np.mean(f):6.1f}")
    a, b = np.asarray(found["hybrid before"]), np.asarray(found["hybrid"])
    print(f"questions found only before: {int((a & ~b).sum())}, only after: {int((b & ~a).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "chunkwise-bench-search.db"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--chroma",
        nargs="?",
        const=str(ROOT.parent / "shared" / "data" / "chroma-eval"),
        help="measure recall@5 on Chroma's evaluation instead",
    )
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-first", action="store_true", help="skip timing the first hybrid query (a full scan)")
    ap.add_argument("--no-before", action="store_true", help="skip the replaced hybrid path")
    args = ap.parse_args()
    if args.chroma:
        chroma_recall(Path(args.chroma))
        return
    if args.rebuild or not Path(args.db).exists():
        build(args.db, args.chunks)
    result = measure(args.db, args.queries, not args.no_first, not args.no_before)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
