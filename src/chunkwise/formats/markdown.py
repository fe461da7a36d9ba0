"""Markdown: the text as written, and its headings as nested sections (parsed with markdown-it-py).

The document text is the Markdown source itself (line endings normalised): chunks keep the code fences,
tables and lists a reader expects, and offsets point into the file a user can open. Headings come from a
real CommonMark parser, so a ``#`` inside a code fence or an indented code block is not a heading, and
setext headings (``Title`` over ``===``) are. YAML front matter is metadata, not content: it is removed
from the document text (so it never lands in a chunk or a search result), its ``key: value`` pairs go to
``Document.metadata["front_matter"]`` and its ``title:`` becomes the document title. The section parser is shared with the ``markdown`` strategy
(:func:`chunkwise.formats.markdown_blocks.markdown_sections`, re-exported here), so there is one of it.
"""

from __future__ import annotations

import re

from ..document import Document
from .cleaning import CleaningOptions
from .markdown_blocks import first_title, markdown_blocks, markdown_sections, markdown_tables  # one parser
from .markdown_lines import FRONT_MATTER
from .text import emit_warnings, read_source


def front_matter(text: str) -> tuple[int, dict[str, str]]:
    """Length of a leading YAML front-matter block and its simple ``key: value`` pairs."""
    m = FRONT_MATTER.match(text)
    if not m:
        return 0, {}
    fields = {}
    for line in m.group(1).splitlines():
        kv = re.match(r"([A-Za-z_][\w-]*)\s*:\s*(.+?)\s*$", line)
        if kv:
            fields[kv.group(1).lower()] = kv.group(2).strip("'\"")
    return m.end(), fields


def load_markdown(data: bytes, source: str, **options) -> Document:
    """A Markdown document: source text as written, sections from the headings.

    Only line endings are normalised (and, with ``normalize_whitespace``, trailing blank lines trimmed at
    the end): re-flowing or de-hyphenating Markdown would damage code blocks, tables and hard breaks.
    """
    text, smap, warns = read_source(data, source, options.get("encoding"))
    if CleaningOptions.from_options(options).normalize_whitespace:
        body = len(text.rstrip())
        if text[body:] != "\n":
            smap = smap.apply([(body, len(text), "\n")])
            text = text[:body] + "\n"
    fm_end, fm = front_matter(text)
    cut = fm_end + len(text[fm_end:]) - len(text[fm_end:].lstrip("\n"))
    smap = smap.apply([(0, cut, "")])
    text = text[cut:]
    blocks = markdown_blocks(text)
    sections = markdown_sections(text, blocks)
    title = fm.get("title") or first_title(sections)
    emit_warnings(source, warns)
    return Document(
        text,
        source=source,
        sections=sections,
        tables=markdown_tables(text, blocks),
        title=title,
        metadata={"format": "markdown", "warnings": warns, "front_matter": fm},
        source_map=smap,
    )


__all__ = ["load_markdown", "markdown_sections", "front_matter"]
