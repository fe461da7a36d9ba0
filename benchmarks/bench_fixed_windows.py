"""``fixed`` across window sizes, down to windows smaller than a word, side by side in one run.

    python benchmarks/bench_fixed_windows.py [--rounds 3] [--sizes 6,12,24,64,256]

Corpus: the golden-test sample of ``tests/test_fixed_golden.py`` (the pySBD golden-rule texts shipped in
tests/data, 8 languages, and a seeded hostile random text; 140 k characters), so the rows are the ones
whose outputs that test pins. At windows of a few tokens most windows are over the cap when counted on
their own (a cut inside a word tokenises differently) and shrink; each shrink used to tokenise every later
piece of the window only to keep the first, which made 6-token windows 30-40x slower than 12-token ones.
Printed per row: CPU seconds (best round; process time), characters per CPU second, chunks, tokenizer
calls, and the time relative to the 64-token row of the same tokenizer (the cliff, if any, shows there).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="6,12,24,64,256")
    ap.add_argument("--tokenizers", default="minilm,cl100k")
    args = ap.parse_args(argv)

    from test_fixed_golden import corpus

    from chunkwise.segmentation.tokenizers import get_tokenizer
    from chunkwise.strategies import get_strategy

    text = corpus()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for name in args.tokenizers.split(","):
        tok = get_tokenizer(name)
        calls = {"n": 0}
        for method in ("count", "offsets"):  # count tokenizer calls without changing what they return
            orig = getattr(tok, method)

            def counted(*a, _orig=orig, _calls=calls, **kw):
                _calls["n"] += 1
                return _orig(*a, **kw)

            setattr(tok, method, counted)
        for size in sizes:
            best, chunks = float("inf"), 0
            for _ in range(args.rounds):  # best round: a machine shared with other work slows all rows alike
                strat = get_strategy("fixed", tokenizer=tok, max_tokens=size, overlap=0)
                calls["n"] = 0
                t = time.process_time()
                chunks = len(strat.chunk(text))
                best = min(best, time.process_time() - t)
            rows.append((name, size, best, chunks, calls["n"]))
    print(f"{'tokenizer':10} {'window':>6} {'CPU s':>7} {'kchar/s':>8} {'chunks':>7} {'tok calls':>9} {'vs 64':>6}")
    for name, size, cpu, chunks, n in rows:
        ref = next((r[2] for r in rows if r[0] == name and r[1] == 64), None)
        rel = f"{cpu / ref:5.1f}x" if ref else "   -"
        print(f"{name:10} {size:6d} {cpu:7.2f} {len(text) / cpu / 1000:8.0f} {chunks:7d} {n:9d} {rel:>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
