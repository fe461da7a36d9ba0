"""Main content through trafilatura (``main`` mode of :mod:`.html`): the page prepared (formulas to their
TeX, MediaWiki furniture out), trafilatura's XML output turned into blocks with their structure.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from .html_rules import _BR, _EDIT_SUFFIX, _SPACES, Block, _Builder, tex

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
            out.open_table()
            for row in child.iter("row"):
                out.add_row([_clean_inline(_inline(c)) for c in row if c.tag == "cell"])
            out.first_row = False
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
