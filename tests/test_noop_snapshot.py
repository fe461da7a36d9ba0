"""A re-index with nothing to do is decided from the snapshot beside a Milvus Lite database
(store/snapshot.py), without starting Milvus Lite; anything the snapshot cannot vouch for takes the full run."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest
from conftest import FakeEmbedder
from index_data import LAMP, docs, lines

import chunkwise.embeddings
from chunkwise import Document
from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.retrieval import Index
from chunkwise.store import MilvusStore
from chunkwise.store.snapshot import fingerprint, load, local_snapshot, snapshot_path

FILES = {
    "bees.txt": "Bees make honey from nectar in the hive. The queen lays eggs all summer long.",
    "lamp.md": "# Lighthouse\n\nThe lamp turns every ten seconds.\n\nKeepers polish the lens at dusk.",
    "trains.txt": "The night train leaves at nine. The conductor checks tickets twice before midnight.",
}
ARGS = ["--max-tokens", "16", "--tokenizer", "words"]


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())


def built(tmp_path):
    """An index of :func:`docs` with its snapshot written by the run's close."""
    db = tmp_path / "t.db"
    with Index(db) as ix:
        assert ix.add(docs(), strategy=lines()).indexed == 3
    assert load(db, "chunkwise") is not None
    return db


def add_again(db, documents=None, **kw):
    """``(report, whether the run opened the database)``."""
    with Index(db) as ix:
        report = ix.add(docs() if documents is None else documents, strategy=lines(), **kw)
        return report, ix.store._client is not None


def counts(report):
    return (report.documents, report.indexed, report.skipped, report.chunks, report.pruned, report.total_chunks)


def test_a_no_op_is_answered_from_the_snapshot_with_the_full_runs_report(tmp_path):
    db = built(tmp_path)
    fast, opened = add_again(db)
    assert not opened
    os.unlink(snapshot_path(db, "chunkwise"))
    full, opened = add_again(db)
    assert opened and counts(fast) == counts(full) == (3, 0, 3, 0, 0, 9)
    assert (fast.failed, fast.warnings, fast.notes, fast.language_warning) == (
        full.failed,
        full.warnings,
        full.notes,
        full.language_warning,
    )
    assert load(db, "chunkwise") is not None  # the full no-op wrote it again: the next run is quick
    assert stat.S_IMODE(os.stat(snapshot_path(db, "chunkwise")).st_mode) == 0o600  # sources: as private as the db


def test_a_changed_database_file_makes_the_snapshot_untrusted(tmp_path):
    db = built(tmp_path)
    rel = fingerprint(db)[0][0]
    st = os.stat(db / rel)
    os.utime(db / rel, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert load(db, "chunkwise") is None
    report, opened = add_again(db)
    assert opened and counts(report) == (3, 0, 3, 0, 0, 9)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"version": 1}', ""])
def test_a_damaged_snapshot_is_ignored_without_a_traceback(tmp_path, text):
    db = built(tmp_path)
    snapshot_path(db, "chunkwise").write_text(text, encoding="utf-8")
    report, opened = add_again(db)
    assert opened and counts(report) == (3, 0, 3, 0, 0, 9)


def test_a_snapshot_of_another_version_or_collection_is_not_trusted(tmp_path):
    db = built(tmp_path)
    path = snapshot_path(db, "chunkwise")
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(dict(data, version=data["version"] + 1)), encoding="utf-8")
    assert load(db, "chunkwise") is None
    path.write_text(json.dumps(dict(data, collection="other")), encoding="utf-8")
    assert load(db, "chunkwise") is None
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load(db, "chunkwise") is not None


def test_a_changed_input_is_indexed_by_the_full_run(tmp_path):
    db = built(tmp_path)
    edited = docs()
    edited[1] = Document(LAMP + "\nThe lamp burns oil.", source="kb/lamp.txt")
    report, opened = add_again(db, edited)
    assert opened and (report.indexed, report.skipped, report.total_chunks) == (1, 2, 10)
    again, opened = add_again(db, edited)
    assert not opened and counts(again) == (3, 0, 3, 0, 0, 10)


def test_pruning_takes_the_full_run(tmp_path):
    db = built(tmp_path)
    report, opened = add_again(db, docs()[:2], prune=True)  # kb/trains.txt is no file: its source is gone
    assert opened and (report.pruned, report.total_chunks) == (1, 6)


def test_another_configuration_is_refused_as_before(tmp_path):
    db = built(tmp_path)
    with Index(db) as ix, pytest.raises(ConfigError, match="was built with"):
        ix.add(docs(), strategy=lines(), late=True)


def test_the_first_write_of_a_connection_removes_the_snapshot(tmp_path):
    db = built(tmp_path)
    store = MilvusStore(db=db)
    try:
        store.connect()
        assert snapshot_path(db, "chunkwise").exists()
        store._writer()  # what every write calls first: a write killed after this leaves no snapshot
        assert not snapshot_path(db, "chunkwise").exists()
    finally:
        store.close()


def test_no_snapshot_for_a_server(tmp_path):
    store = MilvusStore(uri="http://127.0.0.1:9", timeout=0.1)
    assert local_snapshot(store) is None and store._client is None  # asked without connecting
    store.keep_snapshot = True
    store.close()  # nothing connected, nothing to record
    assert not list(tmp_path.iterdir())


def test_a_no_op_chunkwise_index_never_imports_pymilvus(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    for name, text in FILES.items():
        (tmp_path / "kb" / name).write_text(text, encoding="utf-8")
    assert main(["index", "kb", *ARGS]) == 0
    os.unlink(snapshot_path(tmp_path / "chunkwise.db", "chunkwise"))
    assert main(["index", "kb", *ARGS]) == 0  # a no-op through the full run (it writes the snapshot again)
    full = capsys.readouterr().err.splitlines()[-1]
    code = (
        "import sys; from chunkwise.cli import main; rc = main(sys.argv[1:]); "
        "print(sorted(m for m in ('pymilvus', 'milvus_lite', 'pandas', 'grpc') if m in sys.modules)); sys.exit(rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "index", "kb", *ARGS], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    untimed = re.compile(r"[\d.]+ s, [\d.]+ chunks/s")
    assert "(0 indexed, 3 unchanged and skipped)" in full
    assert untimed.sub("", done.stderr.splitlines()[-1]) == untimed.sub("", full)


def test_the_snapshot_is_fingerprinted_after_the_background_merges_end(tmp_path, monkeypatch):
    """Milvus Lite merges flushed files in a background thread: a fingerprint taken before they end does not
    match the files the close leaves (the no-op after an edit then took the full run, 2 runs in 3). The
    capture flushes, waits for the merges (``settle``), and only then fingerprints."""
    from chunkwise.store import snapshot

    db = built(tmp_path)
    order = []
    real_fingerprint = snapshot.fingerprint
    store = MilvusStore(db=db)
    try:
        client = store.connect()
        monkeypatch.setattr(snapshot, "fingerprint", lambda d: order.append("fingerprint") or real_fingerprint(d))
        for name in ("flush", "settle"):
            real = getattr(client, name)
            monkeypatch.setattr(client, name, lambda c, *a, _n=name, _r=real, **k: order.append(_n) or _r(c, *a, **k))
        state = snapshot.capture(store)
    finally:
        store.close()
    assert state is not None and order == ["flush", "settle", "flush", "settle", "fingerprint"]


def test_settle_waits_for_the_engine_and_reports_its_failure_as_one_error(monkeypatch):
    from chunkwise.store.lite import LiteCallError, LiteClient

    waited = []

    class Collection:
        def _wait_for_bg(self, timeout=None):
            waited.append(timeout)
            if timeout == 0:
                raise TimeoutError("background work\n still running")

    class Db:
        def get_collection(self, name):
            return Collection()

    client = LiteClient(Db())
    client.settle("c")
    with pytest.raises(LiteCallError, match="^background work still running$"):
        client.settle("c", timeout=0)
    assert waited == [None, 0]
