"""Jupyter notebooks (``.ipynb``): the cells as Markdown, code as fenced code, outputs short, images left out.

A notebook is JSON: chunking the file as text puts base64 images and keys such as ``"execution_count"`` in
the index. The loader reads it with nbformat (any version, upgraded to 4) and writes one Markdown text:

- a Markdown cell as written (an inline ``data:`` image URI shortened to its type), so its headings are the
  document's sections and the ``markdown`` strategy cuts at them;
- a code cell as a fence in the kernel's language (```` ```python ````), so a chunk never splits a cell
  that fits and a ``#`` comment is never a heading;
- a text output (a stream, an error's name and message, a result's ``text/plain``) as an ```` ```output ````
  fence cut to :data:`OUTPUT_MAX_LINES` lines and :data:`OUTPUT_MAX_CHARS` characters, the cut said on a
  line of its own; terminal colour codes removed;
- images, HTML, JavaScript and widget outputs left out, counted in ``metadata["dropped_outputs"]`` (the
  ``chunk`` command adds them up in its summary line). A ``text/plain`` stand-in for such an output
  (``<Figure size 640x480>``) goes with it. A run of 200 or more base64 characters in code or an output
  (an encrypted signature, an inlined file) is shortened to a marker and counted the same way.

Each cell is a :class:`~chunkwise.document.Page` numbered from 1, so a chunk's ``page_start``/``page_end``
are the cells it spans. Offsets are into the extracted text (exact, as everywhere); ``source_start``/
``source_end`` point into the ``.ipynb`` file itself where the text was copied from its JSON strings (a
character written as a JSON escape, ``\\n`` or ``\\"``, maps to the escape; fences and markers map to the
JSON between the cells). A notebook older than version 4 is upgraded by nbformat and has no source map.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from ..document import Document, Page
from ..errors import InputError
from .markdown_blocks import markdown_blocks, markdown_tables, sectioned_document
from .sourcemap import SourceMap, _normalise
from .text import decode_source, emit_warnings, newline_edits

#: most lines and characters of one output kept in the text (the rest is said in one marker line)
OUTPUT_MAX_LINES = 12
OUTPUT_MAX_CHARS = 1000

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_DATA_URI = re.compile(r"data:([\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,[A-Za-z0-9+/=\s]{16,}")
#: a run this long of base64 characters is data (an image, an encrypted signature), never prose or code
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")
_WS = re.compile(r"[ \t\n\r]*")
_TEXT_MIME = "text/plain"


class _Str(str):
    """A JSON string that remembers where its literal lies in the file (``pos`` at the opening quote)."""

    pos: int
    end: int


def _parse(raw: str, i: int = 0) -> tuple[Any, int]:
    """A JSON value at ``raw[i:]`` and where it ends; strings are :class:`_Str` with their positions."""
    i = _WS.match(raw, i).end()  # type: ignore[union-attr]
    c = raw[i : i + 1]
    if c == '"':
        s, j = scanstring(raw, i + 1)
        out = _Str(s)
        out.pos, out.end = i, j
        return out, j
    if c == "{":
        obj: dict[str, Any] = {}

        def member(i: int) -> int:
            i = _WS.match(raw, i).end()  # type: ignore[union-attr]
            if raw[i : i + 1] != '"':
                raise ValueError(f"expected a key at character {i}")
            key, i = scanstring(raw, i + 1)
            i = _WS.match(raw, i).end()  # type: ignore[union-attr]
            if raw[i : i + 1] != ":":
                raise ValueError(f"expected ':' at character {i}")
            obj[key], i = _parse(raw, i + 1)
            return i

        return obj, _items(raw, i, "}", member)
    if c == "[":
        arr: list[Any] = []

        def element(i: int) -> int:
            value, i = _parse(raw, i)
            arr.append(value)
            return i

        return arr, _items(raw, i, "]", element)
    return json.JSONDecoder().raw_decode(raw, i)


def _items(raw: str, i: int, close: str, item: Callable[[int], int]) -> int:
    """Read the comma-separated items of the object or array opening at ``raw[i]`` (``item`` reads one and
    says where it ends); where the container ends."""
    i = _WS.match(raw, i + 1).end()  # type: ignore[union-attr]
    if raw[i : i + 1] == close:
        return i + 1
    while True:
        i = _WS.match(raw, item(i)).end()  # type: ignore[union-attr]
        c = raw[i : i + 1]
        if c == close:
            return i + 1
        if c != ",":
            raise ValueError(f"expected ',' or '{close}' at character {i}")
        i += 1


_ESCAPE = re.compile(r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[0-9a-fA-F]{4}|u[0-9a-fA-F]{4}|.)")


def _string_segments(raw: str, s: _Str, offset: int) -> list[tuple[int, int, int, int, bool]]:
    """Segments mapping ``s`` (placed at ``offset`` of the text) to its literal in ``raw``: runs without
    escapes exact, each escape one replaced segment."""
    segs = []
    c, r = offset, s.pos + 1
    body_end = s.end - 1
    for m in _ESCAPE.finditer(raw, r, body_end):
        if m.start() > r:
            n = m.start() - r
            segs.append((c, c + n, r, m.start(), True))
            c += n
        width = 2 if len(m.group()) == 12 and len(json.loads('"' + m.group() + '"')) == 2 else 1
        segs.append((c, c + width, m.start(), m.end(), False))
        c += width
        r = m.end()
    if body_end > r:
        segs.append((c, c + body_end - r, r, body_end, True))
    return segs


class _Builder:
    """The extracted text, its segments into the file, and the edits still to make (outputs cut, colour
    codes and data URIs removed)."""

    def __init__(self, raw: str | None):
        self.raw = raw
        self.parts: list[str] = []
        self.length = 0
        self.segments: list[tuple[int, int, int, int, bool]] = []
        self.edits: list[tuple[int, int, str]] = []
        self.dropped: dict[str, int] = {}

    def add(self, text: str) -> None:
        """Text written by the loader (fences, blank lines, markers): maps to the JSON around it."""
        self.parts.append(text)
        self.length += len(text)

    def copy(self, value: Any) -> tuple[int, int]:
        """A notebook string (or list of strings, joined) copied from the file; its span in the text."""
        items = value if isinstance(value, list) else [value]
        start = self.length
        for s in items:
            s = str(s) if not isinstance(s, _Str) else s
            if self.raw is not None and isinstance(s, _Str):
                self.segments += _string_segments(self.raw, s, self.length)
            self.parts.append(s)
            self.length += len(s)
        return start, self.length

    def text(self) -> str:
        return "".join(self.parts)

    def source_map(self) -> SourceMap | None:
        if self.raw is None:
            return None
        segs: list[tuple[int, int, int, int, bool]] = []
        c_prev = s_prev = 0
        for c0, c1, s0, s1, exact in self.segments:
            if c0 > c_prev or s0 > s_prev:
                segs.append((c_prev, c0, s_prev, s0, False))
            segs.append((c0, c1, s0, s1, exact))
            c_prev, s_prev = c1, s1
        segs.append((c_prev, self.length, s_prev, len(self.raw), False))
        return SourceMap(_normalise(segs, len(self.raw)), len(self.raw))


def _fence(code: str, info: str) -> tuple[str, str]:
    """Opening and closing fence lines for ``code``: longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n", f"\n{ticks}" if code and not code.endswith("\n") else ticks


def _output_text(out: dict, dropped: dict[str, int]) -> Any:
    """The text of one output to keep (a string or list of strings from the file), or ``None``."""
    kind = out.get("output_type")
    if kind == "stream":
        return out.get("text")
    if kind == "error":
        return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
    data = out.get("data") or {}
    rich = [m for m in data if m != _TEXT_MIME]
    for mime in rich:
        what = (
            "image"
            if mime.startswith("image/")
            else "widget"
            if "widget" in mime
            else "HTML"
            if mime == "text/html"
            else "other"
        )
        if what == "HTML" and any(m.startswith("image/") for m in data):
            continue
        dropped[what] = dropped.get(what, 0) + 1
        break
    if _TEXT_MIME in data and not any(m.startswith("image/") or "widget" in m for m in rich):
        return data[_TEXT_MIME]
    return None


def _cut_edits(b: _Builder, start: int, body: str) -> None:
    """Edits that cut the output ``body`` (at ``start`` of the text) to its first lines, and remove its
    colour codes."""
    end = start + len(body)
    keep = len(body)
    lines = body.split("\n")
    if len(lines) > OUTPUT_MAX_LINES + 1 or len(body) > OUTPUT_MAX_CHARS:
        keep = len("\n".join(lines[:OUTPUT_MAX_LINES]))
        if keep > OUTPUT_MAX_CHARS:  # long lines: cut at the last line break before the limit
            nl = body.rfind("\n", 0, OUTPUT_MAX_CHARS)
            keep = nl if nl > 0 else OUTPUT_MAX_CHARS
    colour = [(m.start(), m.end()) for m in _ANSI.finditer(body, 0, keep)]
    b.edits += [(start + x, start + y, "") for x, y in colour]
    _base64_edits(b, start, body[:keep], colour)
    if keep < len(body):
        more = len(body[keep:].strip("\n").split("\n"))
        tail = "\n" if body.endswith("\n") else ""  # the closing fence stays on a line of its own
        b.edits.append((start + keep, end, f"\n… ({more} more line{'s' if more != 1 else ''} of output){tail}"))


def _base64_edits(b: _Builder, start: int, body: str, avoid: Sequence[tuple[int, int]] = ()) -> None:
    """Edits that shorten long base64 runs in ``body`` (at ``start`` of the text) to a marker; a run that
    begins inside one of the ``avoid`` spans (a colour code already removed) begins after it."""
    for m in _BASE64_RUN.finditer(body):
        x, y = m.start(), m.end()
        x = max([x, *(e for a, e in avoid if a <= x < e)])
        if y - x < 200:
            continue
        b.edits.append((start + x, start + y, f"…[{y - x:,} base64 characters left out]"))
        b.dropped["base64"] = b.dropped.get("base64", 0) + 1


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    parts, pos = [], 0
    for s, e, rep in sorted(edits):
        parts.append(text[pos:s])
        parts.append(rep)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def _moved(pos: int, edits: list[tuple[int, int, str]]) -> int:
    """Where ``pos`` of the text lands after ``edits`` (a position inside an edit goes to its end)."""
    delta = 0
    for s, e, rep in edits:
        if e <= pos:
            delta += len(rep) - (e - s)
        elif s < pos:
            return s + delta + len(rep)
    return pos + delta


def _edited(text: str, smap: SourceMap | None, cells: list[tuple[int, int, int]], edits: list[tuple[int, int, str]]):
    """``text`` with ``edits`` made, its source map and the cells' spans following them."""
    if not edits:
        return text, smap, cells
    cells = [(n, _moved(a, edits), _moved(z, edits)) for n, a, z in cells]
    return _apply(text, edits), smap.apply(edits) if smap is not None else None, cells


def _read(raw: str, source: str) -> tuple[Any, Any]:
    """The notebook as nbformat reads it (any version, as version 4), and, for a version-4 file, its JSON
    tree with positions (``None`` when positions cannot be had: no source map then)."""
    try:
        import nbformat
    except ImportError:  # a dependency of chunkwise; only a broken install lacks it
        raise InputError("reading notebooks needs nbformat (pip install nbformat)", source=source) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(raw, as_version=4, capture_validation_error={})
    except Exception as exc:  # nbformat raises JSON, schema and version errors of many types
        problem = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise InputError(f"not a valid Jupyter notebook ({problem})", source=source) from None
    tree: Any = None
    if nb.get("nbformat") == 4:
        try:
            tree, _ = _parse(raw)
            if len(tree.get("cells", [])) != len(nb.cells):
                tree = None
        except (ValueError, AttributeError, IndexError):
            tree = None
    return nb, tree


def _add_code(b: _Builder, src: Any, joined: str, outputs: list, language: str) -> None:
    """A code cell fenced in its language, then its text outputs, each fenced as ``output`` and cut short."""
    opening, closing = _fence(joined, language)
    b.add(opening)
    c_start, _ = b.copy(src)
    _base64_edits(b, c_start, joined)
    b.add(closing)
    for out in outputs:
        text = _output_text(out, b.dropped)
        if text is None or not ("".join(text) if isinstance(text, list) else str(text)).strip():
            continue
        body = "".join(text) if isinstance(text, list) else str(text)
        opening, closing = _fence(body, "output")
        b.add("\n\n" + opening)
        o_start, _ = b.copy(text)
        _cut_edits(b, o_start, body)
        b.add(closing)


def load_notebook(data: bytes, source: str, **options) -> Document:
    """A Jupyter notebook as Markdown text, one :class:`Page` per cell (see the module doc)."""
    raw, warns = decode_source(data, source, options.get("encoding"))
    nb, tree = _read(raw, source)
    meta = nb.get("metadata") or {}
    language = str(
        (meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name") or "python"
    )
    b = _Builder(raw if tree is not None else None)
    dropped = b.dropped
    cells: list[tuple[int, int, int]] = []
    for k, cell in enumerate(nb.cells):
        node = tree["cells"][k] if tree is not None else cell
        src = node.get("source", "")
        joined = "".join(src) if isinstance(src, list) else str(src)
        outputs = node.get("outputs") or []
        if not joined.strip() and not outputs:
            continue
        if cells:
            b.add("\n\n")
        start = b.length
        if cell.cell_type == "code":
            _add_code(b, src, joined, outputs, language)
        else:
            a, z = b.copy(src)
            for m in _DATA_URI.finditer(joined):
                b.edits.append((a + m.start(), a + m.end(), f"data:{m.group(1)};base64,…"))
                dropped["image"] = dropped.get("image", 0) + 1
        cells.append((k + 1, start, b.length))
    text = b.text()
    if not text.strip():
        raise InputError("notebook has no cells with text", source=source)
    smap = b.source_map()
    text, smap, cells = _edited(text, smap, cells, sorted(b.edits))
    text, smap, cells = _edited(text, smap, cells, newline_edits(text))
    text += "\n"
    if smap is not None:
        smap = smap.apply([(len(text) - 1, len(text) - 1, "\n")])
    pages = [Page(n, a, z) for n, a, z in cells]
    blocks = markdown_blocks(text)
    emit_warnings(source, warns)
    return sectioned_document(
        text,
        source,
        blocks,
        pages=pages,
        tables=markdown_tables(text, blocks),
        metadata={
            "format": "notebook",
            "warnings": warns,
            "language": language,
            "cells": len(nb.cells),
            "dropped_outputs": dropped,
        },
        source_map=smap,
    )


__all__ = ["load_notebook", "OUTPUT_MAX_LINES", "OUTPUT_MAX_CHARS"]
