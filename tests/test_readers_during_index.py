"""A search while another process writes the same Milvus Lite database reads the last finished run (a copy
the writer made before its first write), with one note, instead of being refused; writes still wait."""

from __future__ import annotations

import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

from chunkwise import Document
from chunkwise.errors import InputError
from chunkwise.retrieval import Index
from chunkwise.store import snapshot
from chunkwise.store.milvus_connection import BusyDatabaseWarning


def test_a_search_during_a_write_reads_the_last_finished_run(tmp_path):
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
    writer = Index(db, embedder=FakeEmbedder())  # holds the database (flock: per open file, so here too)
    try:
        writer.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
        assert (db / snapshot.READERS_FOLDER).is_dir()
        with pytest.warns(BusyDatabaseWarning, match="last finished run"), Index(db, embedder=FakeEmbedder()) as r:
            hits = r.search("conductor tickets", k=3)
            assert hits[0].text == "The conductor checks tickets twice."
            assert all(h.source != "kb/penguins.txt" for h in r.search("penguins huddle", k=5))  # not yet
            with pytest.raises(InputError, match="in use by another process"):
                r.add([Document("Seals dive.", source="kb/seals.txt")], strategy=lines())
    finally:
        writer.close()
    assert snapshot.readers_key(db) != snapshot.fingerprint(db)  # of the run before: the next opener copies
    with Index(db, embedder=FakeEmbedder()) as ix:  # the database is free again: read directly
        ix.store.connect()  # opened (a search from the saved copies alone opens nothing)
        assert ix.search("penguins huddle", k=1)[0].source == "kb/penguins.txt"
    assert snapshot.readers_key(db) == snapshot.fingerprint(db)  # made current, and a reader changed no file


def test_the_cli_search_exits_0_with_one_note(tmp_path, capsys):
    from chunkwise.cli import main

    db = tmp_path / "t.db"
    (tmp_path / "a.md").write_text("# Bees\n\nBees make honey from nectar in the hive.\n", encoding="utf-8")
    assert main(["index", str(tmp_path / "a.md"), "--db", str(db), "-q"]) == 0
    writer = Index(db)
    try:
        writer.store.require_writable()  # what `chunkwise index` does first: the readers' copy is made here
        capsys.readouterr()
        assert main(["search", "honey", "--db", str(db)]) == 0
        out, err = capsys.readouterr()
        assert "honey" in out and err.count("last finished run") == 1
    finally:
        writer.close()
