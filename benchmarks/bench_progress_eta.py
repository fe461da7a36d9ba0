"""Does the progress ETA tell the truth? Index a real folder with heartbeat lines every few seconds, stamp
each line as it arrives, and compare every printed ETA with the time the run really still took.

Data: any folder; the figure in benchmarks/results/progress.md is FastAPI's docs (docs/en/docs of
github.com/fastapi/fastapi: 155 Markdown files among 403), e.g. ``git -C FASTAPI archive HEAD docs/en/docs |
tar x``. The run uses a fresh database and no embedding cache, so every chunk is really embedded.

    python benchmarks/bench_progress_eta.py /tmp/fastapi/docs/en/docs [--interval 2] [-- extra index flags]

Prints one row per heartbeat line (elapsed, % shown, ETA shown, real remaining, ETA / real) and the worst
ratio among the lines printed after the first 10 % of the run. Target: every such ratio within 1/1.5 .. 1.5.

A run takes 5-20 minutes on a shared 2-core machine, so estimators are compared offline: ``--trace FILE``
also records every call the run makes to its :class:`~chunkwise.progress.Progress` (time, method,
arguments; phases entered and left) as JSON lines, and ``--replay FILE`` feeds such a trace to this tree's
``Progress`` with a clock that follows the trace, printing the ETA it would have shown every ``--interval``
seconds against the time the recorded run really still took (no indexing; a second or two). ``--calls``
prints each embedding call of a trace instead: its chunks, tokens, wall and CPU milliseconds a token inside
the embed phase, and their ratio (the pace): what changed, the text or the machine.
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

#: the child of ``--trace``: ``chunkwise`` with every Progress call written to the trace file (argv[1])
TRACER = r"""
import contextlib, json, sys, threading, time
from chunkwise import progress as P
out, t0, local = open(sys.argv.pop(1), "w"), time.monotonic(), threading.local()
def log(kind, *args):  # the process's CPU seconds too (every thread), to tell a run's machine from its text
    out.write(json.dumps([time.monotonic() - t0, kind, list(args), {"cpu": time.process_time()}]) + "\n")
def wrap(name):
    orig = getattr(P.Progress, name)
    def method(self, *a, **k):
        if not getattr(local, "depth", 0):
            log(name, *a, *k.values())
        local.depth = getattr(local, "depth", 0) + 1
        try:
            return orig(self, *a, **k)
        finally:
            local.depth -= 1
    setattr(P.Progress, name, method)
for name in ("set_totals", "file_done", "chunked", "embedded", "update"):
    wrap(name)
phase = P.Progress.phase
@contextlib.contextmanager
def traced(self, name):
    log("enter", name)
    try:
        with phase(self, name):
            yield
    finally:  # a phase left by an exception (StopIteration at the end of the inputs) is left too
        log("exit", name)
P.Progress.phase = traced
from chunkwise.cli import main
sys.argv[0] = "chunkwise"
try:
    rc = main(sys.argv[1:])
finally:
    log("end")
    out.close()
sys.exit(rc)
"""


def replay(path: str, interval: float) -> int:
    """The ETAs this tree's Progress shows on a recorded trace, against the real time left (see above)."""
    import gzip
    import json

    from chunkwise.progress import Progress

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        events = [json.loads(line) for line in handle]
    end = events[-1][0]
    now = [0.0]
    progress = Progress(True, tty=False, interval=0, clock=lambda: now[0])
    progress.interval = 0  # no heartbeat thread: the lines are computed below at the trace's times
    phases: list = []
    beat: float | None = None
    print(f"{'elapsed s':>9} {'ETA s':>6} {'real s':>7} {'ETA/real':>8}")
    outside = rows = hidden = over = 0
    misses: dict[tuple, list[float]] = {}
    for event in events:
        at, kind = event[0], event[1]
        # [time, method, arguments, {"cpu": seconds}], [time, method, arguments] or [time, method, thread, arguments]
        args = event[3] if len(event) == 4 and not isinstance(event[3], dict) else event[2]
        while beat is not None and beat < at:
            now[0] = beat
            text = progress.line()
            shown = LINE.match("chunkwise: " + text)  # the ETA as a heartbeat line prints it
            if not shown and beat >= 0.1 * end and "finishing" not in text:
                hidden += 1
            if shown:
                eta = seconds(shown.group(2))
                real = end - beat
                ratio = eta / real if real > 0 else float("inf")
                late = beat >= 0.1 * end
                if late:
                    rows += 1
                    outside += not (1 / 1.5 <= ratio <= 1.5)
                    over += ratio > 1.5
                    if not 1 / 1.5 <= ratio <= 1.5:  # where the misses are: tenth of the run, phase running
                        where = progress._stack[-1][0] if progress._stack else "none"
                        misses.setdefault((int(10 * beat / end), where, ratio > 1.5), []).append(ratio)
                print(f"{beat:9.1f} {eta:6.0f} {real:7.1f} {ratio:8.2f}{'' if late else '  (first 10 %)'}")
            beat += interval
        now[0] = at
        if kind == "set_totals":
            progress.set_totals(*args)
            beat = at + interval
        elif kind == "enter":
            phases.append(progress.phase(args[0]))
            phases[-1].__enter__()
        elif kind == "exit":
            phases.pop().__exit__(None, None, None)
        elif kind == "end":
            break
        else:
            getattr(progress, kind)(*args)
    for (tenth, where, long), ratios in sorted(misses.items()):
        print(
            f"misses at {10 * tenth}-{10 * tenth + 10} % of the run, {where} running, too "
            f"{'long' if long else 'short'}: {len(ratios)} ({min(ratios):.2f} .. {max(ratios):.2f})"
        )
    print(
        f"run {end:.1f} s; lines after the first 10 %: {rows}; outside 1.5x of the real time left: {outside} "
        f"({over} too long); lines after 10 % without an ETA: {hidden}"
    )
    return 0


def calls(path: str) -> int:
    """Each embedding call of a trace recorded with CPU times: what a token cost in wall and CPU time."""
    import gzip
    import json

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        events = [json.loads(line) for line in handle]
    stack: list[list] = []  # [phase, wall, cpu] entered or resumed
    wall = cpu = 0.0  # inside embed since the last call ended
    print(
        f"{'ended s':>8} {'chunks':>6} {'tokens':>6} {'a chunk':>7} {'wall ms/token':>13} {'CPU ms/token':>12} {'pace':>5}"
    )
    for at, kind, args, extra in (e for e in events if len(e) == 4 and isinstance(e[3], dict)):
        now = extra["cpu"]
        if kind in ("enter", "exit", "embedded") and stack:
            if stack[-1][0] == "embed":
                wall, cpu = wall + at - stack[-1][1], cpu + now - stack[-1][2]
            stack[-1][1:] = [at, now]
        if kind == "enter":
            stack.append([args[0], at, now])
        elif kind == "exit":
            stack.pop()
            if stack:
                stack[-1][1:] = [at, now]
        elif kind == "embedded" and args[1] > 0 and cpu > 0:
            n, tokens = args[0], args[1]
            print(
                f"{at:8.1f} {n:6d} {tokens:6d} {tokens / n:7.1f} {1000 * wall / tokens:13.3f} "
                f"{1000 * cpu / tokens:12.3f} {wall / cpu:5.2f}"
            )
            wall = cpu = 0.0
    return 0


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
    ap.add_argument("--trace", metavar="FILE", help="also record the run's Progress calls to FILE (JSON lines)")
    ap.add_argument("--replay", action="store_true", help="FOLDER is a trace: replay it (no run)")
    ap.add_argument("--calls", action="store_true", help="FOLDER is a trace: the cost of each embedding call")
    args = ap.parse_args()
    if args.replay:
        return replay(args.folder, args.interval)
    if args.calls:
        return calls(args.folder)
    work = tempfile.mkdtemp(prefix="chunkwise-eta-")
    env = dict(os.environ, CHUNKWISE_PROGRESS_SECONDS=str(args.interval))
    run = "import sys; from chunkwise.cli import run; sys.argv[0] = 'chunkwise'; run()"
    head = [sys.executable, "-c", TRACER, args.trace] if args.trace else [sys.executable, "-c", run]
    cmd = [*head, "index", args.folder, "--db", os.path.join(work, "eta.db"), "--no-cache"]
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
    print(f"command: chunkwise {' '.join(cmd[len(head) :])}")
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
