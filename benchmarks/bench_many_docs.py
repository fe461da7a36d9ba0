"""Semantic chunking of many short documents: one embedding stream (``chunk_many``) vs the embedding floor.

Issue 12, item 5. The floor is the time to embed, once, every distinct sentence the chunker embeds, in
one call of large length-sorted batches (no semantic chunker can do with less). Measured in the same run,
same process, same model (chunkwise's MiniLM int8 ONNX, no cache):

- ``many``: ``strategy.chunk_many(docs)`` on all documents (units planned per document, one length-sorted
  embedding stream, then each document decided on its own);
- ``per-doc``: ``[strategy.chunk(d) for d in docs]`` on the first ``--per-doc`` documents (the old path:
  one small embedding call per document), with the floor of those documents;
- ``long``: one long document (state_of_the_union.md, 49 KB) with ``chunk`` and with ``chunk_many([doc])``, and its floor.

Ratios are wall time over the floor (best of ``--repeat``) and process CPU time over the floor's CPU
time (steadier on a busy machine). The outputs of ``many`` and ``per-doc`` are checked to be identical.

Data: the five corpora of ../shared/data/chroma-eval/corpora (chatlogs, finance, pubmed, state of the
union, wikitexts), split into sentences and regrouped into documents of 1-4 sentences (cycling), as
many as ``--docs`` (default 5000).

    .venv/bin/python benchmarks/bench_many_docs.py [--docs 5000] [--per-doc 1000] [--strategy cohesion]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
if not CORPORA.is_dir():  # a worktree under /work/wt/NAME
    CORPORA = Path("/work/shared/data/chroma-eval/corpora")

warnings.filterwarnings("ignore")

from chunkwise.document import Document  # noqa: E402
from chunkwise.embeddings import get_embedder  # noqa: E402
from chunkwise.segmentation.sentences import split_sentences  # noqa: E402
from chunkwise.strategies import get_strategy  # noqa: E402


class Recorder:
    """Passes calls to the embedder and keeps the texts, so the floor embeds exactly the same ones."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        texts = list(texts)
        self.texts.extend(texts)
        return self.inner.embed(texts)


def short_documents(n: int) -> list[Document]:
    sentences = []
    for path in sorted(CORPORA.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        sentences.extend(" ".join(text[a:b].split()) for a, b in split_sentences(text))
    sentences = [s for s in sentences if len(s) >= 20]
    docs, pos = [], 0
    for k in itertools.cycle((1, 2, 3, 4)):
        if len(docs) >= n or pos + k > len(sentences):
            break
        docs.append(Document(" ".join(sentences[pos : pos + k]), source=f"doc{len(docs)}"))
        pos += k
    return docs


def long_document() -> Document:
    name = "state_of_the_union.md"
    return Document((CORPORA / name).read_text(encoding="utf-8"), source=name)


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def floor(embedder, texts: list[str], repeat: int) -> tuple[float, float]:
    distinct = sorted(set(texts), key=len)
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        _, w, c = timed(lambda: embedder.embed(distinct))
        best = (min(best[0], w), min(best[1], c))
    return best


def run(strategy_name: str, docs: list[Document], per_doc: int, repeat: int) -> None:
    embedder = get_embedder("minilm", cache=False)
    embedder.embed(["warm up the session"])
    rec = Recorder(embedder)
    strategy = get_strategy(strategy_name, embedder=rec)
    print(
        f"{len(docs)} documents, {sum(len(d.text) for d in docs) / len(docs):.0f} chars on average; "
        f"strategy {strategy_name}, MiniLM int8 ONNX, no cache",
        flush=True,
    )
    rows = []

    best_many = (float("inf"), float("inf"))
    for _ in range(repeat):
        rec.texts = []
        many, w, c = timed(lambda: strategy.chunk_many(docs))
        best_many = (min(best_many[0], w), min(best_many[1], c))
    texts_many = list(rec.texts)
    fw, fc = floor(embedder, texts_many, repeat)
    rows.append(("many (chunk_many)", len(docs), len(set(texts_many)), *best_many, fw, fc))
    print(rows[-1], flush=True)

    sub = docs[:per_doc]
    rec.texts = []
    single, w, c = timed(lambda: [strategy.chunk(d) for d in sub])
    texts_single = list(rec.texts)
    fw2, fc2 = floor(embedder, texts_single, 1)
    rows.append(("per-doc (chunk)", len(sub), len(set(texts_single)), w, c, fw2, fc2))
    print(rows[-1], flush=True)
    same = [[x.to_dict() for x in cs] for cs in single] == [[x.to_dict() for x in cs] for cs in many[: len(sub)]]

    doc = long_document()
    rec.texts = []
    one, w1, c1 = timed(lambda: strategy.chunk(doc))
    texts_long = list(rec.texts)
    one_many, w2, c2 = timed(lambda: strategy.chunk_many([doc])[0])
    fw3, fc3 = floor(embedder, texts_long, 1)
    rows.append((f"long doc chunk ({len(doc.text) // 1000} KB)", 1, len(set(texts_long)), w1, c1, fw3, fc3))
    rows.append(("long doc chunk_many", 1, len(set(texts_long)), w2, c2, fw3, fc3))
    print(rows[-2], rows[-1], flush=True)
    same_long = [x.to_dict() for x in one] == [x.to_dict() for x in one_many]

    print(f"{'run':<28} {'docs':>6} {'texts':>7} {'wall s':>8} {'floor s':>8} {'ratio':>6} {'cpu ratio':>9}")
    for name, n, t, w, c, f, fcpu in rows:
        print(f"{name:<28} {n:>6} {t:>7} {w:>8.2f} {f:>8.2f} {w / f:>6.2f} {c / fcpu:>9.2f}")
    print(f"chunk_many == per-document chunk on the first {len(sub)} documents: {same}; long document: {same_long}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--per-doc", type=int, default=1000, help="documents chunked one by one for comparison")
    ap.add_argument("--strategy", default="cohesion")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    run(args.strategy, short_documents(args.docs), args.per_doc, args.repeat)


if __name__ == "__main__":
    main()
