"""``chunkwise embed`` end to end, with the global --embedder/--base-url/--cache-dir/--no-cache options."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from fake_openai import FakeOpenAI

from chunkwise.cli import main
from chunkwise.embeddings import get_embedder


def test_embed_arguments_to_json_lines(tmp_path, capsys):
    assert main(["--cache-dir", str(tmp_path), "embed", "The pump.", "The cafeteria."]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["index"] for r in rows] == [0, 1] and rows[1]["text"] == "The cafeteria."
    ref = get_embedder("minilm", cache=False).embed(["The pump.", "The cafeteria."])
    np.testing.assert_allclose(np.array([r["vector"] for r in rows]), ref, atol=1e-6)
    assert "embedded 2 texts with minilm" in err and "2 computed" in err


def test_embed_file_to_npy_keeps_rows_and_uses_cache(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("alpha\n\nbeta\nalpha\n", encoding="utf-8")
    out = tmp_path / "v.npy"
    args = ["--cache-dir", str(tmp_path / "c"), "embed", "-i", str(src), "-o", str(out), "--batch-size", "2"]
    assert main(args) == 0
    m = np.load(out)
    assert m.shape == (4, 384) and m.dtype == np.float32
    np.testing.assert_array_equal(m[0], m[3])
    assert "3 computed" in capsys.readouterr().err
    assert main(args) == 0  # second run: everything from the cache
    assert "0 computed" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(out), m)


def test_embed_stdin_no_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("one\ntwo\n"))
    assert main(["--no-cache", "--cache-dir", str(tmp_path), "embed", "-i", "-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert not (tmp_path / "embeddings.sqlite3").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["embed"], "nothing to embed"),
        (["embed", "-i", "/no/such/file.txt"], "file not found"),
        (["embed", "x", "-o", "v.csv"], ".npy or .jsonl"),
        (["--embedder", "bert-huge", "embed", "x"], "choose one of minilm"),
    ],
)
def test_embed_errors_are_one_line(argv, message, capsys, tmp_path):
    assert main(["--cache-dir", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_embed_binary_file_is_an_input_error(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\x00binary")
    assert main(["--cache-dir", str(tmp_path), "embed", "-i", str(bad)]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_embed_through_openai_endpoint(tmp_path, capsys, monkeypatch):
    server = FakeOpenAI()
    try:
        assert (
            main(
                [
                    "--embedder",
                    "openai:test-embed",
                    "--base-url",
                    server.url,
                    "--cache-dir",
                    str(tmp_path),
                    "embed",
                    "hello",
                    "world",
                ]
            )
            == 0
        )
        assert len(capsys.readouterr().out.splitlines()) == 2
        assert server.requests[0]["input"] == ["hello", "world"]
        server.key = "secret"
        monkeypatch.setenv("OPENAI_API_KEY", "wrong")
        assert (
            main(["--embedder", "openai:test-embed", "--base-url", server.url, "--no-cache", "embed", "new text"]) == 2
        )
        err = capsys.readouterr().err
        assert "authentication failed (HTTP 401" in err and "$OPENAI_API_KEY" in err
    finally:
        server.close()


def test_console_script_runs(tmp_path):
    """The installed `chunkwise` entry point, in a separate process."""
    bindir = __import__("pathlib").Path(sys.executable).parent
    r = subprocess.run(
        [str(bindir / "chunkwise"), "--cache-dir", str(tmp_path), "cache", "stats"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and "entries:" in r.stdout
