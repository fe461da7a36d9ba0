"""The ``chunkwise`` command line: one module per command group, dispatched from here.

Errors a person can act on (:class:`~chunkwise.errors.ChunkwiseError`) are printed as one line and the
process exits with status 2; commands that process several inputs exit 1 when some of them failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, NoReturn

from ..errors import ChunkwiseError

#: command modules, each with ``register(subparsers)``; every sub-parser sets ``func(args) -> int``
COMMAND_MODULES = (
    "chunk",
    "inspect",
    "embeddings",
    "index",
    "evaluate",
    "strategies",
    "answers",
    "video",
    "viz",
    "serve",
    "questions",
)


class Command(NamedTuple):
    """One command: the module that registers its flags, its line in ``chunkwise --help`` and the
    description its own ``--help`` opens with (``{name}`` fields are filled by the module: see
    :func:`add_command`)."""

    module: str
    help: str
    description: str


#: every command, one row each. The module: a run imports only its own command's module (and what that
#: needs): ``chunkwise search`` does not import the strategies' or the video code's dependencies. The help
#: line: ``chunkwise --help`` prints the overview without importing any command module (and through them
#: numpy, the strategies, the LLM client). ``tests/test_cli_startup.py`` checks the table against what the
#: modules register.
COMMAND_TABLE: dict[str, Command] = {
    "chunk": Command(
        "chunk",
        "chunk files, folders or stdin; print JSONL or a table",
        "Chunk documents (text, Markdown, HTML, PDF, WebVTT, SRT, SBV; folders recursively, files of\n"
        "supported types; - for stdin) and write one JSON object per chunk, or a table for reading.",
        # wrapped at 100 columns here: its help keeps line breaks (the epilog's table), and a run does not
        # import textwrap
    ),
    "inspect": Command(
        "inspect",
        "explain a chunking: one JSON line per sentence with distances and breakpoints",
        "Print one JSON object per sentence: its span, the distance to the next sentence, the "
        "threshold it was compared with, and whether (and why) a chunk ends there.",
    ),
    "embed": Command(
        "embeddings",
        "embed texts (arguments, or one per line from a file or stdin)",
        "Embed texts with the embedder chosen by --embedder and print JSON lines "
        '{"index", "text", "vector"} or write a .npy matrix (row i = text i). Vectors are '
        "L2-normalised float32; cached vectors are reused.",
    ),
    "distill": Command(
        "embeddings",
        "distil the static embedding model from MiniLM (once, into the cache directory)",
        "Distil a model2vec static model from the local all-MiniLM-L6-v2 (ONNX, no torch) and "
        "save it under CACHE_DIR/static/NAME, where `--embedder static` finds it.",
    ),
    "cache": Command(
        "embeddings",
        "inspect or clear the embedding cache",
        "The persistent embedding cache (SQLite, keyed by model and text hash).",
    ),
    "index": Command(
        "index",
        "chunk, embed and store documents in Milvus (incremental)",
        "Chunk files and folders, embed the chunks and store them in Milvus Lite (default) or a "
        "Milvus server. Re-running is incremental: unchanged documents are skipped, changed ones "
        "replaced; a run interrupted at any point can simply be run again.",
    ),
    "search": Command(
        "index",
        "search an index built by `chunkwise index`",
        "Retrieve the chunks closest to a query: BM25 and vectors fused by "
        "z-scores (the default, chosen by measurement: docs/evaluation.md), "
        "or vectors alone with --dense.",
    ),
    "eval": Command(
        "evaluate",
        "measure retrieval quality of chunking strategies on a dataset",
        "Chunk every document, embed the chunks, retrieve for every query with an exact in-process "
        "index pooled over all documents, and score: Chroma's span metrics (recall, precision, "
        "precision_Ω, IoU at n=5, 10 and min), their corrected set variant, doc recall@k, nDCG@10, "
        "MRR, Pk/WindowDiff when gold boundaries exist, and paired-bootstrap CIs between runs.",
    ),
    "tune": Command(
        "evaluate",
        "grid-search a strategy's parameters on a dataset and write the best --config",
        "Evaluate every combination of --grid values (each text embedded once over the whole "
        "search), print a leaderboard and write the best configuration as JSON for --config.",
    ),
    "strategies": Command(
        "strategies",
        "list strategies and their parameters",
        "List the chunking strategies, or one strategy's parameters with their defaults and meanings.",
    ),
    "ask": Command(
        "answers",
        "answer a question from the index, citing the chunks it used",
        "Retrieve the best chunks, number them with their provenance, ask a chat model (any "
        "OpenAI-compatible endpoint) and print the answer as it streams, then the cited sources. "
        "Citations are checked against the chunks given. Without an endpoint the answer is "
        "extractive: the best supporting sentences of the retrieved chunks, with citations.",
    ),
    "summarize": Command(
        "answers",
        "summarise documents (map-reduce with an LLM, or extractive offline)",
        "Chunk each document and summarise it: one call when it fits the model's context, else "
        "map (each chunk, in parallel) and reduce (groups of notes) until it does. Without an "
        "endpoint the summary is extractive: the most central sentences, with citations.",
    ),
    "video": Command(
        "video",
        "cut a video into event clips from object-tracking IDs",
        "Track objects in a video and cut it into event clips: a clip opens when a tracked object "
        "appears while none is open, later IDs join it, and it closes when every ID has been absent "
        "for --gap seconds. Each clip is a chunk with a searchable description.",
    ),
    "viz": Command(
        "viz",
        "write an HTML report: chunks coloured, cut reasons, distance curve, size histogram",
        "Chunk one document and write a self-contained HTML report (works offline, from disk): "
        "the text with every chunk coloured and a hover card (tokens, offsets, page, section, "
        "time, why it ends), the distance curve with threshold and breakpoints for semantic "
        "strategies, and the chunk-size histogram against max_tokens.",
    ),
    "serve": Command(
        "serve",
        "local web app: paste or upload, see the cuts change; search; JSON API",
        "Serve a small web app on loopback: paste text or upload a file, pick strategies and "
        "parameters and see the cuts change; search an index with highlighted hits; JSON API "
        "(POST /chunk, POST /search, GET /health; schema at /openapi.json, docs at /docs).",
    ),
    "questions": Command(
        "questions",
        "write evaluation questions for a folder of documents (a dataset for eval/tune)",
        "Sample passages across the documents and their sections, make one question per passage "
        "(with an LLM endpoint: a question a user would ask and its exact excerpt; without one: an "
        "offline proxy, by default {default_method!r}: two key phrases of a passage asked about in "
        "words of its own, the passage the answer), "
        "drop near-duplicates and questions copied from their answer, and write docs/ + "
        "queries.jsonl + questions.json, the dataset `chunkwise eval` and `tune` read; the documents are "
        "copied byte-identical.",
    ),
}
#: command -> the module that registers it (a view of :data:`COMMAND_TABLE`)
COMMANDS = {name: command.module for name, command in COMMAND_TABLE.items()}
#: command -> its line in ``chunkwise --help`` (a view of :data:`COMMAND_TABLE`)
COMMAND_HELP = {name: command.help for name, command in COMMAND_TABLE.items()}


def add_command(
    subparsers: Any, name: str, fields: Mapping[str, Any] | None = None, **kwargs: Any
) -> argparse.ArgumentParser:
    """Command ``name``'s sub-parser, with its help line and description from :data:`COMMAND_TABLE` (the one
    place each is written; ``fields`` fill the description's ``{name}`` fields, a ``description`` given
    replaces it) and the other ``add_parser`` keywords (``epilog``, ``formatter_class``) as given."""
    description = COMMAND_TABLE[name].description
    kwargs.setdefault("description", description if fields is None else description.format(**fields))
    return subparsers.add_parser(name, help=COMMAND_TABLE[name].help, **kwargs)


#: global options that take a value (the command is the first other word of the command line)
_VALUE_OPTIONS = ("--embedder", "--embedder-backend", "--base-url", "--cache-dir")


def command_of(argv: list[str]) -> str | None:
    """The command word of a command line (``None``: none given, e.g. ``chunkwise --help``)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in _VALUE_OPTIONS:
            skip = True
        elif word == "--" or not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


class Parser(argparse.ArgumentParser):
    """An argument parser whose ``epilog`` may be a function, called only when the help is printed.

    ``chunk --help`` and ``viz --help`` end with every strategy's parameters, generated from the strategy
    classes; building ``chunkwise --help`` (which registers every command) must not import them, numpy and
    the tokenizers. Sub-parsers are made with the parent's class, so every command gets this.

    Options are never abbreviated: ``--max-token`` is an unknown option with a "did you mean --max-tokens",
    not silently taken for it (and a script's shortened option cannot change meaning when an option is added)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    @property
    def epilog(self) -> str | None:
        value = self._epilog
        return value() if callable(value) else value

    @epilog.setter
    def epilog(self, value: str | Callable[[], str] | None) -> None:
        self._epilog = value

    def error(self, message: str) -> NoReturn:
        """A usage error in two lines, not the whole usage: the problem with a "did you mean" where a
        known name is close, then where the help is. Exit status 2, as argparse's own."""
        prog = self.prog
        if message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            sub = self._chosen_subparser(words)
            if sub is not None:
                prog = sub.prog
            message = _unknown_option_message(words, sub or self)
        else:
            message = _did_you_mean_choice(message)
        self.exit(2, f"{prog}: error: {message}\nTry '{prog} --help' for the options.\n")

    def parse_known_args(self, args=None, namespace=None):
        self._words = list(sys.argv[1:] if args is None else args)  # for the error's command name
        return super().parse_known_args(args, namespace)

    def _chosen_subparser(self, unknown: list[str]) -> argparse.ArgumentParser | None:
        """The command's own parser (unknown words reach the top-level parser; the hint names the command)."""
        command = command_of(getattr(self, "_words", []))
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                return action.choices[command]
        return None


def _unknown_option_message(words: list[str], parser: argparse.ArgumentParser) -> str:
    """``unknown option --max-tokns (did you mean --max-tokens?)`` for the first unknown option."""
    import difflib

    known = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    for word in words:
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"unknown option {name}{hint}"
    return f"unrecognized arguments: {' '.join(words)}"


def _did_you_mean_choice(message: str) -> str:
    """argparse's ``invalid choice: 'cohesin' (choose from ...)`` with the closest choice named first."""
    import difflib
    import re

    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not m:
        return message
    choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
    close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.5)
    head = message[: m.start()] + f"invalid choice: '{m.group(1)}'"
    if close:
        return f"{head} (did you mean '{close[0]}'?)"
    return f"{head} (choose from {', '.join(choices)})"


def build_parser(command: str | None = None, overview: bool = False) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` one with only that command's module registered (what a run
    of that command needs; argparse never looks at the other sub-parsers then). ``overview``: every
    command as a name and its help line only (:data:`COMMAND_HELP`), for a command line that names no
    command (``chunkwise --help``), which then imports no command module."""
    from .. import __version__

    parser = Parser(
        prog="chunkwise",
        description="Chunk documents where the meaning changes, index them, and measure retrieval.",
    )
    parser.add_argument("--version", action="version", version=f"chunkwise {__version__}")
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if overview:
        for name, line in COMMAND_HELP.items():
            sub.add_parser(name, help=line)
        return parser
    for name in COMMAND_MODULES if command is None else (COMMANDS[command],):
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a command group not built yet
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    for subparser in {id(p): p for p in sub.choices.values()}.values():
        add_global_options(subparser, after_command=True)
    return parser


def add_global_options(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """The options every command understands, accepted before the command and after it.

    After the command they default to ``SUPPRESS``, so a value given before the command is not
    overwritten when the option is not repeated after it.
    """
    default = argparse.SUPPRESS if after_command else None
    flag_default = argparse.SUPPRESS if after_command else False
    g = parser.add_argument_group("global options") if after_command else parser
    taken = parser._option_string_actions  # a command may define one of these itself

    def add(*flags: str, **kw) -> None:
        if not any(f in taken for f in flags):
            g.add_argument(*flags, **kw)

    add(
        "--embedder",
        default=default,
        help="embedding model for every command that embeds: minilm (default), "
        "st:NAME_OR_PATH, static, openai:MODEL, use-multilingual, e5 (multilingual-e5-small), "
        "auto (e5 when most input documents are not English, else minilm)",
    )
    add(
        "--embedder-backend",
        default=default,
        choices=("onnx", "torch"),
        help="library that runs the embedding model where there is a choice: minilm on onnx (default) or "
        "torch (extra 'torch'; formerly --embedder minilm-torch)",
    )
    add("--base-url", default=default, help="base URL for openai:MODEL embedders")
    add("--cache-dir", default=default, help="embedding cache directory (default: user cache dir)")
    add("--no-cache", action="store_true", default=flag_default, help="do not read or write the embedding cache")
    add("-q", "--quiet", action="store_true", default=flag_default, help="no progress bars or summaries")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``chunkwise: warning: ...`` line, not Python's file:line format."""
    text = " ".join(str(message).split())
    if "://" in text:  # a URL's password or key is never shown
        from ..security import redact_urls

        text = redact_urls(text)
    print(f"chunkwise: warning: {text}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _show_warning
    from ..deprecation import ChunkwiseDeprecationWarning

    # old names still work; say so (Python hides DeprecationWarning outside __main__)
    warnings.filterwarnings("default", category=ChunkwiseDeprecationWarning)
    words = sys.argv[1:] if argv is None else list(argv)
    if words == ["--version"]:  # the one answer that needs no parser
        from .. import __version__

        print(f"chunkwise {__version__}")
        return 0
    command = command_of(words)
    parser = build_parser(command, overview=command is None)
    args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    _end_startup()
    try:
        if getattr(args, "embedder", None) == "auto":  # picked by the inputs' language, before any work
            from ..embeddings.language import resolve_auto

            args.embedder = resolve_auto(args)
        return _run(args)
    except ChunkwiseError as exc:
        print(f"chunkwise: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chunkwise: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


#: whether :func:`run` put the cyclic garbage collector off for the start-up (see :func:`_end_startup`)
_startup_gc_off = False


def _end_startup() -> None:
    """The command line is parsed: the collector :func:`run` put off is back on, with what start-up made frozen.

    Start-up (the package's and the command's modules, the parser) creates tens of thousands of objects
    that live as long as the process, and the cyclic collector ran over them again and again while they
    were made: 6–10 % of ``chunkwise chunk small.txt``'s CPU (benchmarks/results/store.md). So
    :func:`run` starts with the collector off and, once the arguments are parsed, ``gc.freeze()`` moves
    what exists into the permanent generation, which later collections do not walk (the pattern the ``gc``
    docs give for start-up before a fork), and the collector is on for the command's own work. Garbage
    cycles made during start-up (the parser's, once it is dropped) are not freed: a few kilobytes.
    ``main`` called in process (tests, scripts) leaves the collector as it finds it."""
    global _startup_gc_off
    if _startup_gc_off:
        import gc

        _startup_gc_off = False
        gc.freeze()
        gc.enable()


def _run(args) -> int:
    """The command, with its ``--llm-*`` flags (if any) the settings of every chat client it makes."""
    loose = {n: getattr(args, f"llm_{n}", None) for n in ("base_url", "model", "timeout", "deadline", "retries")}
    if all(v is None for v in loose.values()):  # no chat client module imported for commands without one
        return int(args.func(args) or 0)
    from ..llm.client import command_endpoint
    from .answers import endpoint_from_args

    endpoint = endpoint_from_args(args)
    with command_endpoint(endpoint) if endpoint is not None else command_endpoint(**loose):
        return int(args.func(args) or 0)


def run() -> None:
    """The ``chunkwise`` command: :func:`main` (its start-up without cyclic garbage collection, see
    :func:`_end_startup`), then the process ends without Python's own finalisation.

    Why: a command that imported pymilvus, pandas, pyarrow, grpc and onnxruntime spends about 0.2 s of CPU
    after its last line tearing down some 1,300 modules and freeing memory the operating system takes back
    anyway (a cold ``search``: 1.06 s of CPU with it, 0.86 s without; ``benchmarks/bench_startup.py``).
    What a normal exit does that matters is done first: standard output and error flushed, logging shut
    down, the ``atexit`` handlers run (Ray's disconnect among them). While another non-daemon thread still
    runs, the exit is Python's normal one, which waits for it. ``main`` called in process (tests, scripts)
    returns as before."""
    import atexit
    import gc
    import os

    global _startup_gc_off
    if gc.isenabled():  # back on, start-up frozen, when the arguments are parsed: _end_startup
        gc.disable()
        _startup_gc_off = True
    code = main()
    _flush_streams()
    threading = sys.modules.get("threading")  # never imported: no other Python thread exists
    if threading is not None and any(
        t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()
    ):
        sys.exit(code)
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    atexit._run_exitfuncs()  # the handlers a normal exit runs (CPython's own entry point for them)
    _flush_streams()
    os._exit(code)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):  # the reader went away, or the stream was closed
            pass


if __name__ == "__main__":  # pragma: no cover
    run()
