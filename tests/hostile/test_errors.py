"""Issue 20, failure 9: errors give the right reason, in one line."""

from __future__ import annotations

import importlib.util
import io
import zlib
from pathlib import Path

import pytest
from hostile import GOOD, run_cli

from chunkwise.errors import InputError
from chunkwise.formats import load, load_bytes

DATA = Path(__file__).resolve().parents[1] / "data" / "hostile"


def pdf_with_stream(raw: bytes) -> bytes:
    from pypdf import PdfWriter
    from pypdf.generic import EncodedStreamObject, NameObject

    w = PdfWriter()
    page = w.add_blank_page(200, 200)
    stream = EncodedStreamObject()
    stream._data = raw
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = w._add_object(stream)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def test_decompression_bomb_is_named():
    bomb = pdf_with_stream(zlib.compress(b"0 0 m " * 30_000_000, 9))
    with pytest.raises(InputError, match="decompression bomb") as err:
        load_bytes(bomb, source="bomb.pdf")
    assert "OCR" not in str(err.value)


def test_mangled_stream_is_named():
    with pytest.raises(InputError, match="corrupt content stream") as err:
        load_bytes(pdf_with_stream(b"\x78\x9c not zlib at all \x00\x01" * 40), source="mangled.pdf")
    assert "OCR" not in str(err.value)


@pytest.mark.skipif(
    importlib.util.find_spec("cryptography") is not None, reason="cryptography is installed: the AES PDF simply opens"
)
def test_aes_pdf_without_cryptography_says_so():
    with pytest.raises(InputError, match="needs the 'cryptography' package"):
        load(DATA / "aes-empty-password.pdf")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_text(tmp_path, codec):
    text = "Der Leuchtturmwärter stieg die Treppe hinauf. 灯台守は階段を上った。\nEr putzte die Linse."
    (tmp_path / "a.txt").write_bytes(text.encode(codec))
    doc = load(tmp_path / "a.txt")
    assert doc.text == text
    done = run_cli(["chunk", tmp_path / "a.txt"])
    assert done.returncode == 0 and "binary" not in done.err and "Leuchtturm" in done.out
    assert f"no byte-order mark: read as {codec.upper()}" in done.err


def test_binary_is_still_binary():
    data = bytes(range(256)) * 20
    with pytest.raises(InputError, match="binary"):
        load_bytes(data, source="x.bin")


@pytest.mark.slow  # a CLI subprocess indexing with the real model (about 9 s)
def test_index_warnings_are_one_chunkwise_line(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "latin1.txt").write_bytes(GOOD.encode("utf-8") + b" caf\xe9 au lait.")
    done = run_cli(["--no-cache", "index", tmp_path / "in", "--db", tmp_path / "x.db", "--max-tokens", "64"])
    assert done.returncode == 0, done.err
    warn = [line for line in done.err.splitlines() if "not valid UTF-8" in line]
    assert len(warn) == 1 and warn[0].startswith("chunkwise: warning: "), done.err
    assert "Warning:" not in done.err and ".py:" not in done.err
