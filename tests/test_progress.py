"""Long runs say how far they are (totals, ETA), also without a terminal; the language warning comes first."""

from __future__ import annotations

import io
import re
import sys
import time

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.retrieval.progress import Progress, format_eta, heartbeat_seconds

GERMAN = (
    "Die Vorlesung behandelt topologische Räume, stetige Abbildungen und den Begriff der Kompaktheit. "
    "Zunächst werden metrische Räume eingeführt, danach allgemeine Topologien und ihre Basen. Am Ende "
    "jedes Kapitels stehen Übungsaufgaben, deren Lösungen im Anhang zu finden sind."
)


class SlowEmbedder(FakeEmbedder):
    """Takes its time, as a real model does, and marks each call on stderr (to see what came before it)."""

    def __init__(self, model_id: str = "fake-bow-64", delay: float = 0.0):
        super().__init__()
        self.model_id = model_id
        self.delay = delay

    def embed(self, texts):
        print("EMBED-CALL", file=sys.stderr)
        time.sleep(self.delay)
        return super().embed(texts)


@pytest.fixture
def kb(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "kb"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc{i}.txt").write_text(
            " ".join(f"Sentence {j} of document {i} is about bees and honey." for j in range(30)), encoding="utf-8"
        )
    return folder


def test_index_without_a_terminal_prints_heartbeat_lines_with_totals(kb, capsys, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder(delay=0.3))
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "0.05")
    code = main(["index", "kb", "--tokenizer", "words", "--max-tokens", "40", "--batch-size", "4"])
    _, err = capsys.readouterr()
    assert code == 0, err
    beats = [line for line in err.splitlines() if line.startswith("chunkwise: indexing: ")]
    assert beats, err
    pattern = re.compile(
        r"chunkwise: indexing: (\d)/3 files read(?:, (\d+)/~?(\d+) chunks embedded)?, (\d+)%"
        r"(?:, [\d.]+ chunks/s)?, (?:ETA|elapsed) \d+:\d\d"
    )
    assert all(pattern.fullmatch(line) for line in beats), beats
    embedded = [pattern.fullmatch(line).groups() for line in beats if "chunks embedded" in line]
    assert embedded and all(int(done) <= int(total) for _, done, total, _ in [g[:4] for g in embedded])
    assert "ETA" in " ".join(beats)
    assert "3 documents (3 indexed" in err


def test_quiet_or_interval_zero_prints_no_heartbeat(kb, capsys, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder(delay=0.1))
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "0")
    assert main(["index", "kb", "--tokenizer", "words", "--max-tokens", "40", "--batch-size", "4"]) == 0
    _, err = capsys.readouterr()
    assert "indexing:" not in err and "3 documents (3 indexed" in err


def test_progress_line_counts_against_the_totals():
    stream = io.StringIO()
    p = Progress(True, "indexing", tty=False, stream=stream, interval=0)
    p.set_totals(4, {"a": 100, "b": 100, "c": 100, "d": 100})
    assert p.line().startswith("indexing: 0/4 files read, 0%, elapsed ")
    p.file_done("a")
    p.update("chunks", "chunk", 10)
    p.file_done("b")
    p.update("chunks", "chunk", 10)
    assert p.chunk_total() == (40, False)  # 20 chunks from half the bytes: about 40 in all
    p.update("embedding", "chunk", 10)
    assert re.fullmatch(
        r"indexing: 2/4 files read, 10/~40 chunks embedded, 25%, [\d.]+ chunks/s, ETA \d+:\d\d", p.line()
    )
    p.file_done("c")
    p.file_done("d")
    assert p.chunk_total() == (20, True)  # every file read: the total is exact
    assert "10/20 chunks embedded, 50%" in p.line()
    p.close()
    assert stream.getvalue() == ""  # interval 0: no heartbeat


def test_heartbeat_interval_and_eta_format(monkeypatch, capsys):
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "2.5")
    assert heartbeat_seconds() == 2.5
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "soon")
    assert heartbeat_seconds() == 30.0
    assert "CHUNKWISE_PROGRESS_SECONDS='soon' is not a number" in capsys.readouterr().err
    assert (format_eta(723), format_eta(3723), format_eta(-1)) == ("12:03", "1:02:03", "0:00")


def test_index_warns_about_the_language_before_anything_is_embedded(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skript.txt").write_text(GERMAN, encoding="utf-8")
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder("minilm-fake"))
    code = main(["index", "skript.txt", "--tokenizer", "words"])
    _, err = capsys.readouterr()
    assert code == 0, err
    lines = err.splitlines()
    warning = [i for i, line in enumerate(lines) if "looks German" in line]
    assert len(warning) == 1  # one document: the early line says it all, no second line at the end
    assert lines[warning[0]] == (
        "chunkwise: warning: skript.txt looks German; the embedder minilm-fake is "
        "English-only - try --embedder e5 (extra e5) or --embedder auto"
    )
    assert warning[0] < lines.index("EMBED-CALL")


def test_chunk_warns_about_the_language_before_a_semantic_strategy_embeds(tmp_path, capsys, monkeypatch):
    (tmp_path / "skript.txt").write_text(GERMAN, encoding="utf-8")
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder("minilm-fake"))
    code = main(["chunk", str(tmp_path), "--strategy", "semantic", "-q"])
    _, err = capsys.readouterr()
    assert code == 0, err
    lines = err.splitlines()
    warning = [i for i, line in enumerate(lines) if "looks German" in line]
    assert len(warning) == 1 and warning[0] < lines.index("EMBED-CALL")
