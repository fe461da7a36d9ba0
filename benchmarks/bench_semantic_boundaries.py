"""Boundary quality of the semantic strategies: Pk and WindowDiff on stitched documents with known topic
boundaries.

Documents are stitched from the five Chroma evaluation corpora (../shared/data/chroma-eval/corpora): each is
a sequence of runs of 3-12 consecutive sentences; a run comes from a different corpus than the previous
one or (with probability ``--same-corpus``) from a distant part (at least a quarter of the corpus away) of
the same corpus. Runs are joined with single spaces, so no layout gives the boundaries away. Everything is
seeded. Reference units are the stitched sentences; a chunk start is mapped to the nearest sentence start.

Two disjoint document sets are built: ``dev`` (seed ``--seed``) to choose the defaults, and ``test``
(seed ``--seed + 1``) to report them, so the reported numbers are not tuned on.

    .venv/bin/python benchmarks/bench_semantic_boundaries.py              # full table (a few minutes)
    .venv/bin/python benchmarks/bench_semantic_boundaries.py --docs 8     # quicker

Embeddings are made once per distinct text (in memory, plus chunkwise's persistent cache) and shared by
every setting, so the table costs one embedding pass per document set.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"

from chunkwise.document import Document  # noqa: E402
from chunkwise.embeddings import get_embedder  # noqa: E402
from chunkwise.embeddings.base import Embedder  # noqa: E402
from chunkwise.evaluation.boundaries import boundaries_from_offsets, pk, window_diff  # noqa: E402
from chunkwise.segmentation.sentences import split_sentences  # noqa: E402
from chunkwise.strategies import get_strategy  # noqa: E402


class MemoEmbedder(Embedder):
    """Delegates to a real embedder, remembering every vector so each distinct text is embedded once."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.memo: dict[str, np.ndarray] = {}

    @property
    def tokenizer(self):
        return self.inner.tokenizer

    def embed(self, texts):
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if missing:
            for t, v in zip(missing, self.inner.embed(missing)):
                self.memo[t] = v
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.memo[t] for t in texts])


def clean_sentences(path: Path, tokenizer) -> list[str]:
    """Prose sentences of a corpus: 6-80 words, mostly letters, at most 120 tokens, no markup lines."""
    text = path.read_text(encoding="utf-8")
    out = []
    for a, b in split_sentences(text):
        s = " ".join(text[a:b].split())
        words = s.split()
        if not 6 <= len(words) <= 80 or "====" in s or s.startswith(("[", "{", "|", "#", "PMID")):
            continue
        letters = sum(ch.isalpha() for ch in s)
        if letters < 0.6 * len(s):
            continue
        out.append(s)
    counts = tokenizer.count_batch(out)
    return [s for s, n in zip(out, counts) if n <= 120]


def build_docs(corpora: dict[str, list[str]], n_docs: int, n_runs: int, seed: int, same_corpus: float):
    """``n_docs`` stitched documents of ``n_runs`` runs each: (text, sentence starts, reference boundaries)."""
    rng = random.Random(seed)
    names = sorted(corpora)
    docs = []
    for _ in range(n_docs):
        runs = []
        prev_name, prev_pos = None, None
        for _r in range(n_runs):
            if prev_name is not None and rng.random() < same_corpus:
                name = prev_name
                sents = corpora[name]
                far = len(sents) // 4
                for _try in range(50):
                    pos = rng.randrange(0, len(sents) - 12)
                    if abs(pos - prev_pos) >= far:
                        break
            else:
                name = rng.choice([n for n in names if n != prev_name])
                sents = corpora[name]
                pos = rng.randrange(0, len(sents) - 12)
            length = rng.randint(3, 12)
            runs.append(sents[pos:pos + length])
            prev_name, prev_pos = name, pos
        pieces, starts, ref, offset = [], [], set(), 0
        for run in runs:
            if starts:
                ref.add(len(starts))
            for s in run:
                starts.append(offset)
                pieces.append(s)
                offset += len(s) + 1
        docs.append((" ".join(pieces), starts, ref))
    return docs


SETTINGS: list[tuple[str, dict]] = [
    ("recursive", {}),  # baselines: no embeddings, cut by size and text structure only
    ("sentence", {}),
    # semantic (Kamradt / LangChain); LangChain's defaults are buffer_size=1, percentile 95
    ("semantic", dict(buffer_size=1)),
    ("semantic", dict(buffer_size=2)),
    ("semantic", dict(buffer_size=1, window="text")),
    ("semantic", dict(threshold_amount=90)),
    ("semantic", dict(buffer_size=1, threshold_amount=90)),
    ("semantic", dict(buffer_size=1, threshold_amount=80)),
    ("semantic", dict(threshold_type="standard_deviation")),
    ("semantic", dict(threshold_type="standard_deviation", threshold_amount=1.5)),
    ("semantic", dict(threshold_type="interquartile")),
    ("semantic", dict(threshold_type="gradient")),
    ("semantic", dict(threshold_type="absolute", threshold_amount=0.25)),
    ("semantic", dict(threshold_type="absolute", threshold_amount=0.6)),
    ("semantic", dict(avg_tokens=150)),
    ("semantic", dict(min_tokens=50)),
    ("semantic", dict(threshold_amount=90, min_tokens=50)),
    # maxmin; the paper's setting first
    ("maxmin", dict(fixed_threshold=0.6, c=0.9, init_constant=1.5)),
    ("maxmin", dict(fixed_threshold=0.4, c=0.9, init_constant=1.5)),
    ("maxmin", dict(fixed_threshold=0.2, c=0.9, init_constant=1.5)),
    ("maxmin", dict(fixed_threshold=0.15, c=0.5, init_constant=1.5)),
    ("maxmin", dict(fixed_threshold=0.15, c=0.5, init_constant=2.0)),
    ("maxmin", dict(fixed_threshold=0.2)),
    ("maxmin", dict(fixed_threshold=0.1)),
    ("maxmin", dict(min_tokens=50)),
    ("maxmin", dict(fixed_threshold=0.3, c=0.9, init_constant=1.5, min_tokens=100)),
    # cohesion
    ("cohesion", dict(penalty=0.0)),
    ("cohesion", dict(penalty=0.25)),
    ("cohesion", dict(penalty=1.0)),
    ("cohesion", dict(penalty=2.0)),
    ("cohesion", dict(min_tokens=50)),
]


def evaluate(name: str, params: dict, docs, embedder, max_tokens: int) -> dict:
    from chunkwise.strategies import SEMANTIC_STRATEGIES

    extra = {"embedder": embedder} if name in SEMANTIC_STRATEGIES else {"tokenizer": "minilm"}
    strat = get_strategy(name, max_tokens=max_tokens, **extra, **params)
    pks, wds, n_chunks, n_ref = [], [], [], []
    t0 = time.perf_counter()
    for text, starts, ref in docs:
        chunks = strat.chunk(Document(text))
        hyp = boundaries_from_offsets(starts, [c.start for c in chunks])
        pks.append(pk(ref, hyp, len(starts)))
        wds.append(window_diff(ref, hyp, len(starts)))
        n_chunks.append(len(chunks))
        n_ref.append(len(ref) + 1)
        assert all(c.token_count <= max_tokens for c in chunks)
    return {"pk": statistics.mean(pks), "wd": statistics.mean(wds), "chunks": statistics.mean(n_chunks),
            "ref": statistics.mean(n_ref), "seconds": time.perf_counter() - t0}


def label(name: str, params: dict) -> str:
    return name + (" " + " ".join(f"{k}={v}" for k, v in params.items()) if params else " (defaults)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20, help="documents per set")
    ap.add_argument("--runs", type=int, default=8, help="runs (topic segments) per document")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--same-corpus", type=float, default=0.3, help="share of runs from a distant part of the "
                    "same corpus")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--only", default=None, help="regex over setting labels")
    args = ap.parse_args(argv)
    if not CORPORA.exists():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    embedder = MemoEmbedder(get_embedder("minilm"))
    tok = embedder.tokenizer
    corpora = {p.stem: clean_sentences(p, tok) for p in sorted(CORPORA.glob("*.md"))}
    print("sentences per corpus:", {k: len(v) for k, v in corpora.items()})
    sets = {"dev": build_docs(corpora, args.docs, args.runs, args.seed, args.same_corpus),
            "test": build_docs(corpora, args.docs, args.runs, args.seed + 1, args.same_corpus)}
    settings = [("semantic", {}), ("maxmin", {}), ("cohesion", {})] + SETTINGS
    if args.only:
        settings = [s for s in settings if re.search(args.only, label(*s))]
    print(f"\n{args.docs} documents per set, {args.runs} runs of 3-12 sentences each, max_tokens={args.max_tokens}; "
          "Pk / WindowDiff (lower is better)\n")
    print("| setting | dev Pk | dev WD | test Pk | test WD | chunks/doc | ref segments/doc |")
    print("|---|---|---|---|---|---|---|")
    for name, params in settings:
        dev = evaluate(name, params, sets["dev"], embedder, args.max_tokens)
        test = evaluate(name, params, sets["test"], embedder, args.max_tokens)
        print(f"| {label(name, params)} | {dev['pk']:.3f} | {dev['wd']:.3f} | {test['pk']:.3f} | "
              f"{test['wd']:.3f} | {test['chunks']:.1f} | {test['ref']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
