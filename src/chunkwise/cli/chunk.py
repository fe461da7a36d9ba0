"""``chunkwise chunk PATH...``: chunk files, folders or stdin and write the chunks as JSONL or a table.

Every input is read and chunked on its own: a file that cannot be read (missing, binary, corrupt PDF, no
text...) prints one line ``chunkwise: error: FILE: problem``, the other inputs are still chunked, the failures
are listed again at the end and the exit status is 1. Invalid parameters (``--max-tokens 0``,
``--overlap`` not below ``--max-tokens``...) are found before any file is read: one line, exit status 2.

The loader flags (format, encoding, size limit, cleaning, ``--html-mode``) are declared once in
:mod:`.options` (``add_input_options``/``input_options``) and shared by ``chunk``, ``inspect``, ``index``,
``eval`` and ``tune``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from typing import Any, TextIO

from ..errors import ChunkwiseError, ConfigError, InputError
from ..timefmt import format_time_range
from . import add_command
from .options import add_input_options, input_options, parse_size  # noqa: F401 - re-exported for callers


def register(subparsers) -> None:
    from .options import add_chunking_options, strategies_epilog

    p = add_command(
        subparsers,
        "chunk",
        epilog=strategies_epilog,  # called when the help is printed
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders, or - for standard input")
    add_chunking_options(p)
    o = p.add_argument_group("output")
    o.add_argument(
        "--format",
        "-f",
        choices=("jsonl", "table", "text"),
        default="jsonl",
        help="jsonl: one object per chunk with every chunk field (default); table: for people (wraps "
        "on a terminal, whole text per line in a pipe); text: one block per chunk, a header "
        "line of provenance then the exact text",
    )
    o.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    add_input_options(p)
    p.set_defaults(func=run)


def _build_strategy(args: argparse.Namespace):
    """The strategy, checked before any input is read; the embedder is loaded only for semantic ones.

    A strategy that embeds only some documents (``auto``: plain text without layout) gets the ``--embedder``
    name, made at its first use, so a Markdown file loads no model."""
    from ..strategies import strategy_class
    from .options import strategy_from_args, strategy_params_from_args

    name, params = strategy_params_from_args(args)
    embedder = None
    # the chosen class alone is asked (SEMANTIC_STRATEGIES would import every strategy and the embedders)
    cls = strategy_class(name)
    if "embedder" in cls.param_names() and "embedder" not in params:
        if getattr(cls, "embeds_on_demand", False):
            embedder = getattr(args, "embedder", None)
        else:
            from ..embeddings import embedder_from_args

            embedder = embedder_from_args(args)
    strategy = strategy_from_args(args, embedder)
    strategy.validate()
    return strategy


def _pages(chunk) -> str:
    if chunk.page_start is None:
        return format_time_range(chunk.start_time, chunk.end_time)
    from ..document import page_label

    unit = page_label(chunk.source)
    if chunk.page_end in (None, chunk.page_start):
        return f"{unit}{chunk.page_start}"
    return f"{unit}{chunk.page_start}-{chunk.page_end}"


class _TableWriter:
    """Aligned columns: source, index, tokens, section, pages (or time), text.

    On a terminal the text wraps under its column (every word shown); written to a pipe or a file each
    chunk is one line with its whole text (whitespace collapsed), so ``grep`` and ``less -S`` see it all.
    """

    def __init__(self, out: TextIO, width: int, wrap: bool | None = None):
        self.out = out
        self.width = width
        self.wrap = _isatty(out) if wrap is None else wrap
        self.header_done = False

    def write(self, chunks) -> None:
        if not chunks:
            return
        src_w, sec_w, pages_w = 28, 28, 21
        fixed = src_w + 5 + 6 + sec_w + pages_w + 5 * 2
        text_w = max(20, self.width - fixed)
        if not self.header_done:
            self.out.write(
                f"{'source':<{src_w}}  {'#':>5}  {'tokens':>6}  {'section':<{sec_w}}  {'where':<{pages_w}}  text\n"
            )
            self.header_done = True
        for c in chunks:
            source = c.source if len(c.source) <= src_w else "\u2026" + c.source[-(src_w - 1) :]
            section = " > ".join(c.section)
            if len(section) > sec_w:  # keep the innermost heading readable
                section = "\u2026" + section[-(sec_w - 1) :]
            words = " ".join(c.text.split())
            import textwrap  # the table only: a JSONL run does not import it

            lines = textwrap.wrap(words, text_w, break_on_hyphens=False) if self.wrap else [words]
            lines = lines or [""]
            self.out.write(
                f"{source:<{src_w}}  {c.index:>5}  {c.token_count:>6}  {section:<{sec_w}}  "
                f"{_pages(c):<{pages_w}}  {lines[0]}\n"
            )
            for line in lines[1:]:
                self.out.write(" " * (fixed) + line + "\n")


class _TextWriter:
    """One block per chunk: a provenance header line, then the chunk text exactly as it is in the document."""

    def __init__(self, out: TextIO):
        self.out = out

    def write(self, chunks) -> None:
        for c in chunks:
            head = [f"{c.source} #{c.index}", f"{c.token_count} tokens", f"chars {c.start}-{c.end}"]
            if _pages(c):
                head.append(_pages(c))
            if c.section:
                head.append(" > ".join(c.section))
            if c.speakers:
                head.append(", ".join(c.speakers))
            self.out.write("\u2500\u2500 " + " \u00b7 ".join(head) + "\n" + c.text + "\n\n")


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _open_output(path: str | None) -> TextIO:
    if not path or path == "-":
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the output file ({exc.strerror or exc})", source=path) from None


class _JsonlWriter:
    """One JSON object per chunk, every chunk field."""

    def __init__(self, out: TextIO):
        self.out = out

    def write(self, chunks) -> None:
        for c in chunks:
            self.out.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")


def _writer(fmt: str, out: TextIO) -> _JsonlWriter | _TableWriter | _TextWriter:
    if fmt == "table":
        return _TableWriter(out, shutil.get_terminal_size((120, 24)).columns)
    return _TextWriter(out) if fmt == "text" else _JsonlWriter(out)


class _Failures:
    """Inputs that failed: each is printed when it fails and listed again at the end (exit status 1)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, source: str, exc: ChunkwiseError) -> None:
        problem = exc.problem if exc.source else str(exc)
        print(f"chunkwise: error: {source}: {problem}", file=sys.stderr)
        self.items.append((source, problem))

    def report(self) -> int:
        if not self.items:
            return 0
        n = len(self.items)
        print(f"chunkwise: {n} input{'s' if n != 1 else ''} failed:", file=sys.stderr)
        for source, problem in self.items:
            print(f"  {source}: {problem}", file=sys.stderr)
        return 1


def _language_check(strategy):
    """A semantic strategy's check that the documents are in a language its model reads, else ``None``."""
    model = getattr(strategy, "embedder", None)
    if model is None:
        return None
    from ..embeddings.language import LanguageCheck  # here: a strategy that embeds nothing needs no check

    def say(line: str) -> None:  # a warning: printed with -q too
        print(f"chunkwise: warning: {line}", file=sys.stderr, flush=True)

    return LanguageCheck(model, notify=say)


def _video_document() -> Any:
    """The video document class, or ``()`` (which ``isinstance`` never matches) while no video was loaded:
    a command that chunks text does not import the video code."""
    module = sys.modules.get("chunkwise.video.document")
    return module.VideoDocument if module is not None else ()


def _checked(items, languages):
    """Each document's language checked when it is loaded, before a semantic strategy embeds it."""
    for source, item in items:
        if languages is not None and not isinstance(item, (InputError, _video_document())):
            languages.add(item.text, source)
        yield source, item


def _chunks_of(source: str, item, chunks, strategy, failures: _Failures):
    """The chunks of one input, or ``None`` when it failed (reported); the loader's warnings printed."""
    if isinstance(item, InputError):
        failures.add(source, item)
        return None
    for message in item.metadata.get("warnings", []):
        print(f"chunkwise: warning: {source}: {message}", file=sys.stderr)
    if isinstance(chunks, ChunkwiseError):
        failures.add(source, chunks)
        return None
    if chunks is None:  # a video arrives as ready-made clip chunks (chunkwise.video)
        try:
            chunks = item.chunks if isinstance(item, _video_document()) else strategy.chunk(item)
        except InputError as exc:  # e.g. too large for the memory available: this input only
            failures.add(source, exc)
            return None
    return chunks


def run(args: argparse.Namespace) -> int:
    from ..formats import collect_inputs, read_inputs
    from ..formats.text import DecodingWarning
    from ..formats.walk import file_sizes
    from ..progress import Progress
    from ..strategies.many import chunk_documents
    from .options import walk_options

    strategy = _build_strategy(args)
    options = input_options(args)
    out = _open_output(args.output)
    writer = _writer(args.format, out)
    failures = _Failures()
    languages = _language_check(strategy)
    n_docs = n_chunks = 0
    dropped: dict[str, int] = {}
    progress = Progress(not args.quiet, "chunking", embeds=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DecodingWarning)  # printed below, once, from the metadata
            found = collect_inputs(args.paths, **walk_options(args))  # the skipped types: one line, now
            progress.set_totals(len(found), file_sizes(found))
            items = _checked(read_inputs(found, **options), languages)
            # semantic strategies embed the sentences of many documents in one stream (strategies.many)
            for source, item, given in chunk_documents(strategy, items, progress=progress.enabled):
                chunks = _chunks_of(source, item, given, strategy, failures)
                if chunks is None:
                    progress.file_done(source, 0)
                    continue
                progress.file_done(source, len(chunks))
                n_docs += 1
                n_chunks += len(chunks)
                for kind, n in (getattr(item, "metadata", {}).get("dropped_outputs") or {}).items():
                    dropped[kind] = dropped.get(kind, 0) + n
                writer.write(chunks)
                out.flush()
    finally:
        progress.close()
        if out is not sys.stdout:
            out.close()
    if languages is not None:
        languages.warn()
    if not args.quiet:
        print(
            f"chunkwise: {n_docs} document{'s' if n_docs != 1 else ''}, {n_chunks} chunk"
            f"{'s' if n_chunks != 1 else ''} ({strategy.name}, max_tokens={strategy.max_tokens})"
            + _dropped_note(dropped),
            file=sys.stderr,
        )
    return failures.report()


def _dropped_note(dropped: dict[str, int]) -> str:
    """``"; notebook outputs left out: 40 image, 3 HTML"`` (what the notebook loader did not read), or ``""``."""
    if not dropped:
        return ""
    parts = ", ".join(f"{n:,} {kind}" for kind, n in sorted(dropped.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"; notebook outputs left out: {parts}"
