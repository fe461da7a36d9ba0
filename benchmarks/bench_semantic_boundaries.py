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
        self.model_window = inner.model_window
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


def build_docs(
    corpora: dict[str, list[str]], n_docs: int, n_runs: int, seed: int, same_corpus: float, layout: str = "flat"
):
    """``n_docs`` stitched documents of ``n_runs`` runs each: (text, sentence starts, reference boundaries).

    ``layout="paragraphs"``: sentences are grouped into paragraphs of 2-5 sentences separated by a blank
    line, and every run ends a paragraph. Topic changes then always fall on paragraph breaks, but most
    paragraph breaks (about 3 in 4) are not topic changes: the layout is a prior, not the answer.
    """
    rng = random.Random(seed)
    lay = random.Random(seed * 7919 + 1)
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
            runs.append(sents[pos : pos + length])
            prev_name, prev_pos = name, pos
        text, starts, ref = "", [], set()
        for run in runs:
            if starts:
                ref.add(len(starts))
            left = 0
            for s in run:
                if text:
                    if layout == "paragraphs" and left == 0:
                        text += "\n\n"
                    else:
                        text += " "
                if left == 0:
                    left = lay.randint(2, 5)
                left -= 1
                starts.append(len(text))
                text += s
            left = 0  # a run always ends its paragraph
        docs.append((text, starts, ref))
    return docs


SETTINGS: list[tuple[str, dict]] = [
    ("recursive", {}),  # baselines: no embeddings, cut by size and text structure only
    ("sentence", {}),
    # semantic (Kamradt / LangChain); LangChain's defaults are buffer_size=1, percentile 95
    ("semantic", dict(buffer_size=1)),
    ("semantic", dict(buffer_size=2)),
    ("semantic", dict(buffer_size=1, buffer_vectors="text")),
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
    # the gap to the exact DP: cap, min_tokens, sentence units
    ("cohesion", dict(min_tokens=0)),
    ("cohesion", dict(min_tokens=0, max_tokens=4000)),
    ("cohesion", dict(min_tokens=0, max_tokens=4000, penalty=1.0)),
    ("cohesion", dict(min_tokens=0, max_tokens=4000, penalty=2.0)),
    ("cohesion", dict(max_tokens=512)),
    ("cohesion", dict(max_tokens=512, penalty=1.0)),
    # min_tokens defaults
    ("cohesion", dict(min_tokens=12)),
    ("cohesion", dict(min_tokens=32)),
    ("semantic", dict(min_tokens=0)),
    ("semantic", dict(min_tokens=12)),
    ("semantic", dict(min_tokens=32)),
    ("maxmin", dict(min_tokens=0)),
    ("maxmin", dict(min_tokens=12)),
    ("maxmin", dict(min_tokens=32)),
    # structure prior (matters with --layout paragraphs only: flat text has no breaks)
    ("cohesion", dict(break_reward=0.0)),
    ("cohesion", dict(break_reward=0.25)),
    ("cohesion", dict(break_reward=1.0)),
    ("cohesion", dict(break_reward=2.0)),
    ("semantic", dict(break_distance=0.0)),
    ("semantic", dict(break_distance=0.1)),
    ("semantic", dict(break_distance=0.2)),
    ("maxmin", dict(break_similarity=0.0)),
    ("maxmin", dict(break_similarity=0.1)),
    ("maxmin", dict(break_similarity=0.2)),
]


def evaluate(name: str, params: dict, docs, embedder, max_tokens: int) -> dict:
    from chunkwise.strategies import SEMANTIC_STRATEGIES

    extra = {"embedder": embedder} if name in SEMANTIC_STRATEGIES else {"tokenizer": "minilm"}
    params = dict(params)
    strat = get_strategy(name, max_tokens=params.pop("max_tokens", max_tokens), **extra, **params)
    pks, wds, n_chunks, n_ref = [], [], [], []
    t0 = time.perf_counter()
    for text, starts, ref in docs:
        chunks = strat.chunk(Document(text))
        hyp = boundaries_from_offsets(starts, [c.start for c in chunks])
        pks.append(pk(ref, hyp, len(starts)))
        wds.append(window_diff(ref, hyp, len(starts)))
        n_chunks.append(len(chunks))
        n_ref.append(len(ref) + 1)
        assert all(c.token_count <= strat.max_tokens for c in chunks)
    return {
        "pk": statistics.mean(pks),
        "wd": statistics.mean(wds),
        "chunks": statistics.mean(n_chunks),
        "ref": statistics.mean(n_ref),
        "seconds": time.perf_counter() - t0,
    }


# -- baselines implemented here only (not chunkwise strategies): they get the reference sentences as units --
def doc_sentences(text: str, starts: list[int]) -> list[str]:
    ends = [*starts[1:], len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends)]


def exact_dp(
    v: np.ndarray, penalty: float, tokens: np.ndarray | None = None, max_tokens: int | None = None, mu_mode: str = "doc"
) -> set[int]:
    """The cohesion objective solved exactly with the full similarity matrix (O(n^2) per document):
    maximise sum over chunks of (sum of pair similarities - mu) - penalty. ``max_tokens`` (with per-unit
    ``tokens``) restricts chunk length like chunkwise's cap; None = no cap."""
    n = len(v)
    sim = v @ v.T
    mu = (sim.sum() - np.trace(sim)) / (n * (n - 1)) if n > 1 else 0.0
    a = np.triu(sim - mu, 1)
    # pair sums of [i, j] via 2-D prefix sums
    p = np.zeros((n + 1, n + 1))
    p[1:, 1:] = a.cumsum(0).cumsum(1)
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    prev = np.zeros(n + 1, dtype=int)
    cum = np.concatenate([[0], np.cumsum(tokens)]) if tokens is not None else None
    for j in range(1, n + 1):
        i = np.arange(0, j)
        inside = p[j, j] - p[i, j] - p[j, i] + p[i, i]
        score = best[i] + inside - penalty
        if max_tokens is not None and cum is not None:
            score = np.where(cum[j] - cum[i] <= max_tokens, score, -np.inf)
            score[j - 1] = best[j - 1] - penalty if not np.isfinite(score[j - 1]) else score[j - 1]
        k = int(np.argmax(score))
        best[j], prev[j] = score[k], i[k]
    cuts, j = set(), n
    while j > 0:
        j = int(prev[j])
        if j > 0:
            cuts.add(j)
    return cuts


def texttiling(v: np.ndarray, w: int = 3, c: float = 0.5) -> set[int]:
    """TextTiling (Hearst 1997) on sentence embeddings: gap score = cosine of the pooled ``w`` sentences on
    each side, depth score = climb to the highest peak left + right, boundaries where depth > mean - c * sd
    at local depth maxima."""
    n = len(v)
    if n < 3:
        return set()
    cs = np.vstack([np.zeros(v.shape[1]), np.cumsum(v, 0)])
    gaps = np.arange(1, n)
    left = cs[gaps] - cs[np.maximum(0, gaps - w)]
    right = cs[np.minimum(n, gaps + w)] - cs[gaps]
    score = (left * right).sum(1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1) + 1e-12)
    depth = np.zeros_like(score)
    for g in range(len(score)):
        lp = g
        while lp > 0 and score[lp - 1] >= score[lp]:
            lp -= 1
        rp = g
        while rp < len(score) - 1 and score[rp + 1] >= score[rp]:
            rp += 1
        depth[g] = (score[lp] - score[g]) + (score[rp] - score[g])
    thr = depth.mean() - c * depth.std()
    out = set()
    for g in range(len(depth)):
        if (
            depth[g] > thr
            and (g == 0 or depth[g] >= depth[g - 1])
            and (g == len(depth) - 1 or depth[g] >= depth[g + 1])
        ):
            out.add(int(gaps[g]))
    return out


def c99(v: np.ndarray, mask: int = 11, stop: float = 1.2) -> set[int]:
    """C99 (Choi 2000) on sentence embeddings: rank-transform the similarity matrix in an ``mask`` x
    ``mask`` neighbourhood, then divisive clustering maximising inside density sum/area; stop when the
    density gain falls below mean + ``stop`` * sd of the gains so far (Choi's rule)."""
    n = len(v)
    if n < 3:
        return set()
    sim = v @ v.T
    r = mask // 2
    rank = np.zeros_like(sim)
    for i in range(n):
        for j in range(n):
            lo_i, hi_i, lo_j, hi_j = max(0, i - r), min(n, i + r + 1), max(0, j - r), min(n, j + r + 1)
            region = sim[lo_i:hi_i, lo_j:hi_j]
            rank[i, j] = (region < sim[i, j]).sum() / max(1, region.size - 1)
    p = np.zeros((n + 1, n + 1))
    p[1:, 1:] = rank.cumsum(0).cumsum(1)

    def inside(a, b):
        return p[b, b] - p[a, b] - p[b, a] + p[a, a]

    bounds = [0, n]
    densities = []
    total_in, total_area = inside(0, n), float(n * n)
    densities.append(total_in / total_area)
    chosen = []
    while len(bounds) - 1 < n:
        best = None
        for s in range(len(bounds) - 1):
            a, b = bounds[s], bounds[s + 1]
            for m in range(a + 1, b):
                t_in = total_in - inside(a, b) + inside(a, m) + inside(m, b)
                t_area = total_area - (b - a) ** 2 + (m - a) ** 2 + (b - m) ** 2
                d = t_in / t_area
                if best is None or d > best[0]:
                    best = (d, m, t_in, t_area)
        if best is None:
            break
        d, m, total_in, total_area = best
        bounds = sorted([*bounds, m])
        densities.append(d)
        chosen.append(m)
    dd = np.diff(densities)
    if len(dd) < 2:
        return set()
    thr = dd.mean() + stop * dd.std()
    # keep splits up to the last one whose gain is above the threshold (Choi's stopping rule)
    keep = 0
    for k, g in enumerate(dd):
        if g > thr:
            keep = k + 1
    return set(chosen[:keep])


def evaluate_baseline(kind: str, params: dict, docs, embedder, tokenizer) -> dict:
    pks, wds, n_chunks, n_ref = [], [], [], []
    t0 = time.perf_counter()
    for text, starts, ref in docs:
        sents = doc_sentences(text, starts)
        v = np.asarray(embedder.embed(sents), dtype=np.float64)
        v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-12
        if kind == "exact-dp":
            tokens = np.asarray(tokenizer.count_batch(sents)) if params.get("max_tokens") else None
            hyp = exact_dp(v, params.get("penalty", 0.5), tokens, params.get("max_tokens"))
        elif kind == "texttiling":
            hyp = texttiling(v, **params)
        else:
            hyp = c99(v, **params)
        pks.append(pk(ref, hyp, len(starts)))
        wds.append(window_diff(ref, hyp, len(starts)))
        n_chunks.append(len(hyp) + 1)
        n_ref.append(len(ref) + 1)
    return {
        "pk": statistics.mean(pks),
        "wd": statistics.mean(wds),
        "chunks": statistics.mean(n_chunks),
        "ref": statistics.mean(n_ref),
        "seconds": time.perf_counter() - t0,
    }


BASELINES: list[tuple[str, dict]] = [
    ("exact-dp", dict(penalty=0.0)),
    ("exact-dp", dict(penalty=0.5)),
    ("exact-dp", dict(penalty=1.0)),
    ("exact-dp", dict(penalty=2.0)),
    ("exact-dp", dict(penalty=0.5, max_tokens=256)),
    ("texttiling", dict(w=3, c=0.5)),
    ("texttiling", dict(w=2, c=0.5)),
    ("texttiling", dict(w=3, c=0.0)),
    ("c99", dict(mask=11, stop=1.2)),
    ("c99", dict(mask=11, stop=0.5)),
]


def label(name: str, params: dict) -> str:
    return name + (" " + " ".join(f"{k}={v}" for k, v in params.items()) if params else " (defaults)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20, help="documents per set")
    ap.add_argument("--runs", type=int, default=8, help="runs (topic segments) per document")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--same-corpus", type=float, default=0.3, help="share of runs from a distant part of the same corpus"
    )
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--only", default=None, help="regex over setting labels")
    ap.add_argument(
        "--layout",
        choices=("flat", "paragraphs"),
        default="flat",
        help="flat: runs joined by spaces (no layout); paragraphs: blank lines between paragraphs",
    )
    ap.add_argument(
        "--baselines",
        action="store_true",
        help="also the exact DP, TextTiling and C99 baselines (on the reference sentences)",
    )
    args = ap.parse_args(argv)
    if not CORPORA.exists():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    embedder = MemoEmbedder(get_embedder("minilm"))
    tok = embedder.tokenizer
    corpora = {p.stem: clean_sentences(p, tok) for p in sorted(CORPORA.glob("*.md"))}
    print("sentences per corpus:", {k: len(v) for k, v in corpora.items()})
    sets = {
        "dev": build_docs(corpora, args.docs, args.runs, args.seed, args.same_corpus, args.layout),
        "test": build_docs(corpora, args.docs, args.runs, args.seed + 1, args.same_corpus, args.layout),
    }
    settings = [("semantic", {}), ("maxmin", {}), ("cohesion", {})] + SETTINGS
    if args.only:
        settings = [s for s in settings if re.search(args.only, label(*s))]
    print(
        f"\nlayout={args.layout}; {args.docs} documents per set, {args.runs} runs of 3-12 sentences each, max_tokens={args.max_tokens}; "
        "Pk / WindowDiff (lower is better)\n"
    )
    print("| setting | dev Pk | dev WD | test Pk | test WD | chunks/doc | ref segments/doc |")
    print("|---|---|---|---|---|---|---|")
    if args.baselines:
        settings += [(f"baseline:{k}", p) for k, p in BASELINES if not args.only or re.search(args.only, label(k, p))]
    for name, params in settings:
        if name.startswith("baseline:"):
            kind = name.split(":", 1)[1]
            dev = evaluate_baseline(kind, params, sets["dev"], embedder, tok)
            test = evaluate_baseline(kind, params, sets["test"], embedder, tok)
        else:
            dev = evaluate(name, params, sets["dev"], embedder, args.max_tokens)
            test = evaluate(name, params, sets["test"], embedder, args.max_tokens)
        print(
            f"| {label(name, params)} | {dev['pk']:.3f} | {dev['wd']:.3f} | {test['pk']:.3f} | "
            f"{test['wd']:.3f} | {test['chunks']:.1f} | {test['ref']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
