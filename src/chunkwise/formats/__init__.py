"""Files to :class:`~chunkwise.document.Document`: one loader per format, chosen by extension and content.

``load(path)`` reads one file, ``load_bytes(data, source)`` reads bytes (stdin), ``iter_documents(paths)``
walks files and folders and yields each document or the :class:`~chunkwise.errors.InputError` that says why
it could not be read, so one bad file never stops a batch.

Options understood by every loader (keyword arguments; the CLI has a flag for each):

- ``format``: force ``text``, ``markdown``, ``html``, ``pdf``, ``vtt``, ``srt``, ``sbv``, ``notebook`` (``.ipynb``),
  ``table`` (CSV/TSV), ``docx`` or ``pptx`` (the ``office`` extra) instead of detecting it;
- ``encoding``: decode text formats with this encoding instead of the UTF-8 policy (:mod:`.text`);
- ``max_bytes``: files larger than this are refused (default :data:`DEFAULT_MAX_BYTES`, 100 MiB);
- ``clean=False`` or the single switches ``clean_headers``, ``dehyphenate``, ``reflow``,
  ``normalize_whitespace`` (see :mod:`.cleaning`); ``password`` for encrypted PDFs;
- ``html_mode``: ``main`` (default: the page's main content, see :mod:`.html`) or ``full`` (all visible text).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .. import registry
from ..document import Document
from ..errors import ChunkwiseError, ConfigError, InputError
from ..registry import lazy_regex
from ..validation import Interval, PathSpec, check, validated
from .text import binary_kind
from .walk import (  # noqa: F401 (re-export)
    Found,
    Skipped,
    SkippedFilesWarning,
    UnreadableFolder,
    display_name,
    read_bounded,
    sniff_text,
    walk_folder,
)

DEFAULT_MAX_BYTES = 100 * 1024 * 1024

#: extension -> language, for source code (read by :mod:`.code`, imported only when a file is code)
CODE_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    # read as code (recursive rules with code separators): no grammar in the extra
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "bash",
    ".bash": "bash",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
}
#: extensions read as tables, and their delimiter
TABLE_EXTENSIONS = {".csv": ",", ".tsv": "\t"}
#: a data file (CSV/TSV) larger than this is left out of a folder walk. 128 KiB: on the cookbook repository
#: measured in benchmarks/results/formats.md it leaves out the two result dumps (284 KB and 1 MB: 1,723 of
#: the 1,996 CSV chunks) and keeps the ten other CSV files (234 B to 41 KB); one repository, so a round
#: number between the two groups rather than a tuned value
DATA_MAX_BYTES = 128 * 1024
#: extension -> format
EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".rst": "rst",
    ".rest": "rst",
    ".csv": "table",
    ".tsv": "table",
    ".ipynb": "notebook",
    ".docx": "docx",
    ".pptx": "pptx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".mdx": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".vtt": "vtt",
    ".webvtt": "vtt",
    ".srt": "srt",
    ".sbv": "sbv",
}
#: formats whose files are binary containers their loader opens itself (no text decoding, no binary check)
CONTAINER_FORMATS = ("pdf", "docx", "pptx")
#: the built-in formats (their loaders are listed in :mod:`chunkwise.registry`, kind ``"format"``)
FORMATS = registry.builtin("format")
#: extension -> format, for formats whose loader reads the file itself (streamed, no size cap: video)
_STREAMED: dict[str, str] = {}
#: keyword arguments of ``load`` (and of ``chunk``/``chunk_file``, which hand them to the loader)
LOADER_OPTIONS = (
    "format",
    "encoding",
    "max_bytes",
    "clean",
    "clean_headers",
    "dehyphenate",
    "reflow",
    "normalize_whitespace",
    "password",
    "html_mode",
)
KNOWN_OPTIONS = frozenset(LOADER_OPTIONS)

_SRT_START = lazy_regex(rb"\A\s*\d+\s*\r?\n\s*\d+:\d\d:\d\d[,.]\d+\s*-->")
_HTML_START = lazy_regex(
    rb"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.IGNORECASE | re.DOTALL
)
_SBV_START = lazy_regex(rb"\A\s*\d+:\d\d:\d\d\.\d{1,3},\d+:\d\d:\d\d\.\d{1,3}[ \t]*\r?\n")


def __getattr__(name: str) -> Any:
    if name == "_REGISTERED":  # the live name -> loader table (tests remove what they registered from it)
        return registry.table("format")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_format(
    name: str, loader: str | Callable[..., Document], extensions: Iterable[str] = (), *, streamed: bool = False
) -> None:
    """Add an input format: ``loader(data: bytes, source: str, **options) -> Document`` reads it (or a
    ``"module:attr"`` string naming it, imported on first use), and files ending in one of ``extensions``
    (e.g. ``".org"``) are given to it (``format=name`` forces it).

    ``streamed=True``: the loader reads the file itself, ``loader(path: Path) -> Document`` (video: decoded
    frame by frame, so the size limit does not apply, and bytes or standard input cannot be given to it)."""
    if name in FORMATS or not re.fullmatch(r"[a-z][a-z0-9_-]*", name or ""):
        raise ConfigError(f"cannot register input format {name!r}: a built-in one or not a lower-case name")
    registry.register("format", name, loader)
    for ext in extensions:
        ext = ext.lower() if ext.startswith(".") else "." + ext.lower()
        (_STREAMED if streamed else EXTENSIONS)[ext] = name


def _streamed() -> dict[str, str]:
    """:data:`_STREAMED`, once the modules that register formats themselves have done so."""
    registry.table("format")
    return _STREAMED


def _loader(fmt: str) -> Callable[..., Document]:
    return registry.resolve("format", fmt)[0]


def detect_format(data: bytes, name: str | None = None) -> str:
    """The format of ``data``: content that announces itself (PDF, WebVTT, a notebook's JSON) wins over
    the extension, then the extension, then the content (SRT, SBV, HTML; a program, build file or JSON is
    text, see :mod:`.sniff`), then a Markdown guess (:func:`.sniff.looks_like_markdown`), else plain text."""
    from .sniff import looks_like_code, looks_like_json, looks_like_markdown, looks_like_notebook

    head = data[:4096].lstrip(b"\xef\xbb\xbf")
    ext = Path(name).suffix.lower() if name else ""
    if head.startswith(b"%PDF-") or (ext not in EXTENSIONS and b"%PDF-" in data[:1024]):
        return "pdf"
    if head.startswith(b"WEBVTT"):
        return "vtt"
    if ext in (".txt", ".json", "") and looks_like_notebook(head):
        return "notebook"
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if ext in CODE_EXTENSIONS:
        return "code"
    if _SRT_START.match(head):
        return "srt"
    if _SBV_START.match(head):
        return "sbv"
    if _HTML_START.match(head):
        return "html"
    if looks_like_json(data[:8192]) or looks_like_code(data[:8192], name):
        return "text"
    if looks_like_markdown(data[:8192]):
        return "markdown"
    return "text"


def _check_options(options: dict) -> None:
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown loader option(s) {', '.join(unknown)}; valid: {', '.join(sorted(KNOWN_OPTIONS))}")
    limit = options.get("max_bytes", DEFAULT_MAX_BYTES)
    check(limit, [Interval(int, 1, None), None], "max_bytes", "loader")


def _size_error(size: int, limit: int, source: str) -> InputError:
    return InputError(
        f"file too large ({size:,} bytes; the limit is {limit:,} bytes, see --max-file-size)", source=source
    )


def load_bytes(data: bytes, source: str = "<bytes>", name: str | None = None, **options) -> Document:
    """A document from raw bytes; ``name`` (a file name) helps choose the format."""
    _check_options(options)
    limit = options.get("max_bytes", DEFAULT_MAX_BYTES)
    if limit is not None and len(data) > limit:
        raise _size_error(len(data), limit, source)
    if not data:
        raise InputError("empty file (0 bytes)", source=source)
    fmt = options.get("format") or detect_format(data, name)
    if not registry.has("format", fmt):
        raise registry.unknown("format", fmt)
    if fmt in _streamed().values():
        raise ConfigError(f"input format {fmt!r} is read from a file, not from bytes or standard input")
    if fmt not in CONTAINER_FORMATS:
        kind = binary_kind(data)
        if kind:
            raise InputError(f"binary file ({kind}), not a document chunkwise can read", source=source)
    loader_options = {k: v for k, v in options.items() if k not in ("format", "max_bytes")}
    return _loader(fmt)(data, source, **loader_options)


@validated(path=PathSpec())
def load(path: str | os.PathLike, **options) -> Document:
    """Load one file as a :class:`Document`, choosing the loader by content and extension.

    The file is read through :func:`.walk.read_bounded`: FIFOs and devices are refused, and at most
    ``max_bytes`` are read whatever the file system says its size is. The source is the file's
    :func:`.walk.display_name` (always valid UTF-8)."""
    _check_options(options)
    return _load_file(os.fspath(path), display_name(path), options)


def _load_file(path: str, source: str, options: dict) -> Document:
    ext = os.path.splitext(path)[1].lower()
    streamed = _streamed().get(ext)
    if streamed is not None and not (ext == ".ts" and not _mpeg_ts(path)):  # TypeScript, not a video
        return _load_streamed(streamed, path, source)
    data = read_bounded(path, options.get("max_bytes", DEFAULT_MAX_BYTES), source)
    return load_bytes(data, source=source, name=display_name(os.path.basename(path)), **options)


def _load_streamed(fmt: str, path: str, source: str) -> Document:
    """A file whose loader reads it itself (a video: the default tracker and clip rule), streamed and never
    read whole, so the size limit does not apply; only a regular file is given to it."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("no such file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", source=source) from None
    if not stat.S_ISREG(mode):  # a FIFO or device named *.mp4 would block or never end
        raise InputError("not a regular file (FIFO, device or socket): refused", source=source)
    try:
        return _loader(fmt)(Path(path))
    except InputError:
        raise
    except ChunkwiseError as exc:  # e.g. the video extra is missing: this file fails, the batch goes on
        raise InputError(exc.problem, source=str(Path(path))) from None


def read_stdin(**options) -> Document:
    """The document piped to standard input (source ``<stdin>``)."""
    _check_options(options)
    limit = options.get("max_bytes", DEFAULT_MAX_BYTES)
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read(limit + 1 if limit else -1) if stream is not None else sys.stdin.read().encode("utf-8")
    return load_bytes(data, source="<stdin>", **options)


def _glob_regex(pattern: str) -> re.Pattern:
    """A glob as a regex over '/'-separated relative paths: ``*`` within a name, ``**/`` any folders."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(rel_path: str, patterns: Iterable[str]) -> bool:
    """Does a relative path match any glob? A pattern without '/' matches the file name alone
    (``*.pdf``), one with '/' the whole relative path (``docs/**/*.md``)."""
    name = rel_path.rsplit("/", 1)[-1]
    for pattern in patterns:
        target = rel_path if "/" in pattern else name
        if _glob_regex(pattern).match(target):
            return True
    return False


def supported_extensions() -> frozenset[str]:
    """The extensions a folder walk reads: every format's, built-in and :func:`register_format` (video)."""
    return frozenset(EXTENSIONS) | frozenset(_streamed())


def _pattern_extension(pattern: str) -> str | None:
    """The extension a glob names literally (``*.svg``, ``docs/**/*.js``), or ``None`` (``docs/**``, ``*``)."""
    name = pattern.rsplit("/", 1)[-1]
    ext = os.path.splitext(name)[1].lower()
    return ext if len(ext) > 1 and not any(ch in ext for ch in "*?[]") else None


def _mpeg_ts(path: str) -> bool:
    """Is a ``.ts`` file an MPEG transport stream (sync byte 0x47 every 188 bytes) and not TypeScript?"""
    try:
        with open(path, "rb") as f:
            head = f.read(189)
    except OSError:
        return True  # reading it reports the problem
    return head[:1] == b"\x47" and (len(head) < 189 or head[188:189] == b"\x47")


_OFFICE = {".docx": "docx", ".pptx": "pptx"}


def _office_ready(ext: str) -> bool:
    """Is the library that reads this Office type installed (the ``office`` extra)? Without it, a folder
    walk counts such files with the skipped types instead of failing on each."""
    import importlib.util

    return importlib.util.find_spec(_OFFICE[ext]) is not None


def _over(path: str, limit: int) -> bool:
    try:
        return os.stat(path).st_size > limit
    except OSError:
        return False  # reading it reports the problem


def _keeper(
    include: list[str], exclude: list[str], all_files: bool, skipped: Skipped | None, code: bool = False
) -> Callable[[str, str], bool]:
    """Whether a folder walk takes a file (its path relative to the folder, its path): see :func:`list_inputs`."""
    supported = supported_extensions() | (frozenset(CODE_EXTENSIONS) if code else frozenset())
    named = {ext for ext in map(_pattern_extension, include) if ext}

    def keep(rel: str, path: str) -> bool:
        if include and not matches(rel, include):
            return False
        if exclude and matches(rel, exclude):
            return False
        if all_files:
            return True
        ext = os.path.splitext(rel.rsplit("/", 1)[-1])[1].lower()
        if ext in named:
            return True
        if ext in TABLE_EXTENSIONS and _over(path, DATA_MAX_BYTES):
            if skipped is not None:
                skipped.add_large(ext, DATA_MAX_BYTES)
            return False
        office_ok = ext not in _OFFICE or _office_ready(ext)
        if ext in supported and (ext != ".ts" or code or _mpeg_ts(path)) and office_ok:
            return True
        if not ext and sniff_text(path):
            return True
        if skipped is not None:
            skipped.add(ext or "no extension", code=ext in CODE_EXTENSIONS)
        return False

    return keep


def _folder_files(
    name: str, keep: Callable[[str, str], bool], filtered: bool, skipped: Skipped | None, gitignore: bool = True
) -> list[Found]:
    """The files a folder walk takes, or one :class:`.walk.Found` error saying why there are none."""
    before = skipped.total if skipped is not None else 0
    ignored_before = len(skipped.ignored) if skipped is not None else 0
    found = list(walk_folder(name, keep, gitignore=gitignore, skipped=skipped))
    if found:
        return found
    if skipped is not None and skipped.total - before == len(skipped.ignored) - ignored_before > 0:
        what = " that .gitignore does not ignore (--no-gitignore reads what it ignores)"
    elif skipped is not None and skipped.total > before:
        what = " of a supported type (see the skipped files)"
    else:
        what = " matching the include/exclude patterns" if filtered else ""
    error = InputError(f"directory has no readable files{what}", source=display_name(name))
    return [Found(display_name(name), error=error)]


def list_inputs(
    paths: Iterable[str | os.PathLike],
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    *,
    all_files: bool = False,
    skipped: Skipped | None = None,
    code: bool = False,
    gitignore: bool = True,
) -> Iterator[Found]:
    """What :func:`iter_documents` reads, without reading it: one :class:`.walk.Found` per file (``path``
    set; ``"-"`` for standard input) or per problem (``error`` set: an unreadable folder, a folder without
    matching files), in order, each file once. The Ray engine lists its work with it, so both engines see
    the same inputs under the same source names.

    In folders only the supported types are taken (:func:`supported_extensions`; an extension-less file when
    it sniffs as text); the others are counted in ``skipped`` (a :class:`.walk.Skipped`). An ``include``
    pattern that names an extension (``*.svg``) takes files of that type anyway, ``code=True`` source files
    too (:data:`CODE_EXTENSIONS`), ``all_files=True`` every file. A folder inside a git work tree
    leaves out what its ``.gitignore`` files ignore (counted in ``skipped`` too; ``gitignore=False`` or
    ``all_files=True`` reads them, see :mod:`.gitignore`). Files named in ``paths`` are always taken."""
    include, exclude = list(include or []), list(exclude or [])
    seen: set[str] = set()
    keep = _keeper(include, exclude, all_files, skipped, code)
    for raw in paths:
        name = os.fspath(raw)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if name == "-":
            yield Found("<stdin>", path="-")
            continue
        if os.path.isdir(name):
            found = _folder_files(name, keep, bool(include or exclude), skipped, gitignore=gitignore and not all_files)
        else:
            found = [Found(display_name(name), path=name)]
        for item in found:
            if item.error is None:
                assert item.path is not None  # a Found is a path or an error
                key = os.path.realpath(item.path)
                if key in seen:
                    continue
                seen.add(key)
            yield item


def collect_inputs(
    paths: Iterable[str | os.PathLike],
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    *,
    all_files: bool = False,
    code: bool = False,
    gitignore: bool = True,
) -> list[Found]:
    """:func:`list_inputs` as a list, walked before anything is read (so a run knows its total up front),
    and the files of unsupported types said at once in one :class:`.walk.SkippedFilesWarning`."""
    skipped = Skipped()
    found = list(
        list_inputs(paths, include, exclude, all_files=all_files, skipped=skipped, code=code, gitignore=gitignore)
    )
    if skipped:
        warnings.warn(str(skipped), SkippedFilesWarning, stacklevel=2)
    return found


def read_inputs(found: Iterable[Found], **options) -> Iterator[tuple[str, Document | InputError]]:
    """``(source, Document or InputError)`` for each listed input (:func:`collect_inputs`), read in turn."""
    _check_options(options)
    for item in found:
        if item.error is not None:
            yield item.source, item.error
        elif item.path == "-":
            try:
                yield "<stdin>", read_stdin(**options)
            except InputError as exc:
                yield "<stdin>", exc
        else:
            assert item.path is not None  # a Found is a path or an error
            try:
                yield item.source, _load_file(item.path, item.source, options)
            except InputError as exc:
                yield item.source, exc


def iter_documents(
    paths: Iterable[str | os.PathLike],
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    *,
    all_files: bool = False,
    code: bool = False,
    gitignore: bool = True,
    **options,
) -> Iterator[tuple[str, Document | InputError]]:
    """Yield ``(source, Document or InputError)`` for every input: files, folders (recursively, filtered
    by ``include``/``exclude`` globs) and ``-`` for standard input. Each input is read only when its turn
    comes, and a failure is yielded, not raised, so the caller can report it and go on.

    Folders give their files of supported types; the others are said in one
    :class:`.walk.SkippedFilesWarning` once the walk is listed, before the first file is read
    (``code=True`` reads source files too, ``all_files=True`` every file, ``gitignore=False`` what
    ``.gitignore`` ignores; see :func:`list_inputs`). Sources are display names
    (:func:`.walk.display_name`). A folder that cannot be listed yields one :class:`.walk.UnreadableFolder`;
    FIFOs, devices and sockets yield an error instead of being read."""
    _check_options(options)
    found = collect_inputs(paths, include, exclude, all_files=all_files, code=code, gitignore=gitignore)
    yield from read_inputs(found, **options)


__all__ = [
    "load",
    "load_bytes",
    "register_format",
    "read_stdin",
    "iter_documents",
    "list_inputs",
    "collect_inputs",
    "read_inputs",
    "supported_extensions",
    "detect_format",
    "matches",
    "Skipped",
    "SkippedFilesWarning",
    "FORMATS",
    "EXTENSIONS",
    "DEFAULT_MAX_BYTES",
    "UnreadableFolder",
    "display_name",
]
