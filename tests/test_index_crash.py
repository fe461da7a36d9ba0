"""A real ``chunkwise index`` process killed with SIGKILL, then run again, ends with exactly a clean run's chunks.

Kill points are seeded and spread over the write phase: the test watches the Milvus Lite directory grow
and kills the process once it has written a random fraction of what a full run writes (with a time limit
as a fallback), so the kills land between and inside the unmark / upsert / delete-stale / mark steps.
The scenario is an update: version 1 of a folder is indexed, then version 2 (three files edited, one
deleted, one added, ``--prune``) is indexed, killed and re-run.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkwise.store import MilvusStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),  # SIGKILL trials: index runs bounded at 120 s each, several per test
]

# the corpus and the command are the SIGKILL campaign's (scripts/sigkill_campaign.py), written once there
_SPEC = importlib.util.spec_from_file_location(
    "sigkill_campaign", Path(__file__).resolve().parents[1] / "scripts" / "sigkill_campaign.py"
)
campaign = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = campaign  # dataclasses look their module up there
_SPEC.loader.exec_module(campaign)
write_corpus, index_cmd, size = campaign.write_corpus, campaign.index_cmd, campaign.size


def run_to_end(db: Path, folder: Path) -> None:
    done = subprocess.run(index_cmd(db, folder), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def contents(db: Path) -> tuple[set[tuple[str, str]], int, dict[str, str]]:
    store = MilvusStore(db=db)
    try:
        store.open()
        rows = list(store.scan_chunks(["id", "text"]))
        markers = {m.source: m.content_hash for m in store.markers().values()}
        return {(r["id"], r["text"]) for r in rows}, len(rows), markers
    finally:
        store.close()


def build_in_process(db: Path, folder: Path) -> None:
    """Index ``folder`` with the subprocess's configuration in this process (saves a start-up)."""
    from chunkwise.embeddings import get_embedder
    from chunkwise.retrieval import Index

    with Index(db, embedder=get_embedder("minilm", cache=False)) as ix:
        ix.add([str(folder)], strategy="auto", params={"max_tokens": 48}, prune=True)  # the CLI default


def test_sigkill_at_random_points_then_rerun_equals_clean_run(tmp_path):
    names = [f"doc{i}.txt" for i in range(6)]
    folder = tmp_path / "kb"
    write_corpus(folder, 1, names)
    db = tmp_path / "x.db"
    build_in_process(db, folder)  # version 1
    base_size = size(db)
    # version 2: three files edited, one deleted, one added
    for name, seed in (("doc0.txt", 10), ("doc2.txt", 12), ("doc4.txt", 14)):
        (folder / name).unlink()
        write_corpus(folder, seed, [name])
    (folder / "doc5.txt").unlink()
    write_corpus(folder, 99, ["doc6.txt"])
    build_in_process(tmp_path / "clean.db", folder)
    expected, n_expected, expected_markers = contents(tmp_path / "clean.db")
    assert len(expected) == n_expected > 0

    # Kill the update three times at seeded points (after it has written a random amount), each run
    # starting from what the killed one left, then let it finish: crashes on top of crashes must still
    # converge to the clean result.
    killed_while_running = mid_update = 0
    before = contents(db)[0]
    for seed in (3, 7, 11):
        rng = random.Random(seed)
        target = rng.uniform(0.03, 0.3) * base_size
        start_size = size(db)
        proc = subprocess.Popen(index_cmd(db, folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + 60
        while proc.poll() is None and time.perf_counter() < deadline and abs(size(db) - start_size) < target:
            time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed_while_running += 1
        proc.wait(timeout=30)
        mid_update += contents(db)[0] not in (expected, before)
    assert killed_while_running >= 2
    assert mid_update >= 1  # at least one kill left a half-done update behind (the case under test)
    run_to_end(db, folder)
    got, n_got, markers = contents(db)
    assert n_got == len(got)  # no duplicates
    assert got == expected, f"{len(got - expected)} extra, {len(expected - got)} missing"
    assert markers == expected_markers
