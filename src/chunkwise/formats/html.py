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

import functools
import logging
import re
from collections.abc import Callable
from typing import Any

from ..document import Document, Section
from ..errors import ConfigError, InputError
from .text import decode, emit_warnings

HTML_MODES = ("main", "full")
#: below this share of the page's visible characters, main-content extraction is double-checked and warned
MIN_MAIN_SHARE = 0.05

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

Block = tuple[str, int, bool]  # (text, heading level or 0, tight with the previous block)


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


def _cell_text(cell) -> str:
    """A table cell's text with ``<br>`` kept as a line break (nested blocks become lines too)."""
    b = _Builder()
    _walk(cell, b, [], True, 0)
    b.flush()
    return "\n".join(t for t, _, _ in b.blocks)


def _walk(node, out: _Builder, list_stack: list[list], keep_all: bool, depth: int = 0) -> None:
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.inline.append(child.text(deep=False) or "")
            continue
        if not tag or tag.startswith("-") or _is_boilerplate(child, keep_all):
            continue
        if tag == "br":
            out.inline.append(_BR)  # a line break that survives whitespace collapsing
            continue
        if _is_math(child) or (tag == "img" and "math" in ((child.attributes or {}).get("class") or "")):
            out.inline.append(f" {_math_text_selectolax(child)} ")
            continue
        if depth > 400:  # pathological nesting: take the text and stop descending
            out.inline.append(" " + (child.text() or "") + " ")
            continue
        if tag in HEADINGS:
            out.flush()
            heading = _Builder()
            _walk(child, heading, [], keep_all, depth + 1)
            heading.flush()
            text = _EDIT_SUFFIX.sub("", " ".join(t for t, _, _ in heading.blocks).replace("\n", " "))
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
        elif tag == "tr":
            out.flush()
            cells = [_cell_text(c) for c in child.css("th, td") if not _is_boilerplate(c, keep_all)]
            if any(cells):
                out.add_block(" | ".join(cells), tight=True)
        elif tag in BLOCK_TAGS:
            out.flush()
            _walk(child, out, list_stack, keep_all, depth + 1)
            out.flush()
        else:
            _walk(child, out, list_stack, keep_all, depth + 1)


def page_blocks(tree, keep_all: bool) -> list[Block]:
    """Blocks of the whole visible page (``keep_all``) or of chunkwise's rule-based main content."""
    root = (tree.body or tree.root) if keep_all else _main_content(tree)
    out = _Builder()
    if root is not None:
        _walk(root, out, [], keep_all)
        out.flush()
    return out.blocks


# -- main content through trafilatura --------------------------------------------------------------------

_TRAFILATURA_OPTIONS: dict[str, Any] = {
    "output_format": "xml",
    "include_tables": True,
    "include_comments": False,
    "include_formatting": False,
    "include_links": False,
    "include_images": False,
    "with_metadata": False,
    "deduplicate": False,
}


def _prepare_lxml(tree) -> None:
    """Formulas to their TeX/alt text and MediaWiki furniture out, before trafilatura sees the page."""
    for el in tree.xpath(
        '//*[contains(concat(" ", normalize-space(@class), " "), " mw-editsection ")'
        ' or contains(concat(" ", normalize-space(@class), " "), " mw-jump-link ")]'
    ):
        _replace(el, "")
    for el in tree.xpath('//*[contains(@class, "mwe-math-element")]'):
        alt = el.xpath('string(.//*[local-name()="math"]/@alttext)') or el.xpath("string(.//img/@alt)")
        _replace(el, f" {tex(alt)} " if alt else "")
    for el in tree.xpath('//*[local-name()="math"]'):
        alt = (
            el.get("alttext")
            or el.xpath('string(.//*[local-name()="annotation"][@encoding="application/x-tex"])')
            or el.xpath("string(.)")
        )
        _replace(el, f" {tex(alt)} ")
    for el in tree.xpath('//img[contains(@class, "math") and @alt]'):
        _replace(el, f" {tex(el.get('alt'))} ")
    for el in tree.xpath('//script[starts-with(@type, "math/tex")]'):
        _replace(el, f" {tex(el.text or '')} ")


def _replace(el, text: str) -> None:
    """Replace an lxml element by plain text, keeping its tail."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail or ""
    if text.endswith(" ") and tail[:1] in (",", ".", ";", ":", "!", "?", ")"):
        text = text.rstrip(" ")  # "a^{2} ," reads badly
    joined = text + tail
    prev = el.getprevious()
    if prev is not None:
        prev.tail = (prev.tail or "") + joined
    else:
        parent.text = (parent.text or "") + joined
    parent.remove(el)


def _quiet_trafilatura() -> None:
    """trafilatura logs every page it finds hard; chunkwise reports what matters itself."""
    logger = logging.getLogger("trafilatura")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL)


def trafilatura_blocks(html: str, favor_recall: bool = False) -> list[Block]:
    """Main-content blocks from trafilatura's XML output (empty when it finds nothing)."""
    from lxml import etree
    from trafilatura import extract
    from trafilatura.utils import load_html

    _quiet_trafilatura()
    tree = load_html(html)
    if tree is None:
        return []
    _prepare_lxml(tree)
    try:
        xml = extract(tree, favor_recall=favor_recall, **_TRAFILATURA_OPTIONS)
    except Exception:  # noqa: BLE001 - an extractor crash on odd markup means "found nothing", not a failure
        return []
    if not xml:
        return []
    try:
        root = etree.fromstring(xml.encode("utf-8"), etree.XMLParser(recover=True, huge_tree=True))
    except etree.XMLSyntaxError:
        return []
    main = root.find("main") if root is not None else None
    out = _Builder()
    if main is not None:
        _xml_children(main, out, 0)
        out.flush()
    return out.blocks


def _inline(el) -> str:
    """Inline text of a trafilatura XML element; ``<lb/>`` and nested blocks become line breaks."""
    parts = [el.text or ""]
    for child in el:
        if child.tag == "lb":
            parts.append(_BR)
        elif child.tag in ("p", "head", "list", "item", "quote", "code", "row", "table"):
            parts.append(_BR + _inline(child) + _BR)
        elif child.tag != "graphic":
            parts.append(_inline(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _clean_inline(text: str) -> str:
    text = _SPACES.sub(" ", text)
    text = re.sub(rf" ?{_BR}(?: ?{_BR})* ?", "\n", text)
    return text.strip()


def _xml_children(el, out: _Builder, list_depth: int) -> None:
    """Walk the block children of a trafilatura ``<main>`` (or ``<quote>``/``<div>``) element."""
    if el.text and el.text.strip():
        out.inline.append(el.text)
    for child in el:
        tag = child.tag
        if tag == "head":
            out.flush()
            rend = child.get("rend") or "h2"
            level = int(rend[1]) if len(rend) == 2 and rend[0] == "h" and rend[1] in "123456" else 2
            out.add_block(_EDIT_SUFFIX.sub("", _clean_inline(_inline(child)).replace("\n", " ")).strip(), level)
        elif tag == "p":
            out.flush()
            out.add_block(_clean_inline(_inline(child)))
        elif tag == "list":
            out.flush()
            _xml_list(child, out, list_depth)
        elif tag == "table":
            out.flush()
            for row in child.iter("row"):
                cells = [_clean_inline(_inline(c)) for c in row if c.tag == "cell"]
                if any(cells):
                    out.add_block(" | ".join(cells), tight=True)
        elif tag == "code":
            out.flush()
            out.add_block("".join(child.itertext()).strip("\n"))
        elif tag in ("quote", "div", "main", "section"):
            out.flush()
            _xml_children(child, out, list_depth)
            out.flush()
        elif tag == "lb":
            out.inline.append(_BR)
        elif tag != "graphic":
            out.inline.append(_inline(child))
        if child.tail and child.tail.strip():
            out.inline.append(child.tail)
    out.flush()


def _xml_list(el, out: _Builder, depth: int) -> None:
    """List items as ``- `` (or ``1. `` for ordered lists) lines, nested lists indented."""
    ordered = (el.get("rend") or "") == "ol"
    n = 0
    for item in el:
        if item.tag != "item":
            continue
        n += 1
        marker = f"{n}. " if ordered else "- "
        own = [item.text or ""]
        nested = []
        for sub in item:
            if sub.tag == "list":
                nested.append(sub)
            else:
                own.append(_BR + _inline(sub) + _BR if sub.tag in ("p", "quote", "code") else _inline(sub))
            own.append(sub.tail or "")
        text = _clean_inline("".join(own))
        if text:
            out.add_block("  " * depth + marker + text, tight=True)
        for sub in nested:
            _xml_list(sub, out, depth + 1)


# -- choosing the blocks ---------------------------------------------------------------------------------


def _chars(blocks: list[Block]) -> int:
    return sum(len(t) - t.count(" ") - t.count("\n") for t, _, _ in blocks)


def _letters(blocks: list[Block]) -> str:
    return _NON_WORD.sub("", "".join(t for t, _, _ in blocks))


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
    if not blocks or any(level for _, level, _ in blocks) or tree.css_first("h1, h2, h3, h4, h5, h6") is None:
        return blocks
    kept: dict[str, int] = {}
    for i, block in enumerate(blocks):
        kept.setdefault(_letters([block]), i)
    before: dict[int, list[Block]] = {}
    pending: list[Block] = []
    for block in rules():
        if block[1]:
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
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    page_title = _SPACES.sub(" ", title_node.text()).strip() if title_node else None
    warns = list(warnings or [])
    if mode == "full":
        blocks = page_blocks(tree, keep_all=True)
    else:
        blocks, extra = main_blocks(html, tree, source)
        warns.extend(extra)
    if not blocks:
        raise InputError("no text: the HTML has no readable content (only scripts, styles or markup)", source=source)
    text, sections = assemble(blocks)
    title = page_title or next((s.path[-1] for s in sections if s.level == 1), None)
    return Document(
        text,
        source=source,
        sections=sections,
        title=title,
        metadata={"format": "html", "html_mode": mode, "warnings": warns},
    )


def assemble(blocks: list[Block]) -> tuple[str, list[Section]]:
    """Join blocks into the document text and turn headings into exact section spans."""
    parts: list[str] = []
    pos = 0
    heads: list[tuple[int, str, int, int]] = []  # level, title, start, heading end
    for k, (text, level, tight) in enumerate(blocks):
        if k:
            sep = "\n" if tight and blocks[k - 1][2] else "\n\n"
            parts.append(sep)
            pos += len(sep)
        if level:
            heads.append((level, text, pos, pos + len(text)))
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
    return doc_text, sections


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
