"""Source code by its syntax: chunks start at definitions and statements, never inside one that fits.

The text is parsed with tree-sitter (the ``code`` extra: offline grammar wheels for Python, JavaScript,
TypeScript, Go, Rust, Java, C and C++). Then:

1. The top-level nodes (imports, classes, functions, statements) are the units; a comment right above a
   node (no blank line between) belongs to it, and a docstring is inside its function anyway.
2. A unit too big for ``max_tokens`` is opened: its children become units (a class's header and methods,
   a function's signature and the statements of its body), again and again, down to single statements.
   A statement too big alone (a long literal) is split by the recursive ``code`` rules.
3. Consecutive units are packed greedily up to ``max_tokens``
   (:func:`~chunkwise.strategies.packing.fill`), so every chunk starts where a unit starts.

``overlap`` starts a chunk up to that many tokens early, at a word of the chunk before (as ``markdown``).
A chunk's ``section`` is the enclosing definition (``["Flask", "route"]``, from
:func:`chunkwise.formats.code.code_sections`). The language is the loader's (``metadata["language"]``,
from the extension), the ``language`` parameter, or a guess from the text. Without the extra, or for a
language with no grammar, the text is split by ``recursive`` with the ``code`` separators (said once).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple

from ..document import Document
from ..formats.code import COMMENTS, GRAMMARS, code_sections, guess_language, parse_code, warn_no_grammar
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from ..validation import Options
from .base import CountingStrategy, Span, max_chars_for, trim_span
from .packing import fill, word_overlap
from .recursive import recursive_split_counted, resplit_over_cap
from .tidy import MIN_CHUNK_TOKENS, is_junk


class CodeChunker(CountingStrategy):
    """Cut at syntax boundaries (definitions, then statements) and pack whole units up to ``max_tokens``.

    ``language``: ``None`` (the document's, else guessed from the text) or one of the grammars' names."""

    name = "code"
    _parameter_constraints = {"language": [Options(*GRAMMARS, what="a language"), None]}

    def __init__(
        self,
        *,
        language: str | None = None,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.language = language

    def language_of(self, doc: Document) -> str | None:
        return self.language or doc.metadata.get("language") or guess_language(doc.text)

    def prepare_document(self, doc: Document) -> Document:
        if doc.sections or not doc.text:
            return doc
        language = self.language_of(doc)
        metadata = {**doc.metadata, "language": language}
        return dataclasses.replace(doc, sections=code_sections(doc.text, language), metadata=metadata)

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        text = doc.text
        language = self.language_of(doc)
        tree = parse_code(text, language)
        if tree is None:
            warn_no_grammar(language)
            return recursive_split_counted(
                text, start, end, tokenizer, self.max_tokens, overlap=self.overlap, separators="code"
            )
        max_tokens, max_chars = self.max_tokens, max_chars_for(self.max_tokens)
        tm = TokenMap(text[start:end], tokenizer, base=start)

        def fits(a: int, b: int) -> bool:
            return b - a <= max_chars and tm.estimate(a, b) <= max_tokens

        units = _headers_lead(_units(tree, start, end, fits), fits)
        spans: list[Span] = []
        counts: list[int | None] = []
        plain: list[Span] = []

        def flush() -> None:
            for a, b in fill(plain, tm.estimate, max_tokens, max_chars):
                a, b = trim_span(text, a, b)
                if b > a:
                    spans.append((a, b))
                    counts.append(None)
            plain.clear()

        for unit in units:
            a, b, too_big = unit.start, unit.end, unit.too_big
            if unit is _BREAK:
                flush()
            elif too_big:
                flush()
                sub, sub_counts = recursive_split_counted(
                    text, a, b, tokenizer, max_tokens, separators="docstring" if unit.prose else "code", token_map=tm
                )
                if unit.prose:
                    sub, sub_counts = _closing_stays(text, sub, sub_counts, tokenizer, max_tokens)
                spans += sub
                counts += sub_counts
            else:
                plain.append((a, b))
        flush()
        if self.overlap and len(spans) > 1:  # as ``markdown``: kept where the exact count still fits
            wide_spans = word_overlap(text, spans, tm, self.overlap, max_tokens, max_chars)
            for k, (plain_span, wide) in enumerate(zip(list(spans), wide_spans)):
                if wide != plain_span and tokenizer.count(text[wide[0] : wide[1]]) <= max_tokens:
                    spans[k], counts[k] = wide, None
        todo = [i for i, c in enumerate(counts) if c is None]
        for i, c in zip(todo, tm.counts(text, [spans[i] for i in todo])):
            counts[i] = c
        exact = [int(c) for c in counts if c is not None]
        return resplit_over_cap(text, spans, exact, tokenizer, max_tokens, "code")


class Unit(NamedTuple):
    start: int
    end: int
    too_big: bool  # over the cap even alone
    header: bool  # introduces what follows (``class X:``, a signature)
    prose: bool = False  # a docstring, string statement or comment: cut at its paragraphs and lines


def _units(tree, start: int, end: int, fits) -> list[Unit]:
    """Units tiling ``[start, end)``: the top-level nodes, each one that does not fit opened into its
    children (:func:`_inner_children`), with :data:`_BREAK` around the pieces of an opened node."""
    text = tree.text
    units: list[Unit] = []

    def open_node(children, a: int, b: int, opened: bool) -> None:
        first = next((c for c in children if tree.pos(c.start_byte) <= a < tree.pos(c.end_byte)), None)
        cuts: list[list] = [[a, first]]
        for child in children:
            c = tree.pos(child.start_byte)
            if c >= b:
                break
            if c <= a or not child.is_named:
                continue
            prev = child.prev_sibling
            gap = text[tree.pos(prev.end_byte) : c] if prev is not None else "\n\n"
            if child.type in COMMENTS and "\n" not in gap:
                continue  # a comment at the end of a line belongs to that line
            last = cuts[-1][1]
            if last is not None and last.type in COMMENTS and last == prev and gap.count("\n") <= 1:
                cuts[-1][1] = child  # a comment right above: its unit now stands for the code under it
                continue
            cuts.append([c, child])
        bounds = [c for c, _ in cuts] + [b]
        for k, ((x, node), y) in enumerate(zip(cuts, bounds[1:])):
            if y <= x:
                continue
            if fits(x, y):
                prose = node is not None and _is_prose(node)
                units.append(Unit(x, y, False, opened and k == 0 and len(cuts) > 1, prose))
            elif node is not None and _is_prose(node):
                units.append(Unit(x, y, True, False, prose=True))  # a docstring or comment: its own cuts
            elif node is None or node.child_count == 0:
                units.append(Unit(x, y, True, False))
            else:  # its pieces are packed among themselves, not with its neighbours
                units.append(_BREAK)
                open_node(_inner_children(node), x, y, True)
                units.append(_BREAK)

    open_node(tree.root.children, start, end, False)
    return units


def _headers_lead(units: list[Unit], fits) -> list[Unit]:
    """A header (``class X:``, a signature) joined to what follows it rather than ending a chunk: to the
    next unit where both fit, to a statement too big alone or a docstring too big beside it so that the
    header starts its first piece."""
    merged: list[Unit] = []
    for unit in units:
        header = bool(merged) and merged[-1] is not _BREAK and merged[-1].header
        if unit is _BREAK:
            if merged and merged[-1] is not _BREAK and not header:
                merged.append(unit)  # (a header flows on into what it introduces)
        elif header and not unit.too_big and fits(merged[-1].start, unit.end):
            merged[-1] = Unit(merged[-1].start, unit.end, False, unit.header)
        elif header and (unit.too_big or unit.prose):
            merged[-1] = Unit(merged[-1].start, unit.end, True, False, unit.prose)
        else:
            merged.append(unit)
    return merged


#: between the units of a node that was opened and those around it: packing starts afresh
_BREAK = Unit(-1, -1, False, False)


def _is_prose(node) -> bool:
    """A comment, a string, or a statement that is only a string (a docstring): text, not code."""
    if node.type in COMMENTS or node.type in _STRINGS:
        return True
    named = [c for c in node.children if c.is_named]
    return node.type == "expression_statement" and len(named) == 1 and named[0].type in _STRINGS


def _closing_stays(text: str, spans: list[Span], counts: list[int], tokenizer: Tokenizer, max_tokens: int):
    """A docstring's last piece too small to stand (its closing quotes, a word and the quotes) joins the
    piece before, or takes that piece's last line or last words along where the whole does not fit: the
    chunk rules would merge it into a neighbour, maybe the code after the docstring, whose chunk would then
    start at the quotes instead of at its first statement."""
    while len(spans) >= 2 and _too_small(text, *spans[-1], counts[-1]):
        joined = _join_last(text, spans, counts, tokenizer, max_tokens)
        if joined is None:
            break
        spans, counts = joined
    return spans, counts


def _join_last(text: str, spans: list[Span], counts: list[int], tokenizer: Tokenizer, max_tokens: int):
    (pa, pb), (_, b) = spans[-2], spans[-1]
    n = tokenizer.count(text[pa:b])
    if n <= max_tokens:
        return [*spans[:-2], (pa, b)], [*counts[:-2], n]
    words = [pa + m.start() for m in re.finditer(r"(?<=\s)\S", text[pa:pb])]
    for k, cut in enumerate([text.rfind("\n", pa, pb) + 1, *reversed(words[-16:])]):
        head = trim_span(text, pa, cut) if cut > pa else (pa, pa)
        if head[1] <= head[0]:
            continue
        n = tokenizer.count(text[cut:b])
        if n > max_tokens and k:
            break  # (the words go backwards: an earlier one only adds tokens)
        if not _too_small(text, cut, b, n):
            return [*spans[:-2], head, (cut, b)], [*counts[:-2], tokenizer.count(text[head[0] : head[1]]), n]
    return None


def _too_small(text: str, a: int, b: int, n: int) -> bool:
    return n < MIN_CHUNK_TOKENS or is_junk(text[a:b])


def _inner_children(node):
    """What a node that does not fit opens into: the statements of its body (a function's, a class's, an
    ``if``'s) and the clauses after it (``else``, ``except``), so everything before the first statement is
    the header unit; a node without a body, its own children."""
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    if body is None:
        body = next((c for c in node.children if c.type in _BODIES), None)
    if body is None or not body.child_count:
        return node.children
    after = [c for c in node.children if c.start_byte >= body.end_byte]
    return [*body.children, *after]


#: string literals of the grammars (a docstring is an ``expression_statement`` holding one)
_STRINGS = frozenset(
    {
        "string",
        "concatenated_string",
        "template_string",
        "string_literal",
        "raw_string_literal",
        "interpreted_string_literal",
        "text_block",
    }
)

#: node types that are a definition's body where the grammar has no ``body`` field
_BODIES = frozenset(
    {"block", "class_body", "statement_block", "declaration_list", "field_declaration_list", "compound_statement"}
)


__all__ = ["CodeChunker"]
