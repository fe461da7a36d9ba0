"""TokenMap: one text tokenised once, then exact or estimated counts of any span of it by binary search.

Strategies plan cuts with :meth:`TokenMap.estimate` and verify chunks with :meth:`TokenMap.exact` (or the
tokenizer), so a region is tokenised once instead of once per candidate chunk.
"""

from __future__ import annotations

import array
import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..registry import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # imported when first used: small texts are counted without it

from .tokenizers import _ASCII_DIGITS, _ASCII_LETTERS, _ASCII_WS, Span, Tokenizer


class TokenMap:
    """The token spans of one text, for counting any span of it in O(log n) without re-tokenising.

    ``estimate(a, b)`` is the number of tokens of the whole text that overlap ``[a, b)``. It equals the
    count of ``text[a:b]`` tokenised on its own whenever ``a`` and ``b`` fall on word boundaries, and is
    off by a token or two where a cut splits a word; strategies plan with estimates and then verify every
    chunk with an exact count (:meth:`exact`, else the tokenizer), so an estimate never lets a chunk over
    the cap. ``starts``/``ends`` are sequences of ints (``array.array``; ``range`` for characters) that
    ``bisect`` searches; ``lists=False`` keeps them as numpy arrays (for callers that look up few positions).
    """

    #: token start offsets: ``range``, ``array.array``, :class:`_StartsFromEnds` or a numpy array
    starts: Sequence[int] | _StartsFromEnds | np.ndarray
    #: token end offsets: ``range``, ``array.array`` or a numpy array
    ends: Sequence[int] | np.ndarray

    def __init__(self, text: str, tokenizer: Tokenizer, base: int = 0, lists: bool = True):
        self.base = base
        self.limit = base + len(text)
        self.tokenizer = tokenizer
        n = len(text)
        if tokenizer.per_character:
            self.starts = range(base, base + n)
            self.ends = range(base + 1, base + n + 1)
        elif not lists:
            # numpy arrays: no conversion to Python ints, for callers that look up few positions (fixed
            # windows); ``bisect`` works on them, values are numpy integers
            starts, ends = tokenizer.offset_arrays(text)
            # (offsets of the whole text, base 0, are used as they are: two array copies fewer)
            self.starts, self.ends = (starts + base, ends + base) if base else (starts, ends)
        else:
            # array.array, not a list: converting is a memcpy instead of one Python int per token (tolist()
            # cost more than all the planning), and bisect on it is as fast or faster (no pointer chasing)
            int_starts, int_ends = tokenizer.offset_ends(text, base)
            self.ends = int_ends
            if tokenizer.tiles_text:  # a start is the end before
                self.starts = _StartsFromEnds(int_ends, base)
            else:
                self.starts = int_starts

        # per-instance fast paths (same signatures as the methods they shadow)
        if isinstance(self.starts, _StartsFromEnds):
            self.estimate = self._estimate_tiled  # type: ignore[method-assign]  # hot path: no dispatch per call
        if not lists and not tokenizer.per_character:  # numpy arrays: bisect would read numpy scalars one by one
            self._between = self._between_array  # type: ignore[method-assign]  # see above

    def __len__(self) -> int:
        return len(self.starts)

    def estimate(self, a: int, b: int) -> int:
        """Tokens overlapping ``[a, b)`` (absolute offsets)."""
        if b <= a:
            return 0
        return max(0, self.starts_before(b) - bisect.bisect_right(self.ends, a))

    def _estimate_tiled(self, a: int, b: int) -> int:
        """:meth:`estimate` for tokens that tile the text (token ``i`` starts where ``i - 1`` ends)."""
        ends = self.ends
        if b <= a or b <= self.base or not ends:
            return 0
        n = 1 + bisect.bisect_left(ends, b, 0, len(ends) - 1) - bisect.bisect_right(ends, a)
        return n if n > 0 else 0

    def bound_counts(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`estimate` for many spans at once: arrays ``(upper, lower)`` over ``positions``
        such that ``estimate(positions[x], positions[y]) == max(0, upper[y] - lower[x])`` whenever
        ``positions[x] < positions[y]`` (and 0 otherwise). Two ``searchsorted`` calls replace two binary
        searches per span; planning loops then do integer arithmetic only."""
        p = np.asarray(positions, dtype=np.int64)
        starts, ends = self.starts, self.ends
        if isinstance(starts, range):  # characters: token i is [base + i, base + i + 1)
            n = len(starts)
            return np.clip(p - self.base, 0, n), np.clip(p - self.base, 0, n)
        e = _as_int64(ends)
        lower = e.searchsorted(p, "right")
        if isinstance(starts, _StartsFromEnds):  # see _estimate_tiled
            n = len(e)
            if n == 0:
                return np.zeros(len(p), dtype=np.int64), lower
            return np.where(p > self.base, 1 + e[: n - 1].searchsorted(p, "left"), 0), lower
        return _as_int64(starts).searchsorted(p, "left"), lower

    def starts_before(self, pos: int) -> int:
        """Number of tokens that start before ``pos`` (the index of the first token starting at or after)."""
        starts = self.starts
        if isinstance(starts, _StartsFromEnds):
            n = len(self.ends)
            return 0 if n == 0 or pos <= self.base else 1 + bisect.bisect_left(self.ends, pos, 0, n - 1)
        return bisect.bisect_left(starts, pos)

    def first_after(self, pos: int) -> int:
        """Index of the first token that ends after ``pos``."""
        return bisect.bisect_right(self.ends, pos)

    def exact(self, text: str, a: int, b: int) -> int | None:
        """The exact count of ``text[a:b]`` tokenised on its own, when the cuts provably do not change the
        tokens (else ``None``: count it). ``text`` is the full text the map's offsets refer to.

        Why this is exact: every tokenizer here first splits text into pre-tokens and never lets a token
        cross a pre-token boundary. Where both cuts are boundaries the slice has the same tokens as the
        whole text had there, so its count is a difference of two indexes. The rules below only answer
        for cuts whose classification is certain (ASCII context); anything else is counted.

        - ``chars``: every cut. ``words``: cuts next to whitespace.
        - ``bert`` (MiniLM): cuts next to ASCII whitespace (the normaliser removes control characters, so
          only real whitespace separates words).
        - ``cl100k``: the pre-tokeniser regex has no look-behind, so matching restarts identically at a
          boundary; a boundary is certain after a newline (before non-space), after a letter before a
          non-letter, after a digit before a non-digit, and before a space or tab. A slice that starts on
          a word after a space (`` word`` in the whole text, ``word`` in the slice) has its first
          pre-token (found with the pre-tokeniser's own regex on the slice) counted on its own, and a
          slice that ends where the whole text had one pre-token (``.\\n\\n``) has its last characters
          after the last certain boundary counted on their own; the middle comes from the index.
          Matching from a boundary depends only on the text ahead, so the middle agrees.
        """
        kind = self.tokenizer.additive
        if b <= a:
            return 0
        if kind == "chars":
            return b - a
        lo, hi = self.base, self.limit
        if kind == "words":
            if (a == lo or text[a - 1].isspace()) and (b == hi or text[b].isspace()):
                return self._between(a, b)
            return None
        if kind == "bert":
            if (a == lo or text[a - 1] in _ASCII_WS) and (b == hi or text[b] in _ASCII_WS):
                return self._between(a, b)
            return None
        if kind == "cl100k":
            return self._exact_cl100k(text, a, b)
        return None

    def _exact_cl100k(self, text: str, a: int, b: int) -> int | None:
        """:meth:`exact` for ``cl100k`` (the rules in its docstring): the slice's own first pre-token and its
        characters after the last certain boundary counted on their own, the middle from the index."""
        # the cl100k pre-tokeniser's rules, loaded with the cl100k tokenizer (a MiniLM run does not import them)
        from .tiktoken_bpe import _bpe_boundary, _cl100k_regex

        lo, hi = self.base, self.limit
        # tail: back to the last certain boundary t; text[t:b] is counted on its own
        t = b
        if b < hi and text[b - 1].isspace():  # trailing whitespace is one pre-token at a text's end
            t -= 1
        while not _bpe_boundary(text, t, lo, hi):
            t -= 1
            if t <= a or b - t > 32:
                return None
        # head: certain boundary, or the end of the slice's own first pre-token
        h = a
        if not _bpe_boundary(text, a, lo, hi):
            # the slice's own first pre-token: a run of ASCII letters (or digits) needs no regex;
            # otherwise the pre-tokeniser's regex on the slice (pos=a, endpos=b), ASCII only
            c = text[a]
            run = _ASCII_LETTERS if c in _ASCII_LETTERS else _ASCII_DIGITS if c in _ASCII_DIGITS else None
            if run is not None:
                while h < t and text[h] in run:
                    h += 1
            else:
                m = _cl100k_regex().match(text, a, b)
                h = m.end() if m is not None else a
            if h == a or h > t or not text[a:h].isascii() or not _bpe_boundary(text, h, lo, hi):
                return None
        if h > t:
            return None
        head = self.tokenizer.count(text[a:h]) if h > a else 0
        tail = self.tokenizer.count(text[t:b]) if b > t else 0
        return head + self._between(h, t) + tail

    def _between(self, a: int, b: int) -> int:
        """Tokens that end in ``(a, b]`` (a token ending inside a multi-byte character is widened to it, so
        the zero-width tokens after it sit at the character's end and belong to the span before)."""
        return int(bisect.bisect_right(self.ends, b) - bisect.bisect_right(self.ends, a))

    def _between_array(self, a: int, b: int) -> int:
        """:meth:`_between` for offsets kept as a numpy array."""
        ends = self.ends
        assert isinstance(ends, np.ndarray), "installed by __init__ only when the offsets are numpy arrays"
        return int(ends.searchsorted(b, "right")) - int(ends.searchsorted(a, "right"))

    def counts(self, text: str, spans: Sequence[Span]) -> list[int]:
        """Exact counts of many spans: from the index where :meth:`exact` can tell, else one batch count."""
        out = [self.exact(text, a, b) for a, b in spans]
        todo = [i for i, n in enumerate(out) if n is None]
        if todo:
            for i, n in zip(todo, self.tokenizer.count_batch([text[spans[i][0] : spans[i][1]] for i in todo])):
                out[i] = n
        return out  # type: ignore[return-value]


def _as_int64(values) -> np.ndarray:
    """A sequence of offsets as an int64 array (a view, for ``array.array`` and numpy arrays)."""
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, array.array) and values.typecode == "q":
        return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    return np.asarray(values, dtype=np.int64)


class _StartsFromEnds:
    """Token starts of a tokenizer whose tokens tile the text: ``starts[i] == ends[i - 1]``."""

    __slots__ = ("ends", "base")

    def __init__(self, ends: Sequence[int], base: int):
        self.ends = ends
        self.base = base

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += len(self.ends)
        if not 0 <= i < len(self.ends):
            raise IndexError(i)
        return self.ends[i - 1] if i else self.base
