"""The offline :class:`LLM`: answers and summaries made of the passages' own sentences, with citations.

No model writes anything, so nothing can be invented: an answer is the sentences most similar to the
question (cosine similarity with the embedder the index already uses), a summary the most central
sentences (similarity to the mean of all sentence vectors, which equals the sum of a sentence's similarities
to all the others for unit vectors: degree centrality), each followed by the number of its passage.
Sentence vectors a semantic strategy already computed while chunking (``Chunk.sentence_vectors``) are
reused instead of embedding again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..segmentation.sentences import split_sentences
from ..validation import Interval, validated
from .base import LLM, Completion, Passage, check_style, quote

#: an answer sentence must score at least this fraction of the best sentence's similarity
MIN_RELATIVE = 0.75
_MARKER = re.compile(r"^(?:[-*•+]\s+)+")
_HEADING = re.compile(r"\s{0,3}#{1,6}\s[^\n]*\s*$")
#: a summary sentence this similar to one already chosen is a repeat and skipped
REDUNDANT = 0.9


class ExtractiveLLM(LLM):
    """Extractive answers and summaries; ``embedder`` defaults to ``minilm`` (set by ``Index.ask`` to the
    index's own). ``answer_sentences``: at most this many sentences in an answer; ``summary_sentences``:
    in a summary."""

    name = "extractive"
    extractive = True

    @validated("ExtractiveLLM", answer_sentences=Interval(int, 1, None), summary_sentences=Interval(int, 1, None))
    def __init__(self, embedder: Any = None, answer_sentences: int = 3, summary_sentences: int = 8):
        self.embedder = embedder
        self.answer_sentences = answer_sentences
        self.summary_sentences = summary_sentences

    def _get_embedder(self):
        if self.embedder is None:
            from ..embeddings import get_embedder

            self.embedder = get_embedder("minilm")
        return self.embedder

    @staticmethod
    def sentences(passages: list[Passage]) -> list[tuple[Passage, str, Any]]:
        """``(passage, sentence text, kept vector or None)`` for every sentence of every passage."""
        out: list[tuple[Passage, str, Any]] = []
        for p in passages:
            origin = p.origin
            spans = getattr(origin, "sentence_spans", None)
            vecs = getattr(origin, "sentence_vectors", None)
            if spans and vecs is not None and len(vecs) == len(spans) and p.start is not None:
                for (a, b), v in zip(spans, vecs):
                    a, b = max(a, p.start) - p.start, min(b, p.end) - p.start
                    text = _clean(p.text[a:b])
                    if text:
                        out.append((p, text, v))
                continue
            for a, b in split_sentences(p.text):
                text = _clean(p.text[a:b])
                if text and not _HEADING.match(p.text[a:b]):  # a heading names, never answers
                    out.append((p, text, None))
        return out

    def _vectors(self, items: list[tuple[Passage, str, Any]]) -> np.ndarray:
        """Unit vectors of the sentences: kept ones reused, the rest embedded in one call."""
        missing = [i for i, (_, _, v) in enumerate(items) if v is None]
        vecs: list[Any] = [v for _, _, v in items]
        if missing:
            emb = self._get_embedder().embed([items[i][1] for i in missing])
            for i, v in zip(missing, emb):
                vecs[i] = v
        m = np.asarray(np.stack(vecs), dtype=np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms == 0, 1, norms)

    @staticmethod
    def _candidates(items: list[tuple[Passage, str, Any]]) -> list[tuple[int, ...]]:
        """Answer candidates: every sentence, and every two consecutive sentences of one passage (an answer
        often needs its condition and its instruction: "On foggy days ... . Open the vents ..."); headings
        and other fragments are left out."""
        keep = [i for i, (_, t, _) in enumerate(items) if not _fragment(t)]
        cands: list[tuple[int, ...]] = [(i,) for i in keep]
        cands += [
            (i, i + 1) for i in keep if i + 1 < len(items) and i + 1 in set(keep) and items[i][0] is items[i + 1][0]
        ]
        return cands or [(i,) for i in range(len(items))]

    def answer(
        self, question: str, passages: list[Passage], on_token: Callable[[str], None] | None = None
    ) -> Completion:
        """The sentences (or pairs of consecutive sentences) closest to the question, best first, each with
        its passage number, without overlaps, up to ``answer_sentences`` sentences."""
        items = self.sentences(passages)
        if not items:
            return Completion("", list(passages))
        cands = self._candidates(items)
        singles = self._vectors(items)
        pairs = [c for c in cands if len(c) == 2]
        emb = self._get_embedder()
        vecs: dict[tuple[int, ...], Any] = {c: singles[c[0]] for c in cands if len(c) == 1}
        if pairs:
            for c, v in zip(pairs, emb.embed([items[c[0]][1] + " " + items[c[1]][1] for c in pairs])):
                vecs[c] = np.asarray(v, dtype=np.float32) / (np.linalg.norm(v) or 1.0)
        from ..embeddings.vectors import query_vectors

        q = np.asarray(query_vectors(emb, [question])[0], dtype=np.float32)  # a query, not a passage
        q = q / (np.linalg.norm(q) or 1.0)
        sims = np.array([float(vecs[c] @ q) for c in cands])
        order = np.argsort(-sims, kind="stable")
        best = float(sims[order[0]])
        used: set[int] = set()
        picked: list[tuple[int, ...]] = []
        for j in order:
            c = cands[j]
            if sum(len(x) for x in picked) >= self.answer_sentences or float(sims[j]) < MIN_RELATIVE * best:
                break
            if used & set(c):
                continue
            picked.append(c)
            used |= set(c)
        text = " ".join(quote(" ".join(items[i][1] for i in c)) + f" [{items[c[0]][0].number}]" for c in picked)
        if on_token:
            on_token(text)
        return Completion(text, list(passages))

    def summarize(self, passages: list[Passage], style: str = "bullets", final: bool = True) -> Completion:
        """The most central sentences, in document order, without near-repeats."""
        check_style(style, "ExtractiveLLM.summarize")
        items = self.sentences(passages)
        items = [it for it in items if not _fragment(it[1])] or items
        if not items:
            return Completion("", list(passages))
        vectors = self._vectors(items)
        centroid = vectors.mean(axis=0)
        centrality = vectors @ centroid
        chosen: list[int] = []
        for i in np.argsort(-centrality, kind="stable"):
            if len(chosen) >= self.summary_sentences:
                break
            if chosen and float(np.max(vectors[chosen] @ vectors[i])) >= REDUNDANT:
                continue
            chosen.append(int(i))
        chosen.sort()  # document order
        lines = [
            f"{quote(items[i][1])} [{items[i][0].number}]" if items[i][0].number is not None else items[i][1]
            for i in chosen
        ]
        text = "\n".join(f"- {s}" for s in lines) if style == "bullets" else " ".join(lines)
        return Completion(text, list(passages))


def _clean(sentence: str) -> str:
    """One line of plain text: without a leading list marker ("- ", "* ", "•") or Markdown markup."""
    return _MARKER.sub("", " ".join(strip_markdown(sentence).split()))


_MD_RULES = (
    (re.compile(r"<!--.*?(?:-->|$)", re.S), ""),  # comments
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links: their text
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),  # reference links
    (re.compile(r"<(https?://[^>\s]+)>"), r"\1"),  # autolinks: the address
    (
        re.compile(r"</?(?:abbr|span|a|b|i|em|strong|small|mark|sup|sub|kbd|u|s|del|ins|br)\b[^<>]*>", re.I),
        "",
    ),  # inline HTML
    (re.compile(r"(?m)^\s{0,3}#{1,6}\s+"), ""),  # ATX headings
    (re.compile(r"(?m)^\s{0,3}>\s?"), ""),  # block quotes
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # bold
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<![\w_])_(?=\S)([^_]+?)(?<=\S)_(?![\w_])"), r"\1"),  # _emphasis_ (not snake_case)
    (re.compile(r"`+([^`]*)`+"), r"\1"),  # code spans
)


def strip_markdown(text: str) -> str:
    """``text`` without Markdown markup (headings' #, emphasis, code backticks, link targets, comments,
    inline HTML tags such as ``<abbr title="...">JWT</abbr>``); the words stay."""
    for pattern, repl in _MD_RULES:
        text = pattern.sub(repl, text)
    return text


def _fragment(sentence: str) -> bool:
    """A heading or a scrap, not a sentence that can answer: under 4 words, or under 10 words without
    closing punctuation ("2.1 Cleaning the Lens")."""
    words = sentence.split()
    return len(words) < 4 or (len(words) < 10 and sentence.rstrip()[-1:] not in ".!?。！？…\"'”)")


__all__ = ["ExtractiveLLM", "strip_markdown"]
