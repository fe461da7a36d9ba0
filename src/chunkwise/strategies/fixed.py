"""Fixed token windows: ``max_tokens`` tokens a chunk, ``overlap`` tokens repeated between neighbours.

The text is tokenised once and windows are laid over the token offsets, so every cut falls on a token
boundary and every chunk is an exact slice. Two details make the cap exact rather than approximate:

- A window's tokens are not always the tokens of its text tokenised on its own: BPE merges differently at
  a cut inside a word, and a cl100k token can end inside a multi-byte character (offsets are widened to
  whole characters). Every chunk is therefore counted again on its own, and a window over the cap gives
  back its last tokens until it fits.
- A window whose last tokens split a word gives them back too when a word boundary is near (within the
  last tenth of the window, at most 16 tokens): chunks end between words, not in the middle of one, and
  such cuts are also the ones where a recount agrees with the window. Windows are therefore *at most*
  ``max_tokens`` long, nearly always exactly or within a few tokens of it.

No chunk is longer than ``max_tokens * 16`` characters (see :data:`~chunkwise.strategies.base.MAX_CHARS_PER_TOKEN`).
"""

from __future__ import annotations

import numpy as np

from ..document import Document
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from .base import CountingStrategy, Span, max_chars_for, trim_span
from .packing import fit_first, merge_small


def _at_word_boundary(text: str, pos: int) -> bool:
    return pos <= 0 or pos >= len(text) or text[pos].isspace() or text[pos - 1].isspace()


def _as_array(values):
    """Offsets with ``searchsorted``, slicing to ``tolist()`` and int indexing (numpy arrays, or ranges)."""
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, range):  # the chars tokenizer: no need for an array of every position
        return _Range(values)
    return np.asarray(values, dtype=np.int64)


class _Range:
    """A ``range`` (characters: token ``i`` is ``[base + i, base + i + 1)``) with the numpy calls used here."""

    __slots__ = ("r",)

    def __init__(self, r: range):
        self.r = r

    def __len__(self) -> int:
        return len(self.r)

    def __getitem__(self, i):
        item = self.r[i]
        return _Range(item) if isinstance(item, range) else item

    def tolist(self) -> list[int]:
        return list(self.r)

    def searchsorted(self, x: int, side: str = "left") -> int:
        r = self.r  # step 1, sorted: the index of x, clipped
        k = x - r.start + (1 if side == "right" else 0)
        return min(max(k, 0), len(r))


class FixedTokenChunker(CountingStrategy):
    """Windows of ``max_tokens`` tokens with ``overlap`` tokens of overlap, cut on token boundaries."""

    name = "fixed"

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        """Token windows of ``max_tokens`` every ``max_tokens - overlap`` tokens, ends snapped back to a word
        boundary when one is close, each window's count exact (shrunk when the recount disagrees). The hot
        path stays in this one loop (a call per step would cost ~20% here); the rare steps (the character
        bound, shrinking, ``min_tokens``) and the overlap are functions below. The offsets stay numpy
        arrays (a list of every token offset would cost more than the whole loop): each window looks up a
        handful of positions, by searchsorted or by slicing a few values out."""
        text = doc.text
        max_tokens, overlap = self.max_tokens, self.overlap
        max_chars = max_chars_for(max_tokens)
        tm = TokenMap(text[start:end], tokenizer, base=start, lists=False)
        S, E = _as_array(tm.starts), _as_array(tm.ends)
        n = len(S)
        lookback = max(0, min(16, max_tokens // 10))
        exact, count = tm.exact, tokenizer.count
        spans: list[Span] = []
        counts: list[int] = []
        pos, hint = start, 0  # hint: the token the next window probably starts in (checked before use)
        while pos < end:
            # trim leading whitespace (inline trim_span: one call per window)
            while pos < end and text[pos].isspace():
                pos += 1
            if pos >= end:
                break
            # the first token ending after pos: usually the one the last window handed over, else searched
            if 0 <= hint < n and E[hint] > pos and (hint == 0 or E[hint - 1] <= pos):
                i = hint
            else:
                i = int(E.searchsorted(pos, "right"))
            j = min(i + max_tokens, n)
            if j < n:
                # snap the end back to a word boundary when one is close
                lo = max(i, j - lookback)
                near = S[lo : j + 1].tolist()  # starts of tokens lo..j
                if not _at_word_boundary(text, near[-1]):
                    for k in range(j - 1, lo - 1, -1):
                        if k > i and _at_word_boundary(text, near[k - lo]):
                            j = k
                            break
                e = near[j - lo]
            else:
                e = end
            if e - pos > max_chars:
                e = _within_chars(S, pos, i, j, max_chars)
            a, b = trim_span(text, pos, max(e, pos + 1))
            c = exact(text, a, b)
            c = count(text[a:b]) if c is None else c
            if c > max_tokens:
                b, c, j = _shrink(text, tm, tokenizer, a, b, c, i, max_tokens, max_chars)
            if b > a:
                spans.append((a, b))
                counts.append(c)
            e = max(b, pos + 1)
            if e >= end:
                break
            nxt, hint = _overlap_start(text, S, pos, e, i, j, overlap, lookback) if overlap else (e, j)
            pos = max(nxt, pos + 1)
        if self.min_tokens and len(spans) > 1:  # only a short last window can be under min_tokens
            spans, counts = _merge_short(text, tm, tokenizer, spans, counts, self.min_tokens, max_tokens, max_chars)
        return spans, counts


def _within_chars(S, pos: int, i: int, j: int, max_chars: int) -> int:
    """A window too long in characters ends at the last token boundary within the bound, or inside a token."""
    k = int(S.searchsorted(pos + max_chars, "right"))  # tokens k.. start after pos + max_chars
    k = min(max(k, i + 1), j)
    return int(S[k - 1]) if k - 1 > i and S[k - 1] > pos else pos + max_chars


def _shrink(
    text: str, tm: TokenMap, tokenizer: Tokenizer, a: int, b: int, c: int, i: int, max_tokens: int, max_chars: int
) -> tuple[int, int, int]:
    """A window whose exact count ``c`` is over the cap: give back the excess tokens and count again; when
    that does not shrink it, cut it exactly instead. ``(end, count, token the next window starts near)``."""
    S, E = _as_array(tm.starts), _as_array(tm.ends)
    n = len(S)
    j = i
    while c > max_tokens:
        j = int(E.searchsorted(b, "right")) - (c - max_tokens)
        new_b = trim_span(text, a, int(S[j]))[1] if i < j < n else a
        if new_b <= a or new_b >= b:
            piece_end, piece_count = fit_first(text, a, b, tokenizer, max_tokens, max_chars)
            return piece_end, piece_count, j
        b = new_b
        exact = tm.exact(text, a, b)
        c = tokenizer.count(text[a:b]) if exact is None else exact
    return b, c, j


def _overlap_start(text: str, S, pos: int, e: int, i: int, j: int, overlap: int, lookback: int) -> tuple[int, int]:
    """Where the next window starts (and the token it starts in): ``overlap`` tokens before ``e``, moved to a
    word start when one is near."""
    n = len(S)
    nxt, hint = e, j
    # the first token that starts at or after e, then back `overlap` tokens
    k = int(S.searchsorted(e, "left")) - overlap
    if k > i:
        k0 = k
        near = S[k0 : min(k0 + lookback, n) + 1].tolist()  # starts of tokens k0..
        if near[0] > pos:
            for q in range(k0, min(k0 + lookback, n)):  # start the overlap at a word if one is near
                sq = near[q - k0]
                if sq >= e:
                    break
                if _at_word_boundary(text, sq):
                    k = q
                    break
            nxt = min(near[k - k0], e)
            hint = k
    return nxt, hint


def _merge_short(
    text: str,
    tm: TokenMap,
    tokenizer: Tokenizer,
    spans: list[Span],
    counts: list[int],
    min_tokens: int,
    max_tokens: int,
    max_chars: int,
) -> tuple[list[Span], list[int]]:
    """``min_tokens``: merge a short window into its neighbour when the exact count still fits."""
    merged = merge_small(spans, tm.estimate, min_tokens, max_tokens, max_chars)
    if merged == spans:
        return spans, counts
    known = dict(zip(spans, counts))  # spans merge_small left alone keep their exact counts
    merged_counts = [known[sp] if sp in known else tokenizer.count(text[sp[0] : sp[1]]) for sp in merged]
    if max(merged_counts) <= max_tokens:  # else the estimate was short: keep the windows
        return merged, merged_counts
    return spans, counts
