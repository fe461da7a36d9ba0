"""Speed and size discipline of semantic chunkers, side by side, with the same local model.

Every chunker gets the same all-MiniLM-L6-v2 (chunkwise's int8 ONNX back-end, no cache) through a small
adapter, and the same text (>= 100 KB, from ../shared/data/chroma-eval/corpora). Reported per chunker:

- wall time as a multiple of the *floor*: the time to embed, once, the sentences chunkwise finds in the
  text (a semantic chunker cannot do with less). The floor is re-measured right before each run; the
  ratio is best-of-``--repeat`` run time over best-of-``--repeat`` adjacent floor time (the minimum is the
  estimator least disturbed by other load on the machine). The same ratio in process CPU time (all
  threads) is shown beside it: on a busy machine it is the steadier measure of the work done;
- texts and tokens sent to the model;
- chunk count, min / median / max chunk tokens (MiniLM tokenizer), and chunks over the cap (256).

``--overhead`` measures instead the time chunkwise spends *outside* the model (sentence splitting, token
counting, deciding, shaping, building chunks) by running each strategy with a zero-cost stand-in embedder;
that number is stable even on a busy machine and bounds the ratio from above: (floor + overhead) / floor.

Peers: LangChain ``SemanticChunker`` (langchain-experimental), LlamaIndex ``SemanticSplitterNodeParser``,
chonkie ``SemanticChunker`` (``chunk_size=256``; LangChain and LlamaIndex have no size parameter), each with
its default breakpoint settings. Install them with ``pip install 'chunkwise[bench]'`` (no torch needed).

    .venv/bin/python benchmarks/bench_semantic_speed.py [--kb 110] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
CAP = 256

warnings.filterwarnings("ignore")

from chunkwise.document import Document  # noqa: E402
from chunkwise.embeddings import get_embedder  # noqa: E402
from chunkwise.segmentation.sentences import split_sentences  # noqa: E402
from chunkwise.strategies import get_strategy  # noqa: E402


class Recorder:
    """Wraps the chunkwise embedder: counts texts and keeps them to count their tokens afterwards."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    def embed(self, texts):
        texts = list(texts)
        self.texts.extend(texts)
        return self.inner.embed(texts)


def langchain_adapter(rec: Recorder):
    from langchain_core.embeddings import Embeddings

    class MiniLM(Embeddings):
        def embed_documents(self, texts):
            return rec.embed(texts).tolist()

        def embed_query(self, text):
            return rec.embed([text])[0].tolist()

    return MiniLM()


def llamaindex_adapter(rec: Recorder):
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLM(BaseEmbedding):
        def _get_text_embedding(self, text):
            return rec.embed([text])[0].tolist()

        def _get_text_embeddings(self, texts):
            return rec.embed(texts).tolist()

        def _get_query_embedding(self, query):
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query):
            return self._get_text_embedding(query)

    return MiniLM(model_name="minilm-onnx", embed_batch_size=64)


def chonkie_adapter(rec: Recorder, hf_tokenizer):
    from chonkie.embeddings import BaseEmbeddings

    class MiniLM(BaseEmbeddings):
        def embed(self, text):
            return rec.embed([text])[0]

        def embed_batch(self, texts):
            return list(rec.embed(texts))

        @property
        def dimension(self):
            return 384

        def get_tokenizer(self):
            return hf_tokenizer

    return MiniLM()


def run_chunkwise(name: str, text: str, rec: Recorder, params: dict) -> list[str]:
    class Adapter:  # the chunkwise Embedder interface, recording
        model_id = rec.inner.model_id
        dim = rec.inner.dim
        model_window = rec.inner.model_window
        tokenizer = rec.inner.tokenizer

        def embed(self, texts):
            return rec.embed(texts)

    strategy = get_strategy(name, embedder=Adapter(), max_tokens=CAP, **params)
    return [c.text for c in strategy.chunk(Document(text))]


def run_langchain(text: str, rec: Recorder) -> list[str]:
    from langchain_experimental.text_splitter import SemanticChunker

    return SemanticChunker(langchain_adapter(rec)).split_text(text)


def run_llamaindex(text: str, rec: Recorder) -> list[str]:
    from llama_index.core import Document as LDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    parser = SemanticSplitterNodeParser.from_defaults(embed_model=llamaindex_adapter(rec))
    return [n.get_content() for n in parser.get_nodes_from_documents([LDocument(text=text)])]


def run_chonkie(text: str, rec: Recorder, hf_tokenizer) -> list[str]:
    from chonkie import SemanticChunker

    chunker = SemanticChunker(embedding_model=chonkie_adapter(rec, hf_tokenizer), chunk_size=CAP)
    return [c.text for c in chunker.chunk(text)]


def overhead(text: str, repeat: int) -> int:
    """Seconds each chunkwise strategy spends outside the model, with a stand-in embedder that returns
    random unit vectors at no cost, next to the floor (embedding the sentences once with MiniLM)."""
    from chunkwise.embeddings.base import Embedder

    inner = get_embedder("minilm", cache=False)

    class Free(Embedder):
        model_id, dim, model_window = "free", inner.dim, inner.model_window
        tokenizer = inner.tokenizer

        def embed(self, texts):
            v = np.random.default_rng(len(texts)).standard_normal((len(texts), self.dim)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    sentences = [text[a:b] for a, b in split_sentences(text)]
    inner.embed(sentences[:64])
    floor = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        inner.embed(sentences)
        floor.append(time.perf_counter() - t0)
    f = min(floor)
    print(f"floor (embed {len(sentences)} sentences once): {f:.2f} s (best of {repeat})\n")
    print("| strategy | time outside the model | as a share of the floor |")
    print("|---|---|---|")
    for name in ("semantic", "maxmin", "cohesion"):
        strategy = get_strategy(name, embedder=Free(), max_tokens=CAP)
        strategy.chunk(Document(text))
        best = min(_timed(lambda s=strategy: s.chunk(Document(text))) for _ in range(repeat))
        print(f"| chunkwise {name} | {best:.3f} s | {best / f:.1%} |")
    return 0


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def load_text(kb: int) -> str:
    parts, size = [], 0
    for name in ("state_of_the_union.md", "wikitexts.md"):
        t = (CORPORA / name).read_text(encoding="utf-8")
        parts.append(t)
        size += len(t.encode())
        if size >= kb * 1024:
            break
    text = "\n\n".join(parts)
    data = text.encode()[: kb * 1024]
    return data.decode("utf-8", "ignore")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=int, default=110, help="text size in KB (>= 100 for the published table)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per chunker; best-of-N times are compared")
    ap.add_argument("--only", default=None, help="comma-separated subset of row names")
    ap.add_argument("--overhead", action="store_true", help="time chunkwise outside the model only")
    args = ap.parse_args(argv)
    text = load_text(args.kb)
    if args.overhead:
        return overhead(text, args.repeat)
    inner = get_embedder("minilm", cache=False)
    tok = inner.tokenizer
    sentences = [text[a:b] for a, b in split_sentences(text)]
    inner.embed(sentences[:64])  # warm the ONNX session

    def floor() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        inner.embed(sentences)
        return time.perf_counter() - t0, time.process_time() - c0

    rows = [
        ("chunkwise semantic", lambda rec: run_chunkwise("semantic", text, rec, {})),
        ("chunkwise maxmin", lambda rec: run_chunkwise("maxmin", text, rec, {})),
        ("chunkwise cohesion", lambda rec: run_chunkwise("cohesion", text, rec, {})),
        ("LangChain SemanticChunker", lambda rec: run_langchain(text, rec)),
        ("LlamaIndex SemanticSplitterNodeParser", lambda rec: run_llamaindex(text, rec)),
        ("chonkie SemanticChunker (chunk_size=256)", lambda rec: run_chonkie(text, rec, tok.hf)),
    ]
    if args.only:
        keep = [s.strip() for s in args.only.split(",")]
        rows = [r for r in rows if any(k in r[0] for k in keep)]
    floor_tokens = sum(tok.count_batch(sentences))
    print(
        f"text: {len(text.encode()) / 1024:.0f} KB, {len(sentences)} sentences, {floor_tokens} tokens; "
        f"cap {CAP} MiniLM tokens; best of {args.repeat} runs\n"
    )
    print(
        "| chunker | wall / floor | CPU / floor | texts embedded | tokens embedded | chunks | min / median / max tokens "
        "| over cap |"
    )
    print("|---|---|---|---|---|---|---|---|")
    floors = []
    for label, fn in rows:
        times, adjacent, cpu, cpu_adjacent = [], [], [], []
        try:
            for _ in range(args.repeat):
                f, fc = floor()
                adjacent.append(f)
                cpu_adjacent.append(fc)
                floors.append(f)
                rec = Recorder(inner)
                t0, c0 = time.perf_counter(), time.process_time()
                chunks = fn(rec)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
        except ImportError as exc:  # a peer of the bench extra that is not installed
            print(f"| {label} | skipped: {exc} | | | | | | |", flush=True)
            continue
        counts = tok.count_batch([c for c in chunks if c.strip()])
        emb_tokens = sum(tok.count_batch(rec.texts))
        print(
            f"| {label} | {min(times) / min(adjacent):.2f}x | {min(cpu) / min(cpu_adjacent):.2f}x | {len(rec.texts)} | {emb_tokens} | {len(counts)} | "
            f"{min(counts)} / {int(np.median(counts))} / {max(counts)} | {sum(n > CAP for n in counts)} |",
            flush=True,
        )
    print(
        f"\nfloor: embedding the {len(sentences)} sentences once took {min(floors):.2f} s "
        f"(best of {len(floors)}; median {statistics.median(floors):.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
