"""`chunkwise chunk`: JSONL/table output, folders, stdin, per-file failures, parameter errors, flags."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.cli import main
from chunkwise.document import CHUNK_FIELDS
from chunkwise.formats import load

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GOOD = sorted(p.name for p in EXAMPLES.iterdir() if not p.name.startswith("."))


def run(capsys, *argv):
    code = main(["chunk", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_examples_folder_to_jsonl(capsys):
    code, out, err = run(capsys, EXAMPLES, "--max-tokens", "96")
    assert code == 0, err
    rows = jsonl(out)
    assert {Path(r["source"]).name for r in rows} == set(GOOD)
    docs = {r["source"]: load(r["source"]) for r in rows}
    for r in rows:
        assert tuple(r) == CHUNK_FIELDS  # exactly the chunk fields, in order
        assert docs[r["source"]].text[r["start"] : r["end"]] == r["text"]
        assert r["token_count"] <= 96 and r["strategy"].startswith("auto:")
    pdf_rows = [r for r in rows if r["source"].endswith(".pdf")]
    assert pdf_rows[-1]["page_end"] == 4 and all(r["page_start"] for r in pdf_rows)
    vtt_rows = [r for r in rows if r["source"].endswith(".vtt")]
    assert vtt_rows[0]["start_time"] == 1.0 and vtt_rows[0]["speakers"][0] == "Maria"
    assert f"{len(GOOD)} documents, {len(rows)} chunks" in err


def test_mixed_folder_with_bad_files(capsys, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(EXAMPLES, folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ngarbage")
    (folder / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))  # a supported name, binary inside
    (folder / "photo.dat").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))  # a type no loader reads: skipped
    code, out, err = run(capsys, folder, "--strategy", "sentence", "--max-tokens", "64")
    assert code == 1
    lines = err.splitlines()
    pdf_err = [l for l in lines if l.startswith("chunkwise: error:") and "broken.pdf" in l]
    bin_err = [l for l in lines if l.startswith("chunkwise: error:") and "photo.txt" in l]
    assert len(pdf_err) == 1 and "corrupt or unreadable PDF" in pdf_err[0]
    assert len(bin_err) == 1 and "binary file (PNG image)" in bin_err[0]
    assert "Traceback" not in err
    assert {Path(r["source"]).name for r in jsonl(out)} == set(GOOD)  # the rest is chunked
    tail = err[err.index("2 inputs failed:") :]
    assert "broken.pdf" in tail and "photo.txt" in tail and "photo.dat" not in tail
    assert "chunkwise: warning: skipped 1 file of unsupported types: .dat 1" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-tokens", "0"], "max_tokens must be an int in [1, inf), got 0"),
        (["--max-tokens", "50", "--overlap", "50"], "overlap (50) must be smaller than max_tokens (50)"),
        (["--max-file-size", "lots"], "--max-file-size expects a size"),
        (["--max-file-size", "0.5B"], "--max-file-size must be an int in [1, inf), got 0"),
        (["--encoding", "klingon"], "unknown encoding"),
        (["-p", "nonsense=1"], "has no parameter nonsense"),
    ],
)
def test_parameter_errors_exit_2_with_one_line(capsys, args, message):
    code, out, err = run(capsys, EXAMPLES / "night-trains.txt", *args)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and err.startswith("chunkwise: error: ") and message in err


def test_missing_file_and_empty_file(capsys, tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    code, out, err = run(capsys, tmp_path / "nope.md", tmp_path / "empty.txt", EXAMPLES / "night-trains.txt")
    assert code == 1
    assert f"chunkwise: error: {tmp_path / 'nope.md'}: no such file" in err
    assert f"chunkwise: error: {tmp_path / 'empty.txt'}: empty file (0 bytes)" in err
    assert {r["source"] for r in jsonl(out)} == {str(EXAMPLES / "night-trains.txt")}


def test_invalid_utf8_warns_and_chunks(capsys, tmp_path):
    p = tmp_path / "old.txt"
    p.write_bytes("Gr\xfc\xdfe aus K\xf6ln.".encode("latin-1"))
    code, out, err = run(capsys, p)
    assert code == 0
    assert f"chunkwise: warning: {p}: not valid UTF-8: 3 bytes replaced" in err
    assert jsonl(out)[0]["text"].count("\ufffd") == 3
    code, out, err = run(capsys, p, "--encoding", "latin-1")
    assert code == 0 and "warning" not in err and jsonl(out)[0]["text"] == "Gr\xfc\xdfe aus K\xf6ln."


def test_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((EXAMPLES / "sourdough-guide.md").read_bytes())))
    code, out, err = run(capsys, "-", "--strategy", "fixed", "--max-tokens", "100", "--tokenizer", "words")
    assert code == 0
    rows = jsonl(out)
    assert rows and all(r["source"] == "<stdin>" and r["token_count"] <= 100 for r in rows)
    assert any(r["section"][-1:] == ["Feeding Schedule"] for r in rows)


def test_table_format_and_output_file(capsys, tmp_path):
    out_file = tmp_path / "chunks.txt"
    code, out, err = run(
        capsys,
        EXAMPLES / "lighthouse-manual.pdf",
        EXAMPLES / "team-meeting.vtt",
        "--format",
        "table",
        "--max-tokens",
        "120",
        "-o",
        out_file,
    )
    assert code == 0 and out == ""
    table = out_file.read_text(encoding="utf-8").splitlines()
    assert table[0].split() == ["source", "#", "tokens", "section", "where", "text"]
    assert any("p1-2" in row or "p2-3" in row for row in table)  # a chunk spanning a page break
    assert any("0:01.0-" in row for row in table)  # transcript time range (chunkwise.timefmt)
    assert any("2 Lamp and Lens" in row for row in table)


def test_cleaning_flags_and_globs(capsys):
    code, out, _ = run(capsys, EXAMPLES, "--include", "*.pdf", "--no-clean-headers")
    assert code == 0
    rows = jsonl(out)
    assert {Path(r["source"]).name for r in rows} == {"lighthouse-manual.pdf"}
    assert any("Revision 3" in r["text"] for r in rows)
    code, out, _ = run(capsys, EXAMPLES, "--include", "*.pdf")
    assert not any("Revision 3" in r["text"] for r in jsonl(out))
    code, out, _ = run(capsys, EXAMPLES, "--exclude", "*.pdf", "--exclude", "*.html")
    assert {Path(r["source"]).name for r in jsonl(out)} == set(GOOD) - {"lighthouse-manual.pdf", "city-garden.html"}


def test_size_limit_flag(capsys):
    code, out, err = run(capsys, EXAMPLES, "--max-file-size", "2KB")
    assert code == 1
    big = [n for n in GOOD if (EXAMPLES / n).stat().st_size > 2048]
    assert big and all(f"{n}: file too large" in err for n in big)
    assert {Path(r["source"]).name for r in jsonl(out)} == set(GOOD) - set(big)


def test_semantic_strategy_uses_embedder(capsys, monkeypatch, fake_embedder):
    import chunkwise.embeddings as embeddings

    monkeypatch.setattr(embeddings, "embedder_from_args", lambda args, **kw: fake_embedder)
    code, out, err = run(capsys, EXAMPLES / "team-meeting.vtt", "--strategy", "semantic", "--max-tokens", "80")
    assert code == 0, err
    assert fake_embedder.texts_embedded > 0
    assert all(r["strategy"] == "semantic" and r["start_time"] is not None for r in jsonl(out))


def test_real_subprocess():
    exe = Path(sys.executable).parent / "chunkwise"
    if not exe.exists():
        pytest.skip("chunkwise console script not installed next to the interpreter")
    ok = subprocess.run(
        [str(exe), "chunk", str(EXAMPLES / "sourdough-guide.md"), "--max-tokens", "64"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    rows = jsonl(ok.stdout)
    assert rows and all(r["token_count"] <= 64 for r in rows)
    bad = subprocess.run(
        [str(exe), "chunk", str(EXAMPLES / "night-trains.txt"), "/nonexistent/file.pdf"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "chunkwise: error: /nonexistent/file.pdf: no such file" in bad.stderr
    assert "Traceback" not in bad.stderr and jsonl(bad.stdout)
    param = subprocess.run(
        [str(exe), "chunk", str(EXAMPLES), "--max-tokens", "-3"], capture_output=True, text=True, timeout=120
    )
    assert param.returncode == 2 and param.stderr.strip().count("\n") == 0 and "Traceback" not in param.stderr
