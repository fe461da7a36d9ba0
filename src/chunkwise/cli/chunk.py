"""``chunkwise chunk PATH...``: chunk files, folders or stdin and write the chunks as JSONL or a table.

Every input is read and chunked on its own: a file that cannot be read (missing, binary, corrupt PDF, no
text...) prints one line ``chunkwise: error: FILE: problem``, the other inputs are still chunked, the failures
are listed again at the end and the exit status is 1. Invalid parameters (``--max-tokens 0``,
``--overlap`` not below ``--max-tokens``...) are found before any file is read: one line, exit status 2.

``add_input_options``/``input_options`` declare and read the flags that control how files are loaded
(format, encoding, size limit, cleaning); other commands that read documents can share them.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import warnings
from typing import Any, TextIO

from ..errors import ChunkwiseError, ConfigError, InputError
from ..video.document import VideoDocument

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"100MB"``, ``"512k"``, ``"2.5G"`` or plain bytes; units are powers of 1024."""
    m = _SIZE.match(str(text))
    if not m:
        raise ConfigError(f"--max-file-size expects a size like 100MB, 512KB or 1048576, got {text!r}")
    value = float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())
    if value < 1:
        raise ConfigError(f"--max-file-size must be at least 1 byte, got {text!r}")
    return int(value)


def add_input_options(p: argparse.ArgumentParser) -> None:
    """Flags for reading documents: globs, format, encoding, size limit and the cleaning switches."""
    g = p.add_argument_group("input")
    g.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="when walking folders, only files matching this glob, e.g. '*.md' or 'docs/**/*.pdf' "
                        "(repeatable)")
    g.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="when walking folders, skip files matching this glob (repeatable)")
    g.add_argument("--input-format", default=None,
                   choices=("text", "markdown", "html", "pdf", "vtt", "srt"),
                   help="read every input as this format instead of detecting it")
    g.add_argument("--encoding", default=None,
                   help="decode text inputs with this encoding (default: UTF-8; invalid bytes are replaced "
                        "and reported)")
    g.add_argument("--max-file-size", default="100MB", metavar="SIZE",
                   help="refuse files larger than this (default 100MB)")
    g.add_argument("--pdf-password", default=None, metavar="PASSWORD",
                   help="password for encrypted PDFs (the empty password is always tried)")
    c = p.add_argument_group("cleaning (PDF and plain text)")
    c.add_argument("--no-clean", action="store_true", help="switch off every cleaning step")
    c.add_argument("--no-clean-headers", action="store_true",
                   help="keep running page headers/footers and page numbers (PDF)")
    c.add_argument("--no-dehyphenate", action="store_true", help="keep words hyphenated across line breaks")
    c.add_argument("--no-reflow", action="store_true", help="keep line-wrapped paragraphs as they are")
    c.add_argument("--no-normalize-whitespace", action="store_true", help="keep whitespace as extracted")


def input_options(args: argparse.Namespace) -> dict[str, Any]:
    """Loader keyword options (see :mod:`chunkwise.formats`) from the flags of :func:`add_input_options`."""
    opts: dict[str, Any] = {"max_bytes": parse_size(args.max_file_size)}
    if args.input_format:
        opts["format"] = args.input_format
    if args.encoding:
        import codecs

        try:
            codecs.lookup(args.encoding)
        except LookupError:
            raise ConfigError(f"unknown encoding {args.encoding!r}") from None
        opts["encoding"] = args.encoding
    if args.pdf_password is not None:
        opts["password"] = args.pdf_password
    if args.no_clean:
        opts["clean"] = False
    for flag in ("clean_headers", "dehyphenate", "reflow", "normalize_whitespace"):
        if getattr(args, f"no_{flag}"):
            opts[flag] = False
    return opts


def register(subparsers) -> None:
    import textwrap

    from .options import add_chunking_options
    from .strategies import strategies_epilog

    p = subparsers.add_parser(
        "chunk", help="chunk files, folders or stdin; print JSONL or a table",
        description=textwrap.fill(
            "Chunk documents (text, Markdown, HTML, PDF, WebVTT, SRT; folders recursively; - for "
            "stdin) and write one JSON object per chunk, or a table for reading.", width=100),
        epilog=strategies_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders, or - for standard input")
    add_chunking_options(p)
    o = p.add_argument_group("output")
    o.add_argument("--format", "-f", choices=("jsonl", "table"), default="jsonl",
                   help="jsonl: one object per chunk with every chunk field (default); table: for people")
    o.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    add_input_options(p)
    p.set_defaults(func=run)


def _build_strategy(args: argparse.Namespace):
    """The strategy, checked before any input is read; the embedder is loaded only for semantic ones."""
    from ..strategies import SEMANTIC_STRATEGIES
    from .options import strategy_from_args, strategy_params_from_args

    name, params = strategy_params_from_args(args)
    embedder = None
    if name in SEMANTIC_STRATEGIES and "embedder" not in params:
        from ..embeddings import embedder_from_args

        embedder = embedder_from_args(args)
    strategy = strategy_from_args(args, embedder)
    strategy.validate()
    return strategy


def _pages(chunk) -> str:
    if chunk.page_start is None:
        if chunk.start_time is not None:
            return f"{_clock(chunk.start_time)}-{_clock(chunk.end_time)}"
        return ""
    if chunk.page_end in (None, chunk.page_start):
        return f"p{chunk.page_start}"
    return f"p{chunk.page_start}-{chunk.page_end}"


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "\u2026"


class _TableWriter:
    """Aligned columns: source, index, tokens, section, pages (or time), first words."""

    def __init__(self, out: TextIO, width: int):
        self.out = out
        self.width = width
        self.header_done = False

    def write(self, chunks) -> None:
        if not chunks:
            return
        src_w, sec_w, pages_w = 28, 28, 11
        fixed = src_w + 5 + 6 + sec_w + pages_w + 5 * 2
        text_w = max(20, self.width - fixed)
        if not self.header_done:
            self.out.write(f"{'source':<{src_w}}  {'#':>5}  {'tokens':>6}  {'section':<{sec_w}}  "
                           f"{'where':<{pages_w}}  first words\n")
            self.header_done = True
        for c in chunks:
            source = c.source if len(c.source) <= src_w else "\u2026" + c.source[-(src_w - 1):]
            section = " > ".join(c.section)
            if len(section) > sec_w:  # keep the innermost heading readable
                section = "\u2026" + section[-(sec_w - 1):]
            words = _cut(" ".join(c.text.split()), text_w)
            self.out.write(f"{source:<{src_w}}  {c.index:>5}  {c.token_count:>6}  {section:<{sec_w}}  "
                           f"{_pages(c):<{pages_w}}  {words}\n")


def _open_output(path: str | None) -> TextIO:
    if not path or path == "-":
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the output file ({exc.strerror or exc})", source=path) from None


def run(args: argparse.Namespace) -> int:
    from ..formats import iter_documents
    from ..embeddings.language import LanguageCheck
    from ..formats.text import DecodingWarning
    from ..strategies.many import chunk_documents

    strategy = _build_strategy(args)
    options = input_options(args)
    out = _open_output(args.output)
    table = _TableWriter(out, shutil.get_terminal_size((120, 24)).columns) if args.format == "table" else None
    failures: list[tuple[str, str]] = []
    n_docs = n_chunks = 0
    model = getattr(strategy, "embedder", None)
    languages = LanguageCheck(model) if model is not None else None

    def fail(source: str, exc: ChunkwiseError) -> None:
        problem = exc.problem if exc.source else str(exc)
        print(f"chunkwise: error: {source}: {problem}", file=sys.stderr)
        failures.append((source, problem))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DecodingWarning)  # printed below, once, from the metadata
            items = iter_documents(args.paths, include=args.include, exclude=args.exclude, **options)
            # semantic strategies embed the sentences of many documents in one stream (strategies.many)
            bars = not args.quiet and sys.stderr.isatty()  # never tqdm noise in logs or pipes
            for source, item, chunks in chunk_documents(strategy, items, progress=bars):
                if isinstance(item, InputError):
                    fail(source, item)
                    continue
                for message in item.metadata.get("warnings", []):
                    print(f"chunkwise: warning: {source}: {message}", file=sys.stderr)
                if isinstance(chunks, ChunkwiseError):
                    fail(source, chunks)
                    continue
                if chunks is None:  # a video arrives as ready-made clip chunks (chunkwise.video)
                    chunks = item.chunks if isinstance(item, VideoDocument) else strategy.chunk(item)
                if languages is not None and not isinstance(item, VideoDocument):
                    languages.add(item.text)
                n_docs += 1
                n_chunks += len(chunks)
                if table is not None:
                    table.write(chunks)
                else:
                    for c in chunks:
                        out.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
                out.flush()
    finally:
        if out is not sys.stdout:
            out.close()
    if languages is not None:
        languages.warn()
    if not args.quiet:
        print(f"chunkwise: {n_docs} document{'s' if n_docs != 1 else ''}, {n_chunks} chunk"
              f"{'s' if n_chunks != 1 else ''} ({strategy.name}, max_tokens={strategy.max_tokens})",
              file=sys.stderr)
    if failures:
        print(f"chunkwise: {len(failures)} input{'s' if len(failures) != 1 else ''} failed:", file=sys.stderr)
        for source, problem in failures:
            print(f"  {source}: {problem}", file=sys.stderr)
        return 1
    return 0
