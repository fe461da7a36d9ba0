"""The ``pysbd`` and ``blingfire`` back-ends of :func:`.sentences.split_sentences`: their sentence strings
aligned back onto the text as cut positions, block by block.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..errors import ConfigError, MissingDependencyError
from .sentence_rules import SENTENCE_BACKENDS, Span

# --------------------------------------------------------------------------------------------------------
# pysbd and blingfire, aligned back onto the text
# --------------------------------------------------------------------------------------------------------


def _backend_function(backend: str, language: str | None) -> Callable[[str], list[str]] | None:
    """The function that splits one block of text into sentence strings (None for chunkwise)."""
    if backend == "chunkwise":
        return None
    if backend not in SENTENCE_BACKENDS:
        raise ConfigError(f"unknown sentence back-end {backend!r}; choose one of {', '.join(SENTENCE_BACKENDS)}")
    import importlib.util  # here, not at the top: the default back-end needs no look-up

    if importlib.util.find_spec(backend) is None:
        raise MissingDependencyError(f"the {backend} sentence back-end", "sentences", backend)
    if backend == "pysbd":
        return _pysbd_segmenter(language).segment
    import blingfire

    return lambda block: blingfire.text_to_sentences(block).split("\n")


@functools.lru_cache(maxsize=16)
def _pysbd_segmenter(language: str | None):
    """A pysbd Segmenter for ``language`` (English when the language is unknown to pysbd); built once."""
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    lang = language if language in LANGUAGE_CODES else "en"
    return pysbd.Segmenter(language=lang, clean=False)


def _external_cuts(text: str, split_block: Callable[[str], list[str]]) -> list[int]:
    """Cuts from an external splitter, run block by block (blank lines always end a sentence)."""
    cuts = []
    for start, end in _blocks(text):
        cuts.append(start)
        try:
            sentences = split_block(text[start:end])
        except Exception:  # a peer library failing on hostile text must not lose the text
            sentences = [text[start:end]]
        cuts.extend(_align(text, start, end, sentences))
    return cuts


#: Longest piece of text a peer sees in one call. pysbd's time grows with the square of the sentences per
#: call (6,000 short sentences take 13 s, 100,000 about an hour), so a longer paragraph is fed in pieces.
PEER_BLOCK_CHARS = 10_000


def _blocks(text: str) -> list[Span]:
    """Paragraph blocks of ``text`` (separated by blank lines), each at most ``PEER_BLOCK_CHARS`` long."""
    blocks = []
    from .sentences import _spans_from_cuts  # the splitter's own trimming (that module imports this one)

    for start, end in _spans_from_cuts(text, _blank_line_cuts(text)):
        while end - start > PEER_BLOCK_CHARS:
            cut = _block_cut(text, start, start + PEER_BLOCK_CHARS)
            blocks.append((start, cut))
            start = cut
        blocks.append((start, end))
    return blocks


def _block_cut(text: str, start: int, limit: int) -> int:
    """Where to end an over-long block: the last line break before ``limit``, else the last space, else
    ``limit`` itself (text without any whitespace)."""
    floor = start + PEER_BLOCK_CHARS // 2
    for sep in ("\n", " "):
        pos = text.rfind(sep, floor, limit)
        if pos != -1:
            return pos + 1
    return limit


def _blank_line_cuts(text: str) -> list[int]:
    """Positions inside every blank line."""
    cuts = []
    offset = 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if line.isspace():
            cuts.append(offset)
    return cuts


def _align(text: str, start: int, end: int, sentences: list[str]) -> list[int]:
    """End offsets in ``text`` of each of ``sentences`` (strings from a splitter that may alter whitespace).

    Sentences are matched on their non-whitespace characters in order; a character the splitter changed or
    dropped is skipped after a short look-ahead, so one odd character cannot derail the rest.
    """
    cuts = []
    pos = start
    for sentence in sentences:
        body = sentence.strip()
        if not body:
            continue
        while pos < end and text[pos].isspace():
            pos += 1
        if text.startswith(body, pos) and pos + len(body) <= end:
            pos += len(body)
        else:
            pos = _align_chars(text, pos, end, body)
        cuts.append(pos)
    return cuts


def _align_chars(text: str, pos: int, end: int, body: str) -> int:
    """Character-by-character alignment of ``body`` from ``pos`` (the slow path for altered whitespace)."""
    for ch in body:
        if ch.isspace():
            continue
        while pos < end and text[pos].isspace():
            pos += 1
        if pos < end and text[pos] == ch:
            pos += 1
            continue
        found = text.find(ch, pos, min(end, pos + 16))
        if found != -1:
            pos = found + 1
    return pos
