"""HTML: the page's main content as clean text blocks, headings h1-h6 as sections.

Two modes (``html_mode``, ``--html-mode`` on the command line):

- ``main`` (default): main-content extraction with trafilatura (Apache-2.0), the extractor that scores best
  on its own multilingual benchmark. Its XML output keeps the structure: headings become
  :class:`~chunkwise.document.Section` spans, list items ``- ``/``1. `` lines, table rows one line each
  with cells joined by `` | ``, ``<br>`` a line break, code blocks verbatim. Before extraction, inline math
  is replaced by its TeX or alt text (MathML ``alttext``, Wikipedia's fallback images, MathJax scripts) and
  MediaWiki's ``[edit]`` links and "Jump to navigation" links are removed.
- ``full``: the whole visible page text (only scripts, styles, hidden elements and ``<head>`` dropped).

Never silent: when trafilatura keeps less than :data:`MIN_MAIN_SHARE` of the page's visible text (on
trafilatura's own benchmark pages a correct article is often 8-30% of the page), a recall-oriented
trafilatura run is tried; the first that reaches the share wins, otherwise the longer is kept and a warning
names the file, the share kept and ``--html-mode full``. When trafilatura finds nothing (very short pages),
chunkwise's own rules (``<main>``/``<article>``, class names such as ``cookie``/``nav``/``footer``) pick
the content; when they find nothing either, the whole page text is used, with a warning.

The text is built block by block: paragraphs, headings, list items, table rows, quotes and code are
separated by blank lines (list items and table rows by one newline); inline whitespace is collapsed as a
browser would.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from ..document import Document, Section, Table
from ..errors import ConfigError, InputError
from .html_depth import MAX_HTML_DEPTH, bound_nesting
from .html_rules import (
    _META_CHARSET,
    _NON_WORD,
    _SPACES,
    BLOCK_TAGS,
    BOILERPLATE,
    DROP_ROLES,
    DROP_TAGS,
    HEADINGS,
    INVISIBLE_TAGS,
    NEVER_DROP,
    Block,
    page_blocks,
    tex,
)
from .html_trafilatura import trafilatura_blocks
from .markdown_blocks import first_title
from .text import decode, emit_warnings

__all__ = [
    "BLOCK_TAGS",
    "BOILERPLATE",
    "DROP_ROLES",
    "DROP_TAGS",
    "HEADINGS",
    "HTML_MODES",
    "INVISIBLE_TAGS",
    "MIN_MAIN_SHARE",
    "NEVER_DROP",
    "Block",
    "assemble",
    "html_to_document",
    "load_html",
    "main_blocks",
    "page_blocks",
    "tex",
    "trafilatura_blocks",
    "visible_chars",
]

HTML_MODES = ("main", "full")
#: below this share of the page's visible characters, main-content extraction is double-checked and warned
MIN_MAIN_SHARE = 0.05

# -- choosing the blocks ---------------------------------------------------------------------------------


def _chars(blocks: list[Block]) -> int:
    return sum(len(b.text) - b.text.count(" ") - b.text.count("\n") for b in blocks)


def _letters(blocks: list[Block]) -> str:
    return _NON_WORD.sub("", "".join(b.text for b in blocks))


def _with_structure(blocks: list[Block], tree) -> list[Block]:
    """trafilatura's blocks, repaired from chunkwise's own rules (:func:`page_blocks`, walked at most once):
    dropped headings put back, then a flat short page replaced by the same words with more structure."""
    rules = functools.cache(lambda: page_blocks(tree, keep_all=False))
    return _better_structured(_restore_headings(blocks, tree, rules), rules)


def _better_structured(blocks: list[Block], rules: Callable[[], list[Block]]) -> list[Block]:
    """On short pages trafilatura falls back to a flat text; when chunkwise's rules find exactly the same
    words with more structure (headings, lists, code), keep the rules' blocks."""
    if len(blocks) > 3:
        return blocks
    structured = rules()
    if len(structured) > len(blocks) and _letters(structured) == _letters(blocks):
        return structured
    return blocks


def _restore_headings(blocks: list[Block], tree, rules: Callable[[], list[Block]]) -> list[Block]:
    """Put back the headings trafilatura drops on pages without an article container (a bare ``<body>``:
    every heading gone, even on long pages). Each heading of the page goes back right before the paragraph
    that follows it on the page, when trafilatura kept that paragraph word for word; headings over text it
    left out stay out with it. Only runs when trafilatura kept no heading and the page has one."""
    if not blocks or any(b.level for b in blocks) or tree.css_first("h1, h2, h3, h4, h5, h6") is None:
        return blocks
    kept: dict[str, int] = {}
    for i, block in enumerate(blocks):
        kept.setdefault(_letters([block]), i)
    before: dict[int, list[Block]] = {}
    pending: list[Block] = []
    for block in rules():
        if block.level:
            pending.append(block)
            continue
        at = kept.get(_letters([block]))
        if pending and at is not None and at not in before:
            before[at] = pending
        pending = []
    if not before:
        return blocks
    out: list[Block] = []
    for i, block in enumerate(blocks):
        out.extend(before.get(i, []))
        out.append(block)
    return out


def visible_chars(html: str) -> int:
    """Non-space characters of the page text a reader sees (scripts, styles, media and <head> left out);
    a second, cheap parse, so the check costs a fraction of the extraction."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    tree.strip_tags(sorted(INVISIBLE_TAGS))
    root = tree.body or tree.root
    if root is None:
        return 0
    text = root.text(deep=True, separator=" ")
    return len(text) - sum(text.count(c) for c in " \n\t\r\f\v\xa0")


def main_blocks(html: str, tree, source: str) -> tuple[list[Block], list[str]]:
    """Main-content blocks and warnings (see the module docstring for the fallback order)."""
    visible = visible_chars(html)
    tried: list[tuple[str, list[Block]]] = []
    for name, make in (
        ("trafilatura", lambda: trafilatura_blocks(html)),
        ("trafilatura (favor_recall)", lambda: trafilatura_blocks(html, favor_recall=True)),
    ):
        blocks = make()
        if blocks and _chars(blocks) >= MIN_MAIN_SHARE * visible:
            return _with_structure(blocks, tree), []
        tried.append((name, blocks))
    name, best = max(tried, key=lambda t: _chars(t[1]))
    if not best:  # trafilatura found nothing (a very short page): chunkwise's rules
        name, best = "chunkwise's rules", page_blocks(tree, keep_all=False)
        if best and _chars(best) >= MIN_MAIN_SHARE * visible:
            return best, []
    if not best:
        full = page_blocks(tree, keep_all=True)
        if not full:
            return [], []
        return full, ["no main content found; kept the whole page text (--html-mode full)"]
    share = _chars(best) / max(1, visible)
    return best, [
        f"main-content extraction ({name}) kept only {share:.0%} of the page's visible text "
        f"({_chars(best):,} of {visible:,} characters); use --html-mode full to keep the whole page"
    ]


def html_to_document(html: str, source: str, warnings: list[str] | None = None, mode: str = "main") -> Document:
    """A Document from decoded HTML: ``mode`` ``main`` (main content) or ``full`` (whole page text)."""
    from selectolax.lexbor import LexborHTMLParser

    if mode not in HTML_MODES:
        raise ConfigError(f"unknown html_mode {mode!r}; choose one of {', '.join(HTML_MODES)}")
    warns = list(warnings or [])
    html, deepest = bound_nesting(html)
    if deepest > MAX_HTML_DEPTH:
        warns.append(
            f"elements nest {deepest:,} deep; tags below depth {MAX_HTML_DEPTH} were dropped (their text kept)"
        )
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    page_title = _SPACES.sub(" ", title_node.text()).strip() if title_node else None
    if mode == "full":
        blocks = page_blocks(tree, keep_all=True)
    else:
        blocks, extra = main_blocks(html, tree, source)
        warns.extend(extra)
    if not blocks:
        raise InputError("no text: the HTML has no readable content (only scripts, styles or markup)", source=source)
    text, sections, tables = assemble(blocks)
    title = page_title or first_title(sections)
    return Document(
        text,
        source=source,
        sections=sections,
        tables=tables,
        title=title,
        metadata={"format": "html", "html_mode": mode, "warnings": warns},
    )


def assemble(blocks: list[Block]) -> tuple[str, list[Section], list[Table]]:
    """Join blocks into the document text; headings become exact section spans and tables (a header row
    and the rows after it) :class:`~chunkwise.document.Table` spans, whose header later chunks carry."""
    parts: list[str] = []
    pos = 0
    heads: list[tuple[int, str, int, int]] = []  # level, title, start, heading end
    tables: list[Table] = []
    sep = ""
    for k, (text, level, tight, row) in enumerate(blocks):
        if k:
            sep = "\n" if tight and blocks[k - 1].tight else "\n\n"
            parts.append(sep)
            pos += len(sep)
        if level:
            heads.append((level, text, pos, pos + len(text)))
        if row == 1:
            tables.append(Table(pos, pos + len(text), pos, pos + len(text)))
        elif row == 2 and tables and blocks[k - 1].row and sep == "\n":
            tables[-1] = dataclasses.replace(tables[-1], end=pos + len(text))
        parts.append(text)
        pos += len(text)
    doc_text = "".join(parts) + "\n"
    n = len(doc_text)
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    for k, (level, title, start, hend) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = next((h[2] for h in heads[k + 1 :] if h[0] <= level), n)
        sections.append(Section(start, end, tuple(t for _, t in stack), level, start, hend))
    return doc_text, sections, [t for t in tables if t.end > t.header_end]


def load_html(data: bytes, source: str, **options) -> Document:
    """An HTML document. A ``<meta charset>`` is honoured when the bytes are not valid UTF-8."""
    encoding = options.get("encoding")
    if not encoding:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            m = _META_CHARSET.search(data[:4096])
            if m:
                encoding = m.group(1).decode("ascii", "replace")
    try:
        text, warns = decode(data, source, encoding)
    except ConfigError:  # an unknown charset in <meta>: fall back to the default policy
        text, warns = decode(data, source, None)
    doc = html_to_document(text, source, warns, mode=options.get("html_mode") or "main")
    emit_warnings(source, doc.metadata["warnings"])
    return doc
