"""HTML: the main content as clean text blocks, headings h1-h6 as sections (parsed with selectolax).

What a reader of the page would call its content is kept; page furniture is dropped: ``script``, ``style``,
``nav``, ``header``/``footer`` outside the article, ``aside``, forms, hidden elements, ARIA landmarks for
navigation/banners/footers, and elements whose class or id names them (cookie, consent, banner, nav,
menu, footer, sidebar, breadcrumb, share, social, ad, popup, modal, newsletter). When the page marks its
content (``<main>``, ``role="main"``, a single ``<article>``), only that is read.

The text is built block by block: paragraphs, headings, list items (``- `` / ``1. ``), table rows (cells
joined by `` | ``), blockquotes and ``<pre>`` blocks (kept verbatim) are separated by blank lines; inline
whitespace is collapsed as a browser would.
"""

from __future__ import annotations

import re

from ..document import Document, Section
from ..errors import ConfigError, InputError
from .text import decode, emit_warnings

DROP_TAGS = {
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav", "aside",
    "form", "button", "select", "input", "textarea", "dialog", "head", "meta", "link", "audio", "video",
    "map", "menu",
}
DROP_ROLES = {"navigation", "banner", "contentinfo", "complementary", "dialog", "alertdialog", "search",
              "menu", "menubar", "toolbar"}
BOILERPLATE = re.compile(
    r"(?:^|[-_ ])(cookies?|consent|gdpr|banner|nav|navbar|navigation|menu|footer|site-?footer|sidebar|"
    r"breadcrumbs?|share|sharing|social|ads?|advert\w*|sponsored|popup|modal|newsletter|subscribe|"
    r"skip-?link|related|comments?)(?:$|[-_ ])",
    re.IGNORECASE,
)
NEVER_DROP = {"html", "body", "main", "article"}
BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "header", "footer", "li", "ul", "ol", "dl", "dt", "dd",
    "blockquote", "pre", "table", "thead", "tbody", "tfoot", "tr", "figure", "figcaption", "address",
    "details", "summary", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "caption", "center", "fieldset",
    "legend", "body", "html",
}
HEADINGS = {f"h{i}": i for i in range(1, 7)}
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_BR = "\ue000"  # private-use placeholder for <br> while inline whitespace is collapsed


def _is_boilerplate(node) -> bool:
    tag = node.tag
    if tag in NEVER_DROP:
        return False
    attrs = node.attributes or {}
    if tag in DROP_TAGS:
        return True
    if tag in ("header", "footer") and not _inside(node, ("article", "main")):
        return True
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = (attrs.get("style") or "").replace(" ", "").lower()
    if "display:none" in style or "visibility:hidden" in style:
        return True
    if (attrs.get("role") or "").lower() in DROP_ROLES:
        return True
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".strip()
    if names and BOILERPLATE.search(names):
        # a wrapper that holds the article is not boilerplate, whatever its class says
        return node.css_first("main, article, h1") is None
    return False


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


class _Builder:
    """Collects text blocks with their heading levels; inline text accumulates until a block ends."""

    def __init__(self):
        self.blocks: list[tuple[str, int, bool]] = []  # (text, heading level or 0, tight with previous)
        self.inline: list[str] = []
        self.prefix = ""
        self.tight = False

    def flush(self, level: int = 0) -> None:
        text = _SPACES.sub(" ", "".join(self.inline))
        text = re.sub(rf" ?{_BR} ?", "\n", text).strip()
        if text:
            self.blocks.append((self.prefix + text, level, self.tight))
        self.inline = []
        self.prefix = ""
        self.tight = False

    def add_block(self, text: str, level: int = 0, tight: bool = False) -> None:
        self.flush()
        if text.strip():
            self.blocks.append((text, level, tight))


def _walk(node, out: _Builder, list_stack: list[list], depth: int = 0) -> None:
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.inline.append(child.text(deep=False) or "")
            continue
        if tag.startswith("-") or _is_boilerplate(child):
            continue
        if tag == "br":
            out.inline.append(_BR)  # a line break that survives whitespace collapsing
            continue
        if depth > 400:  # pathological nesting: take the text and stop descending
            out.inline.append(" " + (child.text() or "") + " ")
            continue
        if tag in HEADINGS:
            out.flush()
            out.add_block(_SPACES.sub(" ", child.text() or "").strip(), HEADINGS[tag])
        elif tag == "pre":
            out.flush()
            out.add_block((child.text(deep=True) or "").strip("\n"))
        elif tag in ("ul", "ol"):
            out.flush()
            list_stack.append([tag, 0])
            _walk(child, out, list_stack, depth + 1)
            list_stack.pop()
            out.flush()
        elif tag == "li":
            out.flush()
            marker = "- "
            if list_stack:
                list_stack[-1][1] += 1
                if list_stack[-1][0] == "ol":
                    marker = f"{list_stack[-1][1]}. "
            indent = "  " * max(0, len(list_stack) - 1)
            out.prefix, out.tight = indent + marker, True
            _walk(child, out, list_stack, depth + 1)
            out.flush()
        elif tag == "tr":
            out.flush()
            cells = [_SPACES.sub(" ", c.text() or "").strip() for c in child.css("th, td")
                     if not _is_boilerplate(c)]
            if any(cells):
                out.add_block(" | ".join(cells), tight=True)
        elif tag in BLOCK_TAGS:
            out.flush()
            _walk(child, out, list_stack, depth + 1)
            out.flush()
        else:
            _walk(child, out, list_stack, depth + 1)


def html_to_document(html: str, source: str, warnings: list[str] | None = None) -> Document:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    page_title = _SPACES.sub(" ", title_node.text()).strip() if title_node else None
    root = _main_content(tree)
    out = _Builder()
    if root is not None:
        _walk(root, out, [])
        out.flush()
    if not out.blocks:
        raise InputError("no text: the HTML has no readable content (only scripts, styles or markup)",
                         source=source)
    parts: list[str] = []
    sections: list[Section] = []
    pos = 0
    heads: list[tuple[int, str, int, int]] = []  # level, title, start, heading end
    for k, (text, level, tight) in enumerate(out.blocks):
        if k:
            sep = "\n" if tight and out.blocks[k - 1][2] else "\n\n"
            parts.append(sep)
            pos += len(sep)
        if level:
            heads.append((level, text, pos, pos + len(text)))
        parts.append(text)
        pos += len(text)
    doc_text = "".join(parts) + "\n"
    n = len(doc_text)
    stack: list[tuple[int, str]] = []
    for k, (level, title, start, hend) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = next((h[2] for h in heads[k + 1:] if h[0] <= level), n)
        sections.append(Section(start, end, tuple(t for _, t in stack), level, start, hend))
    title = page_title or next((h[1] for h in heads if h[0] == 1), None)
    return Document(doc_text, source=source, sections=sections, title=title,
                    metadata={"format": "html", "warnings": list(warnings or [])})


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
    doc = html_to_document(text, source, warns)
    emit_warnings(source, warns)
    return doc
