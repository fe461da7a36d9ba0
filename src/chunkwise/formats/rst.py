"""reStructuredText: the source as written, sections from its real title adornments (parsed with docutils).

The document text is the rst source with two edits, both recorded in the source map so ``source_start`` and
``source_end`` still point into the file:

- roles and hyperlink references read as their text (``:ref:`the app <app>``` is ``the app``,
  ``:func:`~flask.Flask``` is ``Flask``, ```Flask <https://...>`_`` is ``Flask``), except inside code;
- hyperlink target lines (``.. _label:``) are removed: they are anchors for the site generator, and left in
  place they would end the chunk before the heading they name.

Titles come from docutils' own parser (:func:`rst_blocks`), so an underline inside a literal block or a
directive body is not a title, the levels follow the order in which adornment styles first appear, and a
transition (a lone ``----``) is not a section. Directives keep their body: a top-level block runs from a
line at the left margin to the next one after a blank line, so ``.. note::`` or ``.. code-block::`` and
everything indented under it are one block, and a paragraph ending in ``::`` keeps its literal block. The
``rst`` strategy packs these blocks with the Markdown rules (one packing engine).

A file docutils calls malformed (a title level out of order, a directive it cannot parse) still loads: the
first severe problem is one warning line, and the sections docutils did find are kept.
"""

from __future__ import annotations

import functools
import io
import re

from ..document import Document, Section
from .markdown_blocks import Block, markdown_sections, sectioned_document
from .text import check_text, emit_warnings, read_source

#: directives whose body is code (kept whole when it fits, split by the code rules when not)
CODE_DIRECTIVES = frozenset(
    "code-block code sourcecode doctest testcode testoutput testsetup testcleanup parsed-literal math "
    "literalinclude highlight ipython jupyter-execute prompt".split()
)
_DIRECTIVE = re.compile(r"[ \t]*\.\.[ \t]+([\w:+-]+?)::(?:[ \t]|$)")
_ROLE = re.compile(r"(?<![\w`\\]):(?:[A-Za-z][\w.+-]*:)+`(?P<body>(?:[^`\\\n]|\\.)+?)`(?![`\w])")
_LINK = re.compile(r"(?<![\w`\\:])`(?P<body>[^`\n]+?)`__?(?![\w`])")
_EXPLICIT_TARGET = re.compile(r"^(.*?)\s*<[^<>\n]+>$", re.DOTALL)
_INLINE_LITERAL = re.compile(r"``[^`\n](?:[^\n]*?[^`\n])?``")
_TARGET_LINE = re.compile(
    r"^\.\. _(?:[^:`\n]|`[^`\n]*`)+:(?:[ \t]+\S[^\n]*)?[ \t]*(?:\n|\Z)(?:[ \t]*\n)?", re.MULTILINE
)
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
#: docutils errors that are not malformed rst: what Sphinx (or an extension) defines and docutils alone does not
#: know (``.. toctree::``, ``:ref:``, an option of ``code-block``), and what this reader switches off
_NOT_MALFORMED = re.compile(
    r"(?:Unknown (?:directive type|interpreted text role|target name)|Undefined substitution|Duplicate"
    r"|Error in \"[^\"]+\" directive|No (?:role|directive) entry|Problems with \"\w+\" directive|Unknown role"
    r"|Indirect hyperlink target|Anonymous hyperlink mismatch|Too many autonumbered|\"\w+\" directive disabled)"
)
#: characters Python's str.splitlines() (docutils' line splitter) breaks on besides "\n"
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029\r]")


def _role_text(body: str) -> str:
    m = _EXPLICIT_TARGET.match(body)
    if m and m.group(1):
        return m.group(1)
    body = body.replace("\\", "")
    if body.startswith("~"):
        return body[1:].rsplit(".", 1)[-1]
    return body.lstrip("!")


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def code_regions(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are code: the body of a code directive, a literal block after ``::``, a
    doctest block (``>>>`` up to a blank line). Roles are not rewritten there."""
    lines = text.split("\n")
    starts = _line_starts(text)
    regions = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        m = _DIRECTIVE.match(line)
        literal = stripped.endswith("::") and not m
        if (m and m.group(1) in CODE_DIRECTIVES) or literal:
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
                j += 1
            if j > i + 1:
                regions.append((starts[i + 1], starts[j - 1] + len(lines[j - 1])))
            i = j
            continue
        if stripped.startswith(">>>"):
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            regions.append((starts[i], starts[j - 1] + len(lines[j - 1])))
            i = j
            continue
        i += 1
    return regions


def rst_edits(text: str) -> list[tuple[int, int, str]]:
    """The edits that make ``text`` read as text: roles and references to their text, target lines
    removed; nothing inside code or inline literals is touched."""
    protected = code_regions(text) + [m.span() for m in _INLINE_LITERAL.finditer(text)]
    protected.sort()

    def free(a: int, b: int) -> bool:
        return not any(x < b and a < y for x, y in protected)

    edits = []
    for m in _TARGET_LINE.finditer(text):
        if free(*m.span()):
            edits.append((m.start(), m.end(), ""))
    taken = [(a, b) for a, b, _ in edits]
    for pattern in (_ROLE, _LINK):
        for m in pattern.finditer(text):
            a, b = m.span()
            if free(a, b) and not any(x < b and a < y for x, y in taken):
                edits.append((a, b, _role_text(m.group("body"))))
                taken.append((a, b))
    edits.sort()
    return edits


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    out, prev = [], 0
    for a, b, rep in edits:
        out.append(text[prev:a])
        out.append(rep)
        prev = b
    out.append(text[prev:])
    return "".join(out)


def _docutils_titles(text: str) -> tuple[list[tuple[int, int, str]], str | None]:
    """``(underline line, level, title)`` of every section docutils finds (1-based line numbers as docutils
    counts them, ``text`` split at ``\\n`` only), and its first severe problem (or ``None``)."""
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    parser = Parser()
    settings = get_default_settings(Parser)
    settings.report_level = 5
    settings.halt_level = 5
    settings.warning_stream = io.StringIO()
    settings.file_insertion_enabled = False  # never read another file (`.. include::`, `:file:` options)
    settings.raw_enabled = False
    settings.line_length_limit = 10**7
    doc = new_document("<rst>", settings)
    parser.parse(_OTHER_BREAKS.sub(" ", text), doc)
    titles = []
    for sec in doc.findall(nodes.section):
        level, parent = 1, sec.parent
        while parent is not None:
            level += isinstance(parent, nodes.section)
            parent = parent.parent
        title = sec.children[0] if sec.children and isinstance(sec.children[0], nodes.title) else None
        line = title.line if title is not None and title.line else sec.line
        if title is not None and line:
            titles.append((line, level, " ".join(title.astext().split())))
    problems = []
    for msg in doc.findall(nodes.system_message):
        first = " ".join((msg.children[0].astext() if msg.children else msg.astext()).split())
        if msg.get("level", 0) >= 3 and not _NOT_MALFORMED.match(first):
            problems.append(f"line {msg.get('line', '?')}: {first}")
    if not problems:
        return titles, None
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    return titles, problems[0] + more


def _heading_spans(text: str, titles: list[tuple[int, int, str]]) -> list[Block]:
    """The title lines docutils found, as heading blocks over ``text`` (overline, title and underline),
    each checked against the text: a line number that does not land on a title and its adornment is
    dropped rather than trusted."""
    lines = text.split("\n")
    starts = _line_starts(text)
    heads = []
    for line, level, title in titles:
        u = line - 1  # 0-based underline
        t = u - 1
        if t < 0 or u >= len(lines) or not _ADORNMENT.fullmatch(lines[u]) or not lines[t].strip():
            continue
        a = starts[t]
        if t >= 1 and _ADORNMENT.fullmatch(lines[t - 1]) and lines[t - 1].strip()[0] == lines[u].strip()[0]:
            a = starts[t - 1]
        heads.append(Block(a, starts[u] + len(lines[u].rstrip()), "heading", level, title))
    return heads


def rst_blocks(text: str) -> list[Block]:
    """Top-level blocks of ``text`` in order: headings (from docutils), code directives, and text blocks
    (a line at the left margin after a blank line, and everything indented under it)."""
    return list(_rst_parse(text)[0])


def rst_problem(text: str) -> str | None:
    """docutils' first severe problem with ``text`` (``None`` when it parsed cleanly)."""
    return _rst_parse(text)[1]


@functools.lru_cache(maxsize=4)
def _rst_parse(text: str) -> tuple[tuple[Block, ...], str | None]:
    try:
        titles, problem = _docutils_titles(text)
    except Exception as exc:  # docutils failed on this text: no sections, the text is still chunked
        titles, problem = [], f"docutils could not parse it ({type(exc).__name__}: {exc})"
    heads = _heading_spans(text, titles)
    lines = text.split("\n")
    starts = _line_starts(text)
    blocks: list[Block] = []
    h = 0
    cur: list[int] | None = None  # [start, end, first line]
    prev_blank = True

    def close() -> None:
        if cur is not None:
            m = _DIRECTIVE.match(lines[cur[2]])
            kind = "code" if m and m.group(1) in CODE_DIRECTIVES else "text"
            blocks.append(Block(cur[0], cur[1], kind))

    i = 0
    while i < len(lines):
        a = starts[i]
        if h < len(heads) and heads[h].start == a:
            close()
            cur = None
            blocks.append(heads[h])
            while i < len(lines) and starts[i] < heads[h].end:
                i += 1
            h += 1
            prev_blank = True
            continue
        line = lines[i]
        if not line.strip():
            prev_blank = True
            i += 1
            continue
        if cur is None or (prev_blank and not line[0].isspace()):
            close()
            cur = [a, a + len(line.rstrip()), i]
        else:
            cur[1] = a + len(line.rstrip())
        prev_blank = False
        i += 1
    close()
    return _with_preamble(text, tuple(blocks)), problem


#: a block that is markup, not prose: a directive or comment (``.. currentmodule:: flask``), a field list
#: (``:orphan:``)
_MARKUP_BLOCK = re.compile(r"(?:\.\.|:[\w-]+:)(?=[ \t\n]|\Z)")


def _with_preamble(text: str, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    """Markup before the first title (``:orphan:``, ``.. currentmodule::``) joined to that title's block, so
    it is part of the first section instead of a chunk with no section of its own."""
    first = next((k for k, b in enumerate(blocks) if b.kind == "heading"), None)
    if not first or not all(_MARKUP_BLOCK.match(text, b.start) for b in blocks[:first]):
        return blocks
    head = blocks[first]
    return (Block(blocks[0].start, head.end, "heading", head.level, head.title), *blocks[first + 1 :])


_TITLE_SHAPE = re.compile(r"^(?:([!-/:-@\[-`{-~])\1{2,}\n)?[^\s].{0,78}\n([!-/:-@\[-`{-~])\2{2,}[ \t]*$", re.MULTILINE)
_DIRECTIVE_SHAPE = re.compile(r"^\.\. [\w-]+::|:(?:ref|doc|func|class|meth|mod|attr|data):`", re.MULTILINE)


#: what Markdown has and rst has not: backtick fences, inline links (and ATX headings, which a comment in
#: source code also looks like)
MARKDOWN_FENCE = re.compile(r"^```[\w+-]*[ \t]*$|\]\((?:https?://|/|\.)", re.MULTILINE)
MARKDOWN_SHAPE = re.compile(r"^(?:#{1,6} \S|```[\w+-]*[ \t]*$)|\]\((?:https?://|/|\.)", re.MULTILINE)


def looks_like_rst(text: str) -> bool:
    """Whether a text with no name is reStructuredText: two titles with underlines as long as them, or one
    and a directive or a Sphinx role (a Markdown setext heading alone is not enough)."""
    head = text[:20000]
    if MARKDOWN_SHAPE.search(head):  # setext headings look like rst titles; these do not
        return False
    titles = [
        m
        for m in _TITLE_SHAPE.finditer(head)
        if len(m.group(0).split("\n")[-1].rstrip()) >= len(m.group(0).split("\n")[-2].rstrip())
    ]
    return len(titles) >= 2 or (len(titles) == 1 and bool(_DIRECTIVE_SHAPE.search(head)))


def rst_sections(text: str) -> list[Section]:
    """Nested sections of an rst text, one per title (the same shape as Markdown's)."""
    return markdown_sections(text, rst_blocks(text))


def load_rst(data: bytes, source: str, **options) -> Document:
    """An rst document: the source with roles read as text and target lines removed, sections from the
    titles docutils finds. A severe docutils problem is one warning; the file is still read."""
    text, smap, warns = read_source(data, source, options.get("encoding"))
    edits = rst_edits(text)
    smap = smap.apply(edits)
    text = _apply(text, edits)
    check_text(text, source)
    blocks = rst_blocks(text)
    problem = rst_problem(text)
    if problem:
        warns.append(f"malformed reStructuredText ({problem}); the titles docutils rejects are read as text")
    emit_warnings(source, warns)
    return sectioned_document(text, source, blocks, metadata={"format": "rst", "warnings": warns}, source_map=smap)


__all__ = ["looks_like_rst", "load_rst", "rst_blocks", "rst_sections", "rst_edits", "rst_problem", "code_regions"]
