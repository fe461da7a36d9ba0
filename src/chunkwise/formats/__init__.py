"""Files to :class:`~chunkwise.document.Document`: one loader per format, chosen by extension and content.

``load(path)`` reads one file, ``load_bytes(data, source)`` reads bytes (stdin), ``iter_documents(paths)``
walks files and folders and yields each document or the :class:`~chunkwise.errors.InputError` that says why
it could not be read, so one bad file never stops a batch.

Options understood by every loader (keyword arguments; the CLI has a flag for each):

- ``format``: force ``text``, ``markdown``, ``html``, ``pdf``, ``vtt`` or ``srt`` instead of detecting it;
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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..document import Document
from ..errors import ConfigError, InputError
from ..video.frames import VIDEO_EXTENSIONS
from .text import binary_kind
from .walk import Found, UnreadableFolder, display_name, read_bounded, walk_folder  # noqa: F401 (re-export)

DEFAULT_MAX_BYTES = 100 * 1024 * 1024

#: extension -> format
EXTENSIONS = {
    ".txt": "text", ".text": "text", ".log": "text", ".rst": "text", ".csv": "text", ".tsv": "text",
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".vtt": "vtt", ".webvtt": "vtt",
    ".srt": "srt",
}
FORMATS = ("text", "markdown", "html", "pdf", "vtt", "srt")
KNOWN_OPTIONS = {"format", "encoding", "max_bytes", "clean", "clean_headers", "dehyphenate", "reflow",
                 "normalize_whitespace", "password", "html_mode"}

_SRT_START = re.compile(rb"\A\s*\d+\s*\r?\n\s*\d+:\d\d:\d\d[,.]\d+\s*-->")
_HTML_START = re.compile(rb"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b",
                         re.IGNORECASE | re.DOTALL)
_MD_HINT = re.compile(rb"^(?:#{1,6} \S|```|~~~|\|.*\|\s*$|[-*] \[[ x]\] )", re.MULTILINE)


#: formats added with :func:`register_format`: name -> loader
_REGISTERED: dict[str, Callable[..., Document]] = {}


def register_format(name: str, loader: Callable[..., Document], extensions: Iterable[str] = ()) -> None:
    """Add an input format: ``loader(data: bytes, source: str, **options) -> Document`` reads it, and files
    ending in one of ``extensions`` (e.g. ``".org"``) are given to it (``format=name`` forces it)."""
    if name in FORMATS or not re.fullmatch(r"[a-z][a-z0-9_-]*", name or ""):
        raise ConfigError(f"cannot register input format {name!r}: a built-in one or not a lower-case name")
    _REGISTERED[name] = loader
    for ext in extensions:
        EXTENSIONS[ext.lower() if ext.startswith(".") else "." + ext.lower()] = name


def _loader(fmt: str) -> Callable[..., Document]:
    if fmt in _REGISTERED:
        return _REGISTERED[fmt]
    if fmt == "text":
        from .text import load_text as f
    elif fmt == "markdown":
        from .markdown import load_markdown as f
    elif fmt == "html":
        from .html import load_html as f
    elif fmt == "pdf":
        from .pdf import load_pdf as f
    elif fmt == "vtt":
        from .subtitles import load_vtt as f
    elif fmt == "srt":
        from .subtitles import load_srt as f
    else:
        raise ConfigError(f"unknown input format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return f


def detect_format(data: bytes, name: str | None = None) -> str:
    """The format of ``data``: content that announces itself (PDF, WebVTT, SRT, HTML) wins over the
    extension, then the extension, then a Markdown guess, else plain text."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf")
    ext = Path(name).suffix.lower() if name else ""
    if head.startswith(b"%PDF-") or (ext not in EXTENSIONS and b"%PDF-" in data[:1024]):
        return "pdf"
    if head.startswith(b"WEBVTT"):
        return "vtt"
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if _SRT_START.match(head):
        return "srt"
    if _HTML_START.match(head):
        return "html"
    if len(_MD_HINT.findall(head)) >= 2:
        return "markdown"
    return "text"


def _check_options(options: dict) -> None:
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown loader option(s) {', '.join(unknown)}; valid: {', '.join(sorted(KNOWN_OPTIONS))}")
    limit = options.get("max_bytes", DEFAULT_MAX_BYTES)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ConfigError(f"max_bytes must be a positive integer, got {limit!r}")


def _size_error(size: int, limit: int, source: str) -> InputError:
    return InputError(f"file too large ({size:,} bytes; the limit is {limit:,} bytes, see --max-file-size)",
                      source=source)


def load_bytes(data: bytes, source: str = "<bytes>", name: str | None = None, **options) -> Document:
    """A document from raw bytes; ``name`` (a file name) helps choose the format."""
    _check_options(options)
    limit = options.get("max_bytes", DEFAULT_MAX_BYTES)
    if limit is not None and len(data) > limit:
        raise _size_error(len(data), limit, source)
    if not data:
        raise InputError("empty file (0 bytes)", source=source)
    fmt = options.get("format") or detect_format(data, name)
    if fmt not in FORMATS and fmt not in _REGISTERED:
        raise ConfigError(f"unknown input format {fmt!r}; choose one of {', '.join((*FORMATS, *_REGISTERED))}")
    if fmt != "pdf":
        kind = binary_kind(data)
        if kind:
            raise InputError(f"binary file ({kind}), not a document chunkwise can read", source=source)
    loader_options = {k: v for k, v in options.items() if k not in ("format", "max_bytes")}
    return _loader(fmt)(data, source, **loader_options)


def load(path: str | os.PathLike, **options) -> Document:
    """Load one file as a :class:`Document`, choosing the loader by content and extension.

    The file is read through :func:`.walk.read_bounded`: FIFOs and devices are refused, and at most
    ``max_bytes`` are read whatever the file system says its size is. The source is the file's
    :func:`.walk.display_name` (always valid UTF-8)."""
    _check_options(options)
    return _load_file(os.fspath(path), display_name(path), options)


def _load_file(path: str, source: str, options: dict) -> Document:
    if os.path.splitext(path)[1].lower() in VIDEO_EXTENSIONS:  # streamed by the video loader, no size cap
        import stat

        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise InputError("no such file", source=source) from None
        except OSError as exc:
            raise InputError(f"cannot read ({exc.strerror or exc})", source=source) from None
        if not stat.S_ISREG(mode):  # a FIFO or device named *.mp4 would block or never end
            raise InputError("not a regular file (FIFO, device or socket): refused", source=source)
        return _load_video(Path(path))
    data = read_bounded(path, options.get("max_bytes", DEFAULT_MAX_BYTES), source)
    return load_bytes(data, source=source, name=display_name(os.path.basename(path)), **options)


def _load_video(path: Path) -> Document:
    """A video file as clip chunks (:func:`chunkwise.video.load_video`, default tracker and clip rule); the
    video is streamed, never read whole, so the size limit does not apply."""
    from ..errors import ChunkwiseError
    from ..video import load_video

    try:
        return load_video(path)
    except InputError:
        raise
    except ChunkwiseError as exc:  # e.g. the video extra is missing: this file fails, the batch goes on
        raise InputError(exc.problem, source=str(path)) from None


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
                body = pattern[i + 1:j].replace("\\", "\\\\")
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


def list_inputs(paths: Iterable[str | os.PathLike], include: Iterable[str] | None = None,
                exclude: Iterable[str] | None = None) -> Iterator[Found]:
    """What :func:`iter_documents` reads, without reading it: one :class:`.walk.Found` per file (``path``
    set; ``"-"`` for standard input) or per problem (``error`` set: an unreadable folder, a folder without
    matching files), in order, each file once. The Ray engine lists its work with it, so both engines see
    the same inputs under the same source names."""
    include, exclude = list(include or []), list(exclude or [])
    seen: set[str] = set()

    def keep(rel: str) -> bool:
        return (not include or matches(rel, include)) and not (exclude and matches(rel, exclude))

    for raw in paths:
        name = os.fspath(raw)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if name == "-":
            yield Found("<stdin>", path="-")
            continue
        if os.path.isdir(name):
            found = list(walk_folder(name, keep))
            if not found:
                what = " matching the include/exclude patterns" if include or exclude else ""
                yield Found(display_name(name), error=InputError(f"directory has no readable files{what}",
                                                                 source=display_name(name)))
                continue
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


def iter_documents(paths: Iterable[str | os.PathLike], include: Iterable[str] | None = None,
                   exclude: Iterable[str] | None = None, **options) -> Iterator[tuple[str, Document | InputError]]:
    """Yield ``(source, Document or InputError)`` for every input: files, folders (recursively, filtered
    by ``include``/``exclude`` globs) and ``-`` for standard input. Each input is read only when its turn
    comes, and a failure is yielded, not raised, so the caller can report it and go on.

    Sources are display names (:func:`.walk.display_name`). A folder that cannot be listed yields one
    :class:`.walk.UnreadableFolder`; FIFOs, devices and sockets yield an error instead of being read."""
    _check_options(options)
    for item in list_inputs(paths, include, exclude):
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


__all__ = ["load", "load_bytes", "register_format", "read_stdin", "iter_documents", "list_inputs", "detect_format",
           "matches", "FORMATS", "EXTENSIONS", "DEFAULT_MAX_BYTES", "UnreadableFolder", "display_name"]
