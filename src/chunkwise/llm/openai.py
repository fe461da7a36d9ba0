"""Answers and summaries written by a chat model on any OpenAI-compatible endpoint.

The prompt never exceeds the model's context window: every prompt is counted (``tokenizer``, cl100k by
default, plus the chat format's per-message overhead) against ``context_tokens - answer_tokens``, and
passages that do not fit are left out, lowest-ranked first; a single passage too long on its own is cut
at a token boundary. What was left out or cut is reported, never dropped silently.

Passages are quoted as data (:func:`~chunkwise.llm.base.passage_block`: fenced by a code no passage can
contain, under :data:`~chunkwise.llm.base.DATA_RULE`), so a document cannot pass its text off as an
instruction, as another passage's header or as a source to cite.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
from ..segmentation.tokenizers import resolve_tokenizer
from ..strategies.params import TokenizerSpec
from ..validation import Function, InstanceOf, Interval, ListOf, validated
from .base import (
    ANSWER_PARAMS,
    DATA_RULE,
    LLM,
    PASSAGES,
    SUMMARY_PARAMS,
    Completion,
    Passage,
    fence_code,
    passage_block,
)
from .client import SETTINGS, ChatClient, FatalLLMError

#: tokens the chat format adds per message, and once per request (OpenAI's published accounting)
MESSAGE_OVERHEAD = 4
REQUEST_OVERHEAD = 3
DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_ANSWER_TOKENS = 512
CACHE_NAME = "llm_answers.sqlite3"

ANSWER_SYSTEM = (
    "You answer questions using only the numbered passages you are given. After every statement, cite the "
    "passage(s) it comes from by number in square brackets, like [2] or [1][3]. Cite only passages that "
    "were given. If the passages do not contain the answer, say that they do not. " + DATA_RULE
)
SUMMARY_SYSTEM = (
    "You summarise documents faithfully. After every point, cite the numbers of the passages it comes from "
    "in square brackets, like [2] or [1][3], exactly as they appear on the passages' header lines (notes "
    "carry the numbers of the passages they stand for). " + DATA_RULE
)
NOTES_INSTRUCTION = (
    "Write concise notes on the passages below: the main points only, each followed by the "
    "bracketed numbers of the passages it comes from."
)
FINAL_INSTRUCTION = {
    "bullets": "Summarise the passages below as a bulleted list, one '- ' line per main point, each point "
    "followed by the bracketed numbers of the passages it comes from.",
    "paragraph": "Summarise the passages below in one paragraph, each statement followed by the bracketed "
    "numbers of the passages it comes from.",
}


def _passages(passages: list[Passage], *context: str) -> str:
    """The fenced passages, introduced by the code their fences carry."""
    code = fence_code(passages, *context)
    return f"Passages (fence code {code}):\n\n{passage_block(passages, code)}"


#: a chat prompt: the messages, each a mapping with "role" and "content"
MESSAGES = ListOf(dict, "a list of chat messages")


class OpenAILLM(LLM):
    """An :class:`~chunkwise.llm.base.LLM` on a chat endpoint, through the shared :class:`ChatClient`.

    Parameters
    ----------
    base_url, model, api_key: the endpoint (defaults ``$CHUNKWISE_LLM_BASE_URL``, ``$CHUNKWISE_LLM_MODEL``,
        ``$CHUNKWISE_LLM_API_KEY`` / ``$OPENAI_API_KEY``).
    context_tokens: the model's context window (prompt + answer). answer_tokens: the most tokens an
        answer may take (sent as the API's ``max_tokens``; reserved out of the window).
    tokenizer: counts prompt tokens (``cl100k`` default; ``hf:PATH`` for the model's own tokenizer).
    stream: stream answers (``on_token`` gets the pieces). temperature: the sampling temperature.
    client: a ready :class:`ChatClient`; else ``connection`` holds the other connection settings of
        :class:`~chunkwise.llm.client.ChatSettings` (``timeout``, ``deadline``, ``retries``, ``backoff``,
        ``max_response_bytes``, ``cache``, ``cache_dir``), declared there once.
    """

    extractive = False

    @validated(
        "OpenAILLM",
        base_url=[InstanceOf(str, "a URL"), None],
        model=[InstanceOf(str, "a model name"), None],
        api_key=[InstanceOf(str), None],
        tokenizer=TokenizerSpec(),
        context_tokens=Interval(int, 1, None),
        answer_tokens=Interval(int, 1, None),
        stream=InstanceOf(bool),
        temperature=Interval(float, 0, 2),
    )
    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        answer_tokens: int = DEFAULT_ANSWER_TOKENS,
        tokenizer="cl100k",
        stream: bool = True,
        temperature: float = 0.0,
        client: ChatClient | None = None,
        **connection: Any,
    ):
        unknown = sorted(set(connection) - set(SETTINGS) | set(connection) & {"base_url", "model", "api_key"})
        if unknown:
            raise ConfigError(
                f"OpenAILLM has no option {', '.join(unknown)}; connection settings: "
                f"{', '.join(n for n in SETTINGS if n not in ('base_url', 'model', 'api_key'))}"
            )
        if context_tokens < answer_tokens + 64:
            raise ConfigError(
                f"context_tokens ({context_tokens}) must leave room for a prompt beside "
                f"answer_tokens ({answer_tokens}): at least answer_tokens + 64"
            )
        self.client = client or ChatClient(
            base_url=base_url,
            model=model,
            api_key=api_key,
            **connection,
            cache_name=CACHE_NAME,
            purpose="an LLM answer",
        )
        self.context_tokens = context_tokens
        self.answer_tokens = answer_tokens
        self.tokenizer = resolve_tokenizer(tokenizer)
        self.stream = stream
        self.temperature = temperature
        self.name = f"openai:{self.client.model}"

    @property
    def budget(self) -> int:
        """The most tokens a prompt may have: the window less the tokens reserved for the answer."""
        return self.context_tokens - self.answer_tokens

    @validated(messages=MESSAGES)
    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens of a chat prompt: contents plus the chat format's overhead."""
        counts = self.tokenizer.count_batch([m["content"] for m in messages])
        return sum(counts) + MESSAGE_OVERHEAD * len(messages) + REQUEST_OVERHEAD

    # -- prompts ---------------------------------------------------------------------------------------
    @staticmethod
    @validated("OpenAILLM.answer_messages", question=ANSWER_PARAMS["question"], passages=PASSAGES)
    def answer_messages(question: str, passages: list[Passage]) -> list[dict[str, str]]:
        user = (
            f"{_passages(passages, question)}\n\nQuestion: {question.strip()}\n\n"
            "Answer from the passages only, citing them by the numbers on their header lines, like [1]."
        )
        return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": user}]

    @staticmethod
    @validated("OpenAILLM.summary_messages", **SUMMARY_PARAMS)
    def summary_messages(passages: list[Passage], style: str = "bullets", final: bool = True) -> list[dict[str, str]]:
        instruction = FINAL_INSTRUCTION[style] if final else NOTES_INSTRUCTION
        return [
            {"role": "system", "content": SUMMARY_SYSTEM},
            {"role": "user", "content": f"{instruction}\n\n{_passages(passages)}"},
        ]

    # -- fitting the window ------------------------------------------------------------------------------
    @validated(make=Function(), passages=PASSAGES)
    def fit(
        self, make: Callable[[list[Passage]], list[dict[str, str]]], passages: list[Passage]
    ) -> tuple[list[dict[str, str]], list[Passage], int]:
        """The messages for as many passages as fit the budget, in order (later ones that fit are still
        taken); a first passage too long alone is cut at a token boundary. Returns (messages, given, cut)."""
        if self.prompt_tokens(make([])) > self.budget:
            raise ConfigError(
                f"the prompt without any passage already exceeds context_tokens "
                f"({self.context_tokens}) less answer_tokens ({self.answer_tokens})"
            )
        given: list[Passage] = []
        cut = 0
        for p in passages:
            if self.prompt_tokens(make(given + [p])) <= self.budget:
                given.append(p)
            elif not given:
                short = self._cut(make, p)
                if short is not None:
                    given.append(short)
                    cut += 1
        return make(given), given, cut

    def _cut(self, make, p: Passage) -> Passage | None:
        """``p`` with its text cut to the longest token prefix that fits (binary search over tokens), or
        ``None`` when not even its header fits."""
        ends = [b for _, b in self.tokenizer.offsets(p.text)]
        lo, hi = 0, len(ends)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            trial = Passage(**{**p.__dict__, "text": p.text[: ends[mid - 1]] + " …"})
            if self.prompt_tokens(make([trial])) <= self.budget:
                lo = mid
            else:
                hi = mid - 1
        short = Passage(**{**p.__dict__, "text": (p.text[: ends[lo - 1]] if lo else "") + " …"})
        if lo == 0 and self.prompt_tokens(make([short])) > self.budget:
            return None  # not even its header fits
        return short

    # -- the work --------------------------------------------------------------------------------------
    @validated(**ANSWER_PARAMS)
    def answer(
        self, question: str, passages: list[Passage], on_token: Callable[[str], None] | None = None
    ) -> Completion:
        messages, given, cut = self.fit(lambda ps: self.answer_messages(question, ps), passages)
        with _window_hint(self):
            if self.stream:
                text = self.client.stream(messages, self.answer_tokens, self.temperature, on_token=on_token)
            else:
                text = self.client.complete(messages, self.answer_tokens, self.temperature)
                if on_token:
                    on_token(text)
        return Completion(text, given, len(passages) - len(given), self.prompt_tokens(messages), cut)

    @validated(**SUMMARY_PARAMS)
    def summarize(self, passages: list[Passage], style: str = "bullets", final: bool = True) -> Completion:
        messages, given, cut = self.fit(lambda ps: self.summary_messages(ps, style, final), passages)
        with _window_hint(self):
            text = self.client.complete(messages, self.answer_tokens, self.temperature)
        return Completion(text, given, len(passages) - len(given), self.prompt_tokens(messages), cut)

    @validated(passages=PASSAGES)
    def fits(self, passages: list[Passage]) -> bool:
        return (
            max(
                self.prompt_tokens(self.summary_messages(passages, s, f))
                for s, f in (("bullets", True), ("paragraph", True), ("bullets", False))
            )
            <= self.budget
        )

    def close(self) -> None:
        self.client.close()


@contextmanager
def _window_hint(llm: OpenAILLM):
    """A server that refuses the prompt as too long counts tokens differently: say what to change."""
    try:
        yield
    except FatalLLMError as exc:
        if "HTTP 400" in exc.problem and re.search(r"context|too long|maximum|exceed", exc.problem, re.I):
            raise FatalLLMError(
                f"{exc.problem} (the server counts the prompt longer than chunkwise did with "
                f"{llm.tokenizer.name}: pass --llm-tokenizer hf:PATH with the model's tokenizer, "
                f"or a smaller --context-tokens than {llm.context_tokens})",
                source=exc.source,
            ) from None
        raise


__all__ = ["OpenAILLM", "DEFAULT_CONTEXT_TOKENS", "DEFAULT_ANSWER_TOKENS", "ANSWER_SYSTEM"]
