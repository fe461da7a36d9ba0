"""Peak memory of ``chunkwise chunk`` on CJK text without whitespace.

Writes N MB (default 10) of generated Japanese-like text (kanji and kana, a 。 every 10-40 characters, no
spaces), runs ``chunkwise chunk FILE -o /dev/null`` in a child process and prints its peak RSS (the child's
own ``ru_maxrss``) next to the same amount of ASCII without spaces, for comparison.
Measured on the 2-core dev box: 10.5 MB CJK 1.83 GB -> 0.39 GB peak RSS (chunk, recursive, minilm tokens).

Usage: python benchmarks/bench_cjk_memory.py [MB]
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time


def cjk(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    kanji = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    kana = [chr(c) for c in range(0x3041, 0x3094)]
    out, n = [], 0
    while n < chars:
        s = "".join(rng.choice(kanji) if rng.random() < 0.6 else rng.choice(kana) for _ in range(rng.randint(10, 40)))
        out.append(s + "。")
        n += len(s) + 1
    return "".join(out)


def peak(path: str) -> tuple[float, float]:
    code = (
        "import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'chunkwise', 'chunk', "
        "sys.argv[1], '-q', '-o', '/dev/null']); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    t = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code.replace(
                "'-m', 'chunkwise'", "'-c', 'import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))'"
            ),
            path,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.split()[-1]) / 1024, time.perf_counter() - t


def main() -> None:
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    with tempfile.TemporaryDirectory() as d:
        for name, text in (("cjk", cjk(int(mb * 1e6 / 3))), ("ascii", "x" * int(mb * 1e6))):
            path = os.path.join(d, f"{name}.txt")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            rss, secs = peak(path)
            print(f"{name:6} {os.path.getsize(path) / 1e6:6.1f} MB  peak RSS {rss:7.0f} MB  {secs:6.1f} s")


if __name__ == "__main__":
    main()
