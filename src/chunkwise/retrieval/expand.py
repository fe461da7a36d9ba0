"""Context beyond one chunk: retrieve on small chunks, hand the reader the text around them (small-to-big).

Small chunks rank well, but an answer often spans more than one of them: on meeting transcripts the gold
spans have a median of 2,752 characters, which ten 256-token chunks rarely hold. Expansion keeps retrieval
as it is and widens what the reader sees, like LlamaIndex's sentence-window and auto-merging retrievers or
LangChain's ``ParentDocumentRetriever``, but from the stored chunks themselves (no second index):

- ``neighbors:N``: the ``N`` chunks each side of a hit in the same document, by chunk index;
- ``section``: the hit's whole section: the run of chunks around it whose section path starts with the
  hit's (a document without sections is one section); a hit above the document's first section (a page's
  introduction, whose path is the title alone) gets the chunks of that path only, never the whole page;
- ``parent:TOKENS``: a window of about ``TOKENS`` tokens (the chunks' own counts) centred on the hit, cut at
  chunk boundaries.
- ``auto``: by document kind (:func:`by_kind`): ``neighbors:1`` for a hit in text without headings or pages
  (transcripts, plain prose), the hit alone elsewhere; what a reader gets under a budget when no mode is
  asked for (:func:`chunkwise.pipeline.config.reader_expand`).

Hits of one document whose windows overlap, touch or are adjacent by chunk index become *one* passage, so
no text reaches a prompt twice. With ``budget`` the passages' tokens together never exceed it: hits are
taken in rank order, each with the widest window of its mode that still fits, shrunk one chunk at a time
(alternately from each side) down to the hit alone; a hit whose chunk alone does not fit is left out and
the next one tried. Tokens are counted with cl100k unless told otherwise: the budget is the reader's (an
LLM's) context, not the embedder's window, and the budget counts passage text only (not the headers and
fences a prompt adds around it).

Every passage's text is stitched from stored chunk texts by their offsets (overlapping chunks share their
overlap once; the offsets are exact, ``doc.text[c.start:c.end] == c.text``), so ``pieces`` are exact spans of
the document and ``text`` is their texts in order. Characters no chunk holds (the whitespace a strategy
trims between chunks) are not stored anywhere; where consecutive chunks leave such a gap the text has
:data:`GAP` instead and ``pieces`` has two spans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..document import Chunk
from ..errors import ConfigError
from ..pipeline.config import parse_budget, parse_expand
from ..segmentation.tokenizers import Tokenizer, resolve_tokenizer

#: what stands between two stored chunks that do not touch (the characters between them are not stored)
GAP = "\n"
#: the neighbours each side ``auto`` gives a hit of text without layout
AUTO_NEIGHBORS = 1
#: the tokenizer budgets are counted with unless told otherwise (the reader's tokens, not the embedder's)
BUDGET_TOKENIZER = "cl100k"


@dataclass
class ExpandedPassage:
    """One piece of context for the reader: consecutive stored chunks of one document, stitched.

    ``start``/``end``: offsets into the document text (the first chunk's start, the last one's end);
    ``pieces``: the exact document spans the text holds (one unless chunks leave a gap); ``chunks``: the
    chunk indexes it covers; ``hits``: the ranks (1-based, as given) of the search results it contains,
    best first; ``score``: the best of their scores; ``token_count``: its text counted with ``tokenizer``.
    Page, time, speaker and section fields summarise the chunks (``section``: the path they share), so
    ``llm.base.provenance`` labels a passage as it labels a chunk.
    """

    rank: int
    doc_id: str
    source: str
    start: int
    end: int
    text: str
    pieces: list[tuple[int, int]]
    chunks: list[int]
    hits: list[int]
    token_count: int
    tokenizer: str
    score: float | None = None
    section: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None
    start_time: float | None = None
    end_time: float | None = None
    speakers: list[str] = field(default_factory=list)
    #: the search results (or chunks) of ``hits``, in the same order (not serialised)
    results: list[Any] = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        names = (
            "rank",
            "doc_id",
            "source",
            "start",
            "end",
            "pieces",
            "chunks",
            "hits",
            "score",
            "token_count",
            "tokenizer",
            "section",
            "page_start",
            "page_end",
            "start_time",
            "end_time",
            "speakers",
            "text",
        )
        out = {name: getattr(self, name) for name in names}
        out["pieces"] = [list(p) for p in self.pieces]
        return out


# -- windows ---------------------------------------------------------------------------------------------


def _grow(
    pos: int, lo: int, hi: int, sizes: Sequence[int] | None = None, limit: int | None = None
) -> list[tuple[int, int]]:
    """Windows around ``pos`` inside ``[lo, hi]``, one chunk wider each step (right, then left, alternately;
    the other side once one side ends), narrowest first; with ``limit``, only while the chunks' sizes sum to
    at most ``limit`` (the hit itself always)."""
    a = b = pos
    out = [(a, b)]
    total = sizes[pos] if sizes is not None else 0
    right = True
    while a > lo or b < hi:
        take_right = b < hi and (right or a <= lo)
        nxt = b + 1 if take_right else a - 1
        if limit is not None and sizes is not None:
            if total + sizes[nxt] > limit:
                break
            total += sizes[nxt]
        if take_right:
            b = nxt
        else:
            a = nxt
        right = not take_right
        out.append((a, b))
    return out


def by_kind(chunk: Chunk) -> tuple[str, int | None] | None:
    """What ``auto`` widens a hit by: its :data:`AUTO_NEIGHBORS` neighbours in text without headings or pages
    (transcripts, plain prose: a long answer runs on past a chunk's edge), the hit alone in documents with
    structure (Markdown, code, PDF pages). Measured in benchmarks/results/defaults-matrix.md."""
    if not chunk.section and chunk.page_start is None:
        return ("neighbors", AUTO_NEIGHBORS)
    return None


def windows(mode: tuple[str, int | None] | None, chunks: Sequence[Chunk], pos: int) -> list[tuple[int, int]]:
    """The candidate windows of the hit at ``pos`` of ``chunks`` (one document, in index order), as
    positions ``(first, last)``, narrowest first: the hit alone, then wider, up to what ``mode`` asks."""
    if mode is not None and mode[0] == "auto":
        mode = by_kind(chunks[pos])
    if mode is None:
        return [(pos, pos)]
    kind, n = mode
    last = len(chunks) - 1
    if kind == "neighbors":
        assert n is not None
        return [_by_index(chunks, pos, k) for k in range(n + 1)]
    if kind == "parent":
        return _grow(pos, 0, last, [c.token_count for c in chunks], n)
    path = list(chunks[pos].section or [])
    # a hit whose section is the whole document (no heading, or only the title above it, as a page's
    # introduction) when the document has real sections gets the run of chunks of its own path only: the
    # introduction, not the page
    whole = all(list(c.section or [])[: len(path)] == path for c in chunks)
    deeper = any(len(c.section or []) > len(path) for c in chunks)

    def inside(c: Chunk) -> bool:
        other = list(c.section or [])
        return other == path if whole and deeper else other[: len(path)] == path

    lo = hi = pos
    while lo > 0 and inside(chunks[lo - 1]):
        lo -= 1
    while hi < last and inside(chunks[hi + 1]):
        hi += 1
    return _grow(pos, lo, hi)


def _by_index(chunks: Sequence[Chunk], pos: int, k: int) -> tuple[int, int]:
    """The positions of the run of chunks around ``pos`` whose indexes are within ``k`` of its own and
    consecutive (the chunks held may be a few windows of a document, not all of it)."""
    a = b = pos
    hit = chunks[pos].index
    while a > 0 and chunks[a - 1].index == chunks[a].index - 1 and chunks[a - 1].index >= hit - k:
        a -= 1
    while b < len(chunks) - 1 and chunks[b + 1].index == chunks[b].index + 1 and chunks[b + 1].index <= hit + k:
        b += 1
    return a, b


# -- stitching -------------------------------------------------------------------------------------------


def stitch(chunks: Sequence[Chunk]) -> tuple[str, list[tuple[int, int]]]:
    """The text of consecutive chunks of one document and the exact spans it holds: each chunk adds only
    what lies past the end of the text so far (its overlap with earlier chunks is not repeated); a gap
    between chunks becomes :data:`GAP`."""
    parts: list[str] = []
    pieces: list[tuple[int, int]] = []
    end = None
    for c in sorted(chunks, key=lambda c: (c.start, c.end)):
        if end is None or c.start > end:
            if end is not None:
                parts.append(GAP)
            parts.append(c.text)
            pieces.append((c.start, c.end))
            end = c.end
        elif c.end > end:
            parts.append(c.text[end - c.start :])
            pieces[-1] = (pieces[-1][0], c.end)
            end = c.end
    return "".join(parts), pieces


# -- expansion -------------------------------------------------------------------------------------------


class _Doc:
    """One document's stored chunks in index order and the windows (positions) chosen in it so far."""

    def __init__(self, chunks: Sequence[Chunk]):
        self.chunks = sorted(chunks, key=lambda c: c.index)
        self.position = {c.index: i for i, c in enumerate(self.chunks)}
        self.spans: list[list[int]] = []  # [first, last] positions, sorted, disjoint, not touching

    def merged(self, a: int, b: int) -> tuple[int, int, list[int]]:
        """The window ``[a, b]`` joined with every chosen window it overlaps, touches by index or by
        characters (repeatedly, as joining widens it), and the indexes of those windows in ``spans``."""
        absorbed: list[int] = []
        changed = True
        while changed:
            changed = False
            lo_char = min(c.start for c in self.chunks[a : b + 1])
            hi_char = max(c.end for c in self.chunks[a : b + 1])
            for i, (x, y) in enumerate(self.spans):
                if i in absorbed:
                    continue
                xs = min(c.start for c in self.chunks[x : y + 1])
                ye = max(c.end for c in self.chunks[x : y + 1])
                touching = self.chunks[x].index <= self.chunks[b].index + 1 and (
                    self.chunks[y].index >= self.chunks[a].index - 1
                )
                if touching or xs <= hi_char and ye >= lo_char:
                    absorbed.append(i)
                    a, b = min(a, x), max(b, y)
                    changed = True
        return a, b, sorted(absorbed)


class _Costs:
    """Token counts of stitched windows, memoised by text (``memo`` across calls): what a window adds to the
    budget. A class so :func:`expand_chunks` and its helpers share one memo."""

    def __init__(self, tok: Tokenizer, counts: dict[str, int]):
        self.tok = tok
        self.counts = counts

    def count(self, text: str) -> int:
        n = self.counts.get(text)
        if n is None:
            n = self.counts[text] = self.tok.count(text)
        return n

    def tokens_of(self, d: _Doc, a: int, b: int) -> int:
        return self.count(stitch(d.chunks[a : b + 1])[0])

    def cost(self, d: _Doc, window: tuple[int, int]) -> tuple[int, int, int, list[int]]:
        """The window joined with the chosen windows it meets, and how many tokens that adds."""
        a, b, absorbed = d.merged(*window)
        return a, b, self.tokens_of(d, a, b) - sum(self.tokens_of(d, *d.spans[i]) for i in absorbed), absorbed


def expand_chunks(
    hits: Sequence[Any],
    doc_chunks: Callable[[str], Sequence[Chunk]],
    mode: str | None = None,
    budget: int | str | None = None,
    tokenizer: str | Tokenizer = BUDGET_TOKENIZER,
    memo: dict[str, int] | None = None,
) -> list[ExpandedPassage]:
    """Expand ranked ``hits`` (search results with ``.chunk`` and ``.score``, or chunks; best first) into
    passages, best first; see the module docstring. ``doc_chunks(doc_id)`` answers a document's stored
    chunks (any order); ``memo`` caches token counts by text across calls (evaluation passes one).

    For ``neighbors:N`` a reader with ``around`` (:func:`store_chunks`) is asked only for the chunks within
    ``N`` of a hit; where windows then join by their characters across chunks not read (overlapping chunks),
    those are read too and the expansion run again, so the passages are those of the whole document."""
    parsed = parse_expand(mode)
    limit = parse_budget(budget)
    costs = _Costs(resolve_tokenizer(tokenizer), memo if memo is not None else {})
    for chunk in (getattr(hit, "chunk", hit) for hit in hits):
        if not isinstance(chunk, Chunk):
            raise ConfigError(f"cannot expand {type(chunk).__name__!r}: expected search results or chunks")
    around = getattr(doc_chunks, "around", None)
    reach = None if parsed is None else {"neighbors": parsed[1], "auto": AUTO_NEIGHBORS}.get(parsed[0])
    if around is None or reach is None:
        return _expand(hits, {}, doc_chunks, parsed, limit, costs)
    wanted = _neighbour_indexes(hits, int(reach or 0))
    stored: dict[str, dict[int, Chunk]] = {}
    ask = wanted
    while True:
        for doc_id, cs in around(ask).items():
            stored.setdefault(doc_id, {}).update((c.index, c) for c in cs)
        docs = _held_docs(hits, stored)
        out = _expand(hits, docs, doc_chunks, parsed, limit, costs)
        ask = _unread(docs, wanted)
        if not ask:
            return out
        for doc_id, indexes in ask.items():
            wanted[doc_id] |= indexes


def _expand(
    hits: Sequence[Any],
    docs: dict[str, _Doc],
    doc_chunks: Callable[[str], Sequence[Chunk]],
    parsed: tuple[str, int | None] | None,
    limit: int | None,
    costs: _Costs,
) -> list[ExpandedPassage]:
    """:func:`expand_chunks` over ``docs`` (documents not in it are read whole when their first hit comes)."""
    owners: dict[tuple[str, int], list[int]] = {}  # (doc, first position of a window) -> hit numbers in it
    scores: dict[int, float | None] = {}
    items: dict[int, Any] = {}
    total = 0
    for number, hit in enumerate(hits, start=1):
        chunk = getattr(hit, "chunk", hit)
        items[number] = hit
        scores[number] = getattr(hit, "score", None)
        d = docs.get(chunk.doc_id)
        if d is None:
            d = docs[chunk.doc_id] = _doc_of(chunk, doc_chunks)
        pos = d.position[chunk.index]
        inside = next((i for i, (x, y) in enumerate(d.spans) if x <= pos <= y), None)
        if inside is not None and (parsed is None or limit is not None and total >= limit):
            owners[(chunk.doc_id, d.spans[inside][0])].append(number)  # held already, nothing to widen
            continue
        if limit is not None and total >= limit:
            continue
        # a hit inside a chosen window still widens it by its own window (its narrowest costs nothing)
        best = _choose(costs, d, windows(parsed, d.chunks, pos), total, limit)
        if best is None:
            continue
        a, b, delta, absorbed = best
        members = [number]
        for i in absorbed:
            members.extend(owners.pop((chunk.doc_id, d.spans[i][0])))
        d.spans = sorted([s for i, s in enumerate(d.spans) if i not in absorbed] + [[a, b]])
        owners[(chunk.doc_id, a)] = members
        total += delta
    out = [_passage(doc_id, docs[doc_id], first, ms, scores, items, costs) for (doc_id, first), ms in owners.items()]
    out.sort(key=lambda p: p.hits[0])
    for rank, p in enumerate(out, start=1):
        p.rank = rank
    return out


def _neighbour_indexes(hits: Sequence[Any], n: int) -> dict[str, set[int]]:
    """``doc_id -> chunk indexes`` within ``n`` of a hit: all that ``neighbors:n`` windows can take."""
    wanted: dict[str, set[int]] = {}
    for hit in hits:
        chunk = getattr(hit, "chunk", hit)
        wanted.setdefault(chunk.doc_id, set()).update(range(max(0, chunk.index - n), chunk.index + n + 1))
    return wanted


def _held_docs(hits: Sequence[Any], stored: dict[str, dict[int, Chunk]]) -> dict[str, _Doc]:
    """Each hit's document as the chunks read of it, the hits included (a hit is its own context even when
    the store no longer has it)."""
    held: dict[str, dict[int, Chunk]] = {}
    for hit in hits:
        chunk = getattr(hit, "chunk", hit)
        held.setdefault(chunk.doc_id, dict(stored.get(chunk.doc_id, {}))).setdefault(chunk.index, chunk)
    return {doc_id: _Doc(list(cs.values())) for doc_id, cs in held.items()}


def _unread(docs: dict[str, _Doc], wanted: dict[str, set[int]]) -> dict[str, set[int]]:
    """The chunk indexes inside a chosen window (between its first and last chunk) never asked for: a
    window that joined others by their characters across them."""
    out: dict[str, set[int]] = {}
    for doc_id, d in docs.items():
        for x, y in d.spans:
            inner = set(range(d.chunks[x].index, d.chunks[y].index + 1)) - wanted.get(doc_id, set())
            if inner:
                out.setdefault(doc_id, set()).update(inner)
    return out


def _doc_of(chunk: Chunk, doc_chunks: Callable[[str], Sequence[Chunk]]) -> _Doc:
    """A hit's document as the store holds it, the hit included: a hit is its own context even when the store
    no longer has it."""
    stored = list(doc_chunks(chunk.doc_id))
    if not any(c.index == chunk.index for c in stored):
        stored.append(chunk)
    return _Doc(stored)


def _choose(
    costs: _Costs, d: _Doc, candidates: list[tuple[int, int]], total: int, limit: int | None
) -> tuple[int, int, int, list[int]] | None:
    """The widest candidate window that fits what is left of the budget (``None``: not even the narrowest
    does); without a budget the widest. Window costs grow with the window, so the search is binary."""
    if limit is None:
        return costs.cost(d, candidates[-1])
    lo, hi = 0, len(candidates) - 1
    widest = costs.cost(d, candidates[hi])
    if total + widest[2] <= limit:
        return widest
    narrow = costs.cost(d, candidates[0])
    if total + narrow[2] > limit:
        return None
    best = narrow
    hi -= 1
    while lo < hi:  # the widest that fits
        mid = (lo + hi + 1) // 2
        trial = costs.cost(d, candidates[mid])
        if total + trial[2] <= limit:
            best, lo = trial, mid
        else:
            hi = mid - 1
    return best


def _passage(
    doc_id: str,
    d: _Doc,
    first: int,
    members: list[int],
    scores: dict[int, float | None],
    items: dict[int, Any],
    costs: _Costs,
) -> ExpandedPassage:
    """One chosen window as a passage (rank set by the caller): its stitched text, the hits it holds, the
    best of their scores and the provenance its chunks share."""
    last = next(y for x, y in d.spans if x == first)
    cs = d.chunks[first : last + 1]
    text, pieces = stitch(cs)
    members = sorted(members)
    known = [s for s in (scores[m] for m in members) if s is not None]
    pages = [p for c in cs for p in (c.page_start, c.page_end) if p is not None]
    times = [t for c in cs for t in (c.start_time, c.end_time) if t is not None]
    return ExpandedPassage(
        rank=0,
        doc_id=doc_id,
        source=cs[0].source,
        start=pieces[0][0],
        end=pieces[-1][1],
        text=text,
        pieces=pieces,
        chunks=[c.index for c in cs],
        hits=members,
        token_count=costs.count(text),
        tokenizer=costs.tok.name,
        score=max(known) if known else None,
        section=_common_path(cs),
        page_start=min(pages) if pages else None,
        page_end=max(pages) if pages else None,
        start_time=min(times) if times else None,
        end_time=max(times) if times else None,
        speakers=list(dict.fromkeys(s for c in cs for s in c.speakers)),
        results=[items[m] for m in members],
    )


def _common_path(chunks: Sequence[Chunk]) -> list[str]:
    path = list(chunks[0].section or [])
    for c in chunks[1:]:
        other = list(c.section or [])
        n = 0
        while n < min(len(path), len(other)) and path[n] == other[n]:
            n += 1
        path = path[:n]
    return path


class StoreChunks:
    """``doc_chunks`` for :func:`expand_chunks` over a :class:`~chunkwise.store.base.Store`: a document's
    chunks fetched by its chunk ids (read once per document per call). Where the store reads chunks by
    document and chunk index (``chunks_at``), :meth:`around` answers ``neighbors:N`` with the windows
    alone: a hit in a long document no longer reads every chunk of it."""

    def __init__(self, store: Any):
        self.store = store
        self.cache: dict[str, list[Chunk]] = {}
        if not callable(getattr(store, "chunks_at", None)):
            self.around = None  # type: ignore[assignment]

    def __call__(self, doc_id: str) -> list[Chunk]:
        if doc_id not in self.cache:
            ids = sorted(self.store.chunk_ids([doc_id]).get(doc_id, set()))
            self.cache[doc_id] = [h.chunk for h in self.store.fetch(ids) if h.chunk is not None]
        return self.cache[doc_id]

    def around(self, wanted: dict[str, set[int]]) -> dict[str, list[Chunk]]:
        """The stored chunks of ``doc_id -> chunk indexes``, by document (one read for them all)."""
        out: dict[str, list[Chunk]] = {}
        for h in self.store.chunks_at(wanted):
            if h.chunk is not None:
                out.setdefault(h.chunk.doc_id, []).append(h.chunk)
        return out


def store_chunks(store: Any) -> StoreChunks:
    """The reader :meth:`~chunkwise.retrieval.index.Index.expand` hands :func:`expand_chunks` for ``store``."""
    return StoreChunks(store)


__all__ = [
    "ExpandedPassage",
    "StoreChunks",
    "expand_chunks",
    "store_chunks",
    "stitch",
    "windows",
    "GAP",
    "BUDGET_TOKENIZER",
]
