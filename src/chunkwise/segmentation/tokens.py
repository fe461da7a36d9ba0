"""The public import path for tokenizers: ``from chunkwise.segmentation.tokens import get_tokenizer``.

A re-export only, kept so that users' imports keep working. The code lives in :mod:`.tokenizers` (the
:class:`Tokenizer` interface, characters, words, Hugging Face, :func:`get_tokenizer`), :mod:`.tiktoken_bpe`
(cl100k) and :mod:`.token_map` (:class:`TokenMap`); chunkwise's own modules import from those.
"""

from __future__ import annotations

from .tiktoken_bpe import TiktokenTokenizer
from .token_map import TokenMap
from .tokenizers import (
    TOKENIZER_NAMES,
    CharTokenizer,
    HFTokenizer,
    Span,
    Tokenizer,
    WordTokenizer,
    get_tokenizer,
    minilm_tokenizer_path,
    resolve_tokenizer,
)

__all__ = [
    "TOKENIZER_NAMES",
    "CharTokenizer",
    "HFTokenizer",
    "Span",
    "TiktokenTokenizer",
    "TokenMap",
    "Tokenizer",
    "WordTokenizer",
    "get_tokenizer",
    "minilm_tokenizer_path",
    "resolve_tokenizer",
]
