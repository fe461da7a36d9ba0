"""Markdown's line-level rules, which need no parser: the start of an ATX heading line and a leading
front-matter block. The strategies' line tests and the loaders import them from here, and so does
:mod:`.markdown_blocks` (the parser, its blocks and sections), which skips front matter: a plain-text run that
tests lines for headings does not import the parser.
"""

from __future__ import annotations

import re

from ..registry import lazy_regex

#: a leading YAML front-matter block (``---`` ... ``---`` or ``...``; may be empty), its body in group 1; the
#: one definition for the loader (metadata) and the section parser (skipped)
FRONT_MATTER = lazy_regex(r"\A---[ \t]*\r?\n((?:.*?\r?\n)?)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
#: the start of an ATX heading line, CommonMark's rule: up to three spaces, one to six ``#``, then a space,
#: a tab or the end of the line (``#hashtag`` is text, a bare ``#`` an empty heading). The one line-level
#: test of "is this a heading" for the chunk rules, the semantic units and the recursive splitter's
#: Markdown preset; the parser (:mod:`.markdown_blocks`) is what knows headings in context (setext ones,
#: none inside code).
ATX_HEADING = r" {0,3}#{1,6}(?=[ \t\r\n]|\Z)"
ATX_HEADING_RE = lazy_regex(ATX_HEADING)

__all__ = ["ATX_HEADING", "ATX_HEADING_RE", "FRONT_MATTER"]
