"""SIGKILL campaign: kill ``chunkwise index`` at random points, re-run, compare with a clean run.

Each trial starts from a copy of an index of version 1 of a folder, updates it to version 2 (three files
edited, one deleted, one added, ``--prune``) with 1-3 kills at random moments (after a random share of
the write volume, or a random share of the time one update takes on this machine, measured first, so the
kills land at the same points on a fast or a slow machine), then lets the last run finish. The final collection must equal a
clean index of version 2 by chunk ids, texts, offsets and vectors (to float32 rounding), with no
duplicates and the same document markers. ``tests/hostile/test_sigkill_campaign.py`` runs two trials;
the campaign itself runs as many as asked.

Usage: python scripts/sigkill_campaign.py [TRIALS=20] [SEED=1]
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

WORDS = (
    "river stone lamp keeper harbor winter bread oven flour garden rose train ticket night bee honey wax "
    "queen storm fog lens glass tower bell copper salt anchor rope sail gull"
).split()
NAMES = [f"doc{i}.txt" for i in range(6)]


def write_corpus(folder: Path, seed: int, names: list[str]) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        paras = []
        for _ in range(rng.randint(4, 7)):
            sents = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                for _ in range(rng.randint(3, 6))
            ]
            paras.append(" ".join(sents))
        (folder / name).write_text("\n\n".join(paras), encoding="utf-8")


def index_cmd(db: Path, folder: Path) -> list[str]:
    code = "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
    return [
        sys.executable,
        "-c",
        code,
        "-q",
        "--no-cache",
        "index",
        str(folder),
        "--db",
        str(db),
        "--max-tokens",
        "48",
        "--batch-size",
        "4",
        "--prune",
    ]


def run_to_end(db: Path, folder: Path) -> None:
    done = subprocess.run(index_cmd(db, folder), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)


def size(path: Path) -> int:
    """Bytes of the database's own files (chunkwise's copies beside them, ``chunkwise-*``, left out)."""
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith("chunkwise-")]
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def snapshot(db: Path) -> tuple[dict, dict, int]:
    """``id -> (text, start, end, vector)``, ``source -> content hash`` and the row count."""
    from chunkwise.store import MilvusStore

    store = MilvusStore(db=db)
    try:
        store.open()
        rows = list(store.scan_chunks(["id", "text", "start", "end", "vector"]))
        markers = {m.source: m.content_hash for m in store.markers().values()}
    finally:
        store.close()
    chunks = {
        r["id"]: (r["text"], int(r["start"]), int(r["end"]), np.asarray(r["vector"], dtype=np.float32)) for r in rows
    }
    return chunks, markers, len(rows)


def differences(got: tuple, want: tuple) -> list[str]:
    """What differs between two snapshots (empty: identical)."""
    (g, gm, gn), (w, wm, _) = got, want
    out = []
    if gn != len(g):
        out.append(f"{gn - len(g)} duplicate rows")
    if set(g) != set(w):
        out.append(f"{len(set(g) - set(w))} extra ids, {len(set(w) - set(g))} missing ids")
    for i in set(g) & set(w):
        if g[i][:3] != w[i][:3]:
            out.append(f"chunk {i}: text or offsets differ")
        elif not np.allclose(g[i][3], w[i][3], atol=1e-5):
            out.append(f"chunk {i}: vector differs")
    if gm != wm:
        out.append("document markers differ")
    return out


@dataclass
class Campaign:
    """Results: trials run, kills that landed while the process ran, kills that left a half-done update."""

    trials: int = 0
    kills: int = 0
    mid_update: int = 0
    failures: list[str] = field(default_factory=list)


def campaign(trials: int, seed: int = 1, work: Path | None = None, log=print) -> Campaign:
    """Run ``trials`` kill-and-rerun trials; see the module docstring."""
    work = Path(work or tempfile.mkdtemp(prefix="chunkwise-sigkill-"))
    folder = work / "kb"
    write_corpus(folder, 1, NAMES)
    v1 = work / "v1.db"
    run_to_end(v1, folder)
    base = size(v1)
    for name, s in (("doc0.txt", 10), ("doc2.txt", 12), ("doc4.txt", 14)):
        (folder / name).unlink()
        write_corpus(folder, s, [name])
    (folder / "doc5.txt").unlink()
    write_corpus(folder, 99, ["doc6.txt"])
    run_to_end(work / "clean.db", folder)
    want = snapshot(work / "clean.db")
    timed = work / "timed.db"
    shutil.copytree(v1, timed)
    t0 = time.perf_counter()
    run_to_end(timed, folder)
    span = time.perf_counter() - t0  # one uninterrupted update, start-up included
    shutil.rmtree(timed, ignore_errors=True)
    before = snapshot(v1)[0]
    rng = random.Random(seed)
    result = Campaign()
    for t in range(trials):
        db = work / f"trial{t}.db"
        shutil.copytree(v1, db)
        for _ in range(rng.randint(1, 3)):
            start = size(db)
            by_size = rng.random() < 0.7
            target = rng.uniform(0.02, 0.4) * base
            delay = rng.uniform(0.1, 0.9) * span
            proc = subprocess.Popen(index_cmd(db, folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t0 = time.perf_counter()
            while proc.poll() is None:
                waited = time.perf_counter() - t0
                if (abs(size(db) - start) >= target or waited >= 0.9 * span) if by_size else waited >= delay:
                    break
                time.sleep(0.002)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                result.kills += 1
            proc.wait(timeout=30)
            now = snapshot(db)[0]
            result.mid_update += set(now) not in (set(want[0]), set(before))
        run_to_end(db, folder)
        diff = differences(snapshot(db), want)
        result.trials += 1
        if diff:
            result.failures.append(f"trial {t}: " + "; ".join(diff[:5]))
        log(f"trial {t}: {'OK' if not diff else 'DIFFERS: ' + '; '.join(diff[:3])}")
        shutil.rmtree(db, ignore_errors=True)
    return result


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with tempfile.TemporaryDirectory(prefix="chunkwise-sigkill-") as d:
        r = campaign(trials, seed, Path(d))
    print(
        f"{r.trials} trials, {r.kills} kills while running, {r.mid_update} left a half-done update, "
        f"{len(r.failures)} ended different from a clean run"
    )
    for f in r.failures:
        print("  " + f)
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
