"""Deep HTML nesting bounded before parsing, in one linear pass.

HTML parsers (lexbor, libxml2) take time quadratic in the nesting depth: 10,000/20,000/40,000 nested
``<div>`` took 0.2/1.1/6.0 CPU-s in lexbor alone and 200,000 ran for minutes (benchmarks/results/trust.md).
Real pages nest a few dozen deep, so tags deeper than :data:`MAX_HTML_DEPTH` are dropped before parsing and
their text kept. The pass closes elements as a browser does (an end tag closes what was opened since its
start tag, a sibling closes an element whose end tag is optional, a block closes an open paragraph), so a
real page's unclosed ``<p>`` and ``<li>`` do not count as nesting and the page passes through untouched.
"""

from __future__ import annotations

import re

#: the deepest element nesting kept; deeper tags are dropped before parsing, their text kept
MAX_HTML_DEPTH = 512
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)\b[^>]*?(/?)>|<!--")
_RAW_END = {"script": re.compile(r"</script\s*>", re.I), "style": re.compile(r"</style\s*>", re.I)}
#: elements that never have content
VOID_TAGS = frozenset(
    "area base br col embed hr img input link meta param source track wbr basefont bgsound frame keygen".split()
)
#: start tags that close an open <p>
P_CLOSERS = frozenset(
    "address article aside blockquote details div dl fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 "
    "header hgroup hr main menu nav ol p pre section table ul li dd dt".split()
)
#: elements whose end tag may be left out (closed by the next sibling)
OPTIONAL_END = frozenset("p li dt dd option optgroup tr td th thead tbody tfoot colgroup rp rt caption".split())


class _Open:
    """The open elements: a stack of ``(tag, kept)`` and a count per tag (an end tag with no open start tag
    is ignored in O(1), so stray end tags cost nothing)."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, bool]] = []
        self.count: dict[str, int] = {}

    def push(self, name: str, kept: bool) -> None:
        self.stack.append((name, kept))
        self.count[name] = self.count.get(name, 0) + 1

    def close(self, name: str) -> bool | None:
        """Close ``name`` and what was opened since; whether its start tag was kept (``None``: not open)."""
        if not self.count.get(name):
            return None
        while True:
            top, kept = self.stack.pop()
            self.count[top] -= 1
            if top == name:
                return kept

    def implied_ends(self, name: str) -> None:
        """Close what starting ``name`` closes: an open paragraph, an open twin a short look away."""
        if self.stack and self.stack[-1][0] == "p" and name in P_CLOSERS:
            self.close("p")
        if name in OPTIONAL_END and self.count.get(name):
            for i in range(len(self.stack) - 1, max(-1, len(self.stack) - 9), -1):
                if self.stack[i][0] == name:
                    self.close(name)
                    return
                if self.stack[i][0] not in OPTIONAL_END:
                    return


def _tags(html: str):
    """``(match, lowercase name)`` of every start and end tag outside comments, scripts and styles."""
    pos, stop = 0, html.rfind(">") + 1  # no tag can end after the last ">" (and none is searched for there)
    while (m := _TAG.search(html, pos, stop)) is not None:
        pos = m.end()
        if m.group(2) is None:  # a comment: no markup inside
            close = html.find("-->", pos)
            if close < 0:
                return
            pos = close + 3
            continue
        name = m.group(2).lower()
        if name in _RAW_END and not m.group(1):  # script and style text is not markup
            raw_end = _RAW_END[name].search(html, pos)
            if raw_end is None:
                return
            pos = raw_end.end()
            continue
        yield m, name


def bound_nesting(html: str, limit: int = MAX_HTML_DEPTH) -> tuple[str, int]:
    """``html`` with every tag nested deeper than ``limit`` removed (text kept), and the deepest nesting
    found; ``html`` itself when nothing is that deep."""
    opened = _Open()
    drop: list[tuple[int, int]] = []
    deepest = 0
    for m, name in _tags(html):
        if m.group(1):  # an end tag
            if opened.close(name) is False:
                drop.append(m.span())
        elif name not in VOID_TAGS and not m.group(3):
            opened.implied_ends(name)
            kept = len(opened.stack) < limit
            opened.push(name, kept)
            deepest = max(deepest, len(opened.stack))
            if not kept:
                drop.append(m.span())
    if not drop:
        return html, deepest
    parts, pos = [], 0
    for cut_start, cut_end in drop:
        parts.append(html[pos:cut_start])
        pos = cut_end
    parts.append(html[pos:])
    return "".join(parts), deepest


__all__ = ["MAX_HTML_DEPTH", "bound_nesting"]
