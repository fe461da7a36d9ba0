"""BM25 terms on the defaults matrix's sets: words folded to the singular (the default) against the terms
before it and two Snowball variants (results/defaults-matrix.md, "Number folded in BM25").

The BM25 terms (``chunkwise.store.bm25``'s ``lexical_terms``) are replaced in this process only; every run
ranks with ``rank_candidates`` through ``Evaluator.run`` (default chunking, MiniLM, ``expand=none``), so a
run is what ``search`` returns with those terms. A run is ``MODE:TERMS``:

- ``MODE``: ``dense`` (vectors alone), ``nosec`` (hybrid without the section pass), ``default``;
- ``TERMS``: ``fold`` (the default: plain words and names' parts in the singular, Harman's S-stemmer),
  ``base`` (no folding: the terms before), ``stem`` (English Snowball stems instead of the words),
  ``both`` (each word and its Snowball stem), ``boths`` (each word and its singular).

Usage: ``python benchmarks/bench_bm25_terms.py SET_FOLDER OUT.json dense default:base default:fold ...``
(``SET_FOLDER``: a converted set, ``docs/`` and ``queries.jsonl``, as ``bench_defaults_matrix.py --work``
writes them). Prints each run's nDCG@10 and span recall@1k; the per-question values of nDCG@10 and span
recall@1k/2k/4k go to ``OUT.json`` (added to what is there), for paired intervals between runs
(``chunkwise.evaluation.metrics.paired_bootstrap``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import chunkwise.store.bm25 as B
from chunkwise.segmentation.lexical import lexical_terms, singular

MODES = {"dense": "hybrid=false,sections=false", "nosec": "sections=false", "default": ""}
METRICS = ("ndcg@10", "span_recall@1k", "span_recall@2k", "span_recall@4k")
_state = {"terms": "fold"}
_memo: dict[str, str] = {}


def _snowball(word: str) -> str:
    if word not in _memo:
        import snowballstemmer

        _memo[word] = snowballstemmer.stemmer("english").stemWord(word)
    return _memo[word]


def terms(text: str, parts: bool = True, fold: bool = False) -> list[str]:
    """The BM25 terms of the run's ``TERMS`` (``fold`` is what the store asks for: the default)."""
    kind = _state["terms"]
    if kind == "fold":
        return lexical_terms(text, parts, fold)
    plain = lexical_terms(text, parts)
    if kind == "base":
        return plain
    if kind == "stem":
        return [_snowball(t) if t.isalpha() else t for t in plain]
    if kind in ("both", "boths"):
        f = _snowball if kind == "both" else singular
        out = []
        for t in plain:
            out.append(t)
            if t.isalpha() and f(t) != t:
                out.append(f(t))
        return out
    raise SystemExit(f"unknown terms {kind!r}")


def main() -> None:
    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec

    B.lexical_terms = terms  # type: ignore[assignment]
    folder, out_path, runs = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    ev = Evaluator(load_dataset(folder), get_embedder("minilm"), k=10, n_boot=1000, seed=0)
    out = json.loads(out_path.read_text()) if out_path.is_file() else {}
    for run in runs:
        mode, _, kind = run.partition(":")
        _state["terms"] = kind or "fold"
        keys = ",".join(k for k in (MODES[mode], "expand=none") if k)
        t = time.process_time()
        res = ev.run(parse_run_spec("auto:" + keys))
        for m in METRICS:
            out[f"{run}|{m}"] = [float(v) for v in res.per_query[m]]
        print(
            f"{run:16s} nDCG@10 {np.mean(out[f'{run}|ndcg@10']):.3f} "
            f"span recall@1k {np.mean(out[f'{run}|span_recall@1k']):.3f} CPU {time.process_time() - t:.1f} s",
            flush=True,
        )
        out_path.write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
