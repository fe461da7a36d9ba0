"""Section-first retrieval: when the query names something exact (a version, a dotted or snake_case name, a
number with its unit), the chunks of the section that names it come first.

Why: in release notes every ``## <version>`` section looks like its siblings (``### Added``, ``### Fixed``),
and neither BM25 nor the embedder ranks ``0.27.1``'s feature list above ``0.27.0``'s or ``0.17.1``'s: the
words agree, only the key differs, and a chunk of the list rarely repeats its version. A first pass finds
the sections that hold every key of the query (:func:`~chunkwise.segmentation.lexical.strong_keys`): BM25 over the
keys alone, checked whole in each chunk's heading path, context and text; a chunk whose heading path names a
key brings its whole section (the chunks of its document whose path starts with that heading). A second
pass ranks those chunks by the ordinary (fused) score, and the other candidates follow them. A query
without keys, or whose keys no chunk holds, is ranked as before; that the key is missing is what
:func:`chunkwise.llm.answer.ask_index` reports.

A query whose keys are all words glued to a number (``python3``, ``2d``: :func:`glued`) moves only the
chunks of sections whose heading names one: in a body such a key is a word as often as a name, and
moving every chunk that holds ``python3`` or ``1d`` ahead of the fused ranking cost code Q&A nDCG (CoSQA),
while names (``KeyError``, ``flask.app.Flask.cli``), versions and issue numbers found in a body helped
docstring questions (benchmarks/results/defaults-matrix.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..document import Chunk
from ..segmentation.lexical import contains_term, strong_keys
from ..store.base import Store

#: chunks the key pass reads at most from BM25 (a key names a few sections, not a corpus)
KEY_DEPTH = 200
#: a document with more chunks than this is not read whole to find a named section's other chunks
SECTION_DOC_LIMIT = 2000


def _holds(chunk: Chunk, key: str) -> bool:
    return any(contains_term(t, key) for t in (*chunk.section, chunk.context or "", chunk.text))


def key_members(store: Store, query: str, filter: str | None = None) -> list[str]:
    """Ids of the chunks in the sections that hold every key of ``query`` (empty: no key, or none holds
    them all; keys that are all :func:`glued` must also name a heading of the chunk's path), in no
    particular order."""
    keys = strong_keys(query)
    if not keys:
        return []
    ids = [h.id for h in store.search_text(" ".join(keys), KEY_DEPTH, filter)]
    chunks = [h.chunk for h in store.fetch(ids) if h.chunk is not None] if ids else []
    weak = all(map(glued, keys))  # python3, 2d: a section must be named by them
    members: dict[str, None] = {}
    heads: dict[str, set[tuple[str, ...]]] = {}  # doc -> heading paths that name a key
    for c in chunks:
        if not all(_holds(c, k) for k in keys) or (weak and not _named(c, keys)):
            continue
        members[c.id] = None
        for depth in range(len(c.section), 0, -1):  # the deepest heading that names a key bounds the section
            if any(contains_term(c.section[depth - 1], k) for k in keys):
                heads.setdefault(c.doc_id, set()).add(tuple(c.section[:depth]))
                break
    for doc_id, paths in heads.items():
        for c in _doc_chunks(store, doc_id):
            path = tuple(c.section)
            if any(path[: len(p)] == p for p in paths) and all(_holds(c, k) or _under(path, paths, k) for k in keys):
                members[c.id] = None
    return list(members)


def glued(key: str) -> bool:
    """A word glued to a number (``python3``, ``2d``, ``utf8``, ``200ms``): letters and digits, no joiner.
    Such a key is a word as often as a name, so alone it moves only sections whose heading names it."""
    return key.isalnum() and not key.isdigit() and not key.isalpha()


def _named(chunk: Chunk, keys: Sequence[str]) -> bool:
    """Whether a heading of ``chunk``'s path (a version's heading, a function's name) names one of ``keys``."""
    return any(contains_term(h, k) for h in chunk.section for k in keys)


def _under(path: tuple[str, ...], heads: set[tuple[str, ...]], key: str) -> bool:
    """Whether ``path`` lies in a section whose heading path names ``key``."""
    return any(path[: len(p)] == p and any(contains_term(h, key) for h in p) for p in heads)


def _doc_chunks(store: Store, doc_id: str) -> list[Chunk]:
    ids = sorted(store.chunk_ids([doc_id]).get(doc_id, set()))
    if not ids or len(ids) > SECTION_DOC_LIMIT:
        return []
    return [h.chunk for h in store.fetch(ids) if h.chunk is not None]


def sections_first(ranked: Sequence[tuple[str, float]], members: Sequence[str]) -> list[tuple[str, float]]:
    """``ranked`` (``(id, score)``, best first) with the ``members`` of the named sections moved ahead, in
    their own order; members the first stage did not rank follow the ranked ones, with the lowest score."""
    if not members:
        return list(ranked)
    wanted = set(members)
    first = [(i, s) for i, s in ranked if i in wanted]
    seen = {i for i, _ in first}
    floor = min((s for _, s in ranked), default=0.0)
    first += [(i, floor) for i in members if i not in seen]
    return first + [(i, s) for i, s in ranked if i not in wanted]


__all__ = ["glued", "key_members", "sections_first", "KEY_DEPTH", "SECTION_DOC_LIMIT"]
