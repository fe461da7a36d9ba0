"""What every question generator shares (:mod:`.questions`): a question and its reference span, the
passages questions are drawn from and their stratified order, and the two filters every kept question
passes (trivially lexical, near-duplicate)."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..document import Document
from ..segmentation.sentences import split_sentences

#: a passage is a run of whole sentences of one section, at most this many characters
PASSAGE_CHARS = 700

_WORD = re.compile(r"\w+")


@dataclass
class Question:
    """One generated question and the span that answers it (offsets into the *written* document text)."""

    query: str
    doc: str
    start: int
    end: int
    kind: str
    style: str | None = None
    #: a span inside ``[start, end)`` that is not part of the reference (``cloze``: the query sentence)
    exclude: tuple[int, int] | None = None

    def spans(self) -> list[tuple[int, int]]:
        if self.exclude is None:
            return [(self.start, self.end)]
        return [(a, b) for a, b in ((self.start, self.exclude[0]), (self.exclude[1], self.end)) if b > a]

    def to_row(self, qid: str, text: str) -> dict[str, Any]:
        refs = [{"doc": self.doc, "start": a, "end": b, "content": text[a:b]} for a, b in self.spans()]
        row: dict[str, Any] = {"id": qid, "query": self.query, "references": refs, "kind": self.kind}
        if self.style:
            row["style"] = self.style
        return row


@dataclass
class QuestionSet:
    """What a generator produced: the documents as they are written (``heldout`` removes its query
    sentences), the kept questions and the manifest (``questions.json``)."""

    texts: dict[str, str]
    questions: list[Question]
    manifest: dict[str, Any]
    rejected: Counter = field(default_factory=Counter)
    #: document id -> the original file, copied byte-identical into ``docs/`` (documents not rewritten)
    originals: dict[str, str] = field(default_factory=dict)


@dataclass
class Passage:
    doc: str
    section: int
    start: int
    end: int
    sentences: list[tuple[int, int]]


# -- text measures ------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def lexical_overlap(query: str, reference: str, n: int = 3) -> float:
    """Fraction of the query's word ``n``-grams (shorter queries: as long as the query) that occur in the
    reference: 1.0 for a question copied out of its answer, near 0 for a paraphrase."""
    q = words(query)
    r = words(reference)
    n = max(1, min(n, len(q)))
    if not q:
        return 0.0
    grams = [tuple(q[i : i + n]) for i in range(len(q) - n + 1)]
    ref = {tuple(r[i : i + n]) for i in range(len(r) - n + 1)}
    return sum(g in ref for g in grams) / len(grams)


def jaccard(a: str, b: str) -> float:
    sa, sb = set(words(a)), set(words(b))
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


# -- passages and stratified sampling -----------------------------------------------------------------


def _sections(doc: Document) -> list[tuple[int, int]]:
    """Spans the passages stay inside: the document's sections, or the whole text."""
    spans = sorted({(s.start, s.end) for s in doc.sections if s.end > s.start})
    return spans or [(0, len(doc.text))]


def passages(doc: Document, max_chars: int = PASSAGE_CHARS) -> list[Passage]:
    """Runs of whole sentences inside one section (and one paragraph block), each at most ``max_chars``
    long unless one sentence alone is longer. Headings, table rows and code are not sentences here."""
    out: list[Passage] = []
    text = doc.text
    for si, (a, b) in enumerate(_sections(doc)):
        run: list[tuple[int, int]] = []
        for s, e in split_sentences(text[a:b]):
            s, e = s + a, e + a
            piece = text[s:e]
            para_break = bool(run) and "\n\n" in text[run[-1][1] : s]
            prose = piece[:1] not in "#|`>-*" and sum(c.isalpha() for c in piece) > 0.5 * len(piece)
            if run and (not prose or para_break or e - run[0][0] > max_chars):
                out.append(Passage(doc.source, si, run[0][0], run[-1][1], run))
                run = []
            if prose:
                run.append((s, e))
        if run:
            out.append(Passage(doc.source, si, run[0][0], run[-1][1], run))
    return out


def stratified(groups: Mapping[str, Sequence[Passage]], rng: random.Random) -> list[Passage]:
    """All passages in a seeded round robin: documents in shuffled order, and inside a document its
    sections in turn, so the first ``n`` passages spread over documents and sections."""
    per_doc: list[list[Passage]] = []
    for doc_id in sorted(groups):
        by_sec: dict[int, list[Passage]] = {}
        for p in groups[doc_id]:
            by_sec.setdefault(p.section, []).append(p)
        lanes = [rng.sample(v, len(v)) for _, v in sorted(by_sec.items())]
        rng.shuffle(lanes)
        seq = [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes if i < len(lane)]
        if seq:
            per_doc.append(seq)
    rng.shuffle(per_doc)
    return [lane[i] for i in range(max(map(len, per_doc), default=0)) for lane in per_doc if i < len(lane)]


# -- the filters ----------------------------------------------------------------------------------------


@dataclass
class QuestionFilter:
    """The two filters every generator's questions pass, with the count of each rejection reason for the
    manifest: trivially lexical (``max_overlap``) and near-duplicate of a kept question (``max_jaccard``)."""

    max_overlap: float
    max_jaccard: float
    kept: list[Question] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)

    def offer(self, q: Question | None, reference_text: str, reason: str | None = None) -> bool:
        if q is None:
            self.rejected[reason or "no question"] += 1
            return False
        if lexical_overlap(q.query, reference_text) > self.max_overlap:
            self.rejected["trivially lexical"] += 1
            return False
        if any(jaccard(q.query, k.query) >= self.max_jaccard for k in self.kept):
            self.rejected["near-duplicate"] += 1
            return False
        self.kept.append(q)
        return True


# -- how a generated set reads: copied runs and markup ------------------------------------------------

#: a question "copies" its corpus when it holds a run of this many words found in the corpus
COPIED_RUN_WORDS = 8
_MARKUP = re.compile(
    r"https?://|www\.|\{[a-z]+\}|`|\*\*|::|^\s*[#>|*-]\s|\[[^\]]*\]\(|<[^>]+>|\|\s|\.\. |:[a-z]+:`|_{2,}|={3,}|-{3,}"
)


def word_grams(text: str, n: int = COPIED_RUN_WORDS) -> set[int]:
    """Hashes of every run of ``n`` words of ``text`` (lower-cased), to test queries against."""
    w = words(text)
    return {hash(tuple(w[i : i + n])) for i in range(len(w) - n + 1)}


def copies_corpus(query: str, grams: set[int], n: int = COPIED_RUN_WORDS) -> bool:
    """Whether ``query`` holds a run of ``n`` words found in the corpus whose :func:`word_grams` are ``grams``."""
    w = words(query)
    return any(hash(tuple(w[i : i + n])) in grams for i in range(len(w) - n + 1))


def has_markup(query: str) -> bool:
    """Whether ``query`` carries Markdown or reStructuredText markup, a URL, an HTML tag or a
    ``{disfluency}`` token."""
    return bool(_MARKUP.search(query))


def text_measures(questions: Sequence[Question], texts: Mapping[str, str]) -> dict[str, Any]:
    """The share of ``questions`` that copy a run of :data:`COPIED_RUN_WORDS` words from ``texts`` and the
    share that carry markup (the manifest's ``measures``), and the median question length in words."""
    grams: set[int] = set()
    for t in texts.values():
        grams |= word_grams(t)
    n = len(questions) or 1
    lengths = sorted(len(words(q.query)) for q in questions)
    return {
        "copied_run_words": COPIED_RUN_WORDS,
        "copied_share": round(sum(copies_corpus(q.query, grams) for q in questions) / n, 4),
        "markup_share": round(sum(has_markup(q.query) for q in questions) / n, 4),
        "median_words": lengths[len(lengths) // 2] if lengths else 0,
    }
