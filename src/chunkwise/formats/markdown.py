"""Markdown: the text as written, and its headings as nested sections (parsed with markdown-it-py).

The document text is the Markdown source itself (line endings normalised): chunks keep the code fences,
tables and lists a reader expects, and offsets point into the file a user can open. Headings come from a
real CommonMark parser, so a ``#`` inside a code fence or an indented code block is not a heading, and
setext headings (``Title`` over ``===``) are. YAML front matter is skipped for parsing; its ``title:`` is used
as the document title.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..document import Document, Section
from .cleaning import CleaningOptions
from .text import check_text, decode, emit_warnings

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def _inline_text(token) -> str:
    """Plain text of a heading's inline token: emphasis, links and code reduced to their text."""
    if not token.children:
        return token.content.strip()
    parts = []
    for child in token.children:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split()) or token.content.strip()


def front_matter(text: str) -> tuple[int, dict[str, str]]:
    """Length of a leading YAML front-matter block and its simple ``key: value`` pairs."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return 0, {}
    fields = {}
    for line in m.group(1).splitlines():
        kv = re.match(r"([A-Za-z_][\w-]*)\s*:\s*(.+?)\s*$", line)
        if kv:
            fields[kv.group(1).lower()] = kv.group(2).strip("'\"")
    return m.end(), fields


def markdown_sections(text: str) -> list[Section]:
    """Nested sections of a Markdown text, one per heading, sorted by start.

    A section starts at its heading line and ends where the next heading of the same or a higher level
    starts (so a level-1 section contains its level-2 subsections). ``path`` is the chain of heading texts
    from the top level down; ``heading_start``/``heading_end`` span the heading line(s) without the newline.
    """
    skip, _ = front_matter(text)
    # blank out the front matter (same number of lines) so "---" is not read as a setext underline
    parse_text = "\n" * text[:skip].count("\n") + text[skip:] if skip else text
    tokens = _parser().parse(parse_text)
    starts = _line_starts(text)
    n = len(text)
    heads: list[tuple[int, int, int, str]] = []  # (level, start, heading end, title)
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or not tok.map:
            continue
        level = int(tok.tag[1])
        first, last = tok.map
        start = starts[first]
        end = starts[last] - 1 if last < len(starts) else n
        title = _inline_text(tokens[i + 1]) if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""
        heads.append((level, start, max(start, end), title))
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    for k, (level, start, hend, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = next((h[1] for h in heads[k + 1:] if h[0] <= level), n)
        sections.append(Section(start, end, tuple(t for _, t in stack), level, start, hend))
    return sections


def load_markdown(data: bytes, source: str, **options) -> Document:
    """A Markdown document: source text as written, sections from the headings.

    Only line endings are normalised (and, with ``normalize_whitespace``, trailing blank lines trimmed at
    the end): re-flowing or de-hyphenating Markdown would damage code blocks, tables and hard breaks.
    """
    text, warns = decode(data, source, options.get("encoding"))
    check_text(text, source)
    if CleaningOptions.from_options(options).normalize_whitespace:
        text = text.rstrip() + "\n" if text.strip() else text
    sections = markdown_sections(text)
    _, fm = front_matter(text)
    title = fm.get("title") or next((s.path[-1] for s in sections if s.level == 1), None)
    emit_warnings(source, warns)
    return Document(text, source=source, sections=sections, title=title,
                    metadata={"format": "markdown", "warnings": warns})
