"""Retrieve, then answer with citations: what ``Index.ask`` and ``chunkwise ask`` do.

The retrieved chunks become numbered passages with their provenance; passages below a relevance threshold
are dropped (none left: "no relevant passages found", which is an answer, not an error); the
:class:`~chunkwise.llm.base.LLM` writes the answer; every ``[n]`` in it is checked against the passages the
LLM was actually shown, and a citation to any other number is reported as invalid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..records import pick
from ..validation import Interval, check
from .base import LLM, Passage, check_citations, passages_from
from .evidence import Evidence, about, agreement, holds_keys, margin, results_of, weigh

NO_PASSAGES = "no relevant passages found"
#: the answer when the passages do not hold the question's keys or most of its words (llm/evidence.py)
NOT_FOUND = "not found in the indexed documents"
#: cosine similarity (question vs chunk) below which a retrieved chunk is not given to the LLM. Measured on
#: examples/ with MiniLM (best hit): questions the corpus answers 0.17-0.64, unrelated ones 0.03-0.18 (they overlap)
DEFAULT_MIN_SCORE = 0.15
#: best hit's cosine below which an answer is hedged (``Answer.confident`` is False). Calibrated with MiniLM
#: and hybrid retrieval (docs/answers.md): examples/ answered 0.32-0.79 vs unrelated 0.05-0.23; Chroma's
#: state_of_the_union, its 76 questions vs 92 from other corpora: 2 answered hedged, 6 unrelated confident
CONFIDENT_SCORE = 0.30
#: the bar instead when the passages hold every key of the question (a version, a name): "What changed in
#: black 26.1.0?" scores 0.17 against its own section. Measured on the versioned-documents benchmark
#: (benchmarks/results/sections.md): hedged answerable questions 5 -> 0 of 100, confident and wrong 1 -> 2
KEYED_SCORE = 0.15
#: the least :attr:`Evidence.agreement` of a confident answer to a question without keys: one passage
#: given to the reader must be in the top 4 of both retrievers. Calibrated on half the questions of six
#: public sets, reported on the other half (benchmarks/results/answer-confidence.md): precision of
#: confident +0.010 [+0.000, +0.025] held out, answerable questions hedged +0.6 points
MIN_AGREEMENT = 0.25
#: the least :attr:`Evidence.margin` of a confident answer without keys; None: not required (no threshold
#: raised precision on the calibration half without hedging many more answerable questions)
MIN_MARGIN: float | None = None
PLUG_IN_NOTE = (
    "extractive answer (no LLM configured): for a written answer pass --llm-base-url URL "
    "--llm-model NAME (any OpenAI-compatible server) or set CHUNKWISE_LLM_BASE_URL and "
    "CHUNKWISE_LLM_MODEL"
)


@dataclass
class Answer:
    """An answer and everything needed to trust it.

    ``passages``: the retrieved passages above the threshold, numbered; ``given``: the numbers the LLM was
    shown (all of them unless the context window forced some out, ``left_out``); ``citations``: the valid
    numbers the answer cites, in order; ``invalid_citations``: cited numbers that were not given.
    """

    question: str
    text: str
    passages: list[Passage]
    given: list[int] = field(default_factory=list)
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    llm: str = ""
    extractive: bool = False
    left_out: int = 0
    cut: int = 0
    prompt_tokens: int | None = None
    note: str | None = None
    #: cosine similarity of the best retrieved chunk to the question (None: nothing was retrieved)
    best_score: float | None = None
    #: whether ``best_score`` reached :data:`CONFIDENT_SCORE`, the passages hold the question's keys and
    #: most of its words and, without a key, both retrievers rank one of them near the top (:attr:`evidence`,
    #: :func:`is_confident`): a weak best match or a missing key (another version, another topic) means the
    #: passages do not hold the answer, whatever the LLM writes from them
    confident: bool = False
    #: what the passages hold of the question (None: not weighed, e.g. an answer read back from JSON)
    evidence: Evidence | None = None

    @property
    def hedge(self) -> str | None:
        """The one line a reader needs when the answer is not :attr:`confident` (None when it is, or when
        nothing was found: "no relevant passages found" says that already)."""
        if self.confident or not self.passages or self.best_score is None:
            return None
        ev = self.evidence
        if ev is not None and ev.missing:
            return f"no passage mentions {', '.join(ev.missing)}: the question may be about something not indexed"
        if ev is not None and not ev.supported:
            return (
                f"the passages hold few of the question's words (missing: {', '.join(ev.unmatched[:5])}): "
                "the question may be about something not indexed"
            )
        if self.best_score >= CONFIDENT_SCORE and ev is not None and not ev.keys and (why := weak_retrieval(ev)):
            return f"{why}: this answer may not be supported"
        return f"the best passage is a weak match ({self.best_score:.2f}): this answer may not be supported"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        """The answer :meth:`to_dict` wrote (``chunkwise ask --server`` reads the server's this way)."""
        passages = [
            Passage(**{k: p.get(k) for k in ("number", "text", "label", "source", "start", "end", "score")})
            for p in d.get("passages", [])
        ]
        return cls(
            d["question"],
            d.get("answer", ""),
            passages,
            list(d.get("given", [])),
            list(d.get("citations", [])),
            list(d.get("invalid_citations", [])),
            d.get("llm", ""),
            bool(d.get("extractive")),
            int(d.get("left_out", 0)),
            int(d.get("cut", 0)),
            d.get("prompt_tokens"),
            d.get("note"),
            d.get("best_score"),
            bool(d.get("confident")),
            Evidence.from_dict(d.get("evidence")),
        )

    @property
    def found(self) -> bool:
        """False when no passage passed the relevance threshold."""
        return bool(self.passages)

    @property
    def cited_passages(self) -> list[Passage]:
        by_number = {p.number: p for p in self.passages}
        return [by_number[n] for n in self.citations if n in by_number]

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "question answer=text llm extractive citations invalid_citations given left_out cut"),
            **pick(self, "prompt_tokens note best_score confident hedge"),
            "evidence": self.evidence.to_dict() if self.evidence is not None else None,
            "passages": [p.to_dict() for p in self.passages],
        }


def answer_passages(
    question: str, passages: list[Passage], llm: LLM, on_token: Callable[[str], None] | None = None
) -> Answer:
    """Ask ``llm`` about ``passages`` and check the answer's citations."""
    if not passages:
        return Answer(question, "", [], llm=llm.name, extractive=llm.extractive, note=NO_PASSAGES)
    comp = llm.answer(question, passages, on_token=on_token)
    given = [p.number for p in comp.given if p.number is not None]  # retrieved passages are all numbered
    valid, invalid = check_citations(comp.text, given)
    notes = []
    if llm.extractive:
        notes.append(PLUG_IN_NOTE)
    if comp.left_out:
        notes.append(
            f"{comp.left_out} of {len(passages)} passages did not fit the model's context window "
            "(context_tokens) and were left out"
        )
    return Answer(
        question,
        comp.text,
        passages,
        given,
        valid,
        invalid,
        llm.name,
        llm.extractive,
        comp.left_out,
        comp.cut,
        comp.prompt_tokens,
        "; ".join(notes) or None,
    )


def relevance(index, question: str, hits: list, rescored: bool) -> list[float]:
    """Cosine similarity of each hit to the question: the score itself for vector search; recomputed for
    ``rescored`` hits, whose score is a fusion or a reranker's score (chunk vectors come from the embedding
    cache), so ``min_score`` and the confidence threshold mean one thing whatever the retrieval."""
    if not rescored:
        return [h.score for h in hits]
    if not hits:
        return []
    emb = index.embedder(index.config)
    from ..embeddings.vectors import query_vectors

    q = query_vectors(emb, [question])[0]  # a query, as the search embedded it (E5 reads 'query: ...')
    held = _held_vectors(index, hits)
    return [float(v) for v in (held if held is not None else emb.embed([h.text for h in hits])) @ q]


def _held_vectors(index, hits: list):
    """The vectors the index holds for ``hits`` where they are the embeddings of the hits' texts (no late
    chunking, no context) and its in-process copy has them all, else ``None``: a warm question then embeds
    no chunk again (five 256-token chunks cost about as much as the rest of a question)."""
    stored = getattr(index.store, "stored_vectors", None)
    if stored is None or (index.config or {}).get("late") or any(h.chunk.context for h in hits):
        return None
    return stored([h.id for h in hits])


def keyed_items(question: str, items: list) -> tuple[list, Evidence]:
    """The hits (or passages) that hold every key of ``question`` when some do (the others are about
    another version or name), else all of them, and the evidence they give."""
    evidence = weigh(question, items)
    if evidence.keys and not evidence.missing:
        keyed = [it for it in items if holds_keys(it, evidence.keys)]
        # a section whose heading names the version is about it; a passage that only mentions it ("Bump the
        # minimum httpx version to 0.27.0", in another project's notes) is not, when such a section is here.
        # Names (``WebSocket``, ``OpenAPI``) run through a page's text and do not pick its sections.
        numbered = [k for k in evidence.keys if any(c.isdigit() for c in k)]
        if numbered:
            keyed = [it for it in keyed if holds_keys(it, numbered, headings_only=True)] or keyed
        if keyed and len(keyed) < len(items):
            return keyed, weigh(question, keyed)
    return items, evidence


def weigh_retrieval(evidence: Evidence, items: list, retrieved: list, sims: list[float], hybrid: bool) -> None:
    """Add to ``evidence`` what the retrieval says of the passages given to the reader (``items``): the two
    retrievers' ranks of them and their :func:`~.evidence.agreement` (hybrid search only), and the
    :func:`~.evidence.margin` of their section over the next one among all ``retrieved`` chunks."""
    given = [r for it in items for r in results_of(it)]
    evidence.ranks = [(getattr(r, "vector_rank", None), getattr(r, "bm25_rank", None)) for r in given]
    evidence.agreement = agreement(given) if hybrid and given else None
    evidence.margin = margin(retrieved, sims, items[0]) if items else None


def not_found(
    question: str,
    passages: list[Passage],
    llm: LLM,
    on_token: Callable[[str], None] | None = None,
    missing: Sequence[str] = (),
) -> Answer:
    """The answer when the passages lack the question's keys or words: the LLM is not asked."""
    answer = Answer(
        question,
        f"{NOT_FOUND}: the closest passages are about {about(passages, keys=missing)}",
        passages,
        llm=llm.name,
        extractive=llm.extractive,
    )
    if on_token is not None:
        on_token(answer.text)
    return answer


def ask_index(
    index,
    question: str,
    k: int = 5,
    *,
    llm: LLM | None = None,
    hybrid: bool = False,
    filter: str | None = None,
    min_score: float | None = DEFAULT_MIN_SCORE,
    on_token: Callable[[str], None] | None = None,
    on_passages: Callable[[list[Passage]], None] | None = None,
    search_options: dict[str, Any] | None = None,
    confident_score: float = CONFIDENT_SCORE,
    expand: str | None = None,
    budget: int | str | None = None,
) -> Answer:
    """Retrieve ``k`` chunks from ``index`` and answer ``question`` from those above ``min_score``
    (``on_passages`` sees the numbered passages before the LLM is asked; ``search_options``: how hybrid
    retrieval fuses and reranks, ``fusion``/``rrf_k``/``dense_weight``/``rerank`` as ``Index.search`` takes
    them). The answer is ``confident`` when the best hit's cosine reaches ``confident_score`` and the
    passages hold every key of the question and most of its words (:mod:`chunkwise.llm.evidence`); else it
    carries a hedge. Passages that do not hold the question's keys (another version's section) are not
    given to the LLM when others do; when none does, or the words are missing, the LLM is not asked and the
    answer is "not found in the indexed documents: the closest passages are about ..." """
    check(min_score, [Interval(float, None, None), None], "min_score", "ask")
    if index.count() == 0 and index.config is not None:
        raise ConfigError(
            "the index is empty (0 chunks); run `chunkwise index PATH` first", source=index.store.location
        )
    retrieved = index.search(question, k=k, filter=filter, hybrid=hybrid, **(search_options or {}))
    sims = relevance(index, question, retrieved, hybrid or bool((search_options or {}).get("rerank")))
    best = max(sims) if sims else None
    hits = retrieved if min_score is None else [h for h, s in zip(retrieved, sims) if s >= min_score]
    from .extractive import ExtractiveLLM

    if llm is None:
        llm = ExtractiveLLM()
    if isinstance(llm, ExtractiveLLM) and llm.embedder is None:
        llm.embedder = index.embedder(index.config)
    # with expand/budget the LLM reads the hits above the threshold widened by index.expand, one passage
    # (one citation number) per merged window; the threshold and best_score stay the hits' own
    items = index.expand(hits, expand, budget) if expand is not None or budget is not None else hits
    items, evidence = keyed_items(question, items)
    weigh_retrieval(evidence, items, retrieved, sims, hybrid)
    passages = passages_from(items)
    if on_passages is not None:
        on_passages(passages)
    if passages and not evidence.supported:
        answer = not_found(question, passages, llm, on_token, evidence.missing)
    else:
        answer = answer_passages(question, passages, llm, on_token=on_token)
    answer.best_score = best
    answer.evidence = evidence
    answer.confident = is_confident(best, evidence, confident_score)
    return answer


def is_confident(
    best: float | None,
    evidence: Evidence,
    confident_score: float = CONFIDENT_SCORE,
    min_agreement: float | None = MIN_AGREEMENT,
    min_margin: float | None = MIN_MARGIN,
) -> bool:
    """Whether an answer from passages with this ``evidence`` (best hit's cosine ``best``) is confident:
    the passages hold every key and most words of the question (:attr:`Evidence.supported`) and the best
    cosine reaches ``confident_score`` (:data:`KEYED_SCORE` when a key is held: a version in the passages'
    heading is evidence a cosine cannot see). Without a key, the two retrievers must also agree on a
    passage (:attr:`Evidence.agreement` at least ``min_agreement``; not measured with vectors alone) and,
    if ``min_margin`` is given, its section must lead the next one by that much (:attr:`Evidence.margin`).
    A held key makes both moot: the section pass ranks a version's section first, where neither retriever
    can, so they disagree on right answers (measured: benchmarks/results/answer-confidence.md)."""
    if best is None or not evidence.supported:
        return False
    if evidence.keys:  # supported: every key is held
        return best >= min(confident_score, KEYED_SCORE)
    return best >= confident_score and not weak_retrieval(evidence, min_agreement, min_margin)


def weak_retrieval(
    evidence: Evidence, min_agreement: float | None = MIN_AGREEMENT, min_margin: float | None = MIN_MARGIN
) -> str | None:
    """Why the retrieval behind the passages is weak evidence (None: it is not): the retrievers agree on no
    passage near the top, or the answer's section barely leads the next."""
    agree, lead = evidence.agreement, evidence.margin
    if min_agreement is not None and agree is not None and agree < min_agreement:
        top = round(1 / min_agreement) if min_agreement > 0 else 0
        shared = f"best shared rank {round(1 / agree)}" if agree else "none in both lists"
        return f"vectors and BM25 agree on no passage in their top {top} ({shared})"
    if min_margin is not None and lead is not None and lead < min_margin:
        return f"the answer's section leads the next by only {lead:+.2f} cosine"
    return None


__all__ = [
    "Answer",
    "answer_passages",
    "ask_index",
    "NO_PASSAGES",
    "NOT_FOUND",
    "DEFAULT_MIN_SCORE",
    "CONFIDENT_SCORE",
    "KEYED_SCORE",
    "MIN_AGREEMENT",
    "MIN_MARGIN",
    "PLUG_IN_NOTE",
    "is_confident",
    "weak_retrieval",
]
