"""Bytes to text: the decoding policy, binary detection, and the plain-text loader.

Decoding policy (the same for every text format):

1. A byte-order mark decides: UTF-8 (stripped), UTF-16 LE/BE, UTF-32 LE/BE.
2. Otherwise the bytes are decoded as UTF-8. Where they are not valid UTF-8, each invalid byte becomes
   U+FFFD and a warning names the file and how many bytes were replaced. Nothing is guessed silently: pass
   ``encoding=`` (``--encoding`` on the command line) to read e.g. Latin-1 or cp1252 files correctly.
3. Line endings are normalised to ``\\n`` (CRLF and lone CR), so offsets never fall between ``\\r`` and
   ``\\n`` and every strategy sees one kind of line break. Offsets are into this decoded, normalised text.

A file is *binary* (an error, not a text with garbage in it) when it starts with a known magic number or its
first 8 KB hold a NUL byte or more than 10% control characters.
"""

from __future__ import annotations

import codecs
import re
import warnings
from pathlib import Path

from ..document import Document
from ..errors import ConfigError, InputError
from ..registry import lazy_regex
from .cleaning import CleaningOptions, clean
from .sourcemap import SourceMap

#: extensions whose line breaks carry meaning: never re-flowed or de-hyphenated
LINE_ORIENTED = {
    ".csv",
    ".tsv",
    ".log",
    ".py",
    ".js",
    ".ts",
    ".java",
    ".c",
    ".h",
    ".cpp",
    ".go",
    ".rs",
    ".rb",
    ".sh",
    ".sql",
    ".json",
    ".jsonl",
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".cfg",
    ".xml",
    ".tex",
    ".srt",
    ".vtt",
}


class DecodingWarning(UserWarning):
    """Raised (as a warning) when a file was not valid in its encoding and bytes were replaced."""


#: (magic bytes, offset, what it is); PDF is not here because it has a loader
MAGIC: list[tuple[bytes, int, str | None]] = [
    (b"\x89PNG\r\n\x1a\n", 0, "PNG image"),
    (b"\xff\xd8\xff", 0, "JPEG image"),
    (b"GIF87a", 0, "GIF image"),
    (b"GIF89a", 0, "GIF image"),
    (b"II*\x00", 0, "TIFF image"),
    (b"MM\x00*", 0, "TIFF image"),
    (b"BM", 0, None),  # too short to trust alone; checked with the control-character test
    (b"PK\x03\x04", 0, "ZIP archive (or XLSX/EPUB, which are not supported; .docx/.pptx are read by their extension)"),
    (b"PK\x05\x06", 0, "ZIP archive"),
    (b"\x1f\x8b", 0, "gzip archive"),
    (b"BZh", 0, None),
    (b"\xfd7zXZ\x00", 0, "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "7-Zip archive"),
    (b"Rar!\x1a\x07", 0, "RAR archive"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd archive"),
    (b"ustar", 257, "tar archive"),
    (b"\x7fELF", 0, "ELF executable"),
    (b"MZ", 0, None),
    (b"\xca\xfe\xba\xbe", 0, "Java class or Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", 0, "Mach-O binary"),
    (b"\x00asm", 0, "WebAssembly module"),
    (b"SQLite format 3\x00", 0, "SQLite database"),
    (b"OggS", 0, "Ogg media"),
    (b"ID3", 0, "MP3 audio"),
    (b"fLaC", 0, "FLAC audio"),
    (b"RIFF", 0, "RIFF media (WAV/AVI/WebP)"),
    (b"ftyp", 4, "MP4/QuickTime media"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "OLE document (old .doc/.xls, not supported)"),
    (b"\x00\x00\x01\x00", 0, "ICO image"),
    (b"wOFF", 0, "WOFF font"),
    (b"wOF2", 0, "WOFF2 font"),
    (b"PAR1", 0, "Parquet file"),
    (b"\x93NUMPY", 0, "NumPy array"),
    (b"\x80\x04\x95", 0, "Python pickle"),
]

_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]
_ALLOWED_CONTROLS = set(b"\t\n\r\f\b\x1b")
_SURROGATE_ESCAPES = lazy_regex("[\udc80-\udcff]")


def bom_encoding(data: bytes) -> tuple[str | None, int]:
    """The encoding a byte-order mark announces and the BOM's length, or ``(None, 0)``."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    return None, 0


def utf16_without_bom(data: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` for UTF-16 text without a byte-order mark, else ``None``.

    Text in a Latin or CJK script has a zero in one byte of most characters (ASCII) or a varied but
    never-all-zero pair; binary data has zeros scattered over both positions. The guess must also decode
    cleanly, with few control characters, or it is rejected."""
    head = data[:8192]
    if len(head) < 4 or b"\x00" not in head:
        return None
    head = head[: len(head) - len(head) % 2]
    even, odd = head[0::2], head[1::2]
    z_even, z_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if z_odd >= 0.3 and z_even <= 0.02:
        codec = "utf-16-le"
    elif z_even >= 0.3 and z_odd <= 0.02:
        codec = "utf-16-be"
    else:
        return None
    try:
        text = head.decode(codec)
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # only a character cut at the end of the sample is allowed
            return None
        text = head[: exc.start].decode(codec)
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return codec if text and controls <= 0.02 * len(text) else None


def binary_kind(data: bytes) -> str | None:
    """What a binary file looks like ("PNG image", "binary data"), or ``None`` for text."""
    if bom_encoding(data)[0] or utf16_without_bom(data):
        return None  # UTF-16/32 text has NUL bytes but is text
    for magic, offset, kind in MAGIC:
        if kind and data[offset : offset + len(magic)] == magic:
            return kind
    head = data[:8192]
    if not head:
        return None
    if b"\x00" in head:
        return "binary data (NUL bytes)"
    controls = sum(1 for b in head if b < 32 and b not in _ALLOWED_CONTROLS)
    if controls > 0.10 * len(head):
        return "binary data (control characters)"
    return None


def decode(data: bytes, source: str, encoding: str | None = None) -> tuple[str, list[str]]:
    """Decode ``data`` following the module's policy; returns the text and warnings for the user."""
    text, warns = decode_source(data, source, encoding)
    return normalize_newlines(text), warns


def decode_source(data: bytes, source: str, encoding: str | None = None) -> tuple[str, list[str]]:
    """:func:`decode` without the line-ending normalisation: the *decoded file text* that source offsets
    (``source_start``/``source_end``) count characters of."""
    warns: list[str] = []
    bom_enc, bom_len = bom_encoding(data)
    if encoding:
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise ConfigError(f"unknown encoding {encoding!r}") from None
        if codec == "utf-8" and data.startswith(codecs.BOM_UTF8):
            data = data[3:]
    else:
        codec = bom_enc or utf16_without_bom(data) or "utf-8"
        data = data[bom_len:]
        if not bom_enc and codec != "utf-8":
            warns.append(f"no byte-order mark: read as {codec.upper()} (detected; use --encoding to override)")
    text = data.decode(codec, errors="surrogateescape" if codec == "utf-8" else "replace")
    if codec == "utf-8":
        # the escapes are not ASCII: an ASCII text has none (and the pattern is not compiled for it)
        text, bad = (text, 0) if text.isascii() else _SURROGATE_ESCAPES.subn("\ufffd", text)
        if bad:
            warns.append(
                f"not valid UTF-8: {bad} byte{'s' if bad != 1 else ''} replaced with U+FFFD "
                "(use --encoding / encoding= to read it in another encoding)"
            )
    elif "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        warns.append(f"not valid {codec}: some bytes were replaced with U+FFFD")
    return text, warns


def newline_edits(text: str) -> list[tuple[int, int, str]]:
    """CRLF and lone CR to LF, as cleaning edits (so source offsets keep counting the file's own text)."""
    return [(m.start(), m.end(), "\n") for m in re.finditer("\r\n?", text)] if "\r" in text else []


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def emit_warnings(source: str, messages: list[str]) -> None:
    for message in messages:
        warnings.warn(f"{source}: {message}", DecodingWarning, stacklevel=3)


def check_text(text: str, source: str) -> None:
    if not text.strip():
        raise InputError("no text (the file holds only whitespace)", source=source)


def read_source(data: bytes, source: str, encoding: str | None = None) -> tuple[str, SourceMap, list[str]]:
    """A marked-up or structured file's text before its own parsing: decoded (:func:`decode_source`),
    refused when it holds no text (:func:`check_text`), line breaks as ``\\n``; with the map from that text
    back to the file's characters and the decoding warnings."""
    raw, warns = decode_source(data, source, encoding)
    check_text(raw, source)
    return normalize_newlines(raw), SourceMap.identity(len(raw)).apply(newline_edits(raw)), warns


def load_text(data: bytes, source: str, **options) -> Document:
    """A plain-text document. Cleaning: whitespace normalised, hyphenated line breaks re-joined, and
    hard-wrapped paragraphs re-flowed (only when the text is visibly wrapped at a fixed width)."""
    text, warns = decode_source(data, source, options.get("encoding"))
    check_text(text, source)
    opts = CleaningOptions.from_options(options)
    opts.clean_headers = False
    if line_oriented(text, source):
        opts.reflow = opts.dehyphenate = False
    result = clean(text, [], opts, edits=newline_edits(text))
    result.steps.pop("loader", None)
    check_text(result.text, source)
    emit_warnings(source, warns)
    return Document(
        result.text,
        source=source,
        metadata={"format": "text", "warnings": warns, "cleaning": result.steps},
        title=_first_line_title(result.text),
        source_map=result.source_map,
    )


def line_oriented(text: str, source: str) -> bool:
    """Are the text's line breaks meaningful (code, data, logs): by the extension, or, when it does not
    say, by the content (a script, a build file, JSON in a ``.txt``: see :mod:`.sniff`)?"""
    if Path(source).suffix.lower() in LINE_ORIENTED:
        return True
    from .sniff import looks_like_code, looks_like_json

    return looks_like_json(text) or looks_like_code(text, source)


def _first_line_title(text: str) -> str | None:
    """A title when the text opens with a short line followed by a blank line (a common article layout)."""
    m = re.match(r"\s*([^\n]{1,120})\n\s*\n", text)
    if m and not re.search(r"[.,;:]$", m.group(1).strip()):
        return m.group(1).strip()
    return None
