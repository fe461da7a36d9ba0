"""Speed of the classic strategies next to their peers, side by side in one run, all counting in cl100k.

    python benchmarks/bench_classic.py [--repeat 2] [--rounds 3] [--corpora DIR] [--only NAME ...]

Corpus: the five Markdown corpora of Chroma's chunking evaluation (``../shared/data/chroma-eval/corpora``,
1.45 MB together), read ``--repeat`` times (default 2, so every row chunks 2.9 MB). Every row is timed
``--rounds`` times, interleaved (round 1 of every row, then round 2, ...) so that a machine shared with
other work slows all rows alike; the best round counts. Printed per row: MB/s, speed relative to the
fastest peer of the same kind, MB per second of CPU time (process time of all threads: on a machine
shared with other work it is steadier than wall time, and it shows a peer that gains by using several
cores), chunk count, the largest chunk in cl100k tokens (counted again here), and the share of chunks
that are exact slices of the input (found verbatim at or after the previous chunk's start).
Peers that memoise token counts by text (chonkie's RecursiveChunker, semchunk) have their caches cleared
before every document, so the repeated corpus and the repeated rounds are not turned into cache hits.

Peers (the ``bench`` extra; none needs torch): LangChain ``TokenTextSplitter`` and
``RecursiveCharacterTextSplitter.from_tiktoken_encoder``, chonkie ``TokenChunker``/``RecursiveChunker``/
``SentenceChunker``, semchunk, LlamaIndex ``SentenceSplitter``. tiktoken's ``get_encoding`` downloads the
rank file; we put bpe-openai's copy of it under tiktoken's cache key in a temporary ``TIKTOKEN_CACHE_DIR``
so peers that insist on ``get_encoding`` run offline.

Goals: fixed 512/50 >= 1.5x the fastest token peer; recursive 512 >= 1.5x chonkie's
RecursiveChunker; sentence 512 >= 2x chonkie's SentenceChunker. And: fixed within 1.15x of the
tokenizer floor: the fastest ``floor`` row, one cl100k encoding with character offsets (chunkwise's encoder
through its offset arrays: gigatoken with the ``cl100k-fast`` extra, else bpe-openai; or tiktoken's
``decode_with_offsets``) plus slicing 512-token windows every 462 tokens, no boundary snapping, no recount,
no Chunk objects. With gigatoken, ``fixed`` and the floor also run on bpe-openai (as before gigatoken) in the
same run, each fixed row checked against its own floor. Another corpus of prose:
``python benchmarks/prose_corpus.py /tmp/prose && python benchmarks/bench_classic.py --corpora /tmp/prose``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def offline_tiktoken() -> None:
    """Make ``tiktoken.get_encoding("cl100k_base")`` work offline from bpe-openai's rank file."""
    spec = importlib.util.find_spec("bpe_openai")
    rank_file = Path(next(iter(spec.submodule_search_locations))) / "data" / "cl100k_base.tiktoken.gz"
    cache = Path(tempfile.mkdtemp(prefix="tiktoken-cache-"))
    (cache / hashlib.sha1(_CL100K_URL.encode()).hexdigest()).write_bytes(gzip.decompress(rank_file.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def exact_share(texts: list[str], chunk_texts: list[list[str]]) -> float:
    """Share of chunks found verbatim in their document, in order (at or after the previous chunk start)."""
    total = exact = 0
    for text, chunks in zip(texts, chunk_texts):
        pos = 0
        for c in chunks:
            total += 1
            i = text.find(c, pos)
            if c and i >= 0:
                exact += 1
                pos = i
    return exact / total if total else 1.0


def default_encoder() -> str:
    """Which encoder chunkwise's cl100k tokenizer uses here: gigatoken (``cl100k-fast`` extra) or bpe-openai."""
    from chunkwise.segmentation.cl100k_encoder import GigatokenEncoder
    from chunkwise.segmentation.tokenizers import get_tokenizer

    return (
        "gigatoken" if isinstance(getattr(get_tokenizer("cl100k"), "_fast", None), GigatokenEncoder) else "bpe-openai"
    )


def bpe_openai_tokenizer():
    """chunkwise's cl100k tokenizer on bpe-openai's encoder (as before gigatoken), for the same-run comparison."""
    from chunkwise.segmentation.tiktoken_bpe import TiktokenTokenizer

    old = os.environ.get("CHUNKWISE_CL100K_ENCODER")
    os.environ["CHUNKWISE_CL100K_ENCODER"] = "bpe-openai"
    try:
        return TiktokenTokenizer("cl100k_base", "cl100k")
    finally:
        if old is None:
            del os.environ["CHUNKWISE_CL100K_ENCODER"]
        else:
            os.environ["CHUNKWISE_CL100K_ENCODER"] = old


def build_rows(enc, only: list[str] | None):
    """(kind, name, make) where make() returns a function text -> list of chunk strings."""
    from chunkwise.strategies import get_strategy

    def ours(name, tokenizer="cl100k", **params):
        def make():
            strat = get_strategy(name, tokenizer=tokenizer() if callable(tokenizer) else tokenizer, **params)
            return lambda text: [c.text for c in strat.chunk(text)]

        return make

    def floor_bpe(tokenizer=None):
        from chunkwise.segmentation.tokenizers import get_tokenizer

        tok = tokenizer() if tokenizer else get_tokenizer("cl100k")

        def run(text):  # one encoding with character offsets, then 512-token slices every 462 tokens
            starts, ends = tok.offset_arrays(text)
            if not len(ends):
                return []
            a = starts[::462].tolist()
            b = [int(ends[min(k + 511, len(ends) - 1)]) for k in range(0, len(ends), 462)]
            return [text[x:y] for x, y in zip(a, b)]

        return run

    def floor_tiktoken():
        def run(text):  # tiktoken's own offsets (decode_with_offsets: character starts of every token)
            ids = enc.encode_ordinary(text)
            _, offs = enc.decode_with_offsets(ids)
            offs.append(len(text))
            return [text[offs[k] : offs[min(k + 512, len(ids))]] for k in range(0, len(ids), 462)]

        return run

    rows = [
        ("floor", f"floor: {default_encoder()} offsets + slices", floor_bpe),
        ("floor", "floor: tiktoken offsets + slices", floor_tiktoken),
        ("token", "chunkwise fixed 512/50", ours("fixed", max_tokens=512, overlap=50)),
    ]
    if default_encoder() != "bpe-openai":  # with and without gigatoken in the same run
        rows += [
            ("floor", "floor: bpe-openai offsets + slices", lambda: floor_bpe(bpe_openai_tokenizer)),
            (
                "token",
                "chunkwise fixed 512/50 (bpe-openai)",
                ours("fixed", tokenizer=bpe_openai_tokenizer, max_tokens=512, overlap=50),
            ),
        ]
    rows += [
        ("recursive", "chunkwise recursive 512", ours("recursive", max_tokens=512)),
        ("sentence", "chunkwise sentence 512", ours("sentence", max_tokens=512)),
    ]

    def lc_token():
        from langchain_text_splitters import TokenTextSplitter

        s = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=512, chunk_overlap=50)
        return s.split_text

    def lc_recursive():
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        s = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=512, chunk_overlap=0
        )
        return s.split_text

    def chonkie_token():
        import chonkie

        c = chonkie.TokenChunker(tokenizer=enc, chunk_size=512, chunk_overlap=50)
        return lambda text: [x.text for x in c.chunk(text)]

    def chonkie_recursive():
        import chonkie

        c = chonkie.RecursiveChunker(tokenizer=enc, chunk_size=512)
        memo = type(c)._estimate_token_count  # an lru_cache of token counts keyed by text

        def run(text):
            memo.cache_clear()
            return [x.text for x in c.chunk(text)]

        return run

    def chonkie_sentence():
        import chonkie

        c = chonkie.SentenceChunker(tokenizer=enc, chunk_size=512, chunk_overlap=0)
        return lambda text: [x.text for x in c.chunk(text)]

    def semchunk_():
        import semchunk

        c = semchunk.chunkerify(enc, 512)

        def run(text):
            c.token_counter.cache_clear()  # memoised counts: a repeated text would be a cache hit
            return c(text)

        return run

    def llama_sentence():
        from llama_index.core.node_parser import SentenceSplitter

        return SentenceSplitter(chunk_size=512, chunk_overlap=0, tokenizer=enc.encode).split_text

    rows += [
        ("token", "langchain TokenTextSplitter 512/50", lc_token),
        ("token", "chonkie TokenChunker 512/50", chonkie_token),
        ("recursive", "langchain RecursiveCharacter 512", lc_recursive),
        ("recursive", "chonkie RecursiveChunker 512", chonkie_recursive),
        ("recursive", "semchunk 512", semchunk_),
        ("sentence", "chonkie SentenceChunker 512", chonkie_sentence),
        ("sentence", "llama-index SentenceSplitter 512", llama_sentence),
    ]
    if only:
        rows = [r for r in rows if any(o.lower() in r[1].lower() for o in only)]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--repeat", type=int, default=2, help="read the corpora this many times (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per row; the best counts")
    ap.add_argument("--only", nargs="*", help="run only rows whose name contains one of these")
    args = ap.parse_args(argv)

    files = sorted(args.corpora.glob("*.md"))
    if not files:
        print(f"no corpora in {args.corpora}", file=sys.stderr)
        return 2
    offline_tiktoken()
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    texts = [f.read_text(encoding="utf-8") for f in files] * args.repeat
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"corpus: {len(files)} files x {args.repeat} = {mb:.2f} MB; tokenizer cl100k; best of {args.rounds} rounds")

    rows = []
    for kind, name, make in build_rows(enc, args.only):
        try:
            fn = make()
            fn("Warm up. Load everything once.")
        except Exception as exc:  # a missing peer is reported, not fatal
            print(f"  skipped {name}: {type(exc).__name__}: {exc}")
            continue
        rows.append({"kind": kind, "name": name, "fn": fn, "best": float("inf"), "cpu": float("inf"), "out": None})

    for _ in range(args.rounds):
        for row in rows:
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            out = [row["fn"](t) for t in texts]
            dt = time.perf_counter() - t0
            row["best"] = min(row["best"], dt)
            row["cpu"] = min(row["cpu"], time.process_time() - c0)  # all threads of the process
            row["out"] = out

    print()
    print(
        f"{'kind':10} {'splitter':36} {'MB/s':>7} {'vs best peer':>12} {'cpu MB/s':>9} {'chunks':>7} "
        f"{'max tok':>8} {'exact':>6}"
    )
    for kind in ("floor", "token", "recursive", "sentence"):
        group = [r for r in rows if r["kind"] == kind]
        peers = [r for r in group if not r["name"].startswith("chunkwise")]
        best_peer = max((mb / r["best"] for r in peers), default=None)
        for r in group:
            speed = mb / r["best"]
            chunks = [c for doc in r["out"] for c in doc]
            max_tok = max((len(enc.encode_ordinary(c)) for c in chunks), default=0)
            ratio = f"{speed / best_peer:.2f}x" if best_peer else "-"
            share = exact_share(texts, r["out"])
            print(
                f"{kind:10} {r['name']:36} {speed:7.2f} {ratio:>12} {mb / r['cpu']:9.2f} {len(chunks):7d} "
                f"{max_tok:8d} {share:6.1%}"
            )
    print()
    goals = [
        ("token", "chunkwise fixed", None, 1.5),
        ("recursive", "chunkwise recursive", "chonkie", 1.5),
        ("sentence", "chunkwise sentence", "chonkie", 2.0),
    ]
    for kind, ours, peer, goal in goals:
        mine = [r for r in rows if r["name"].startswith(ours)]
        others = [
            r
            for r in rows
            if r["kind"] == kind
            and not r["name"].startswith("chunkwise")
            and (peer is None or r["name"].startswith(peer))
        ]
        if not mine or not others:
            continue
        ref = min(others, key=lambda r: r["best"])
        for row in mine:  # fixed: also the bpe-openai row (before gigatoken) when it ran
            ratio = ref["best"] / row["best"]
            cpu_ratio = ref["cpu"] / row["cpu"]
            verdict = "met" if (min(ratio, cpu_ratio) if kind == "token" else ratio) >= goal else "NOT met"
            print(
                f"goal {row['name']} >= {goal}x {ref['name']}: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU time ({verdict})"
            )
    floors = [r for r in rows if r["kind"] == "floor"]
    fixed = [r for r in rows if r["name"].startswith("chunkwise fixed")]
    if floors and fixed:  # fixed within 1.15x of one tokenizer pass plus slicing
        for row in fixed:  # the bpe-openai row against the bpe-openai floor, ours against the fastest
            same = [r for r in floors if "(bpe-openai)" in row["name"] and "bpe-openai" in r["name"]]
            ref = min(same or floors, key=lambda r: r["cpu"])
            wall, cpu = row["best"] / ref["best"], row["cpu"] / ref["cpu"]
            verdict = "met" if cpu <= 1.15 else "NOT met"
            print(f"goal {row['name']} <= 1.15x {ref['name']}: {cpu:.2f}x CPU time ({verdict}), {wall:.2f}x wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
