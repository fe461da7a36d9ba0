"""Context beyond one chunk: span recall at a token budget with and without expansion (retrieval/expand.py).

Why: on meeting transcripts the gold spans are long (QMSum: median 2,752 characters) and recall@10 stays
near a quarter whatever the chunking, because ten 256-token chunks cannot hold them. Expansion hands the
reader the text around each hit instead of more hits; whether that reaches more of the gold span *for the
same reader cost* is what this measures: ``span_recall@1k/2k/4k``, the share of gold characters inside the
first B cl100k tokens of context (the Evaluator's metric), for no expansion, neighbors:1, neighbors:2,
section and parent:512, each mode minus no expansion with a paired bootstrap 95 % interval (1,000
resamples, ``chunkwise.evaluation.metrics.paired_bootstrap``).

Sets are bench_retrieval.py's (its loaders and conversions; see its docstring for the sources):

    python benchmarks/bench_expand.py --qmsum qmsum.git [--chroma ../shared/data/chroma-eval]
    python benchmarks/bench_expand.py --qmsum-set /tmp/chunkwise-bench-retrieval/qmsum   # converted already

Chunking is fixed 256/32 MiniLM tokens, retrieval the default (hybrid, z-score fusion); only what the
reader is handed changes.

``--cost`` measures what expansion costs instead: CPU per query (this process, Milvus Lite's engine included)
of a hybrid search (k=5) and of the same search followed by ``Index.expand(results, "neighbors:1")``, on a
Milvus Lite index of ``--chunks`` chunks built as ``bench_search.py`` builds its own (Chroma's corpora
repeated, hashed bag-of-words vectors, ``fixed`` 64-word chunks) but with documents of ``--doc-words`` words
(long documents are where reading a hit's whole document costs most). The two are interleaved query by
query; ``whole document`` is the reader expansion used before (every chunk of each hit's document, by its
chunk ids), timed on the same results:

    python benchmarks/bench_expand.py --cost --chunks 30000 --db /tmp/bench-expand-30k.db
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_retrieval import CHUNKING, ROOT, prepare_chroma, prepare_qmsum  # noqa: E402

MODES = ("none", "neighbors:1", "neighbors:2", "section", "parent:512")
BUDGET_METRICS = ("span_recall@1k", "span_recall@2k", "span_recall@4k")


def measure(name: str, folder: Path, embedder, n_boot: int, chunking: str = CHUNKING) -> list[dict]:
    from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec
    from chunkwise.evaluation.metrics import paired_bootstrap

    ds = load_dataset(str(folder))
    ev = Evaluator(ds, embedder, k=10, n_boot=n_boot)
    results = {}
    for mode in MODES:
        t0 = time.perf_counter()
        spec = parse_run_spec(chunking if mode == "none" else f"{chunking},expand={mode}")
        results[mode] = ev.run(spec)
        print(f"{name} {mode}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    base = results["none"]
    rows = []
    for mode, res in results.items():
        row: dict = {
            "set": name,
            "chunking": chunking,
            "mode": mode,
            "queries": len(ds.queries),
            "recall@10": res.scores["recall@10"],
        }
        for m in BUDGET_METRICS:
            row[m] = res.scores[m]
            if mode != "none":
                b = paired_bootstrap(res.per_query[m], base.per_query[m], n_boot, 0)
                row[f"{m} diff"] = (b["diff"], b["lo"], b["hi"], b["significant"])
        rows.append(row)
    return rows


def print_table(rows: list[dict]) -> None:
    print("| set | mode | " + " | ".join(BUDGET_METRICS) + " |")
    print("|---|---|" + "---|" * len(BUDGET_METRICS))
    for r in rows:
        cells = []
        for m in BUDGET_METRICS:
            cell = f"{100 * r[m]:.1f}"
            if f"{m} diff" in r:
                d, lo, hi, sig = r[f"{m} diff"]
                cell += f" ({100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]{'*' if sig else ''})"
            cells.append(cell)
        print(f"| {r['set']} ({r['queries']} q) | {r['mode']} | " + " | ".join(cells) + " |")


def whole_documents(store):
    """The reader expansion used before: every chunk of a hit's document, by its chunk ids."""
    cache: dict = {}

    def doc_chunks(doc_id):
        if doc_id not in cache:
            ids = sorted(store.chunk_ids([doc_id]).get(doc_id, set()))
            cache[doc_id] = [h.chunk for h in store.fetch(ids) if h.chunk is not None]
        return cache[doc_id]

    return doc_chunks


def build_cost_index(db: str, chunks: int, doc_words: int) -> None:
    from bench_search import WORDS_PER_CHUNK, HashEmbedder, source_words

    from chunkwise import Index
    from chunkwise.document import Document
    from chunkwise.strategies import get_strategy

    words = source_words()
    docs: list = []
    per_doc = doc_words // WORDS_PER_CHUNK + 1
    rep = 0
    while len(docs) * per_doc < chunks:
        shift = (rep * 37) % len(words)
        stream = words[shift:] + words[:shift]
        for a in range(0, len(stream) - doc_words, doc_words):
            docs.append(Document(" ".join(stream[a : a + doc_words]), source=f"<bench-{rep}-{a}>"))
            if len(docs) * per_doc >= chunks:
                break
        rep += 1
    t0 = time.process_time()
    with Index(db, embedder=HashEmbedder(), cache=False) as index:
        strategy = get_strategy("fixed", max_tokens=WORDS_PER_CHUNK, tokenizer="words")
        index.add(docs, strategy=strategy, recreate=True)
        print(f"built {db}: {len(docs)} documents, {index.count()} chunks, {time.process_time() - t0:.0f} CPU-s")


def measure_cost(db: str, n_queries: int, mode: str) -> dict:
    import numpy as np
    from bench_search import HashEmbedder, queries, source_words

    from chunkwise import Index
    from chunkwise.retrieval.expand import expand_chunks

    qs = queries(source_words(), n_queries)
    index = Index(db, embedder=HashEmbedder(), cache=False)
    n = index.count()
    c0 = time.process_time()
    index.expand(index.search(qs[0], k=5), mode)  # the copies loaded (or built) once, as in a warm process
    first = time.process_time() - c0
    rows: dict[str, list[float]] = {"search": [], "search + expand": [], "search + expand (whole document)": []}
    same = 0
    for q in qs:
        c0 = time.process_time()
        index.search(q, k=5)
        rows["search"].append(time.process_time() - c0)
        c0 = time.process_time()
        res = index.search(q, k=5)
        new = index.expand(res, mode)
        rows["search + expand"].append(time.process_time() - c0)
        c0 = time.process_time()
        res = index.search(q, k=5)
        old = expand_chunks(res, whole_documents(index.store), mode)
        rows["search + expand (whole document)"].append(time.process_time() - c0)
        same += [p.to_dict() for p in new] == [p.to_dict() for p in old]
    index.close()
    base = float(np.median(rows["search"]))
    print(f"\n{n} chunks, {len(qs)} queries, k=5, {mode} (CPU ms per query, median; this process)\n")
    for name, values in rows.items():
        med = float(np.median(values))
        print(f"{name:<34} {1000 * med:8.1f} ms  {med / base:5.2f}x search")
    print(f"passages equal to the whole-document reader's: {same}/{len(qs)}")
    print(f"the process's first search + expand (loads or builds the in-process copies): {1000 * first:.0f} ms")
    return {"chunks": n, "queries": len(qs), "mode": mode, "same": same, "first": first, **rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cost", action="store_true", help="CPU per query of expansion vs the search it expands")
    ap.add_argument("--chunks", type=int, default=30_000, help="--cost: chunks in the index")
    ap.add_argument("--doc-words", type=int, default=4000, help="--cost: words per document")
    ap.add_argument("--db", default="/tmp/chunkwise-bench-expand.db", help="--cost: the index (built when absent)")
    ap.add_argument("--queries", type=int, default=50, help="--cost: queries")
    ap.add_argument("--mode", default="neighbors:1", help="--cost: the expansion")
    ap.add_argument("--qmsum", help="a git dir of github.com/Yale-LILY/QMSum")
    ap.add_argument("--qmsum-set", help="a QMSum set bench_retrieval.py converted already (neutral layout)")
    ap.add_argument("--chroma", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--chroma-set", help="a Chroma set bench_retrieval.py converted already")
    ap.add_argument("--work", default="/tmp/chunkwise-bench-expand", help="where the converted sets go")
    ap.add_argument("--meetings", type=int, default=12)
    ap.add_argument("--turns", type=int, default=40, help="QMSum turns per document")
    ap.add_argument("--chroma-corpora", default="chatlogs,state_of_the_union,wikitexts,pubmed")
    ap.add_argument("--doc-chars", type=int, default=4000, help="Chroma characters per document")
    ap.add_argument("--chunking", default=CHUNKING, help=f"the run spec every mode retrieves with ({CHUNKING})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("-o", "--output", default=None, help="JSON file for the rows")
    args = ap.parse_args()
    if args.cost:
        if not Path(args.db).exists():
            build_cost_index(args.db, args.chunks, args.doc_words)
        out = measure_cost(args.db, args.queries, args.mode)
        if args.output:
            Path(args.output).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        return

    from chunkwise.embeddings import get_embedder

    work = Path(args.work)
    sets: list[tuple[str, Path]] = []
    if args.qmsum_set or args.qmsum:
        sets.append(
            (
                "qmsum",
                Path(args.qmsum_set)
                if args.qmsum_set
                else prepare_qmsum(args.qmsum, work / "qmsum", args.meetings, args.turns, args.seed),
            )
        )
    if args.chroma_set or (args.chroma and Path(args.chroma).is_dir()):
        sets.append(
            (
                "chroma",
                Path(args.chroma_set)
                if args.chroma_set
                else prepare_chroma(args.chroma, work / "chroma", args.chroma_corpora.split(","), args.doc_chars),
            )
        )
    embedder = get_embedder("minilm")
    rows = [row for name, folder in sets for row in measure(name, folder, embedder, args.bootstrap, args.chunking)]
    print_table(rows)
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
