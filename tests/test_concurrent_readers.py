"""Readers are not locked out of a Milvus Lite database: a second reader while one has it open reads the
readers' copy of the last finished run (with one note), and a long-lived reader (``serve``) never holds the
database, so ``index`` may write it meanwhile and the server reads the new run once it has finished.

Milvus Lite's ``LOCK`` is an ``flock``, per open file: a second ``Index`` in this process is refused as
another process would be, so the fast tests below hold the database from here; the slow ones run the real
commands in child processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

from chunkwise import Document
from chunkwise.errors import InputError
from chunkwise.retrieval import Index
from chunkwise.store import snapshot
from chunkwise.store.milvus import MilvusStore
from chunkwise.store.milvus_connection import BusyDatabaseWarning

PENGUINS = Document("Penguins huddle on the ice.", source="kb/penguins.txt")


def _indexed(tmp_path: Path) -> Path:
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
    return db


def test_a_second_reader_reads_the_copy_while_a_reader_holds_the_database(tmp_path):
    db = _indexed(tmp_path)
    first = Index(db, embedder=FakeEmbedder())
    try:
        first.store.connect()  # holds the database (a search from the saved copies alone would not)
        assert first.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
        assert first.store.busy is False  # the first reader opened the database itself
        with pytest.warns(BusyDatabaseWarning, match="last finished run"), Index(db, embedder=FakeEmbedder()) as r:
            assert r.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
            assert r.store.busy is True
            with pytest.raises(InputError, match="in use by another process"):
                r.add([PENGUINS], strategy=lines())
    finally:
        first.close()


def test_a_snapshot_reader_never_locks_a_writer_out_and_moves_to_the_finished_run(tmp_path):
    db = _indexed(tmp_path)
    reader = Index(store=MilvusStore(db=db, snapshot_reads=True), embedder=FakeEmbedder())
    try:
        assert reader.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
        with Index(db, embedder=FakeEmbedder()) as writer:  # not refused: the reader holds no LOCK
            writer.add([PENGUINS], strategy=lines())
            assert not reader.store.refresh()  # the write has not finished: the reader keeps its copy
            assert all(h.source != "kb/penguins.txt" for h in reader.search("penguins huddle", k=5))
        assert reader.store.refresh()  # finished: the next search reads the new run
        assert reader.search("penguins huddle", k=1)[0].source == "kb/penguins.txt"
        assert not reader.store.refresh()  # nothing newer
    finally:
        reader.close()
    assert snapshot.readers_key(db) == snapshot.fingerprint(db)


def test_a_copy_reader_trusts_saved_copies_of_its_own_files_only(tmp_path):
    db = _indexed(tmp_path)
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.search("conductor tickets", k=1)  # saves bm25 and the vectors, keyed on the files
    store = MilvusStore(db=db, snapshot_reads=True)
    try:
        store.connect()
        assert snapshot.files_read(store) == snapshot.readers_key(db) == snapshot.fingerprint(db)
    finally:
        store.close()
    assert snapshot.files_read(store) == snapshot.fingerprint(db)  # closed: the directory's own files again


def test_a_writer_waits_for_a_copy_under_way_but_not_for_an_open_database(tmp_path):
    import threading

    db = _indexed(tmp_path)
    copying = threading.Event()

    def copier() -> None:  # holds the LOCK shared, as a process copying the files does, for a moment
        with snapshot.files_at_rest(db) as free:
            assert free
            copying.set()
            time.sleep(1.0)

    thread = threading.Thread(target=copier)
    thread.start()
    assert copying.wait(60)
    writer = Index(db, embedder=FakeEmbedder())
    try:
        writer.store.require_writable()  # refused at once before: the LOCK was taken
        assert not snapshot.copies_only(db)  # it has the database open now: another writer is refused at once
    finally:
        writer.close()
        thread.join()
    assert snapshot.copies_only(db)


# -- real processes -------------------------------------------------------------------------------------------
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent / "src"), os.environ.get("PYTHONPATH", "")]
    ),
}
CLI = [sys.executable, "-c", "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"]


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder / name)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_asks_at_once_both_answer(tmp_path):
    db = str(tmp_path / "r.db")
    bees = _write(tmp_path, "bees.md", "# Bees\n\nBees make honey from nectar in the hive.\n")
    assert _cli("index", bees, "--db", db, "-q").returncode == 0
    # the first `ask`, held open between its search and its answer, with the database open (a search from the
    # saved copies alone would not open it)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from chunkwise.retrieval import Index; ix = Index(sys.argv[1]); "
            "ix.store.connect(); ix.search('honey', k=1); print('ready', flush=True); time.sleep(300)",
            db,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = _cli("ask", "What do bees make?", "--db", db)
        assert holder.poll() is None  # the first still has the database open
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 0, r.stderr
    assert "honey" in r.stdout
    assert r.stderr.count("last finished run") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_index_while_serve_runs_and_serve_reads_the_new_run(tmp_path):
    db = str(tmp_path / "s.db")
    bees = _write(tmp_path, "bees.md", "# Bees\n\nBees make honey from nectar in the hive.\n")
    penguins = _write(tmp_path, "penguins.md", "# Penguins\n\nPenguins huddle together on the Antarctic ice.\n")
    assert _cli("index", bees, "--db", db, "-q").returncode == 0
    port = _free_port()
    server = subprocess.Popen([*CLI, "serve", "--db", db, "--port", str(port)], env=ENV, stderr=subprocess.PIPE)
    try:
        for _ in range(1200):  # up to two minutes for the imports and the model on a loaded machine
            assert server.poll() is None, server.stderr.read().decode(errors="replace")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                    break
            except OSError:
                time.sleep(0.1)
        first = _post(port, "/search", {"query": "penguins huddle", "k": 3})
        assert all("penguins" not in json.dumps(h) for h in first["results"])
        r = _cli("index", penguins, "--db", db, "-q")  # the server holds no lock: the write goes through
        assert r.returncode == 0, r.stderr
        after = _post(port, "/search", {"query": "penguins huddle", "k": 1})
        assert after["results"][0]["source"].endswith("penguins.md")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_serve_moves_to_a_later_run_only_between_requests():
    import types

    from chunkwise.viz.app import IndexOpener

    refreshed: list[int] = []
    opener = IndexOpener({})
    opener.index = types.SimpleNamespace(store=types.SimpleNamespace(refresh=lambda: refreshed.append(1)))
    with opener.use() as index:  # no other request: a finished run is looked for first
        assert refreshed == [1]
        with opener.use() as again:  # a second request while the first reads: nothing is closed under it
            assert again is index and opener.get() is index
        assert refreshed == [1]
    assert opener.get() is index and refreshed == [1, 1]  # between requests again
