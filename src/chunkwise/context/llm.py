"""LLM-written context (Anthropic's "contextual retrieval") from any OpenAI-compatible chat endpoint.

For every chunk an LLM reads the whole document and writes 50–100 tokens that situate the chunk in it
("This section of ACME's Q2 2023 report covers revenue growth..."); that text becomes :attr:`Chunk.context`
and is embedded and BM25-indexed with the chunk. Anthropic measured 35% fewer top-20 retrieval failures
with contextual embeddings, 49% with contextual BM25 as well.

Engineering choices, each for a reason:

- **Shared prompt prefix.** The system message and the document come first and are byte-identical for
  every chunk of a document; the chunk comes last. Servers that cache prompt prefixes (vLLM, SGLang,
  llama.cpp, OpenAI, DeepSeek...) then process the document once, not once per chunk.
- **Concurrency limit** (``concurrency`` threads) so a local server is not flooded.
- **Retries** with exponential back-off (and ``Retry-After`` when given) on 408, 409, 429, 5xx, timeouts and
  dropped connections; other 4xx (bad key, unknown model) and redirects are not retried, and after one such
  answer the rest of the document's chunks fail fast instead of repeating a request that cannot succeed.
- **Disk cache** (SQLite, ``llm_context.sqlite3`` beside the embedding cache) keyed by a hash of the endpoint
  URL, the model and the whole request (document, chunk, prompt), so re-indexing costs nothing and a changed
  prompt or another server is not served stale answers. Failures are never cached.
- **A missed deadline ends the endpoint's part of the run.** An endpoint that could not answer one chunk
  within the deadline (one that drips its answer a byte at a time) is not sent the rest: a run against it
  takes one deadline, not one per chunk.
- **Failures never stop a run.** A chunk whose request fails keeps its plain text (``context`` stays
  ``None``); the failures are counted (:attr:`LLMContextualizer.failures`) and reported in one
  :class:`ContextWarning` per document.

The connection settings are :class:`chunkwise.llm.client.ChatSettings` (inherited, declared once) and the
requests go through :class:`chunkwise.llm.client.ChatClient`, the same client ``chunkwise ask`` and
``chunkwise summarize`` use (its HTTP policy: :mod:`chunkwise.http`).
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import InitVar, dataclass, field

from ..deprecation import warn_renamed
from ..document import Chunk, Document, stable_hash
from ..llm.client import (
    API_KEY_ENVS,
    BASE_URL_ENV,
    MODEL_ENV,
    ChatClient,
    ChatSettings,
    FatalLLMError,
    LLMError,
    settings_of,
)
from ..validation import Interval, check

DB_NAME = "llm_context.sqlite3"

SYSTEM_PROMPT = (
    "You write short context for chunks of a document so that a search engine can find them. "
    "Answer with the context only."
)
#: the document part of the prompt: identical for every chunk of a document (the cacheable prefix)
DOCUMENT_TEMPLATE = "<document>\n{document}\n</document>\n"
#: the chunk part, appended after the document (Anthropic's wording)
CHUNK_TEMPLATE = (
    "Here is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\n"
    "Please give a short succinct context (50-100 tokens) to situate this chunk within the overall document "
    "for the purposes of improving search retrieval of the chunk. Answer only with the succinct context and "
    "nothing else."
)


class ContextWarning(UserWarning):
    """Some chunks got no LLM context (they keep their plain text); the message says how many and why."""


@dataclass
class LLMContextualizer(ChatSettings):
    """Writes situating context for chunks with an OpenAI-compatible ``/chat/completions`` endpoint.

    Construct once, call :meth:`contextualize` per document; counters accumulate over calls.

    Parameters
    ----------
    The connection settings of :class:`~chunkwise.llm.client.ChatSettings` (``base_url``, ``model``,
    ``api_key``, ``timeout``, ``deadline``, ``retries``, ``backoff``, ``max_response_bytes``, ``cache``,
    ``cache_dir``), and:

    concurrency: requests in flight at once.
    answer_tokens: the answer's token limit (sent as the API's ``max_tokens``; ``max_tokens=`` is the
        deprecated old keyword: in chunkwise ``max_tokens`` is the chunk cap only). max_document_chars: longer documents are cut to this many
        characters in the prompt (the chunk itself is always sent whole).
    """

    concurrency: int = 4
    answer_tokens: int = 200
    temperature: float = 0.0
    max_document_chars: int = 100_000
    #: chunks that got context from the endpoint / from the cache / got none (over all calls)
    requested: int = field(default=0, init=False)
    cached: int = field(default=0, init=False)
    failures: int = field(default=0, init=False)
    #: why the endpoint is known too slow (a missed deadline): later chunks and documents fail at once
    _too_slow: str | None = field(default=None, init=False, repr=False)
    #: the old name of ``answer_tokens`` (deprecated)
    max_tokens: InitVar[int | None] = None

    def __post_init__(self, max_tokens: int | None) -> None:
        if max_tokens is not None:
            warn_renamed("max_tokens", "answer_tokens", "LLMContextualizer", stacklevel=4)
            self.answer_tokens = max_tokens
        for name in ("concurrency", "answer_tokens", "max_document_chars"):
            check(getattr(self, name), Interval(int, 1, None), name, "llm context")
        self.client = ChatClient(**settings_of(self), cache_name=DB_NAME, purpose="llm context")
        self.base_url, self.model, self.url = self.client.base_url, self.client.model, self.client.url
        self.api_key, self.deadline = self.client.api_key, self.client.deadline

    @property
    def requests_sent(self) -> int:
        """HTTP requests sent, retries included."""
        return self.client.requests_sent

    # -- prompt -------------------------------------------------------------------------------------
    def messages(self, doc: Document, chunk: Chunk) -> list[dict[str, str]]:
        """The chat messages for one chunk: system + (document, then chunk) in one user message, so the
        document part is a byte-identical prefix for every chunk of ``doc``."""
        document = doc.text[: self.max_document_chars]
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": DOCUMENT_TEMPLATE.format(document=document) + CHUNK_TEMPLATE.format(chunk=chunk.text),
            },
        ]

    def prompt_id(self) -> str:
        """Changes whenever anything that shapes the answer changes (part of the cache key)."""
        return stable_hash(
            SYSTEM_PROMPT,
            DOCUMENT_TEMPLATE,
            CHUNK_TEMPLATE,
            self.answer_tokens,
            self.temperature,
            self.max_document_chars,
        )

    def close(self) -> None:
        self.client.close()

    # -- the work ------------------------------------------------------------------------------------
    def _payload(self, doc: Document, chunk: Chunk) -> dict:
        return self.client.payload(self.messages(doc, chunk), self.answer_tokens, self.temperature)

    def contextualize(self, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        """Set ``context`` on every chunk (from the cache or the endpoint); failures keep ``None``."""
        chunks = list(chunks)
        if not chunks:
            return chunks
        todo: list[Chunk] = []
        for c in chunks:
            hit = self.client.cached(self._payload(doc, c)) if self.cache else None
            if hit is not None:
                c.context = hit
                self.cached += 1
            else:
                todo.append(c)
        if not todo:
            return chunks
        state: dict[str, str | None] = {"fatal": None}

        def work(c: Chunk) -> str:
            if state["fatal"] or self._too_slow:
                raise FatalLLMError(state["fatal"] or self._too_slow or "")
            try:
                return self.client.complete(self.messages(doc, c), self.answer_tokens, self.temperature, normalize=True)
            except FatalLLMError as exc:
                state["fatal"] = exc.problem
                raise
            except LLMError as exc:  # a missed deadline: no later request of this run is sent (bounded time)
                if exc.past_deadline:
                    self._too_slow = exc.problem
                raise

        failed: list[str] = []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
            futures = [(c, pool.submit(work, c)) for c in todo]
            for c, fut in futures:
                try:
                    c.context = fut.result()
                except LLMError as exc:  # every failure is counted and reported, never raised
                    c.context = None
                    failed.append(exc.problem)
                    continue
                self.requested += 1
        if failed:
            self.failures += len(failed)
            warnings.warn(
                f"{doc.source}: llm context failed for {len(failed)} of {len(chunks)} chunks "
                f"({failed[-1]}); those chunks keep their plain text",
                ContextWarning,
                stacklevel=3,
            )
        return chunks


def _old_max_tokens(self: LLMContextualizer) -> int:
    """Deprecated name of ``answer_tokens`` (in chunkwise ``max_tokens`` is the chunk cap only)."""
    warn_renamed("max_tokens", "answer_tokens", "LLMContextualizer")
    return self.answer_tokens


# reading the old name still works (the InitVar above only covers the constructor keyword)
setattr(LLMContextualizer, "max_tokens", property(_old_max_tokens))  # noqa: B010


__all__ = [
    "LLMContextualizer",
    "ContextWarning",
    "SYSTEM_PROMPT",
    "DOCUMENT_TEMPLATE",
    "CHUNK_TEMPLATE",
    "BASE_URL_ENV",
    "MODEL_ENV",
    "API_KEY_ENVS",
]
