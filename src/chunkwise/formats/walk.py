"""Walking inputs safely: names that are not UTF-8, folders that cannot be read, files that are not files.

Every command that reads documents goes through this module (via :func:`chunkwise.formats.iter_documents`):

- **Names.** Linux file names are bytes; Python gives the undecodable ones as lone surrogates
  (``surrogateescape``), which cannot be written as UTF-8 (JSON output, Milvus, a terminal). Every name is
  shown as :func:`display_name`: undecodable bytes as ``\\xNN`` and control characters escaped, so a name is
  always one printable line. :func:`os_path` turns a display name back into the name the OS knows.
- **Folders.** A folder that cannot be listed is reported (one :class:`UnreadableFolder` per folder), never
  skipped silently; ``index --prune`` keeps every document under such a folder (:func:`under`).
- **File types.** FIFOs, devices and sockets are refused with one line; a FIFO would block forever and a
  device such as ``/dev/zero`` never ends. :func:`read_bounded` opens without blocking, checks the type of
  what it opened (not of the name, which can change in between) and reads at most ``limit + 1`` bytes,
  never trusting ``st_size`` (0 for ``/proc`` files and devices).
- **Supported types.** A folder as cloned holds images, scripts and style sheets beside its documents;
  chunking those buries the documents (the FastAPI docs folder: 83% of the chunks were SVG, JS and CSS) and
  reading each image printed an error. A walk therefore takes the files whose extension a loader is
  registered for (and extension-less files whose first bytes are UTF-8 text, :func:`sniff_text`) and counts
  the rest in a :class:`Skipped` tally, said in one line (:class:`SkippedFilesWarning`) instead of one error
  per file. A file named explicitly is always read: naming it is the user's intent.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath

from ..errors import InputError
from ..registry import lazy_regex

_READ_STEP = 1 << 20
_CONTROL = lazy_regex(r"[\x00-\x1f\x7f]")
_ESCAPED_BYTE = lazy_regex(r"\\x([0-9a-f]{2})")
#: bytes of an extension-less file looked at to decide whether it is text
SNIFF_BYTES = 8192
#: the tally key of extension-less files that are not UTF-8 text
NO_EXTENSION = "no extension"


class UnreadableFolder(InputError):
    """A folder whose listing failed; ``path`` is its display name (see :func:`under`)."""

    def __init__(self, problem: str, source: str):
        super().__init__(problem, source=source)
        self.path = source


def display_name(path: str | os.PathLike | bytes) -> str:
    """A file name as one printable, UTF-8-safe line: undecodable bytes as ``\\xNN``, controls escaped."""
    raw = os.fsencode(path)
    text = raw.decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown_name(source: str) -> str:
    """How a shared report (the viz page, the eval report) names a file or folder: never an absolute path of
    this machine. A path under the working directory is shown relative to it, any other absolute path by
    its last name."""
    path = PurePath(source)
    if not path.is_absolute():
        return source
    try:
        return path.relative_to(os.getcwd()).as_posix()
    except ValueError:
        return path.name or source


def os_path(display: str) -> str:
    """The OS name behind a :func:`display_name` (the inverse; names without escapes are returned as is)."""
    if "\\x" not in display:
        return display
    data = bytearray()
    pos = 0
    for m in _ESCAPED_BYTE.finditer(display):
        data += display[pos : m.start()].encode("utf-8", "surrogateescape")
        data.append(int(m.group(1), 16))
        pos = m.end()
    data += display[pos:].encode("utf-8", "surrogateescape")
    return os.fsdecode(bytes(data))


def source_exists(source: str) -> bool:
    """Does the file a stored ``source`` names still exist (under its display or its OS name)?"""
    return os.path.lexists(source) or os.path.lexists(os_path(source))


def under(source: str, folders: Iterable[str]) -> bool:
    """Is ``source`` inside one of ``folders`` (compared as absolute paths)?"""
    path = os.path.abspath(source)
    for folder in folders:
        root = os.path.abspath(folder).rstrip(os.sep) + os.sep
        if path.startswith(root):
            return True
    return False


#: the kinds of file a walk does not read, by the ``stat`` test that recognises each
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISDIR, "directory"),
)


def file_kind(mode: int) -> str | None:
    """What a non-regular file is (``"FIFO (named pipe)"``...), or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), "special file")


def _os_problem(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot read (permission denied)"
    return f"cannot read ({exc.strerror or type(exc).__name__})"


def read_bounded(path: str | os.PathLike, limit: int | None, source: str) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them (more is an :class:`InputError`).

    Opened with ``O_NONBLOCK`` so a FIFO without a writer cannot block; the type is checked on the open
    descriptor; the read stops at ``limit + 1`` bytes whatever ``st_size`` says.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing elsewhere
            raise InputError("not a regular file (socket); chunkwise reads files only", source=source) from None
        raise InputError(_os_problem(exc), source=source) from None
    try:
        st = os.fstat(fd)
        kind = file_kind(st.st_mode)
        if kind == "directory":
            raise InputError("is a directory (use iter_documents or pass it to `chunkwise chunk`)", source=source)
        if kind:
            raise InputError(
                f"not a regular file ({kind}); chunkwise reads files only (pipe a stream to `-` instead)", source=source
            )
        if limit is not None and st.st_size > limit:  # known too large: no need to read it
            raise InputError(
                f"file too large ({st.st_size:,} bytes; the limit is {limit:,} bytes, see --max-file-size)",
                source=source,
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        parts: list[bytes] = []
        total = 0
        want = None if limit is None else limit + 1
        while want is None or total < want:
            step = _READ_STEP if want is None else min(_READ_STEP, want - total)
            block = os.read(fd, step)
            if not block:
                break
            parts.append(block)
            total += len(block)
    except OSError as exc:
        raise InputError(_os_problem(exc), source=source) from None
    finally:
        os.close(fd)
    if limit is not None and total > limit:
        raise InputError(
            f"file too large (it grew past the limit of {limit:,} bytes while being read, or "
            "its size is not what the file system reports; see --max-file-size)",
            source=source,
        )
    return b"".join(parts)


@dataclass
class Found:
    """One input the walk produced: a file to read (``path``) or a problem (``error``), and its display name."""

    source: str
    path: str | None = None
    error: InputError | None = None


def file_sizes(found: Iterable[Found]) -> dict[str, int]:
    """Bytes of each listed file (source -> size; 0 where it cannot be read), for a progress estimate."""
    sizes: dict[str, int] = {}
    for item in found:
        if item.path and item.path != "-":
            try:
                sizes[item.source] = os.stat(item.path).st_size
            except OSError:
                sizes[item.source] = 0
    return sizes


class SkippedFilesWarning(UserWarning):
    """Files a folder walk left out because no loader reads their type (one warning per walk)."""


@dataclass
class Skipped:
    """Files a walk did not read: how many of each extension were of an unsupported type (``"no extension"``
    for extension-less files that are not text), and how many data files of each extension were over the
    data size limit (``large``, see :data:`chunkwise.formats.DATA_MAX_BYTES`). ``str()`` is the one
    line said about them."""

    counts: Counter = field(default_factory=Counter)
    large: Counter = field(default_factory=Counter)
    large_limit: int = 0
    #: the kinds that are source code (``--code`` reads them)
    code: set = field(default_factory=set)
    #: files and folders (ending in ``/``) a ``.gitignore`` ignores, relative to the folder walked
    ignored: list = field(default_factory=list)

    def add(self, kind: str, code: bool = False) -> None:
        self.counts[kind] += 1
        if code:
            self.code.add(kind)

    def add_ignored(self, rel: str) -> None:
        self.ignored.append(rel)

    def add_large(self, ext: str, limit: int) -> None:
        self.large[ext] += 1
        self.large_limit = limit

    @property
    def total(self) -> int:
        return sum(self.counts.values()) + sum(self.large.values()) + len(self.ignored)

    def __bool__(self) -> bool:
        return self.total > 0

    def __str__(self) -> str:
        n = sum(self.counts.values())
        parts = []
        if n:
            n_code = sum(self.counts[k] for k in self.code)
            code = f"; {n_code:,} of them source code, read with --code" if n_code else ""
            parts.append(f"{n:,} file{'s' if n != 1 else ''} of unsupported types: {_tally(self.counts)}{code}")
        big = sum(self.large.values())
        if big:
            kib = self.large_limit / 1024
            limit = (
                f"{self.large_limit:,} bytes"
                if kib < 1
                else f"{kib:,.0f} KiB"
                if kib < 1024
                else f"{kib / 1024:,.0f} MiB"
            )
            parts.append(f"{big:,} data file{'s' if big != 1 else ''} over {limit}: {_tally(self.large)}")
        if self.ignored:
            parts.append(_ignored_tally(self.ignored))
        if not n and not big:
            return f"skipped {'; '.join(parts)} (--no-gitignore reads them)"
        first = next((k for k, _ in _shown(self.large) if k.startswith(".")), None)
        first = first or next((k for k, _ in _shown(self.counts) if k.startswith(".")), ".ext")
        how = f"--include '*{first}' reads a type anyway, --all-files reads every file"
        return f"skipped {'; '.join(parts)} ({how}{', --no-gitignore what .gitignore ignores' if self.ignored else ''})"


def _ignored_tally(ignored: list[str]) -> str:
    """``12 folders and 1 file that .gitignore ignores: x.egg-info/, __pycache__/ (11), docs/notes.log``: each
    by its path, a name found more than once said once with its count, at most 4 of them."""
    folders = sum(1 for rel in ignored if rel.endswith("/"))
    files = len(ignored) - folders
    counted = [f"{n:,} {what}{'s' if n != 1 else ''}" for n, what in ((folders, "folder"), (files, "file")) if n]
    names = Counter(_last(rel) for rel in ignored)  # a name found more than once is said once, with its count
    said = list(dict.fromkeys(_last(rel) if names[_last(rel)] > 1 else rel for rel in ignored))
    shown = [f"{name} ({names[name]:,})" if names.get(name, 0) > 1 else name for name in said[:4]]
    if len(said) > 4:
        shown.append(f"{len(said) - 4:,} more")
    return f"{' and '.join(counted)} that .gitignore ignores: {', '.join(shown)}"


def _last(rel: str) -> str:
    """The last component of a relative path, a folder's with its ``/``."""
    return rel.rstrip("/").rsplit("/", 1)[-1] + ("/" if rel.endswith("/") else "")


def _shown(counts: Counter) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:8]


def _tally(counts: Counter) -> str:
    shown = _shown(counts)
    parts = [f"{kind} {n:,}" for kind, n in shown]
    if len(counts) > len(shown):
        rest = sum(counts.values()) - sum(n for _, n in shown)
        parts.append(f"{len(counts) - len(shown)} more types {rest:,}")
    return ", ".join(parts)


def sniff_text(path: str) -> bool:
    """Is an extension-less file text (the start is UTF-8, or has a UTF byte-order mark, and holds no NUL)?

    Anything that cannot be checked (a FIFO, no permission, gone) counts as text, so that reading it
    reports the problem in one line instead of the file vanishing from the run."""
    from .text import binary_kind, bom_encoding

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return True
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        head = os.read(fd, SNIFF_BYTES)
    except OSError:
        return True
    finally:
        os.close(fd)
    if bom_encoding(head)[0]:
        return True
    if binary_kind(head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut by the sniff window is still UTF-8
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def walk_folder(
    folder: str, keep: Callable[[str, str], bool], *, gitignore: bool = False, skipped: Skipped | None = None
) -> Iterator[Found]:
    """Files under ``folder`` (sorted, hidden names skipped, ``keep(rel_path, os_path)`` filters), with one
    :class:`UnreadableFolder` per folder that could not be listed, in walk order. ``gitignore``: inside a
    git work tree, leave out what its ``.gitignore`` files ignore (:mod:`.gitignore`), counted in ``skipped``;
    a folder holding ``.git`` below ``folder`` (a repository inside it) is walked by its own rules."""
    from .gitignore import GitIgnore

    # the rules each folder still to be walked is under: a folder holding ``.git`` starts its own
    rules_at: dict[str, GitIgnore | None] = {folder: GitIgnore.for_folder(folder) if gitignore else None}
    problems: list[OSError] = []
    for root, dirs, files in os.walk(folder, onerror=problems.append):
        while problems:
            yield _folder_problem(problems.pop(0))
        rules = rules_at.pop(root, None)
        if gitignore and os.path.lexists(os.path.join(root, ".git")):
            top = os.path.abspath(root)
            rules = rules if rules is not None and rules.top == top else GitIgnore(top)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if rules is not None:
            dirs[:] = [d for d in dirs if not _ignored(rules, folder, os.path.join(root, d), True, skipped)]
            rules_at.update((os.path.join(root, d), rules) for d in dirs)
        for f in sorted(files):
            if f.startswith("."):
                continue
            path = os.path.join(root, f)
            if rules is not None and _ignored(rules, folder, path, False, skipped):
                continue
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if keep(display_name(rel), path):
                yield Found(display_name(path), path=path)
    while problems:
        yield _folder_problem(problems.pop(0))


def _ignored(rules, folder: str, path: str, is_dir: bool, skipped: Skipped | None) -> bool:
    if not rules.ignored(path, is_dir):
        return False
    if skipped is not None:
        rel = os.path.relpath(path, folder).replace(os.sep, "/")
        skipped.add_ignored(display_name(rel) + ("/" if is_dir else ""))
    return True


def _folder_problem(exc: OSError) -> Found:
    name = display_name(exc.filename or "?")
    what = "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else (exc.strerror or "error")
    return Found(
        name,
        error=UnreadableFolder(
            f"cannot read this folder ({what}); its files were skipped (and are kept in an index by --prune)",
            source=name,
        ),
    )


__all__ = [
    "file_sizes",
    "UnreadableFolder",
    "Found",
    "Skipped",
    "SkippedFilesWarning",
    "sniff_text",
    "display_name",
    "shown_name",
    "os_path",
    "source_exists",
    "under",
    "file_kind",
    "read_bounded",
    "walk_folder",
]
