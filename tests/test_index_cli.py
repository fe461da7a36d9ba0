"""``chunkwise index`` / ``chunkwise search`` through the real CLI entry point (in process, FakeEmbedder)."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main

FILES = {
    "bees.txt": "Bees make honey from nectar in the hive. The queen lays eggs all summer long.\n\n"
    "Beekeepers wear veils and gloves when they open the hive.",
    "lamp.md": "# Lighthouse\n\nThe lamp turns every ten seconds.\n\n## Lens\n\nKeepers polish the lens at dusk "
    "with a soft cloth.",
    "trains.txt": "The night train leaves at nine. The conductor checks tickets twice before midnight.",
}


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "kb"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_then_search_table_and_jsonl(corpus, capsys):
    code, out, err = run(capsys, "index", "kb", "--max-tokens", "16", "--tokenizer", "words")
    assert code == 0, err
    assert "3 documents (3 indexed, 0 unchanged and skipped), 0 failed" in err and "chunks/s" in err
    assert (corpus.parent / "chunkwise.db").is_dir()  # the default Milvus Lite database

    code, out, err = run(capsys, "index", "kb", "--max-tokens", "16", "--tokenizer", "words", "-q", "--no-cache")
    assert (code, out, err) == (0, "", "")  # global options accepted after the command too

    code, out, err = run(capsys, "search", "conductor tickets", "-k", "2", "--format", "jsonl")
    assert code == 0, err
    hits = [json.loads(line) for line in out.splitlines()]
    assert len(hits) == 2 and hits[0]["rank"] == 1 and hits[0]["source"] == "kb/trains.txt"
    assert "conductor checks tickets" in hits[0]["text"]
    src = FILES["trains.txt"]
    assert src[hits[0]["start"] : hits[0]["end"]] == hits[0]["text"]

    code, out, err = run(capsys, "search", "polish the lens", "-k", "1", "--hybrid")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("#1  ") and "kb/lamp.md" in first and "Lighthouse > Lens" in first
    assert "Keepers polish the lens" in out

    code, out, err = run(capsys, "search", "honey", "--filter", 'source like "%trains%"', "--format", "jsonl")
    assert code == 0 and {json.loads(x)["source"] for x in out.splitlines()} == {"kb/trains.txt"}


def test_rerun_edit_prune_and_delete(corpus, capsys):
    args = ("index", "kb", "--max-tokens", "16", "--tokenizer", "words")
    assert run(capsys, *args)[0] == 0
    code, _, err = run(capsys, *args)
    assert code == 0 and "3 unchanged and skipped" in err and "0 chunks written" in err

    (corpus / "bees.txt").write_text("Bees sleep in winter.", encoding="utf-8")
    code, _, err = run(capsys, *args)
    assert code == 0 and "1 indexed, 2 unchanged" in err and "stale removed" in err

    (corpus / "trains.txt").unlink()
    code, _, err = run(capsys, *args, "--prune")
    assert code == 0 and "1 pruned" in err
    code, out, _ = run(capsys, "search", "night train conductor", "-k", "10", "--format", "jsonl")
    assert "kb/trains.txt" not in {json.loads(x)["source"] for x in out.splitlines()}

    code, _, err = run(capsys, "index", "--delete", "kb/bees.txt")
    assert code == 0 and "deleted kb/bees.txt" in err
    code, out, _ = run(capsys, "search", "bees", "-k", "10", "--format", "jsonl")
    assert {json.loads(x)["source"] for x in out.splitlines()} == {"kb/lamp.md"}


def test_partial_failure_exit_code_and_config_mismatch(corpus, capsys):
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    code, _, err = run(capsys, "index", "kb", "--max-tokens", "16", "--tokenizer", "words")
    assert code == 1
    assert "chunkwise: error: kb/broken.pdf:" in err and "1 failed" in err
    code, _, err = run(capsys, "index", "kb", "--max-tokens", "20", "--tokenizer", "words")
    assert code == 2
    assert err.count("\n") == 1 and "max_tokens=16 (now 20)" in err and "--recreate" in err
    code, _, err = run(capsys, "index", "kb", "--max-tokens", "20", "--tokenizer", "words", "--recreate")
    assert code == 1 and "3 indexed" in err


@pytest.mark.parametrize(
    "bad, message",
    [
        (("--late-window", "0"), "--late-window must be an int in [2, inf), got 0"),
        (("--late-window", "100000"), "--late-window (100000) is larger than the embedder's model_window (510"),
        (("--late-overlap", "-1"), "--late-overlap must be an int in [0, 256), got -1"),
        (("--late-window", "64", "--late-overlap", "64"), "--late-overlap must be an int in [0, 64), got 64"),
    ],
)
def test_a_bad_late_option_leaves_no_record_behind(corpus, capsys, bad, message):
    """The late-chunking options are checked before the collection records them: the run that fails leaves
    the next valid run working (it used to record ``late_window=0`` and refuse every later run). The
    refusal names the flags as typed, not the Python options (``late_window``, ``overlap``)."""
    code, out, err = run(capsys, "index", "kb", "--db", "t2.db", "--late", *bad)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert "late_window" not in err and " overlap " not in err
    code, _, err = run(capsys, "index", "kb", "--db", "t2.db", "--late")
    assert code == 0 and "3 indexed" in err, err
    code, out, err = run(capsys, "search", "conductor tickets", "--db", "t2.db", "-k", "1", "--format", "jsonl")
    assert code == 0 and json.loads(out)["source"] == "kb/trains.txt", err


def test_a_late_flag_on_a_rerun_makes_no_model_and_keeps_the_recorded_embedder(tmp_path, monkeypatch, capsys):
    """Re-running ``index --late --late-window N`` without ``--embedder`` on a collection built with another
    embedder is a no-op: the flags are compared with the record by the run, not checked against a default
    model made for the purpose (which loaded it, and then refused the run for its other dimension)."""
    made = []

    def fake(name=None, **kw):
        made.append(name)
        return FakeEmbedder(dim=32) if name == "static" else FakeEmbedder()

    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", fake)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    for i in range(3):
        (tmp_path / "kb" / f"{i}.txt").write_text(f"storm lamp keeper {i} the tide goes out {i}", encoding="utf-8")
    late = ("--late", "--late-window", "64", "--tokenizer", "words")
    code, _, err = run(capsys, "index", "kb", "--embedder", "static", *late)
    assert code == 0 and "3 indexed" in err, err
    made.clear()
    code, _, err = run(capsys, "index", "kb", *late)
    assert code == 0 and "3 unchanged" in err and made == [], (err, made)


@pytest.mark.parametrize(
    "argv, message",
    [
        (("search", ""), "the query is empty"),
        (("search", "bees", "-k", "0"), "-k must be an int in [1, inf), got 0"),
        (("search", "bees", "--filter", "source =="), "invalid filter expression 'source ==': "),
        (("search", "bees", "--collection", "other"), "no index named 'other'"),
        (("search", "bees", "--db", "kb/bees.txt"), "must end in '.db'"),
        (("search", "bees", "--db", "nowhere.db"), "nowhere.db: no database here; run `chunkwise index` first"),
        (("index", "kb", "--db", "kb/x.db/y.db"), None),
        (("index", "kb", "--uri", "http://127.0.0.1:9", "--timeout", "2"), "cannot reach the Milvus server"),
        (("index",), "nothing to do"),
        (
            ("index", "kb", "--context", "bogus"),
            "context must be one of 'none', 'headings', 'neighbors', 'llm' or None, got 'bogus'",
        ),
        (("index", "kb", "--batch-size", "0"), "--batch-size must be an int in [1, inf), got 0"),
        (("index", "kb", "--timeout", "0"), "--timeout must be a number in (0, inf), got 0.0"),
        (("search", "bees", "--max-chars", "-1"), "--max-chars must be an int in [0, inf), got -1"),
    ],
)
def test_bad_input_is_one_line(corpus, capsys, argv, message):
    assert run(capsys, "index", "kb", "--max-tokens", "16", "--tokenizer", "words")[0] == 0
    if argv[-1] == "kb/x.db/y.db":
        (corpus / "x.db").write_text("a file, not a database")
        message = "cannot create the database directory"
    code, out, err = run(capsys, *argv)
    assert not (corpus.parent / "nowhere.db").exists()  # reading never creates a database
    assert code == 2 and out == ""
    assert err.startswith("chunkwise: error: ") and err.count("\n") == 1 and message in err, err


def test_without_pymilvus_milvus_lite_works_and_a_server_says_what_to_install(corpus, capsys, monkeypatch):
    """pymilvus is the ``milvus`` extra: a Milvus Lite index never needs it; ``--uri`` names the extra."""
    monkeypatch.setitem(sys.modules, "pymilvus", None)  # `import pymilvus` raises ImportError from here on
    assert run(capsys, "index", "kb", "--max-tokens", "16", "--tokenizer", "words")[0] == 0
    assert run(capsys, "search", "bees")[0] == 0
    code, out, err = run(capsys, "index", "kb", "--uri", "http://127.0.0.1:9", "--timeout", "2")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "pymilvus is not installed" in err and "pip install 'chunkwise[milvus]'" in err, err
