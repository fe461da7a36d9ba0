"""Input formats by name through ``chunkwise.registry``: loaders named as ``"module:attr"`` strings, and
formats whose loader reads the file itself (video) registered by their own package."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise import Document, registry
from chunkwise.errors import ConfigError, InputError, MissingDependencyError
from chunkwise.formats import _STREAMED, EXTENSIONS, iter_documents, load, load_bytes, register_format
from chunkwise.video.frames import VIDEO_EXTENSIONS


@pytest.fixture
def formats():
    """Format names a test registers, removed again afterwards (with their extensions)."""
    names: list[str] = []
    yield names
    for name in names:
        registry.table("format").pop(name, None)
        for table in (EXTENSIONS, _STREAMED):
            for ext in [e for e, n in table.items() if n == name]:
                del table[ext]


def test_video_registers_its_loader_by_name():
    assert registry.table("format")["video"] == "chunkwise.video:load_video"
    assert {ext: _STREAMED[ext] for ext in VIDEO_EXTENSIONS} == dict.fromkeys(VIDEO_EXTENSIONS, "video")
    with pytest.raises(ConfigError, match="input format 'video' is read from a file, not from bytes"):
        load_bytes(b"\x00\x00\x00\x18ftypmp42", format="video")


def test_a_loader_named_by_target_string(tmp_path, formats):
    formats.append("upper-test")
    register_format("upper-test", "chunkwise.formats.text:load_text", extensions=["UPT"])
    (tmp_path / "a.upt").write_text("plain words", encoding="utf-8")
    doc = load(tmp_path / "a.upt")
    assert doc.text == "plain words" and EXTENSIONS[".upt"] == "upper-test"
    assert load_bytes(b"more words", format="upper-test").text == "more words"


def test_a_streamed_loader_gets_the_path_and_no_size_cap(tmp_path, formats):
    seen: list[Path] = []

    def read_whole(path: Path) -> Document:
        seen.append(path)
        return Document(path.read_text(encoding="utf-8"), source=str(path))

    formats.append("streamtest")
    register_format("streamtest", read_whole, extensions=[".strm"], streamed=True)
    path = tmp_path / "big.strm"
    path.write_text("x" * 100, encoding="utf-8")
    assert load(path, max_bytes=10).text == "x" * 100 and seen == [path]
    [(source, doc)] = list(iter_documents([tmp_path]))  # the folder walk takes the extension
    assert isinstance(doc, Document) and source.endswith("big.strm")


def test_a_streamed_loader_failure_is_that_file_s_input_error(tmp_path, formats):
    def needs_extra(path: Path) -> Document:
        raise MissingDependencyError("streamtest files", "streamtest")

    formats.append("streamtest")
    register_format("streamtest", needs_extra, extensions=[".strm"], streamed=True)
    (tmp_path / "a.strm").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="streamtest files needs the .streamtest. extra"):
        load(tmp_path / "a.strm")
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "missing.strm")


def test_a_built_in_format_cannot_be_replaced():
    with pytest.raises(ConfigError, match="a built-in one"):
        register_format("markdown", "chunkwise.formats.text:load_text")
