"""Markdown's structure: top-level blocks and nested heading sections, parsed with markdown-it-py.

One parser for the loader (:func:`chunkwise.formats.markdown.load_markdown` attaches the sections) and the
``markdown`` strategy (which packs the blocks). It is CommonMark plus tables, so a ``#`` inside a code fence
is code, not a heading, and setext headings (``Title`` over ``===``) count; YAML front matter is skipped.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from ..document import Section, Table
from ..registry import lazy_regex
from .markdown_lines import FRONT_MATTER

Span = tuple[int, int]

_NEWLINE = lazy_regex(r"\r\n|\r|\n")  # what markdown-it counts as a line break
_CODE_BLOCKS = ("fence", "code_block")


@functools.lru_cache(maxsize=1)
def _parser():
    """A block-level CommonMark parser (with tables). Inline parsing is switched off: only headings need
    it (see :func:`_inline_text`), and running it over every paragraph was most of the time on large files."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").disable("inline")


@functools.lru_cache(maxsize=1)
def _inline_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


#: a trailing attribute list on a heading (``## Install { #install }``, ``{#id .class}``): an anchor for the
#: site generator, not part of the heading's text
_ATTRIBUTES = lazy_regex(r"\s*\{\s*[#.][^{}]*\}\s*$")


def _inline_text(token) -> str:
    """Plain text of a heading: emphasis, links and code reduced to their text, attribute lists removed."""
    text = _heading_text(token)
    return _ATTRIBUTES.sub("", text) or text


def _heading_text(token) -> str:
    children = token.children or _inline_parser().parseInline(token.content)[0].children
    if not children:
        return token.content.strip()
    parts = []
    for child in children:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split()) or token.content.strip()


@dataclasses.dataclass(frozen=True)
class Block:
    """A top-level Markdown block as a span of the text: ``kind`` is ``heading``, ``code``, ``table``
    or ``text``; headings carry ``level`` and ``title``."""

    start: int
    end: int
    kind: str
    level: int = 0
    title: str = ""


def markdown_blocks(text: str) -> list[Block]:
    """Top-level blocks of ``text`` in order (front matter skipped), each from its first line to the end
    of its last line (line break excluded)."""
    return list(_markdown_blocks(text))


@functools.lru_cache(maxsize=4)
def _markdown_blocks(text: str) -> tuple[Block, ...]:
    m = FRONT_MATTER.match(text)
    skip = m.end() if m else 0
    # blank the front matter out, line for line, so "---" is neither a rule nor a setext underline
    parse_text = "\n" * len(_NEWLINE.findall(text, 0, skip)) + text[skip:] if skip else text
    tokens = _parser().parse(parse_text)
    starts = _line_starts(text)
    n = len(text)

    def span(line_map) -> Span:
        first, last = line_map
        a = starts[first] if first < len(starts) else n
        b = starts[last] if last < len(starts) else n
        while b > a and text[b - 1] in "\r\n":
            b -= 1
        return a, max(a, b)

    blocks: list[Block] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or not tok.map or tok.nesting == -1:
            continue
        a, b = span(tok.map)
        if a < skip:
            continue
        if tok.type == "heading_open":
            title = _inline_text(tokens[i + 1]) if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""
            blocks.append(Block(a, b, "heading", int(tok.tag[1]), title))
        elif tok.type in _CODE_BLOCKS:
            blocks.append(Block(a, b, "code"))
        elif tok.type == "table_open":
            blocks.append(Block(a, b, "table"))
        else:
            blocks.append(Block(a, b, "text"))
    return tuple(blocks)


def markdown_sections(text: str, blocks: list[Block] | None = None) -> list[Section]:
    """Nested sections of a Markdown text, one per heading, sorted by start.

    A section starts at its heading and ends where the next heading of the same or a higher level starts
    (a level-1 section contains its level-2 subsections). ``path`` is the chain of heading texts from the
    top down; ``heading_start``/``heading_end`` span the heading line(s). ``\\r\\n`` and ``\\r`` line breaks
    are handled as markdown-it handles them.
    """
    heads = [b for b in (blocks if blocks is not None else markdown_blocks(text)) if b.kind == "heading"]
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    for k, h in enumerate(heads):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.title))
        end = next((g.start for g in heads[k + 1 :] if g.level <= h.level), len(text))
        sections.append(Section(h.start, end, tuple(t for _, t in stack), h.level, h.start, h.end))
    return sections


def first_title(sections: list[Section]) -> str | None:
    """The document's title as its headings give it: the first level-1 heading (``None`` without one)."""
    return next((s.path[-1] for s in sections if s.level == 1), None)


def sectioned_document(text: str, source: str, blocks: list[Block], *, title: str | None = None, **fields: Any):
    """A :class:`~chunkwise.document.Document` of ``text`` with the sections of ``blocks`` and, unless
    ``title`` is given, the first level-1 heading as its title (what every loader of marked-up text ends
    with); ``fields`` are the Document's other fields."""
    from ..document import Document

    sections = markdown_sections(text, blocks)
    return Document(text, source=source, sections=sections, title=title or first_title(sections), **fields)


def markdown_tables(text: str, blocks: list[Block] | None = None) -> list[Table]:
    """The top-level tables of a Markdown text, each with its header (the header row and the delimiter row
    under it), so a chunk holding later rows of a long table can carry the column names."""
    tables = []
    for b in blocks if blocks is not None else markdown_blocks(text):
        if b.kind != "table":
            continue
        first = text.find("\n", b.start, b.end)
        second = text.find("\n", first + 1, b.end) if first >= 0 else -1
        if second > 0:
            tables.append(Table(b.start, b.end, b.start, second))
    return tables


__all__ = ["first_title", "Block", "markdown_blocks", "markdown_sections", "markdown_tables"]
