"""Evaluation questions for a folder of documents that has none: ``chunkwise questions DOCS -o DATASET``.

Most users have documents and no labelled queries, so ``eval`` and ``tune`` had nothing to measure. This
module writes a dataset in the neutral layout :mod:`.datasets` reads (``docs/`` + ``queries.jsonl`` with
exact reference offsets) plus a ``questions.json`` manifest saying how it was made (generator, prompt,
model, seed, filters, how many questions were kept and why the others were rejected).

Generators (``method``):

- ``heldout`` (inverse cloze task): a sentence of a passage is the query and is
  *removed from the written document*; the reference is the passage it came from, so the query never
  matches its answer word for word and retrieval has to find the context it was taken out of.
- ``cloze`` (the offline default): the same sentence as the query, left in the document; the reference is
  its neighbours (the sentence itself excluded), so a chunking scores when it keeps a sentence together with
  its context. The written documents are the originals, so the dataset's corpus is the one users index.
- ``heading``: a Markdown heading is the query for its section's text (documents without headings give
  none).
- ``keyphrase``: the passage's most distinctive words (TF-IDF over the corpus's passages) as a keyword
  query for that passage.
- ``llm``: a chat model (:class:`~chunkwise.llm.client.ChatClient`, cached per endpoint) writes a question
  a user would ask plus the exact supporting excerpt, in rotating styles (factoid, why/how,
  multi-sentence); the excerpt is located in the passage (exact, then case- and whitespace-normalised,
  then a fuzzy alignment) and the question is rejected when it cannot be found.

Passages are sampled stratified across documents and their sections (seeded round robin), so a long
document does not supply every question. Two filters apply to every generator and are counted in the
manifest: *near-duplicates* (word-set Jaccard with an already kept question at or above
``max_jaccard``) and *trivially lexical* questions (the fraction of the question's word trigrams found
verbatim in its reference above ``max_overlap``: a question copied out of its answer measures string
matching, not retrieval).

Known bias: every offline generator draws its questions from the text, so it favours lexical matching
(BM25) more than people do; ``heldout`` removes the exact sentence but keeps its vocabulary neighbours,
``keyphrase`` is lexical by construction, ``heading`` only works on documents with headings. See
docs/evaluation.md ("Generated questions") for how well each ranks pipelines like human questions do.
"""

from __future__ import annotations

import bisect
import difflib
import json
import math
import os
import random
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..document import Document
from ..errors import ConfigError, InputError
from ..segmentation.sentences import split_sentences

#: the generators, offline ones first
OFFLINE_METHODS = ("heldout", "cloze", "heading", "keyphrase")
METHODS = (*OFFLINE_METHODS, "llm")
#: what ``questions`` uses without an LLM endpoint: of the proxies, the one whose pipeline rankings agreed
#: best with human questions' (benchmarks/bench_questions.py; docs/evaluation.md "Generated questions")
DEFAULT_OFFLINE_METHOD = "cloze"
#: question styles the LLM generator rotates through
STYLES = {
    "factoid": "a short factual question (who, what, when, where, how many)",
    "why": "a why or how question",
    "multi": "a question whose answer needs two or more sentences of the passage together",
}
#: a passage is a run of whole sentences of one section, at most this many characters
PASSAGE_CHARS = 700
#: passages given to the LLM are longer (it picks its own excerpt inside)
LLM_PASSAGE_CHARS = 1500
#: sentences that can be a query: this many words at least and at most
MIN_QUERY_WORDS, MAX_QUERY_WORDS = 5, 40
#: keyphrase queries: this many terms
KEYPHRASE_TERMS = 4
#: the heading generator references at most this much of a section's text
HEADING_REFERENCE_CHARS = 2000

PROMPT = (
    'Passage from the document {doc!r}:\n"""\n{passage}\n"""\n\n'
    "Write {style} that a user of these documents would type into a search box and that this passage "
    "answers. Use your own words; do not copy phrases from the passage, and do not mention 'the passage'. "
    "Then copy, character for character, the shortest excerpt of the passage (whole sentences) that "
    'answers it.\nAnswer with JSON only: {{"question": "...", "excerpt": "..."}}'
)
SYSTEM = "You write evaluation questions for a search engine over a collection of documents."

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the and or but if then of in on at to for from by with without as is are was were be been being it "
    "its this that these those there here which who whom whose what when where why how not no nor do does did "
    "done can could should would may might must will shall have has had having i you he she we they them his "
    "her our their your my me us him than so such also into over under about after before between during "
    "through each other some any all most more many much very only own same just both few while up down out "
    "off again further once because until against above below s t one two new use used using".split()
)


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


@dataclass
class _Passage:
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


def passages(doc: Document, max_chars: int = PASSAGE_CHARS) -> list[_Passage]:
    """Runs of whole sentences inside one section (and one paragraph block), each at most ``max_chars``
    long unless one sentence alone is longer. Headings, table rows and code are not sentences here."""
    out: list[_Passage] = []
    text = doc.text
    for si, (a, b) in enumerate(_sections(doc)):
        run: list[tuple[int, int]] = []
        for s, e in split_sentences(text[a:b]):
            s, e = s + a, e + a
            piece = text[s:e]
            para_break = bool(run) and "\n\n" in text[run[-1][1] : s]
            prose = piece[:1] not in "#|`>-*" and sum(c.isalpha() for c in piece) > 0.5 * len(piece)
            if run and (not prose or para_break or e - run[0][0] > max_chars):
                out.append(_Passage(doc.source, si, run[0][0], run[-1][1], run))
                run = []
            if prose:
                run.append((s, e))
        if run:
            out.append(_Passage(doc.source, si, run[0][0], run[-1][1], run))
    return out


def stratified(groups: Mapping[str, Sequence[_Passage]], rng: random.Random) -> list[_Passage]:
    """All passages in a seeded round robin: documents in shuffled order, and inside a document its
    sections in turn, so the first ``n`` passages spread over documents and sections."""
    per_doc: list[list[_Passage]] = []
    for doc_id in sorted(groups):
        by_sec: dict[int, list[_Passage]] = {}
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
class _Filter:
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


# -- offline generators ---------------------------------------------------------------------------------


def _query_sentence(text: str, p: _Passage, rng: random.Random, inner: bool) -> tuple[int, int] | None:
    """A sentence of ``p`` fit to be a query (``inner``: with a neighbour on both sides)."""
    idx = list(range(1, len(p.sentences) - 1)) if inner else list(range(len(p.sentences)))
    rng.shuffle(idx)
    for i in idx:
        s, e = p.sentences[i]
        if MIN_QUERY_WORDS <= len(words(text[s:e])) <= MAX_QUERY_WORDS:
            return s, e
    return None


def _heldout(
    docs: dict[str, Document], order: list[_Passage], n: int, flt: _Filter, rng: random.Random, mask: bool
) -> dict[str, str]:
    """``heldout`` (``mask``: the query sentence cut out of the written text) and ``cloze`` (left in, the
    reference its neighbours). Returns the written texts."""
    cut: dict[str, list[tuple[int, int]]] = {}
    pending: list[tuple[Question, _Passage, tuple[int, int]]] = []
    for p in order:
        if len(flt.kept) >= n:
            break
        text = docs[p.doc].text
        if len(p.sentences) < 3:
            flt.rejected["passage under 3 sentences"] += 1
            continue
        sent = _query_sentence(text, p, rng, inner=True)
        if sent is None:
            flt.rejected["no sentence of 5-40 words"] += 1
            continue
        query = " ".join(text[sent[0] : sent[1]].split())
        # the reference: the passage without the sentence (its neighbours on both sides)
        rest = text[p.start : sent[0]] + " " + text[sent[1] : p.end]
        # cloze: the sentence and the whitespace around it are left out of the reference's two pieces
        a, b = sent
        while a > p.start and text[a - 1].isspace():
            a -= 1
        while b < p.end and text[b].isspace():
            b += 1
        q = Question(query, p.doc, p.start, p.end, "heldout" if mask else "cloze", exclude=None if mask else (a, b))
        if flt.offer(q, rest):
            pending.append((q, p, sent))
            cut.setdefault(p.doc, []).append(sent)
    texts = {d: doc.text for d, doc in docs.items()}
    if not mask:
        return texts
    for doc_id, spans in cut.items():
        texts[doc_id], shift = _remove(docs[doc_id].text, spans)
        for q, p, _ in pending:
            if q.doc == doc_id:
                q.start, q.end = shift(p.start), shift(p.end)
    return texts


def _remove(text: str, spans: list[tuple[int, int]]) -> tuple[str, Callable[[int], int]]:
    """``text`` without ``spans`` (each with the whitespace after it, so no double spaces are left) and a
    map from old offsets to new ones."""
    spans = sorted(spans)
    pieces, pos, cuts = [], 0, []
    for s, e in spans:
        while e < len(text) and text[e] in " \t":
            e += 1
        pieces.append(text[pos:s])
        cuts.append((s, e))
        pos = e
    pieces.append(text[pos:])
    starts = [s for s, _ in cuts]
    removed = [0]
    for s, e in cuts:
        removed.append(removed[-1] + e - s)

    def shift(i: int) -> int:
        k = bisect.bisect_right(starts, i)
        if k and i < cuts[k - 1][1]:  # inside a removed span: where it was
            return cuts[k - 1][0] - removed[k - 1]
        return i - removed[k]

    return "".join(pieces), shift


def _heading(docs: dict[str, Document], n: int, flt: _Filter, rng: random.Random) -> None:
    cands = []
    for doc_id in sorted(docs):
        doc = docs[doc_id]
        for i, s in enumerate(doc.sections):
            if s.heading_end <= s.heading_start or not s.path:
                continue
            body_start = s.heading_end
            text = doc.text
            while body_start < s.end and text[body_start].isspace():
                body_start += 1
            body_end = min(s.end, body_start + HEADING_REFERENCE_CHARS)
            body_end = len(text[:body_end].rstrip())
            if body_end - body_start < 80:
                continue
            title = s.path[-1].strip()
            if len(words(title)) < 2 and len(s.path) > 1:
                title = f"{s.path[-2].strip()}: {title}"
            cands.append((doc_id, i, Question(title, doc_id, body_start, body_end, "heading")))
    by_doc: dict[str, list[Question]] = {}
    for doc_id, _, q in cands:
        by_doc.setdefault(doc_id, []).append(q)
    lanes = [rng.sample(v, len(v)) for _, v in sorted(by_doc.items())]
    rng.shuffle(lanes)
    order = [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes if i < len(lane)]
    if not order:
        flt.rejected["no heading with a section under it"] += 1
    for q in order:
        if len(flt.kept) >= n:
            break
        if len(words(q.query)) < 1:
            flt.rejected["empty heading"] += 1
            continue
        flt.offer(q, "")  # the heading is part of the section: only duplicates are filtered


def _keyphrase(docs: dict[str, Document], order: list[_Passage], n: int, flt: _Filter) -> None:
    df: Counter = Counter()
    terms_of: dict[int, Counter] = {}
    for i, p in enumerate(order):
        c = Counter(
            w for w in words(docs[p.doc].text[p.start : p.end]) if w not in _STOP and len(w) > 2 and not w.isdigit()
        )
        terms_of[i] = c
        df.update(c.keys())
    total = len(order)
    for i, p in enumerate(order):
        if len(flt.kept) >= n:
            break
        c = terms_of[i]
        scored = sorted(c, key=lambda w: (-c[w] * math.log((1 + total) / (1 + df[w])), w))
        terms = [w for w in scored if df[w] < total][:KEYPHRASE_TERMS]
        if len(terms) < 2:
            flt.rejected["passage with under 2 distinctive words"] += 1
            continue
        flt.offer(Question(" ".join(terms), p.doc, p.start, p.end, "keyphrase"), "")


# -- the LLM generator ------------------------------------------------------------------------------------


def _norm_map(text: str) -> tuple[str, list[int]]:
    """``text`` case-folded with whitespace runs as one space, and each output character's input offset."""
    out, idx = [], []
    prev_space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                idx.append(i)
            prev_space = True
            continue
        for c in ch.casefold():
            out.append(c)
            idx.append(i)
        prev_space = False
    return "".join(out), idx


def locate(excerpt: str, text: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """Where ``excerpt`` lies in ``text[start:end]``: exactly; else case- and whitespace-normalised; else
    the span of a fuzzy alignment (difflib) that matches at least 90 % of the excerpt's characters and is
    at most 20 % longer than it. ``None`` when none of the three finds it."""
    end = len(text) if end is None else end
    excerpt = excerpt.strip()
    if not excerpt:
        return None
    i = text.find(excerpt, start, end)
    if i >= 0:
        return i, i + len(excerpt)
    hay, idx = _norm_map(text[start:end])
    needle, _ = _norm_map(excerpt)
    needle = needle.strip()
    if not needle or not hay:
        return None
    j = hay.find(needle)
    if j >= 0:
        return start + idx[j], start + idx[j + len(needle) - 1] + 1
    sm = difflib.SequenceMatcher(None, hay, needle, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size >= 3]
    if not blocks:
        return None
    matched = sum(b.size for b in blocks)
    a, z = blocks[0].a, blocks[-1].a + blocks[-1].size
    if matched < 0.9 * len(needle) or z - a > 1.2 * len(needle):
        return None
    return start + idx[a], start + idx[z - 1] + 1


def _parse_answer(answer: str) -> tuple[str, str] | None:
    m = re.search(r"\{.*\}", answer, re.S)
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    q, ex = obj.get("question"), obj.get("excerpt")
    if not isinstance(q, str) or not isinstance(ex, str) or not q.strip() or not ex.strip():
        return None
    return " ".join(q.split()), ex


def _llm(
    docs: dict[str, Document],
    order: list[_Passage],
    n: int,
    flt: _Filter,
    client: Any,
    styles: Sequence[str],
    concurrency: int,
    progress: Callable[[str], None],
) -> None:
    def ask(item: tuple[_Passage, str]) -> str:
        p, style = item
        prompt = PROMPT.format(doc=p.doc, passage=docs[p.doc].text[p.start : p.end], style=STYLES[style])
        return client.complete(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            answer_tokens=400,
            temperature=0.0,
        )

    items = [(p, styles[i % len(styles)]) for i, p in enumerate(order)]
    pos = 0
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        while pos < len(items) and len(flt.kept) < n:
            batch = items[pos : pos + max(concurrency, n - len(flt.kept))]
            pos += len(batch)
            for (p, style), answer in zip(batch, pool.map(ask, batch)):  # an endpoint failure raises here
                if len(flt.kept) >= n:
                    break
                parsed = _parse_answer(answer)
                if parsed is None:
                    flt.offer(None, "", "answer not JSON with a question and an excerpt")
                    continue
                query, excerpt = parsed
                span = locate(excerpt, docs[p.doc].text, p.start, p.end)
                if span is None:
                    flt.offer(None, "", "excerpt not found in the passage")
                    continue
                text = docs[p.doc].text
                flt.offer(Question(query, p.doc, span[0], span[1], "llm", style), text[span[0] : span[1]])
            progress(f"questions: {len(flt.kept)}/{n} kept after {pos} passages")


# -- the entry points -------------------------------------------------------------------------------------


def generate_questions(
    documents: Mapping[str, Document | str],
    method: str = DEFAULT_OFFLINE_METHOD,
    n: int = 100,
    seed: int = 0,
    client: Any = None,
    styles: Sequence[str] = tuple(STYLES),
    max_overlap: float = 0.5,
    max_jaccard: float = 0.8,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> QuestionSet:
    """Up to ``n`` questions over ``documents`` (id -> :class:`Document` or text), deterministic for a
    ``seed`` (the ``llm`` method: for a seed and a deterministic endpoint; answers are cached per endpoint).

    ``client`` is a :class:`~chunkwise.llm.client.ChatClient` (``method="llm"`` only). The filters:
    ``max_overlap`` (trivially lexical: word-trigram overlap of question and reference above it) and
    ``max_jaccard`` (near-duplicate of a kept question at or above it).
    """
    if method not in METHODS:
        raise ConfigError(f"unknown question method {method!r}; choose one of {', '.join(METHODS)}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ConfigError(f"the number of questions must be a positive integer, got {n!r}")
    for name, v in (("max_overlap", max_overlap), ("max_jaccard", max_jaccard)):
        if not 0.0 <= v <= 1.0:
            raise ConfigError(f"{name} must be in [0, 1], got {v!r}")
    bad = [s for s in styles if s not in STYLES]
    if bad or not styles:
        raise ConfigError(f"unknown question style {', '.join(bad) or '(none)'}; choose from {', '.join(STYLES)}")
    if method == "llm" and client is None:
        raise ConfigError("the llm question method needs an endpoint: --llm-base-url URL and --llm-model NAME")
    docs = {k: (v if isinstance(v, Document) else Document(v, source=k)) for k, v in documents.items()}
    for k, d in docs.items():
        d.source = k
    if not docs:
        raise InputError("no documents to write questions about")
    progress = progress or (lambda msg: None)
    rng = random.Random(seed)
    size = LLM_PASSAGE_CHARS if method == "llm" else PASSAGE_CHARS
    order = stratified({k: passages(d, size) for k, d in docs.items()}, rng)
    flt = _Filter(max_overlap, max_jaccard)
    texts = {k: d.text for k, d in docs.items()}
    if method in ("heldout", "cloze"):
        texts = _heldout(docs, order, n, flt, rng, mask=method == "heldout")
    elif method == "heading":
        _heading(docs, n, flt, rng)
    elif method == "keyphrase":
        _keyphrase(docs, order, n, flt)
    else:
        _llm(docs, order, n, flt, client, list(styles), concurrency, progress)
    manifest: dict[str, Any] = {
        "generator": f"chunkwise questions --method {method}",
        "method": method,
        "seed": seed,
        "requested": n,
        "kept": len(flt.kept),
        "rejected": dict(sorted(flt.rejected.items())),
        "passages": len(order),
        "documents": len(docs),
        "filters": {"max_lexical_overlap": max_overlap, "lexical_ngram": 3, "near_duplicate_jaccard": max_jaccard},
        "sampling": "passages of whole sentences inside one section (<= "
        f"{size} characters), seeded round robin over documents and their sections",
    }
    if method == "heldout":
        manifest["masked_sentences"] = len(flt.kept)
        manifest["note"] = "each query sentence is removed from the written document; the reference is its passage"
    if method == "llm":
        manifest.update(
            {
                "prompt": PROMPT,
                "system": SYSTEM,
                "styles": list(styles),
                "model": getattr(client, "model", None),
                "endpoint": getattr(client, "url", None),
            }
        )
    manifest["bias"] = (
        "questions are drawn from the text itself, so they favour lexical (BM25) matching more "
        "than people's questions; use them to compare pipelines, not as absolute scores"
    )
    return QuestionSet(texts, flt.kept, manifest, flt.rejected)


def doc_id_for(name: str) -> str:
    """The id a document gets in ``docs/``: its relative path, with ``.txt`` added unless it is already a
    text or Markdown file (the written file holds the loaded text, so offsets are into that text)."""
    return name if Path(name).suffix.lower() in (".md", ".markdown", ".txt") else f"{name}.txt"


def load_documents(
    paths: Sequence[str | os.PathLike],
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    all_files: bool = False,
    **load_options: Any,
) -> dict[str, Document]:
    """The documents under ``paths`` (files and folders, as ``chunkwise chunk`` reads them: the same walk,
    globs and loader options), keyed by the id they get in ``docs/`` (path relative to the folder given; a
    file given alone: its name)."""
    from ..formats import iter_documents
    from .datasets import make_document

    out: dict[str, Document] = {}
    roots = [Path(p) for p in paths]
    for source, doc in iter_documents([str(p) for p in paths], include, exclude, all_files=all_files, **load_options):
        if isinstance(doc, InputError):
            raise doc
        rel = None
        for r in roots:
            try:
                rel = Path(source).resolve().relative_to(r.resolve()).as_posix() if r.is_dir() else None
            except ValueError:
                continue
            if rel:
                break
        doc_id = doc_id_for(rel or Path(source).name)
        if doc_id in out:
            raise InputError(f"two documents would both be written as docs/{doc_id}", source=source)
        if doc.text.strip():
            out[doc_id] = make_document(doc.text, doc_id, Path(doc_id))
    if not out:
        raise InputError("no documents with text", source=", ".join(map(str, paths)))
    return out


def write_question_set(qs: QuestionSet, out: str | os.PathLike, force: bool = False) -> Path:
    """Write ``docs/``, ``queries.jsonl`` and ``questions.json`` into a temporary folder beside ``out``,
    check that :func:`~.datasets.load_dataset` reads every question back unchanged, then rename it to
    ``out``: a failed or interrupted run never leaves a partial dataset that looks complete."""
    from .datasets import load_dataset

    if not qs.questions:
        reasons = ", ".join(f"{k}: {v}" for k, v in qs.rejected.most_common()) or "no passages"
        raise ConfigError(f"no question could be generated ({reasons})")
    target = Path(out)
    if target.exists() and not (target.is_dir() and not any(target.iterdir())) and not force:
        raise ConfigError("already exists; choose another folder or pass --force to replace it", source=str(target))
    parent = target.parent if str(target.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = parent / f".{target.name}.partial-{os.getpid()}-{int(time.time() * 1000)}"
        tmp.mkdir()
    except OSError as exc:
        raise ConfigError(f"cannot create the dataset folder ({exc.strerror})", source=str(target)) from None
    try:
        for doc_id, text in qs.texts.items():
            p = tmp / "docs" / doc_id
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8", newline="")
        rows = [q.to_row(f"q{i:04d}", qs.texts[q.doc]) for i, q in enumerate(qs.questions, 1)]
        (tmp / "queries.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
        manifest = {**qs.manifest, "queries": len(rows), "kinds": dict(Counter(q.kind for q in qs.questions))}
        (tmp / "questions.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        ds = load_dataset(tmp)
        if ds.problems or len(ds.queries) != len(rows):
            raise ConfigError(f"the written dataset does not read back: {ds.problems[:1]}")
        if target.exists():
            old = parent / f".{target.name}.old-{os.getpid()}"
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ConfigError(f"cannot write the dataset ({exc.strerror or exc})", source=str(target)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def make_questions(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    method: str | None = None,
    n: int = 100,
    seed: int = 0,
    client: Any = None,
    force: bool = False,
    load_options: Mapping[str, Any] | None = None,
    **kw: Any,
) -> QuestionSet:
    """Python API of ``chunkwise questions``: load ``paths``, generate, write ``out`` (see
    :func:`generate_questions` and :func:`write_question_set`). ``method`` defaults to ``llm`` with a
    ``client``, else :data:`DEFAULT_OFFLINE_METHOD`."""
    method = method or ("llm" if client is not None else DEFAULT_OFFLINE_METHOD)
    docs = load_documents(list(paths), **dict(load_options or {}))
    qs = generate_questions(docs, method=method, n=n, seed=seed, client=client, **kw)
    write_question_set(qs, out, force=force)
    return qs


__all__ = [
    "generate_questions",
    "make_questions",
    "write_question_set",
    "load_documents",
    "locate",
    "lexical_overlap",
    "jaccard",
    "passages",
    "stratified",
    "Question",
    "QuestionSet",
    "METHODS",
    "OFFLINE_METHODS",
    "DEFAULT_OFFLINE_METHOD",
    "STYLES",
    "PROMPT",
]
