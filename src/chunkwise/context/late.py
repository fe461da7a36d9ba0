"""Late chunking: embed the whole document once, then pool each chunk's vector from its own tokens.

Why: a chunk embedded on its own forgets everything outside it, so "it was released in 2019" cannot match a
query that names the product introduced three paragraphs earlier. Late chunking (Günther et al., 2024,
"Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding Models") runs the transformer over
the whole document, so every token vector has attended to the text around it, and only *then* cuts: a
chunk's vector is the mean of the token vectors inside the chunk's character span.

How, precisely:

- **Alignment by offsets, never by counting tokens.** ``Embedder.embed_tokens`` returns each token vector
  with its character span; a token belongs to a chunk when at least half of its characters lie inside the
  chunk's ``[start, end)`` (a token straddling a boundary goes to the chunk that holds most of it; an exact
  tie, which needs a token cut in its middle, counts for both).
- **Long documents** (more tokens than the model window) are covered by overlapping *macro windows*
  (Jina's "long late chunking"). Windows are cut on whitespace between tokens so each window tokenizes
  exactly as the whole text does, and each token's vector is taken from the window in which it sits
  farthest from an artificial window edge, i.e. with the most context on both sides. The start and end of
  the document are real edges and cost nothing.
- **Chunks without tokens** (text the tokenizer drops entirely, such as zero-width or control characters,
  or a span a truncating back-end never reached) are embedded on their own with ``embedder.embed`` and
  counted in :attr:`LateChunkingStats.fallback`; nothing is silently left as a zero vector.

The window is bounded by the model: with the default MiniLM back-end at most 510 content tokens (512
positions), and by default 256 (:data:`DEFAULT_LATE_WINDOW`, see there why). So "the whole document" means "the
few hundred tokens around the chunk" for anything longer: late chunking with MiniLM gives a chunk context
from its neighbourhood, not from a 30-page report. With a long-context embedding model pass ``late_window``
(up to its ``model_window``) to widen it. (``late_window`` was called ``window``; that keyword still works
with a deprecation warning.)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..deprecation import moved_getattr, warn_renamed
from ..document import Chunk, Document
from ..embeddings.base import Embedder, l2_normalize
from ..errors import ConfigError
from ..validation import Interval, check

Span = tuple[int, int]
log = logging.getLogger(__name__)

#: default macro-window length in tokens (capped at the embedder's ``model_window``): the input length most
#: sentence-embedding models were trained on (sentence-transformers caps all-MiniLM-L6-v2 at 256). On
#: Chroma's set, MiniLM late chunking lost 7.1 points of span recall@5 with 510-token windows and was level
#: with plain chunk embeddings (-0.8, not significant) with 256 (docs/context.md).
DEFAULT_LATE_WINDOW = 256
#: old names (``DEFAULT_WINDOW``) import with a warning (``chunkwise.deprecation.MOVED``)
__getattr__ = moved_getattr(__name__)


class LateChunkingWarning(UserWarning):
    """Some chunks could not be pooled from document tokens (see :class:`LateChunkingStats`)."""


@dataclass
class LateChunkingStats:
    """What happened in one :func:`late_chunk_vectors` call (pass ``stats=LateChunkingStats()`` to get it).

    ``windows``: macro windows embedded; ``tokens``: document tokens pooled from; ``fallback``: chunks with no
    token inside, embedded on their own; ``truncated``: windows the back-end cut short.
    """

    windows: int = 0
    tokens: int = 0
    fallback: int = 0
    truncated: int = 0


def check_chunk_spans(text: str, chunks: list[Chunk], source: str) -> None:
    """Every chunk must be an exact slice of ``text``; anything else is a bug upstream, raised loudly."""
    n = len(text)
    for c in chunks:
        if not (isinstance(c.start, int) and isinstance(c.end, int) and 0 <= c.start < c.end <= n):
            raise RuntimeError(
                f"internal error: chunk {c.index} ({c.id}) spans [{c.start}:{c.end}], outside document "
                f"{source} of {n} characters"
            )
        if text[c.start : c.end] != c.text:
            raise RuntimeError(
                f"internal error: chunk {c.index} ({c.id}) text does not match {source}[{c.start}:{c.end}]"
            )


def _cut_point(toks: list[Span], i: int, lo: int, text: str, forward: bool) -> int:
    """A token index near ``i`` (towards ``lo`` when ``forward`` is False) where a window may begin: a token
    preceded by whitespace or the text start, so the window text tokenizes exactly as inside the document.
    Falls back to ``i`` when no such token is within reach."""
    step = 1 if forward else -1
    j = i
    while (lo <= j < len(toks)) and abs(j - i) <= 64:
        a = toks[j][0]
        if j == 0 or a == 0 or text[a - 1].isspace() or toks[j - 1][1] < a:
            return j
        j += step
    return i


def macro_windows(toks: list[Span], text: str, window: int, overlap: int) -> list[Span]:
    """Token-index ranges ``[s, e)`` of overlapping windows covering all ``len(toks)`` tokens.

    Consecutive windows share about ``overlap`` tokens; every window holds at most ``window`` tokens, and
    window starts are moved forward (ends backward) onto word boundaries.
    """
    n = len(toks)
    if n <= window:
        return [(0, n)]
    stride = window - overlap
    out: list[Span] = []
    s = 0
    while True:
        e = min(s + window, n)
        if e < n:
            # end the window before a token that begins a word, so the cut falls on whitespace
            e2 = _cut_point(toks, e, s + 1, text, forward=False)
            e = e2 if e2 > s + stride // 2 else e
        out.append((s, e))
        if e >= n:
            return out
        nxt = max(s + 1, e - overlap)
        nxt2 = _cut_point(toks, nxt, 0, text, forward=True)
        s = nxt2 if nxt2 < e else nxt


def _window_owners(windows: list[Span], n: int) -> list[int]:
    """For every window, the first token index it owns: each token belongs to the window in which its
    distance to the nearest *artificial* edge is largest (the document's own start and end don't count)."""
    best = np.full(n, -1, dtype=np.int64)
    score = np.full(n, -1, dtype=np.int64)
    big = n + 1
    for k, (s, e) in enumerate(windows):
        pos = np.arange(s, e)
        left = pos - s if s > 0 else np.full(e - s, big)
        right = (e - 1) - pos if e < n else np.full(e - s, big)
        sc = np.minimum(left, right)
        better = sc > score[s:e]
        score[s:e] = np.where(better, sc, score[s:e])
        best[s:e] = np.where(better, k, best[s:e])
    # windows start in order and scores rise then fall inside each, so ownership is monotonic in position
    firsts = np.searchsorted(best, np.arange(len(windows)), side="left")
    return [int(f) if f < n and best[f] == k else -1 for k, f in enumerate(firsts)]


def document_token_vectors(
    text: str,
    embedder: Embedder,
    late_window: int | None = None,
    overlap: int | None = None,
    macro: bool = True,
    source: str = "<text>",
    stats: LateChunkingStats | None = None,
    *,
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Contextual vectors of every token of ``text`` and their character spans ``(t, 2)``, in order.

    One ``embed_tokens`` call when the text fits ``late_window`` tokens; otherwise overlapping macro windows,
    each token taken from the window where it has the most context. ``window``: old name of ``late_window``.
    """
    late_window = _renamed_window(late_window, window)
    stats = stats if stats is not None else LateChunkingStats()
    limit = int(getattr(embedder, "model_window", 0) or 0)
    window, overlap = _check_window(late_window, overlap, limit, macro)
    toks = embedder.tokenizer.offsets(text)
    n = len(toks)
    empty = (np.zeros((0, embedder.dim), dtype=np.float32), np.zeros((0, 2), dtype=np.int64))
    if n == 0:
        return empty
    if n > window and not macro:
        raise ConfigError(
            f"document has {n} tokens, more than the late-chunking window of {window} tokens of "
            f"{embedder.model_id!r}; allow macro windows (macro=True, the default) or use shorter documents",
            source=source,
        )
    windows = macro_windows(toks, text, window, overlap)
    firsts = _window_owners(windows, n) if len(windows) > 1 else [0]
    # character range each window owns: from its first owned token to the next window's first owned token
    owned_starts = [0 if k == 0 else toks[f][0] for k, f in enumerate(firsts)]
    vec_parts, span_parts = [], []
    for k, (s, e) in enumerate(windows):
        if firsts[k] < 0:
            continue
        own_a = owned_starts[k]
        nxt = [owned_starts[j] for j in range(k + 1, len(windows)) if firsts[j] >= 0]
        own_b = nxt[0] if nxt else len(text) + 1
        c0, c1 = toks[s][0], toks[e - 1][1]
        vecs, offs = embedder.embed_tokens(text[c0:c1])
        stats.windows += 1
        got = np.asarray(offs, dtype=np.int64).reshape(-1, 2) + c0
        if len(got) and got[-1, 1] < c1 and len(got) >= int(getattr(embedder, "model_window", 0) or 1 << 30):
            stats.truncated += 1
        keep = (got[:, 0] >= own_a) & (got[:, 0] < own_b)
        vec_parts.append(np.asarray(vecs, dtype=np.float32)[keep])
        span_parts.append(got[keep])
    vecs = np.concatenate(vec_parts) if vec_parts else empty[0]
    spans = np.concatenate(span_parts) if span_parts else empty[1]
    stats.tokens += len(spans)
    return vecs, spans


def _renamed_window(late_window: int | None, window: int | None) -> int | None:
    """``late_window``, or the value of its old keyword ``window`` (with a deprecation warning)."""
    if window is None:
        return late_window
    if late_window is not None:
        raise ConfigError("give late_window only (window is its old name)")
    warn_renamed("window", "late_window", "late chunking", stacklevel=4)
    return window


def check_late_options(options: dict, limit: int = 0, names: Mapping[str, str] | None = None) -> None:
    """Refuse a bad late-chunking option (``late_window``, ``overlap``) as :func:`document_token_vectors`
    would, before the collection records it; ``limit``: the embedder's ``model_window`` (0: not known);
    ``names``: how a front end spells the options (the command line's ``--late-window``), default Python's."""
    _check_window(
        options.get("late_window"), options.get("overlap"), limit, bool(options.get("macro", True)), names or {}
    )


def _check_window(
    window: int | None, overlap: int | None, limit: int, macro: bool = True, names: Mapping[str, str] | None = None
) -> tuple[int, int]:
    names = names or {}
    window_name, overlap_name = names.get("late_window", "late_window"), names.get("overlap", "overlap")
    if window is None:
        # one pass over as much as the model reads when windowing is off; otherwise windows of the length
        # sentence-embedding models were trained on (measured: 510-token windows hurt MiniLM, 256 do not)
        window = limit if not macro else (min(limit, DEFAULT_LATE_WINDOW) if limit else DEFAULT_LATE_WINDOW)
    check(window, Interval(int, 2, None), window_name, "late chunking")
    if limit and window > limit:
        raise ConfigError(f"{window_name} ({window}) is larger than the embedder's model_window ({limit} tokens)")
    if overlap is None:
        overlap = window // 4
    check(overlap, Interval(int, 0, window, closed="left"), overlap_name, "late chunking")
    return window, overlap


def pool_chunks(token_vecs: np.ndarray, token_spans: np.ndarray, spans: list[Span]) -> tuple[np.ndarray, list[int]]:
    """Mean of the token vectors inside each span (unnormalised) and the indices of spans with no token.

    A token counts for a span when at least half of its characters lie inside it; zero-width tokens count
    when their position lies inside. Candidate tokens are found by binary search on the sorted offsets.
    """
    dim = token_vecs.shape[1] if token_vecs.ndim == 2 else 0
    out = np.zeros((len(spans), dim), dtype=np.float32)
    empty: list[int] = []
    if len(token_spans) == 0:
        return out, list(range(len(spans)))
    starts, ends = token_spans[:, 0], token_spans[:, 1]
    for i, (a, b) in enumerate(spans):
        lo = int(np.searchsorted(ends, a, side="right"))
        hi = int(np.searchsorted(starts, b, side="left"))
        # the first and last candidates may straddle the boundary: keep them only by majority of characters
        while lo < hi and not _inside(starts[lo], ends[lo], a, b):
            lo += 1
        while hi > lo and not _inside(starts[hi - 1], ends[hi - 1], a, b):
            hi -= 1
        if hi <= lo:
            empty.append(i)
            continue
        out[i] = token_vecs[lo:hi].mean(axis=0, dtype=np.float64)
    return out, empty


def _inside(ts: int, te: int, a: int, b: int) -> bool:
    if te <= ts:
        return a <= ts < b
    return 2 * (min(te, b) - max(ts, a)) >= (te - ts)


def late_chunk_vectors(
    doc: Document | str,
    chunks: list[Chunk],
    embedder: Embedder,
    late_window: int | None = None,
    overlap: int | None = None,
    macro: bool = True,
    stats: LateChunkingStats | None = None,
    *,
    window: int | None = None,
) -> np.ndarray:
    """Late-chunked embeddings of ``chunks`` of ``doc``: a float32 ``(len(chunks), embedder.dim)`` array with
    unit-length rows, in the order of ``chunks``.

    ``late_window``: tokens per macro window (default ``min(256, embedder.model_window)``; at most
    ``embedder.model_window``, 510 for MiniLM; with ``macro=False`` the default is ``embedder.model_window``).
    ``window``: the old name of ``late_window`` (deprecated).
    ``overlap``: tokens shared by consecutive windows (default a quarter of the window).
    ``macro=False``: refuse documents longer than one window (``ConfigError``) instead of windowing.
    ``stats``: a :class:`LateChunkingStats` to fill in (windows, tokens, fallback chunks, truncations).

    Raises ``RuntimeError`` when a chunk is not an exact slice of the document (a bug, never ignored) and
    ``ConfigError`` when the embedder cannot give token vectors.
    """
    late_window = _renamed_window(late_window, window)
    if isinstance(doc, str):
        doc = Document(doc)
    chunks = list(chunks)
    check_chunk_spans(doc.text, chunks, doc.source)
    stats = stats if stats is not None else LateChunkingStats()
    if not chunks:
        _check_window(late_window, overlap, int(getattr(embedder, "model_window", 0) or 0), macro)
        return np.zeros((0, embedder.dim), dtype=np.float32)
    vecs, spans = document_token_vectors(doc.text, embedder, late_window, overlap, macro, doc.source, stats)
    pooled, missing = pool_chunks(vecs, spans, [(c.start, c.end) for c in chunks])
    if missing:
        stats.fallback = len(missing)
        pooled[missing] = embedder.embed([chunks[i].text for i in missing])
        log.debug(
            "late chunking: %d chunk(s) of %s had no token inside; embedded on their own", len(missing), doc.source
        )
    if stats.truncated:
        warnings.warn(
            f"late chunking: {stats.truncated} macro window(s) of {doc.source} were truncated by "
            f"{embedder.model_id!r} (window larger than the back-end reads); chunks left without "
            "tokens were embedded on their own",
            LateChunkingWarning,
            stacklevel=2,
        )
    return l2_normalize(pooled)
