"""Whether the passages an answer is made from are about what the question asks: its keys and its words.

Why not the best cosine alone: a question about ``httpx 0.27.13`` and a passage about ``0.27.1`` are as
close in a MiniLM space as the right pair (0.77 measured), and "How do I bake sourdough bread?" still has a
nearest chunk. The evidence a reader can check is lexical: every *key* of the question (a version, a
number, a dotted/snake/camel name: :func:`~chunkwise.segmentation.lexical.strong_keys`) must stand whole in
a passage (its text, heading path, context or file name), and most of the question's other content words
(not the question's own vocabulary: "what", "features", "introduced", "how often"...) must occur in the
passages, a word matching another with the same Snowball (Porter 2) stem ("feed" ~ "feeding") or the same
first five letters ("baking" ~ "bakes"). Missing either, the answer is
"not found in the indexed documents" with the sections the closest passages are about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import pick
from ..segmentation.lexical import contains_term, lexical_terms, strong_keys

_STEM_MEMO: dict[str, str] = {}
_STEM_MEMO_SIZE = 100_000


def stems(words: Sequence[str]) -> list[str]:
    """English Snowball stems (snowballstemmer, pure Python): "feeding", "feeds" and "feed" are "feed".
    Each word is stemmed once per process (the reader and the evidence stem the same passages' words)."""
    out = []
    stemmer = None
    for w in words:
        s = _STEM_MEMO.get(w)
        if s is None:
            if stemmer is None:
                import snowballstemmer

                stemmer = snowballstemmer.stemmer("english")
            s = stemmer.stemWord(w)
            if len(_STEM_MEMO) < _STEM_MEMO_SIZE:
                _STEM_MEMO[w] = s
        out.append(s)
    return out


_stems = stems


#: share of the question's content words the passages must hold (with every key). Calibrated on the
#: versioned-documents benchmark and Chroma's state_of_the_union (benchmarks/results/sections.md)
MIN_COVERAGE = 0.5
#: how a question asks, not what it asks about: never required in a passage
QUESTION_WORDS = frozenset(
    """what which who whom whose when where why how does do did done can could should would may might must
    shall will new feature features introduced introduce added add adds fixed fix fixes bug bugs changed
    change changes version versions release released releases about tell me explain describe mean means
    meaning use used using get make made many much any some all list main most between difference there
    been have has had were was are is am be we you your my our us i he she his her its them than also
    please give show find kind type types way ways thing things happen happened happens one two first last
    mention mentioned mentions specific key main speech address addressed describe described describes
    highlight highlighted emphasize emphasized according regarding related relation concerning express
    expressed discuss discussed said say says state stated outline outlined refer referred detail details
    aspect aspects role purpose significance significant reason reasons example examples method methods
    measure measures step steps include included includes particular document text passage author article
    present trying often usually typically frequently""".split()
)
_STEM = 5


@dataclass
class Evidence:
    """What the passages hold of the question: ``keys`` (and those ``missing``), content ``words`` (and
    those ``unmatched``), ``coverage`` = share of words matched (1.0 when the question has none)."""

    keys: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    #: ``(vector_rank, bm25_rank)`` of the search results behind the passages given to the reader, in order
    #: (``None``: not in that retriever's list)
    ranks: list[tuple[int | None, int | None]] = field(default_factory=list)
    #: 1 / the best rank both retrievers give one of those results (1.0: both rank it first; 0.0: no passage
    #: is in both lists); None: not measured (vectors alone)
    agreement: float | None = None
    #: best cosine of the answer's section minus the best cosine of any other retrieved section; None: every
    #: retrieved chunk is in the answer's section
    margin: float | None = None

    @property
    def coverage(self) -> float:
        return 1.0 if not self.words else 1 - len(self.unmatched) / len(self.words)

    @property
    def supported(self) -> bool:
        """Every key held and at least :data:`MIN_COVERAGE` of the words; with keys, all held, one word may be
        missing whatever the share: a question names its product ("What changed in uvicorn 0.34.1?") where a
        release-notes page never does, and the version held is the stronger evidence."""
        if self.missing:
            return False
        return self.coverage >= MIN_COVERAGE or (bool(self.keys) and len(self.unmatched) <= 1)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Evidence | None:
        """The evidence :meth:`to_dict` wrote (None for None or an empty dict)."""
        if not d:
            return None
        return cls(
            list(d.get("keys", [])),
            list(d.get("missing_keys", [])),
            list(d.get("words", [])),
            list(d.get("unmatched_words", [])),
            [(r[0], r[1]) for r in d.get("ranks", [])],
            d.get("agreement"),
            d.get("margin"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "keys missing_keys=missing words unmatched_words=unmatched"),
            "coverage": round(self.coverage, 3),
            "ranks": [list(r) for r in self.ranks],
            "agreement": None if self.agreement is None else round(self.agreement, 3),
            "margin": None if self.margin is None else round(self.margin, 3),
        }


def heading_texts(item: Any) -> list[str]:
    """What a passage or hit is about by its place: its heading path and file name."""
    origin = getattr(item, "origin", None) or item
    texts = [str(s) for s in (getattr(origin, "section", None) or [])]
    source = getattr(item, "source", None) or getattr(origin, "source", None)
    if source and not str(source).startswith("<"):
        texts.append(Path(str(source)).stem.replace("_", " "))
    return [t for t in texts if t]


def evidence_texts(item: Any) -> list[str]:
    """The texts a passage or hit speaks with: its text, heading path, context and file name."""
    origin = getattr(item, "origin", None) or item
    chunk = getattr(origin, "chunk", origin)
    texts = [str(getattr(item, "text", "") or ""), str(getattr(chunk, "context", None) or "")]
    return [t for t in texts if t] + heading_texts(item)


def holds_keys(item: Any, keys: Sequence[str], headings_only: bool = False) -> bool:
    """Whether ``item`` (a passage or hit) holds every key whole (``headings_only``: in its heading path or
    file name, not only in its text or context)."""
    texts = heading_texts(item) if headings_only else evidence_texts(item)
    return all(any(contains_term(t, k) for t in texts) for k in keys)


def content_words(question: str, keys: Sequence[str]) -> list[str]:
    skip = set(keys) | QUESTION_WORDS
    out: dict[str, None] = {}
    for t in lexical_terms(question, parts=False):
        if t not in skip and not t.isdigit():
            out.setdefault(t, None)
    return list(out)


def weigh(question: str, items: Sequence[Any]) -> Evidence:
    """The :class:`Evidence` the passages (or hits) ``items`` give for ``question``."""
    keys = strong_keys(question)
    texts = [t for it in items for t in evidence_texts(it)]
    missing = [k for k in keys if not any(contains_term(t, k) for t in texts)]
    words = content_words(question, keys)
    terms = {t for text in texts for t in lexical_terms(text)}
    prefixes = {t[:_STEM] for t in terms if len(t) >= _STEM}
    stems = set(_stems(sorted(terms)))
    unmatched = [
        w
        for w, stem in zip(words, _stems(words))
        if w not in terms and stem not in stems and not (len(w) >= _STEM and w[:_STEM] in prefixes)
    ]
    return Evidence(keys, missing, words, unmatched)


def results_of(item: Any) -> list[Any]:
    """The search results behind a passage, hit or expanded window (an expanded passage holds several)."""
    origin = getattr(item, "origin", None) or item
    held = getattr(origin, "results", None)
    return list(held) if held else [origin]


def agreement(results: Sequence[Any]) -> float:
    """1 / the best rank at which both retrievers hold one of ``results`` (the smaller of each result's
    ``max(vector_rank, bm25_rank)``), 0.0 when none is in both lists: fusion can lift a chunk that only one
    retriever likes, and a chunk both rank near the top is less often a look-alike (another version's
    section, a page on a neighbouring topic)."""
    best = min(
        (
            max(v, b)
            for v, b in ((getattr(r, "vector_rank", None), getattr(r, "bm25_rank", None)) for r in results)
            if v and b
        ),
        default=None,
    )
    return 0.0 if best is None else 1.0 / best


def section_key(item: Any) -> tuple[str, str]:
    """The section a result stands in for "the next section": its file and the first heading below the
    document's title (a version's ``## 0.27.1``, a page's ``## Optional parameters``); a chunk of a page
    without headings is its own section."""
    origin = getattr(item, "origin", None) or item
    path = [str(s) for s in (getattr(origin, "section", None) or [])]
    source = str(getattr(item, "source", None) or getattr(origin, "source", None) or "")
    if not path:
        return (source, f"#{getattr(origin, 'start', None)}")
    return (source, path[1] if len(path) > 1 else path[0])


def margin(results: Sequence[Any], sims: Sequence[float], answer: Any) -> float | None:
    """The best cosine among ``results`` in ``answer``'s section minus the best in any other section
    (``sims[i]`` is ``results[i]``'s cosine); None when no other section was retrieved. A small or negative
    margin: the question is as close to another section as to the one answering it."""
    own = {section_key(answer)} | {section_key(r) for r in results_of(answer)}
    inside = [s for r, s in zip(results, sims) if section_key(r) in own]
    outside = [s for r, s in zip(results, sims) if section_key(r) not in own]
    if not outside:
        return None
    return (max(inside) if inside else min(sims)) - max(outside)


def _shape(key: str) -> str:
    """A key's form with its digits blurred: ``0.27.1`` and ``0.35.37`` are both ``0.0.0``."""
    return re.sub(r"\d+", "0", key)


def _named_key(heading: str, shapes: set[str]) -> str | None:
    """The key of ``heading`` shaped like one of ``shapes`` (as the heading spells it: ``v3.8.1``)."""
    for key in strong_keys(heading):
        if _shape(key) in shapes:
            m = re.search(rf"(?<![\w.])v?{re.escape(key)}(?![\w])", heading)
            return m.group(0) if m else key
    return None


def about(items: Sequence[Any], most: int = 3, keys: Sequence[str] = ()) -> str:
    """What the closest passages are about, ``"A, B and C"``: with the question's ``keys`` (``0.27.13``),
    the keys of the same form their headings name (``0.27.1 and 0.27.10``); else their sections' headings
    (the document's title, the first heading every passage shares, left out), else their file names."""
    shapes = {_shape(k) for k in keys}
    paths = [
        [" ".join(str(s).split()) for s in (getattr(getattr(it, "origin", None) or it, "section", None) or [])]
        for it in items
    ]
    firsts = {p[0] for p in paths if p}
    title = next(iter(firsts)) if len(firsts) == 1 and all(len(p) > 1 for p in paths if p) else None
    names: dict[str, None] = {}
    for it, path in zip(items, paths):
        named = next((n for h in reversed(path) if shapes and (n := _named_key(h, shapes))), None)
        if named is None:
            rest = path[1:] if title is not None and path[:1] == [title] else path
            named = " > ".join(rest) if rest else Path(str(getattr(it, "source", "") or "?")).name
        names.setdefault(named, None)
        if len(names) >= most:
            break
    parts = list(names)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


__all__ = [
    "Evidence",
    "weigh",
    "holds_keys",
    "about",
    "evidence_texts",
    "results_of",
    "agreement",
    "section_key",
    "margin",
    "MIN_COVERAGE",
    "QUESTION_WORDS",
]
