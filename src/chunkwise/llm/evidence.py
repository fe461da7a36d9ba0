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

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import pick
from ..segmentation.lexical import contains_term, lexical_terms, strong_keys


def _stems(words: Sequence[str]) -> list[str]:
    """English Snowball stems (snowballstemmer, pure Python): "feeding", "feeds" and "feed" are "feed"."""
    import snowballstemmer

    return list(snowballstemmer.stemmer("english").stemWords(list(words)))


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

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "keys missing_keys=missing words unmatched_words=unmatched"),
            "coverage": round(self.coverage, 3),
        }


def evidence_texts(item: Any) -> list[str]:
    """The texts a passage or hit speaks with: its text, heading path, context and file name."""
    origin = getattr(item, "origin", None) or item
    texts = [str(getattr(item, "text", "") or "")]
    texts += [str(s) for s in (getattr(origin, "section", None) or [])]
    chunk = getattr(origin, "chunk", origin)
    texts.append(str(getattr(chunk, "context", None) or ""))
    source = getattr(item, "source", None) or getattr(origin, "source", None)
    if source and not str(source).startswith("<"):
        texts.append(Path(str(source)).stem.replace("_", " "))
    return [t for t in texts if t]


def holds_keys(item: Any, keys: Sequence[str]) -> bool:
    """Whether ``item`` (a passage or hit) holds every key whole."""
    texts = evidence_texts(item)
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


def about(items: Sequence[Any], most: int = 3) -> str:
    """What the closest passages are about: their sections' headings below the document's title (else
    their file names), ``"A, B and C"``."""
    names: dict[str, None] = {}
    for it in items:
        origin = getattr(it, "origin", None) or it
        path = [" ".join(str(s).split()) for s in (getattr(origin, "section", None) or [])]
        if len(path) > 1:
            path = path[1:]
        name = " > ".join(path) if path else Path(str(getattr(it, "source", "") or "?")).name
        names.setdefault(name, None)
        if len(names) >= most:
            break
    parts = list(names)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


__all__ = ["Evidence", "weigh", "holds_keys", "about", "evidence_texts", "MIN_COVERAGE", "QUESTION_WORDS"]
