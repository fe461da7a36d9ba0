"""Does the progress ETA tell the truth? Index a real folder with heartbeat lines every few seconds, stamp
each line as it arrives, and compare every printed ETA with the time the run really still took.

Data: any folder; the figure in benchmarks/results/progress.md is FastAPI's docs (docs/en/docs of
github.com/fastapi/fastapi: 155 Markdown files among 403), e.g. ``git -C FASTAPI archive HEAD docs/en/docs |
tar x``. The run uses a fresh database and no embedding cache, so every chunk is really embedded.

    python benchmarks/bench_progress_eta.py /tmp/fastapi/docs/en/docs [--interval 2] [-- extra index flags]

Prints one row per heartbeat line (elapsed, % shown, ETA shown, real remaining, ETA / real) and the worst
ratio among the lines printed after the first 10 % of the run. Target: every such ratio within 1/1.5 .. 1.5.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

LINE = re.compile(r"chunkwise: indexing: .*?(\d+)%.*ETA (\d+(?::\d\d)+)")


def seconds(eta: str) -> int:
    total = 0
    for part in eta.split(":"):
        total = total * 60 + int(part)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between heartbeat lines")
    ap.add_argument("extra", nargs="*", help="more flags for chunkwise index (after --)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="chunkwise-eta-")
    env = dict(os.environ, CHUNKWISE_PROGRESS_SECONDS=str(args.interval))
    run = "import sys; from chunkwise.cli import run; sys.argv[0] = 'chunkwise'; run()"
    cmd = [sys.executable, "-c", run, "index", args.folder, "--db", os.path.join(work, "eta.db"), "--no-cache"]
    cmd += args.extra
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    stamped: list[tuple[float, str]] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        stamped.append((time.monotonic() - start, line.rstrip("\n")))
    proc.wait()
    total = time.monotonic() - start
    shutil.rmtree(work, ignore_errors=True)
    print(f"command: chunkwise {' '.join(cmd[3:])}")
    print(f"run: {total:.1f} s wall, exit {proc.returncode}")
    for _, line in stamped:
        if not LINE.match(line):
            print(line)
    print(f"{'elapsed s':>9} {'shown %':>7} {'ETA s':>6} {'real s':>7} {'ETA/real':>8}")
    worst = 1.0
    rows = 0
    for at, line in stamped:
        m = LINE.match(line)
        if not m:
            continue
        shown, eta = int(m.group(1)), seconds(m.group(2))
        real = total - at
        ratio = eta / real if real > 0 else float("inf")
        late = at >= 0.1 * total
        if late:
            rows += 1
            worst = max(worst, ratio, 1 / ratio if ratio > 0 else float("inf"))
        print(f"{at:9.1f} {shown:7d} {eta:6d} {real:7.1f} {ratio:8.2f}{'' if late else '  (first 10 %)'}")
    print(f"lines after the first 10 %: {rows}; worst factor between ETA and real remaining time: {worst:.2f}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
