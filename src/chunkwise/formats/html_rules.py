"""The page-text walker of :mod:`.html`: the whole visible page text (``full`` mode) and chunkwise's own
rule-based main content (``<main>``/``<article>``, boilerplate class names), block by block.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# -- the page-text walker (full mode, and the rule-based fallback of main mode) ----------------------------

INVISIBLE_TAGS = {
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "meta",
    "link",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "audio",
    "video",
    "map",
    "title",
}
DROP_TAGS = INVISIBLE_TAGS | {"nav", "aside", "form", "button", "select", "input", "textarea", "dialog", "menu"}
DROP_ROLES = {
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "dialog",
    "alertdialog",
    "search",
    "menu",
    "menubar",
    "toolbar",
}
BOILERPLATE = re.compile(
    r"(?:^|[-_ ])(cookies?|consent|gdpr|banner|nav|navbar|navigation|menu|footer|site-?footer|sidebar|"
    r"breadcrumbs?|share|sharing|social|ads?|advert\w*|sponsored|popup|modal|newsletter|subscribe|"
    r"skip-?link|related|comments?)(?:$|[-_ ])",
    re.IGNORECASE,
)
#: MediaWiki furniture that is never content: the "[edit]" links in headings and the skip links
WIKI_FURNITURE = re.compile(r"(?:^|\s)(?:mw-editsection|mw-jump-link)(?:$|\s)")
NEVER_DROP = {"html", "body", "main", "article"}
BLOCK_TAGS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "caption",
    "center",
    "fieldset",
    "legend",
    "body",
    "html",
    "nav",
    "aside",
    "form",
    "menu",
    "dialog",
}
HEADINGS = {f"h{i}": i for i in range(1, 7)}
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_NON_WORD = re.compile(r"\W+")
_BR = "\ue000"  # private-use placeholder for <br> while inline whitespace is collapsed
_EDIT_SUFFIX = re.compile(
    r"\s*\[\s*(?:edit|edit source|bearbeiten|Quelltext bearbeiten|modifier)\s*\]\s*$", re.IGNORECASE
)
_TEX_WRAPPER = re.compile(r"^\s*\{\\(?:display|text|script)style\s*(.*)\}\s*$", re.DOTALL)

#: a table's first row is its header (as in CSV and Markdown) unless it is longer than this: prose, not names
MAX_HEADER_CHARS = 500


class Block(NamedTuple):
    """A text block of the page: ``level`` is a heading's level (0 otherwise), ``tight`` joins it to the
    block before with one line break (list items, table rows), ``row`` marks table rows: 1 the first row
    of a table (its header), 2 a later row, 0 no row."""

    text: str
    level: int = 0
    tight: bool = False
    row: int = 0


def _is_hidden(attrs: dict) -> bool:
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = (attrs.get("style") or "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _is_boilerplate(node, keep_all: bool) -> bool:
    """Should the walker skip this element? ``keep_all`` (full mode) skips only what a reader never sees."""
    tag = node.tag
    if tag in NEVER_DROP:
        return False
    attrs = node.attributes or {}
    if keep_all:
        return tag in INVISIBLE_TAGS or (_is_hidden(attrs) and not _is_math(node))
    if tag in DROP_TAGS or _is_hidden(attrs):
        return True
    if tag in ("header", "footer") and not _inside(node, ("article", "main")):
        return True
    if (attrs.get("role") or "").lower() in DROP_ROLES:
        return True
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".strip()
    if names and WIKI_FURNITURE.search(names):
        return True
    if names and BOILERPLATE.search(names):
        # a wrapper that holds the article is not boilerplate, whatever its class says
        return node.css_first("main, article, h1") is None
    return False


def _is_math(node) -> bool:
    return node.tag == "math" or "mwe-math" in ((node.attributes or {}).get("class") or "")


def _inside(node, tags: tuple[str, ...]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.parent
    return False


def _main_content(tree):
    """The element holding the page's content: <main>, role=main, a single <article>, else <body>."""
    main = tree.css_first("main") or tree.css_first("[role=main]")
    if main is not None:
        return main
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0]
    return tree.body or tree.root


def tex(alt: str) -> str:
    """The TeX of a formula's alt text, without MediaWiki's ``{\\displaystyle ...}`` wrapper."""
    alt = " ".join((alt or "").split())
    m = _TEX_WRAPPER.match(alt)
    return m.group(1).strip() if m else alt


def _math_text_selectolax(node) -> str:
    """Alt text or TeX of a formula element (``<math>``, a MediaWiki math span) for the walker."""
    attrs = node.attributes or {}
    if node.tag == "math":
        return tex(attrs.get("alttext") or "") or _SPACES.sub(" ", node.text() or "").strip()
    inner = node.css_first("math")
    if inner is not None and (inner.attributes or {}).get("alttext"):
        return tex(inner.attributes["alttext"])
    img = node.css_first("img")
    if img is not None and (img.attributes or {}).get("alt"):
        return tex(img.attributes["alt"])
    return tex(attrs.get("alt") or "") or _SPACES.sub(" ", node.text() or "").strip()


class _Builder:
    """Collects text blocks with their heading levels; inline text accumulates until a block ends."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.inline: list[str] = []
        self.prefix = ""
        self.tight = False
        self.first_row = False  # the next table row opens a table

    def flush(self, level: int = 0) -> None:
        text = _SPACES.sub(" ", "".join(self.inline))
        text = re.sub(rf" ?{_BR} ?", "\n", text).strip()
        if text:
            self.blocks.append(Block(self.prefix + text, level, self.tight))
        self.inline = []
        self.prefix = ""
        self.tight = False

    def add_block(self, text: str, level: int = 0, tight: bool = False) -> None:
        self.flush()
        if text.strip():
            self.blocks.append(Block(text, level, tight))

    def add_row(self, cells: list[str]) -> None:
        """A table row, its cells joined by `` | ``; the first row after :meth:`open_table` is the header."""
        self.flush()
        if any(cells):
            text = " | ".join(cells)
            first = self.first_row and len(text) <= MAX_HEADER_CHARS
            self.blocks.append(Block(text, 0, True, 1 if first else 2))
            self.first_row = False

    def open_table(self) -> None:
        self.flush()
        self.first_row = True


def _cell_text(cell) -> str:
    """A table cell's text with ``<br>`` kept as a line break (nested blocks become lines too)."""
    b = _Builder()
    _walk(cell, b, [], True, 0)
    b.flush()
    return "\n".join(block.text for block in b.blocks)


def _walk(node, out: _Builder, list_stack: list[list], keep_all: bool, depth: int = 0) -> None:
    for child in node.iter(include_text=True):
        if not _inline(child, out, keep_all, depth):
            _element(child, out, list_stack, keep_all, depth)


def _inline(child, out: _Builder, keep_all: bool, depth: int) -> bool:
    """What takes no descent: text, boilerplate, line breaks, math, and anything nested past 400 levels
    (its text only). True when ``child`` was handled here."""
    tag = child.tag
    if tag == "-text":
        out.inline.append(child.text(deep=False) or "")
    elif not tag or tag.startswith("-") or _is_boilerplate(child, keep_all):
        pass
    elif tag == "br":
        out.inline.append(_BR)  # a line break that survives whitespace collapsing
    elif _is_math(child) or (tag == "img" and "math" in ((child.attributes or {}).get("class") or "")):
        out.inline.append(f" {_math_text_selectolax(child)} ")
    elif depth > 400:  # pathological nesting: take the text and stop descending
        out.inline.append(" " + (child.text() or "") + " ")
    else:
        return False
    return True


def _element(child, out: _Builder, list_stack: list[list], keep_all: bool, depth: int) -> None:
    """An element: a heading, code, a list or list item, a table row, another block, or inline markup."""
    tag = child.tag
    if tag in HEADINGS:
        out.flush()
        heading = _Builder()
        _walk(child, heading, [], keep_all, depth + 1)
        heading.flush()
        text = _EDIT_SUFFIX.sub("", " ".join(block.text for block in heading.blocks).replace("\n", " "))
        out.add_block(text.strip(), HEADINGS[tag])
    elif tag == "pre":
        out.flush()
        out.add_block((child.text(deep=True) or "").strip("\n"))
    elif tag in ("ul", "ol"):
        out.flush()
        list_stack.append([tag, 0])
        _walk(child, out, list_stack, keep_all, depth + 1)
        list_stack.pop()
        out.flush()
    elif tag == "li":
        _list_item(child, out, list_stack, keep_all, depth)
    elif tag == "tr":
        out.add_row([_cell_text(c) for c in child.css("th, td") if not _is_boilerplate(c, keep_all)])
    elif tag == "table":
        out.open_table()
        _walk(child, out, list_stack, keep_all, depth + 1)
        out.flush()
        out.first_row = False  # (a row after the table, of an outer one, is no header)
    elif tag in BLOCK_TAGS:
        out.flush()
        _walk(child, out, list_stack, keep_all, depth + 1)
        out.flush()
    else:
        _walk(child, out, list_stack, keep_all, depth + 1)


def _list_item(child, out: _Builder, list_stack: list[list], keep_all: bool, depth: int) -> None:
    """A list item, marked ``- `` or with its number, indented by its list's depth."""
    out.flush()
    marker = "- "
    if list_stack:
        list_stack[-1][1] += 1
        if list_stack[-1][0] == "ol":
            marker = f"{list_stack[-1][1]}. "
    indent = "  " * max(0, len(list_stack) - 1)
    out.prefix, out.tight = indent + marker, True
    _walk(child, out, list_stack, keep_all, depth + 1)
    out.flush()


def page_blocks(tree, keep_all: bool) -> list[Block]:
    """Blocks of the whole visible page (``keep_all``) or of chunkwise's rule-based main content."""
    root = (tree.body or tree.root) if keep_all else _main_content(tree)
    out = _Builder()
    if root is not None:
        _walk(root, out, [], keep_all)
        out.flush()
    return out.blocks
