"""Coverage-weighted BM25 in z-score fusion: an experiment, not the default (results/defaults-matrix.md).

Each BM25 z-score is multiplied by a weight from the share of the query's IDF mass a chunk holds
(``sum idf(t)`` over the query terms it holds / the sum over all query terms, BM25's IDF, a term no chunk
holds counted in the sum), so that a BM25 match on a query's generic words (``python``, ``list``) counts
less than one on its rare words. The ranking of ``Index.search`` / ``eval``
(``chunkwise.retrieval.search.rank_candidates``) is replaced in this process only; ``base`` is the
default as it is, ``dense`` vectors alone, ``nosec`` hybrid without the section pass. Variants
(``NAME:P``):

- ``covdoc:P``: weight ``share ** P`` per chunk;
- ``covmix:A``: weight ``A + (1 - A) * share`` per chunk;
- ``covrel:P``: weight ``(share / best share among BM25's candidates) ** P`` per chunk;
- ``cov:P`` / ``maxn:P``: one weight per query, the share of BM25's best match, or BM25's best score
  divided by the sum of the query terms' IDFs (the most a chunk can score), to the power ``P``.

Usage: ``python benchmarks/bench_coverage_fusion.py SET_FOLDER OUT.json base dense covdoc:1 covmix:0.5 ...``
where ``SET_FOLDER`` is a converted set (``docs/`` and ``queries.jsonl``: ``bench_defaults_matrix.py --work``
writes them). Prints nDCG@10 per variant and, against ``base``, the paired bootstrap interval (1,000
resamples, seed 0), over all questions and over the odd positions (the half not used for tuning: even
positions are the tuning half). Per-question values of every metric go to ``OUT.json``.
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

import chunkwise.retrieval.search as S
from chunkwise.retrieval import fusion as F
from chunkwise.store.bm25 import bm25_query

_default_rank = S.rank_candidates
_state = {"variant": "base", "p": 1.0}
_terms: dict[tuple[int, str], list[tuple[str, float, set[str], int]]] = {}


def term_sets(store, query, filter):
    """``(term, idf, chunks holding it, df)`` for each distinct BM25 term of ``query`` (one search per term)."""
    key = (id(store), query)
    if key not in _terms:
        q = bm25_query(query)
        n = store.count()
        out = []
        for t in dict.fromkeys(q[0] if q else []):
            held = {h.id for h in store.search_text(t, n, filter)}
            out.append((t, math.log(1.0 + (n - len(held) + 0.5) / (len(held) + 0.5)), held, len(held)))
        _terms[key] = out
    return _terms[key]


def fuse(dense, sparse, w, floor, weight):
    ids = list(dict.fromkeys([*dense, *sparse]))
    if not ids:
        return []
    d_floor = min(dense.values()) if dense else 0.0
    s_floor = floor if floor is not None else min(sparse.values()) if sparse else 0.0
    d = np.array([[dense.get(i, d_floor) for i in ids]])
    s = np.array([[sparse.get(i, s_floor) for i in ids]])
    wv = np.array([weight(i) for i in ids])
    f = w * F.zscore(d)[0] + (1 - w) * wv * F.zscore(s)[0]
    order = {doc: n for n, doc in enumerate(ids)}
    return sorted(zip(ids, f.tolist()), key=lambda it: (-it[1], order[it[0]]))


def rank(store, query, qvec, k, filter, run):
    v, p = _state["variant"], _state["p"]
    if v == "base" or not run.hybrid or run.fusion != "zscore":
        return _default_rank(store, query, qvec, k, filter, run)
    members = S.key_members(store, query, filter) if run.sections and query else []
    depth = max(F.ZSCORE_DEPTH, 4 * k)
    vh = {h.id: h.score for h in store.search_vector(qvec, depth, filter, ids_only=True)}
    bh = {h.id: h.score for h in store.search_text(query, depth, filter)}
    floor = 0.0 if len(bh) < depth else None
    ts = term_sets(store, query, filter)
    total = sum(x[1] for x in ts) or 1.0

    def share(i):
        return sum(x[1] for x in ts if i in x[2]) / total

    if not bh:
        weight = lambda i: 1.0  # noqa: E731
    elif v == "covdoc":
        weight = lambda i: share(i) ** p  # noqa: E731
    elif v == "covmix":
        weight = lambda i: p + (1 - p) * share(i)  # noqa: E731
    elif v == "covrel":
        best = max(share(i) for i in bh) or 1.0
        weight = lambda i: (share(i) / best) ** p  # noqa: E731
    elif v == "cov":
        one = share(next(iter(bh))) ** p
        weight = lambda i: one  # noqa: E731
    elif v == "maxn":
        one = min(1.0, max(bh.values()) / total) ** p
        weight = lambda i: one  # noqa: E731
    else:
        raise SystemExit(f"unknown variant {v}")
    fused = fuse(vh, bh, run.dense_weight, floor, weight)
    return S.Ranking(
        S.sections_first(fused, members),
        {i: n for n, i in enumerate(vh, 1)},
        {i: n for n, i in enumerate(bh, 1)},
    )


def main() -> None:
    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec
    from chunkwise.evaluation.metrics import paired_bootstrap

    S.rank_candidates = rank
    folder, out_path, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    ds = load_dataset(folder)
    ev = Evaluator(ds, get_embedder("minilm"), k=10, n_boot=1000, seed=0)
    specs = {"dense": "auto:hybrid=false", "nosec": "auto:sections=false"}
    out: dict[str, list[float]] = {}
    for v in variants:
        name, _, p = v.partition(":")
        _state["variant"], _state["p"] = ("base" if name in specs else name), float(p or 1)
        t = time.process_time()
        r = ev.run(parse_run_spec(specs.get(name, "auto")))
        for m, vals in r.per_query.items():
            out[f"{v}|{m}"] = list(map(float, vals))
        nd = np.array(out[f"{v}|ndcg@10"])
        line = f"{v:14s} nDCG@10 {nd.mean():.3f}  CPU {time.process_time() - t:.1f} s"
        if "base|ndcg@10" in out and v != "base":
            base = np.array(out["base|ndcg@10"])
            odd = np.arange(len(base)) % 2 == 1
            a = paired_bootstrap(nd, base, 1000, 0)
            h = paired_bootstrap(nd[odd], base[odd], 1000, 0)
            line += f"  vs base {a['diff']:+.3f} [{a['lo']:+.3f}, {a['hi']:+.3f}]"
            line += f"  held-out half {h['diff']:+.3f} [{h['lo']:+.3f}, {h['hi']:+.3f}]"
        print(line, flush=True)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
