"""The offline :class:`LLM`: answers and summaries made of the passages' own sentences, with citations.

No model writes anything, so nothing can be invented: an answer is the sentences most similar to the
question (cosine similarity with the embedder the index already uses) among a shortlist of those whose
words best match the question's (embedding every sentence and pair of five passages cost ~0.6 CPU-s per
question with MiniLM; the shortlist keeps a warm question near the cost of its search), a summary the most central
sentences (similarity to the mean of all sentence vectors, which equals the sum of a sentence's similarities
to all the others for unit vectors: degree centrality), each followed by the number of its passage.
Sentence vectors a semantic strategy already computed while chunking (``Chunk.sentence_vectors``) are
reused instead of embedding again.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..segmentation.sentences import split_sentences
from ..validation import Interval, validated
from .base import ANSWER_PARAMS, LLM, PASSAGES, SUMMARY_PARAMS, Completion, Passage, quote

#: an answer sentence must score at least this fraction of the best sentence's similarity
MIN_RELATIVE = 0.75
_MARKER = re.compile(r"^(?:[-*•+]\s+)+")
_HEADING = re.compile(r"\s{0,3}#{1,6}\s[^\n]*\s*$")
#: a summary sentence this similar to one already chosen is a repeat and skipped
REDUNDANT = 0.9
#: answer candidates embedded per question (default of ``ExtractiveLLM(shortlist=...)``), chosen by words:
#: measured in benchmarks/results/store.md ("Warm ask")
SHORTLIST = 4
#: sentence and pair vectors kept in the process (per embedder), so a follow-up question about the same
#: passages embeds nothing again
MEMO_SIZE = 4096
_MEMO: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_MEMO_LOCK = threading.Lock()  # the web app answers from several threads


class ExtractiveLLM(LLM):
    """Extractive answers and summaries; ``embedder`` defaults to ``minilm`` (set by ``Index.ask`` to the
    index's own). ``answer_sentences``: at most this many sentences in an answer; ``summary_sentences``:
    in a summary; ``shortlist``: answer candidates embedded per question, those whose words best match the
    question's (``None``: every sentence and pair of consecutive sentences)."""

    name = "extractive"
    extractive = True

    @validated(
        "ExtractiveLLM",
        answer_sentences=Interval(int, 1, None),
        summary_sentences=Interval(int, 1, None),
        shortlist=[Interval(int, 1, None), None],
    )
    def __init__(
        self,
        embedder: Any = None,
        answer_sentences: int = 3,
        summary_sentences: int = 8,
        shortlist: int | None = SHORTLIST,
    ):
        self.embedder = embedder
        self.answer_sentences = answer_sentences
        self.summary_sentences = summary_sentences
        self.shortlist = shortlist

    def _get_embedder(self):
        if self.embedder is None:
            from ..embeddings import get_embedder

            self.embedder = get_embedder("minilm")
        return self.embedder

    @staticmethod
    @validated("ExtractiveLLM.sentences", passages=PASSAGES)
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
        return self._unit_vectors([t for _, t, _ in items], [v for _, _, v in items])

    def _unit_vectors(self, texts: list[str], kept: list[Any] | None = None) -> np.ndarray:
        """Unit vectors of ``texts``: ``kept[i]`` when not None, else from the process's memo, else embedded
        (all of those in one call, then memoised)."""
        emb = self._get_embedder()
        model = str(getattr(emb, "model_id", None) or type(emb).__name__)
        vecs: list[Any] = list(kept) if kept is not None else [None] * len(texts)
        with _MEMO_LOCK:
            for i, t in enumerate(texts):
                if vecs[i] is None and (hit := _MEMO.get((model, t))) is not None:
                    _MEMO.move_to_end((model, t))
                    vecs[i] = hit
        missing = [i for i, v in enumerate(vecs) if v is None]
        if missing:
            embedded = emb.embed([texts[i] for i in missing])
            with _MEMO_LOCK:
                for i, v in zip(missing, embedded):
                    vecs[i] = v
                    _MEMO[(model, texts[i])] = np.asarray(v, dtype=np.float32)
                while len(_MEMO) > MEMO_SIZE:
                    _MEMO.popitem(last=False)
        if not vecs:
            return np.zeros((0, int(getattr(emb, "dim", 0) or 0)), dtype=np.float32)
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

    @validated(**ANSWER_PARAMS)
    def answer(
        self, question: str, passages: list[Passage], on_token: Callable[[str], None] | None = None
    ) -> Completion:
        """The sentences (or pairs of consecutive sentences) closest to the question, best first, each with
        its passage number, without overlaps, up to ``answer_sentences`` sentences."""
        items = self.sentences(passages)
        if not items:
            return Completion("", list(passages))
        cands = self._candidates(items)
        if self.shortlist is not None and len(cands) > self.shortlist:
            cands = shortlist(question, [t for _, t, _ in items], cands, self.shortlist)
        # one call embeds what the shortlist needs: its sentences (kept vectors reused) and its pairs
        texts = [" ".join(items[i][1] for i in c) for c in cands]
        kept = [items[c[0]][2] if len(c) == 1 else None for c in cands]
        cand_vecs = self._unit_vectors(texts, kept)
        emb = self._get_embedder()
        from ..embeddings.vectors import query_vectors

        q = np.asarray(query_vectors(emb, [question])[0], dtype=np.float32)  # a query, not a passage
        q = q / (np.linalg.norm(q) or 1.0)
        sims = cand_vecs @ q
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

    @validated(**SUMMARY_PARAMS)
    def summarize(self, passages: list[Passage], style: str = "bullets", final: bool = True) -> Completion:
        """The most central sentences, in document order, without near-repeats."""
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


def shortlist(question: str, texts: list[str], cands: list[tuple[int, ...]], size: int) -> list[tuple[int, ...]]:
    """At most ``size`` of ``cands`` (tuples of indices into ``texts``, in passage order) to embed: sentences
    taken best first by the weight of the question's words they hold (each word by its rarity among
    ``texts``, matched by Snowball stem), ties in passage order (passages come best first), each followed by
    its pairs with the sentence after and before it. A sentence holding none of the words comes after every
    one that holds some."""
    from ..segmentation.lexical import lexical_terms
    from .evidence import QUESTION_WORDS, stems

    wanted = set(stems([t for t in lexical_terms(question) if t not in QUESTION_WORDS]))
    held = [set(stems(lexical_terms(t))) & wanted for t in texts]
    df: dict[str, int] = {}
    for terms in held:
        for t in terms:
            df[t] = df.get(t, 0) + 1
    weight = {t: math.log(1 + len(texts) / n) for t, n in df.items()}
    score = [sum(weight[t] for t in terms) for terms in held]
    by_first: dict[int, list[tuple[int, ...]]] = {}
    for c in cands:
        by_first.setdefault(c[0], []).append(c)
    out: dict[tuple[int, ...], None] = {}
    for i in sorted(sorted({c[0] for c in cands if len(c) == 1} or {c[0] for c in cands}), key=lambda i: -score[i]):
        # the sentence, its pair with the next one, then with the one before
        for c in [*by_first.get(i, []), *(by_first.get(i - 1, []) if (i - 1, i) in cands else [])]:
            if c in ((i,), (i, i + 1), (i - 1, i)):
                out.setdefault(c, None)
        if len(out) >= size:
            break
    picked = set(list(out)[:size])
    return [c for c in cands if c in picked]  # passage order, as the caller breaks ties by it


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
