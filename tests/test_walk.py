"""Folder walks take the supported file types and say in one line what they skipped (chunk, index, API)."""

from __future__ import annotations

import json
import warnings

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.document import Document
from chunkwise.formats import _REGISTERED, EXTENSIONS, SkippedFilesWarning, iter_documents, register_format

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"


@pytest.fixture
def folder(tmp_path):
    """A docs folder as cloned: documents beside images, scripts, styles and hidden folders."""
    root = tmp_path / "docs"
    (root / "img").mkdir(parents=True)
    (root / "js").mkdir()
    (root / ".git").mkdir()
    (root / "guide.md").write_text("# Guide\n\nBees make honey from nectar in the hive.\n", encoding="utf-8")
    (root / "notes.txt").write_text("The night train leaves at nine.\n", encoding="utf-8")
    (root / "LICENSE").write_text("Permission is hereby granted, free of charge, to any person.\n", encoding="utf-8")
    (root / "img" / "logo.png").write_bytes(PNG)
    (root / "img" / "photo.png").write_bytes(PNG + b"more")
    (root / "img" / "icon.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0h24"/></svg>', encoding="utf-8"
    )
    (root / "js" / "app.js").write_text("function lamp() { return 'on'; }\n", encoding="utf-8")
    (root / "style.css").write_text("body { color: #333; }\n", encoding="utf-8")
    (root / "blob").write_bytes(b"\x00\x01\x02binary")
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    return root


def _sources(out: str) -> set[str]:
    return {json.loads(line)["source"].rsplit("/", 1)[-1] for line in out.splitlines()}


def test_chunk_reads_supported_types_and_says_the_rest_in_one_line(folder, capsys):
    code = main(["chunk", str(folder)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert _sources(out) == {"guide.md", "notes.txt", "LICENSE"}  # an extension-less text file is text
    skip = [line for line in err.splitlines() if "skipped" in line]
    assert skip == [
        "chunkwise: warning: skipped 6 files of unsupported types: .png 2, .css 1, .js 1, "
        ".svg 1, no extension 1; 1 of them source code, read with --code (--include '*.png' reads a "
        "type anyway, --all-files reads every file)"
    ]
    assert "error" not in err and "config" not in out


def test_named_files_are_read_whatever_their_type(folder, capsys):
    code = main(["chunk", str(folder / "img" / "icon.svg"), str(folder / "img" / "logo.png"), "-q"])
    out, err = capsys.readouterr()
    assert code == 1  # the PNG is read as asked, and refused in one line
    assert _sources(out) == {"icon.svg"}
    assert "logo.png: binary file (PNG image)" in err and "skipped" not in err


def test_include_names_a_type_exclude_narrows_all_files_reads_everything(folder, capsys):
    code = main(["chunk", str(folder), "--include", "*.svg", "--include", "*.md", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert _sources(out) == {"icon.svg", "guide.md"}

    code = main(["chunk", str(folder), "--exclude", "*.txt", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0 and _sources(out) == {"guide.md", "LICENSE"}

    code = main(["chunk", str(folder), "--include", "img/**", "-q"])  # a folder pattern narrows, not widens
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "directory has no readable files of a supported type" in err

    code = main(["chunk", str(folder), "--all-files", "-q"])
    out, err = capsys.readouterr()
    assert code == 1  # every file read: the PNGs and the blob fail, one line each
    assert _sources(out) == {"guide.md", "notes.txt", "LICENSE", "icon.svg", "app.js", "style.css"}
    assert err.count("chunkwise: error:") == 3 and "3 inputs failed" in err  # one line per file
    assert "config" not in out  # hidden folders stay unread even with --all-files


def test_index_walks_the_same_way(folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    code = main(["index", str(folder), "--tokenizer", "words"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "3 documents (3 indexed, 0 unchanged and skipped), 0 failed" in err
    assert sum("skipped 6 files of unsupported types: .png 2" in line for line in err.splitlines()) == 1
    assert "error" not in err

    code = main(["index", str(folder), "--tokenizer", "words", "--include", "*.svg", "--include", "*.md"])
    _, err = capsys.readouterr()
    assert code == 0 and "2 documents (1 indexed, 1 unchanged and skipped)" in err


def test_iter_documents_and_index_add_take_the_same_parameters(folder, tmp_path):
    from chunkwise.retrieval.index import Index
    from chunkwise.store.memory import MemoryStore

    with pytest.warns(SkippedFilesWarning, match=r"skipped 6 files of unsupported types: \.png 2"):
        names = sorted(s.rsplit("/", 1)[-1] for s, _ in iter_documents([folder]))
    assert names == ["LICENSE", "guide.md", "notes.txt"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedFilesWarning)  # nothing skipped: nothing said
        got = {s.rsplit("/", 1)[-1]: d for s, d in iter_documents([folder], all_files=True)}
    assert set(got) == {
        "LICENSE",
        "guide.md",
        "notes.txt",
        "logo.png",
        "photo.png",
        "icon.svg",
        "app.js",
        "style.css",
        "blob",
    }
    assert not isinstance(got["icon.svg"], Exception) and isinstance(got["logo.png"], Exception)

    with Index(store=MemoryStore(), embedder=FakeEmbedder()) as index, pytest.warns(SkippedFilesWarning):
        report = index.add([folder], strategy="recursive", exclude=["LICENSE"])
    assert report.documents == 2 and not report.failed
    with Index(store=MemoryStore(), embedder=FakeEmbedder()) as index:
        report = index.add([folder], strategy="recursive", include=["*.js"], all_files=False)
    assert report.documents == 1 and not report.failed


def test_registered_format_and_sbv_are_walked(folder):
    def load_org(data: bytes, source: str, **options) -> Document:
        return Document(data.decode("utf-8"), source=source)

    (folder / "todo.org").write_text("* TODO water the plants\n", encoding="utf-8")
    (folder / "talk.sbv").write_text("0:00:01.000,0:00:02.500\nHello there.\n", encoding="utf-8")
    register_format("orgtest", load_org, extensions=[".org"])
    try:
        with pytest.warns(SkippedFilesWarning):
            names = {s.rsplit("/", 1)[-1] for s, d in iter_documents([folder]) if not isinstance(d, Exception)}
    finally:
        _REGISTERED.pop("orgtest")
        EXTENSIONS.pop(".org")
    assert {"todo.org", "talk.sbv"} <= names


def test_typescript_is_not_taken_for_a_video(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    (tmp_path / "main.ts").write_text("export const lamp = 'on';\n", encoding="utf-8")
    with pytest.warns(SkippedFilesWarning, match=r"skipped 1 file of unsupported types: \.ts 1"):
        names = [s.rsplit("/", 1)[-1] for s, _ in iter_documents([tmp_path])]
    assert names == ["a.md"]
