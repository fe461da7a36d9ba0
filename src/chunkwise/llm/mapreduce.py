"""Map-reduce summaries of a document of any length: ``chunkwise.summarize`` and ``chunkwise summarize``.

The document is chunked, every chunk becomes a numbered passage, and:

1. if all passages fit one prompt (:meth:`LLM.fits`), one call writes the summary;
2. otherwise each chunk is summarised on its own (*map*, in parallel, ``concurrency`` requests at a time),
   then consecutive notes are packed into groups that fit the context window and summarised again
   (*reduce*), level after level, until the notes fit one prompt and the final call writes the summary.

Notes keep the ``[n]`` citations of the chunks they come from, so the final summary cites chunks of the
document at any depth. The offline :class:`~chunkwise.llm.extractive.ExtractiveLLM` has no window, so it
takes the first branch: the most central sentences of the whole document, in the same output shape.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..document import Chunk, Document
from ..errors import ConfigError
from ..records import pick
from ..strategies import DEFAULT_STRATEGY
from ..strategies.params import StrategySpec
from ..validation import Interval, check, validated
from .base import LLM, STYLE, Passage, check_citations, check_style, passages_from

#: progress callback: (stage, done, total), e.g. ("map", 3, 40), ("reduce 1", 2, 8), ("final", 1, 1)
Progress = Callable[[str, int, int], None]

#: LLM requests at once (``summarize(concurrency=)`` and ``--concurrency``)
CONCURRENCY = Interval(int, 1, None)


@dataclass
class Summary:
    """A summary and how it was made. ``levels``: LLM calls per round (``[40, 8, 2, 1]`` = map, two
    reduce levels, final; ``[1]`` = one call); ``cut``: chunks whose text was cut to fit a prompt."""

    source: str
    text: str
    style: str
    passages: list[Passage]
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    llm: str = ""
    extractive: bool = False
    levels: list[int] = field(default_factory=list)
    cut: int = 0

    @property
    def depth(self) -> int:
        """Rounds of LLM calls: 1 when the document fit one prompt."""
        return len(self.levels)

    @property
    def calls(self) -> int:
        return sum(self.levels)

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "source summary=text style llm extractive citations invalid_citations levels depth calls cut"),
            "chunks": len(self.passages),
            "sources": [
                {"number": p.number, "label": p.label, "start": p.start, "end": p.end}
                for p in self.passages
                if p.number in set(self.citations)
            ],
        }


def _notes(comp_text: str, group: list[Passage]) -> Passage:
    """A note (the summary of ``group``) as a passage for the next level, standing for its chunks."""
    cites = sorted({n for p in group for n in p.cites})
    label = f"notes on passages {cites[0]}-{cites[-1]}" if cites else "notes"
    return Passage(number=None, text=comp_text, label=label, cites=cites)


def pack(notes: list[Passage], llm: LLM) -> list[list[Passage]]:
    """Consecutive notes grouped greedily so each group fits one prompt."""
    groups: list[list[Passage]] = []
    for p in notes:
        if groups and llm.fits(groups[-1] + [p]):
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


class MapReduce:
    """Summarises passages with ``llm``, splitting the work until it fits (see the module docstring)."""

    def __init__(self, llm: LLM, style: str = "bullets", concurrency: int = 4, progress: Progress | None = None):
        check_style(style, "summarize")
        check(concurrency, CONCURRENCY, "concurrency", "summarize")
        self.llm = llm
        self.style = style
        self.concurrency = concurrency
        self.progress = progress or (lambda stage, done, total: None)

    def _round(self, stage: str, groups: list[list[Passage]]) -> tuple[list[Passage], int]:
        """One level: every group summarised into notes, in parallel, order kept. Returns (notes, cut)."""
        self.progress(stage, 0, len(groups))
        done = 0
        out: list[Passage] = []
        cut = 0
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups))) as pool:
            futures = [pool.submit(self.llm.summarize, g, self.style, False) for g in groups]
            for g, fut in zip(groups, futures):
                comp = fut.result()
                cut += comp.cut
                out.append(_notes(comp.text, g))
                done += 1
                self.progress(stage, done, len(groups))
        return out, cut

    def run(self, passages: list[Passage]) -> tuple[str, list[int], int]:
        """The summary text, calls per level and chunks cut."""
        levels: list[int] = []
        cut = 0
        notes = passages
        if not self.llm.fits(passages):
            notes, c = self._round("map", [[p] for p in passages])
            levels.append(len(passages))
            cut += c
            level = 1
            while not self.llm.fits(notes):
                groups = pack(notes, self.llm)
                if len(groups) == len(notes):
                    raise ConfigError(
                        "the context window is too small to combine two partial summaries; "
                        "raise context_tokens or lower answer_tokens"
                    )
                notes, c = self._round(f"reduce {level}", groups)
                levels.append(len(groups))
                cut += c
                level += 1
        self.progress("final", 0, 1)
        comp = self.llm.summarize(notes, self.style, True)
        self.progress("final", 1, 1)
        levels.append(1)
        return comp.text, levels, cut + comp.cut


@validated("summarize", strategy=StrategySpec(), style=STYLE, concurrency=CONCURRENCY)
def summarize(
    doc_or_chunks: Document | str | os.PathLike | list[Chunk],
    llm: LLM | None = None,
    *,
    strategy: str = DEFAULT_STRATEGY,
    style: str = "bullets",
    concurrency: int = 4,
    progress: Progress | None = None,
    **params: Any,
) -> Summary:
    """Summarise a document (a :class:`Document`, a path, text) or its chunks, citing chunks as ``[n]``.

    ``llm``: an :class:`~chunkwise.llm.base.LLM` (default: the offline
    :class:`~chunkwise.llm.extractive.ExtractiveLLM`). ``strategy`` and ``params`` (``max_tokens``...)
    chunk a document; ``style``: ``bullets`` | ``paragraph``; ``concurrency``: map requests at once;
    ``progress(stage, done, total)`` is called as the work advances.
    """
    if isinstance(doc_or_chunks, (list, tuple)):
        chunks = list(doc_or_chunks)
        if chunks and not all(isinstance(c, Chunk) for c in chunks):
            raise ConfigError("summarize takes a Document, a path, a text or a list of Chunk objects")
        source = chunks[0].source if chunks else "<chunks>"
    else:
        from ..api import as_document, chunk

        doc = as_document(doc_or_chunks, text_ok=True)
        chunks = chunk(doc, strategy, **params)
        source = doc.source
    if llm is None:
        from .extractive import ExtractiveLLM

        llm = ExtractiveLLM()
    passages = passages_from(chunks)
    if not passages:
        return Summary(source, "", style, [], llm=llm.name, extractive=llm.extractive)
    text, levels, cut = MapReduce(llm, style, concurrency, progress).run(passages)
    valid, invalid = check_citations(text, [p.number for p in passages if p.number is not None])
    return Summary(source, text, style, passages, valid, invalid, llm.name, llm.extractive, levels, cut)


__all__ = ["summarize", "Summary", "MapReduce", "pack"]
