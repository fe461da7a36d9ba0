"""``chunkwise ask "QUESTION"`` and ``chunkwise summarize PATH``: answers with citations, map-reduce summaries.

Both use any OpenAI-compatible chat endpoint (``--llm-base-url``/``--llm-model``, key from
``$CHUNKWISE_LLM_API_KEY``/``$OPENAI_API_KEY``) and work offline without one (extractive answers and
summaries, with the same citations and output shape).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap

from ..errors import ChunkwiseError, ConfigError, InputError
from . import add_command

#: the chat endpoint's flags, ``--llm-`` + an :class:`~chunkwise.http.Endpoint` field: the field, its type,
#: metavar and help
_ENDPOINT_FLAGS = (
    (
        "base_url",
        str,
        "URL",
        "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (default $CHUNKWISE_LLM_BASE_URL)",
    ),
    ("model", str, "NAME", "chat model (default $CHUNKWISE_LLM_MODEL)"),
    ("timeout", float, "SECONDS", "the longest wait to connect or between two reads (default 60)"),
    (
        "deadline",
        float,
        "SECONDS",
        "the most a whole request may take, retries and streaming included (default 300, or --llm-timeout if longer)",
    ),
    ("retries", int, "N", "extra attempts on 408/409/429/5xx/timeouts (default 3)"),
)


def add_endpoint_options(p: argparse.ArgumentParser, title: str) -> None:
    """The chat endpoint flags, one definition for every command that calls one (ask, summarize, eval,
    questions, ``index --context llm``, ``search --rerank llm``, serve): where, which model, and the time
    limits that bound a slow or dripping server. :func:`endpoint_args` hands them to the command's clients."""
    g = p.add_argument_group(title)
    for field, kind, metavar, help_text in _ENDPOINT_FLAGS:
        g.add_argument(f"--llm-{field.replace('_', '-')}", type=kind, default=None, metavar=metavar, help=help_text)


def endpoint_args(args: argparse.Namespace) -> dict:
    """The endpoint flags given (``None`` where not), as :func:`chunkwise.llm.client.command_endpoint` keywords."""
    return {field: getattr(args, f"llm_{field}", None) for field, *_ in _ENDPOINT_FLAGS}


def endpoint_from_args(args: argparse.Namespace):
    """The one :class:`~chunkwise.http.Endpoint` the endpoint flags name (URL and model from the flags, else
    ``$CHUNKWISE_LLM_BASE_URL``/``$CHUNKWISE_LLM_MODEL``); ``None`` while either is unknown (a command that
    then needs a chat model says which is missing when it makes its client). Bad values are one ConfigError."""
    import os

    from ..llm.client import BASE_URL_ENV, MODEL_ENV

    given = endpoint_args(args)
    base_url = given.pop("base_url") or os.environ.get(BASE_URL_ENV)
    model = given.pop("model") or os.environ.get(MODEL_ENV)
    if not (base_url and model):
        return None
    from ..http import Endpoint

    return Endpoint(base_url, model, label="llm", **{k: v for k, v in given.items() if v is not None})


def _prompt_flags() -> tuple[tuple[str, str, type, str, str], ...]:
    """How prompts are fitted: the :func:`~chunkwise.llm.get_llm` keyword, its flag, type, metavar and help."""
    from ..llm.openai import DEFAULT_ANSWER_TOKENS, DEFAULT_CONTEXT_TOKENS

    return (
        (
            "context_tokens",
            "--context-tokens",
            int,
            "N",
            f"the model's context window, prompt + answer (default {DEFAULT_CONTEXT_TOKENS}); "
            "prompts are fitted to it, never sent over it",
        ),
        (
            "answer_tokens",
            "--answer-tokens",
            int,
            "N",
            f"most tokens of an answer, reserved out of the window (default {DEFAULT_ANSWER_TOKENS})",
        ),
        (
            "tokenizer",
            "--llm-tokenizer",
            str,
            "NAME",
            "tokenizer that counts prompt tokens: cl100k (default) | hf:PATH (the model's own)",
        ),
    )


def add_llm_options(p: argparse.ArgumentParser, answers: bool = True) -> None:
    """The LLM flags of ask, summarize and ``eval --answers``: the endpoint's, and how prompts are fitted."""
    add_endpoint_options(p, "language model (optional; without one the answer is extractive)")
    g = p.add_argument_group("prompt fitting")
    for _, flag, kind, metavar, help_text in _prompt_flags():
        g.add_argument(flag, type=kind, default=None, metavar=metavar, help=help_text)


def llm_from_args(args: argparse.Namespace, embedder=None, stream: bool = True):
    """The LLM the flags ask for: ``OpenAILLM`` with an endpoint, else the extractive fallback."""
    from ..llm import get_llm

    endpoint = endpoint_from_args(args)
    loose = {} if endpoint else {"base_url": args.llm_base_url, "model": args.llm_model}
    fitting = {key: getattr(args, flag[2:].replace("-", "_")) for key, flag, *_ in _prompt_flags()}
    cache = not getattr(args, "no_cache", False)
    return get_llm(
        **loose,
        **fitting,
        endpoint=endpoint,
        embedder=embedder,
        stream=stream,
        cache=cache,
        cache_dir=getattr(args, "cache_dir", None),
    )


def register(subparsers) -> None:
    from .index import add_retrieval_options, add_store_options
    from .options import add_chunking_options
    from .remote import add_server_option

    p = add_command(subparsers, "ask")
    p.add_argument("question", help="the question")
    p.add_argument("-k", type=int, default=5, help="chunks to retrieve (default 5)")
    add_retrieval_options(p)
    p.add_argument("--filter", default=None, metavar="EXPR", help="Milvus boolean expression, as in search")
    p.add_argument(
        "--min-score",
        type=float,
        default=None,
        metavar="COSINE",
        help="leave out chunks less similar to the question than this (default 0.15; -1 keeps all)",
    )
    p.add_argument("--show-context", action="store_true", help="print the numbered passages before the answer")
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (streamed answer, then sources) or json (one object)",
    )
    p.add_argument("--no-stream", action="store_true", help="ask for the whole answer at once")
    p.add_argument(
        "--interactive",
        action="store_true",
        help="a prompt loop: open the index and load the model once, then answer question after "
        "question (the first question is the argument; an empty line or Ctrl-D ends)",
    )
    add_server_option(p)
    add_store_options(p)
    add_llm_options(p)
    p.set_defaults(func=run_ask)

    s = add_command(subparsers, "summarize")
    s.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to summarise (- for stdin)")
    s.add_argument("--style", choices=("bullets", "paragraph"), default="bullets", help="default bullets")
    s.add_argument("--concurrency", type=int, default=4, metavar="N", help="map requests at once (default 4)")
    s.add_argument("--format", choices=("text", "json"), default="text", help="text or json (one line per file)")
    add_chunking_options(s)
    add_llm_options(s)
    s.set_defaults(func=run_summarize)


# -- ask ----------------------------------------------------------------------------------------------


def _wrap(text: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(" ".join(text.split()), width=100, initial_indent=indent, subsequent_indent=indent)


def _sources(answer) -> list[str]:
    """The cited sources, then any citation that names a passage not given (flagged)."""
    lines = []
    from ..llm.answer import NOT_FOUND

    if answer.citations:
        lines.append("Sources:")
        lines += [f"  {p.header()}" for p in answer.cited_passages]
    elif answer.text.startswith(NOT_FOUND):
        lines.append("Closest passages:")
        lines += [f"  {p.header()}" for p in answer.passages]
    else:
        lines.append("Sources: the answer cites none of the passages")
    for n in answer.invalid_citations:
        lines.append(
            f"  ! [{n}] is cited but no passage [{n}] was given (of {len(answer.given)}): unsupported citation"
        )
    return lines


def run_ask(args: argparse.Namespace) -> int:
    from . import remote
    from .index import expand_settings, open_index, retrieval_settings

    if not args.question.strip():
        raise InputError("the question is empty")
    from ..retrieval.index import TOP_K
    from ..validation import check_flag

    check_flag(args.k, "-k", TOP_K)
    text_out = args.format == "text"
    settings = retrieval_settings(args)
    widen = {k: v for k, v in expand_settings(args).items() if v is not None}
    url = remote.server_url(args)
    if url and args.interactive:
        raise ConfigError("--interactive opens the index here; a --server is already warm: drop one of them")
    if url and {k: v for k, v in widen.items() if v != "none"}:
        raise ConfigError(
            "--expand and --budget (or a --config's expand/budget) are applied here, not sent to a "
            "--server: drop them or the --server"
        )
    if url:
        answer = remote.ask(args, url, settings)
        if text_out and args.show_context:
            _show_passages(answer.passages)
        if text_out and answer.found:
            sys.stdout.write(answer.text if answer.text.endswith("\n") else answer.text + "\n")
        return _print_answer(args, answer, text_out)
    settings.update(widen)
    with open_index(args) as index:
        llm = llm_from_args(args, stream=text_out and not args.no_stream)
        try:
            question = args.question
            while True:
                rc = _ask_once(args, index, llm, question, text_out, settings)
                if not args.interactive:
                    return rc
                question = _next_question()
                if question is None:
                    return rc
        finally:
            llm.close()


def _next_question() -> str | None:
    """The next question of ``--interactive`` (None: an empty line, end of input or Ctrl-C)."""
    try:
        line = input("\nquestion> " if sys.stdin.isatty() else "")
    except (EOFError, KeyboardInterrupt):
        return None
    return line.strip() or None


def _show_passages(passages) -> None:
    for p in passages:
        print(p.header())
        print("\n".join(_wrap(p.text)) or "    ")
    print(flush=True)


def _ask_once(args, index, llm, question: str, text_out: bool, settings: dict) -> int:
    """One question over the open index, printed as ``chunkwise ask`` prints it."""
    streamed: list[str] = []

    def on_token(piece: str) -> None:
        if text_out:
            streamed.append(piece)
            sys.stdout.write(piece)
            sys.stdout.flush()

    def on_passages(passages) -> None:
        if text_out and args.show_context and passages:
            _show_passages(passages)

    answer = index.ask(
        question,
        k=args.k,
        llm=llm,
        filter=args.filter,
        min_score=args.min_score,
        on_token=on_token,
        on_passages=on_passages,
        **settings,
    )
    if streamed and not "".join(streamed).endswith("\n"):
        sys.stdout.write("\n")
    return _print_answer(args, answer, text_out)


def _print_answer(args, answer, text_out: bool) -> int:
    """Everything after the answer's text (the local path streams the text as it comes): the hedge, the
    sources, the note; or the whole answer as one JSON line."""
    if not text_out:
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
        return 0
    if not answer.found:
        print("no relevant passages found", flush=True)
        return 0
    if answer.hedge:
        print(f"Caution: {answer.hedge}")
    print()
    print("\n".join(_sources(answer)), flush=True)
    if answer.note and not args.quiet:
        print(f"chunkwise: note: {answer.note}", file=sys.stderr)
    return 0


# -- summarize ----------------------------------------------------------------------------------------


def _progress(args, source: str):
    if args.quiet:
        return None
    tty = sys.stderr.isatty()

    def report(stage: str, done: int, total: int) -> None:
        if tty:
            end = "\n" if done == total and stage == "final" else ""
            print(f"\rchunkwise: {source}: {stage} {done}/{total}   ", end=end, file=sys.stderr, flush=True)
        elif done == total and total:
            print(f"chunkwise: {source}: {stage} {done}/{total}", file=sys.stderr, flush=True)

    return report


def run_summarize(args: argparse.Namespace) -> int:
    from ..embeddings import embedder_from_args
    from ..formats import iter_documents
    from ..llm.mapreduce import CONCURRENCY, summarize
    from ..validation import check_flag
    from .options import strategy_from_args

    check_flag(args.concurrency, "--concurrency", CONCURRENCY)
    embedder = embedder_from_args(args)
    strategy = strategy_from_args(args, embedder=embedder)
    llm = llm_from_args(args, embedder=embedder, stream=False)
    failed = done = 0
    several = len(args.paths) > 1 or any(os.path.isdir(p) for p in args.paths)
    try:
        for source, doc in iter_documents(args.paths):
            if isinstance(doc, ChunkwiseError):
                print(f"chunkwise: error: {doc}", file=sys.stderr)
                failed += 1
                continue
            chunks = strategy.chunk(doc)
            result = summarize(
                chunks, llm, style=args.style, concurrency=args.concurrency, progress=_progress(args, source)
            )
            result.source = source
            done += 1
            _print_summary(args, result, several)
    finally:
        llm.close()
    if failed:
        return 1 if done else 2
    return 0


def _print_summary(args, result, several: bool) -> None:
    if args.format == "json":
        print(json.dumps(result.to_dict(), ensure_ascii=False))
        return
    if several:
        print(f"== {result.source}")
    print(result.text if result.text else "(nothing to summarise: the document has no text)")
    cited = [p for p in result.passages if p.number in set(result.citations)]
    if cited:
        print("\nSources:")
        for p in cited:
            print(f"  {p.header()}")
    for n in result.invalid_citations:
        print(f"  ! [{n}] is cited but the document has no chunk [{n}]: unsupported citation")
    if not args.quiet:
        how = (
            "extractive (no LLM configured; --llm-base-url URL --llm-model NAME for a written summary)"
            if result.extractive
            else f"{result.llm}, calls per level {'+'.join(map(str, result.levels))}"
        )
        extra = f"; {result.cut} chunk(s) cut to fit the context window" if result.cut else ""
        print(f"chunkwise: {result.source}: {len(result.passages)} chunks; {how}{extra}", file=sys.stderr)
    if several:
        print()
