"""Build the hostile PDFs of tests/data/hostile: run once, with ``cryptography`` installed.

- ``aes-empty-password.pdf``: one page of text encrypted with AES-128 and an empty user password; without
  the ``cryptography`` package pypdf opens it but cannot decrypt the page streams.

The decompression bomb and the mangled stream are built by the tests themselves (tests/hostile/test_errors.py).
Usage: ``python scripts/make_hostile_pdfs.py tests/data/hostile``
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from pypdf import PdfReader, PdfWriter


def text_pdf() -> bytes:
    """A one-page PDF with a text layer (reportlab-free: a hand-written content stream)."""
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    w = PdfWriter()
    page = w.add_blank_page(300, 200)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): w._add_object(font)})}
    )
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 20 150 Td (The keeper lit the lamp at dusk.) Tj ET")
    page[NameObject("/Contents")] = w._add_object(stream)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def main(out: str) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    w = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf())))
    w.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    buf = io.BytesIO()
    w.write(buf)
    (folder / "aes-empty-password.pdf").write_bytes(buf.getvalue())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/hostile")
