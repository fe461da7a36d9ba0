"""A folder inside a git work tree is walked as git sees it: what its ``.gitignore`` files ignore is not read.

Build output and installed metadata (``*.egg-info/``, ``build/``, ``node_modules/``) sit beside the sources
they come from; reading them doubles documents and turns generated files into error lines. The rules are
git's own (``pathspec``'s :class:`~pathspec.GitIgnoreSpec`): every ``.gitignore`` from the work tree's top
down to the file, a deeper one overriding a higher one, the last matching line of a file winning, and
``.git/info/exclude`` below the top ``.gitignore``. A folder git ignores is not entered, so nothing under it
comes back (as in git). A folder holding its own ``.git`` (a repository inside the folder walked) starts
its own rules there, as git does. A line git cannot read (``!``, a lone ``\\``, ``[z-a]``) is dropped, as
git drops it, with one :class:`GitIgnoreWarning` naming the file and line. The user-wide excludes file
(``core.excludesFile``) is not read: it is one person's, not the project's.
"""

from __future__ import annotations

import os
import warnings
from typing import Any


class GitIgnoreWarning(UserWarning):
    """A ``.gitignore`` line that is not a valid pattern; it is dropped (git drops it too)."""


def work_tree(folder: str) -> str | None:
    """The top of the git work tree ``folder`` is in (the nearest folder above holding ``.git``), or ``None``."""
    here = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


class GitIgnore:
    """The ignore rules of one work tree, each folder's ``.gitignore`` read once, when first needed."""

    def __init__(self, top: str):
        self.top = top
        self._specs: dict[str, Any] = {}

    @classmethod
    def for_folder(cls, folder: str) -> GitIgnore | None:
        """The rules for a walk of ``folder``: ``None`` outside a work tree, or when git ignores ``folder``
        itself (naming an ignored folder is the user's intent)."""
        top = work_tree(folder)
        if top is None:
            return None
        rules = cls(top)
        return None if rules.ignored(folder, is_dir=True) else rules

    def _lines(self, path: str) -> list[tuple[str, int, str]]:
        """``(file, line number, line)`` of each pattern line of ``path`` (blank lines and comments left out)."""
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:  # no such file, or unreadable: no rules from it
            return []
        return [(path, n, line) for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]

    def _spec(self, rel_dir: str):
        if rel_dir not in self._specs:
            from pathspec import GitIgnoreSpec

            folder = os.path.join(self.top, rel_dir) if rel_dir else self.top
            lines = self._lines(os.path.join(folder, ".gitignore"))
            if not rel_dir and os.path.isdir(os.path.join(self.top, ".git")):
                lines = self._lines(os.path.join(self.top, ".git", "info", "exclude")) + lines
            try:
                spec = GitIgnoreSpec.from_lines([line for _, _, line in lines]) if lines else None
            except Exception:  # one bad line: compile them one by one and drop the bad ones, as git does
                patterns = [p for item in lines for p in _compiled(GitIgnoreSpec, *item)]
                spec = GitIgnoreSpec(patterns) if patterns else None
            self._specs[rel_dir] = spec
        return self._specs[rel_dir]

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        """Does git ignore ``path`` (a file, or a folder when ``is_dir``)? Its own folder's rules are
        asked first, then each folder's above it; the first that has a rule for it decides."""
        rel = os.path.relpath(os.path.abspath(path), self.top).replace(os.sep, "/")
        if rel == "." or rel.startswith("../"):
            return False
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            spec = self._spec("/".join(parts[:depth]))
            if spec is None:
                continue
            decided = spec.check_file("/".join(parts[depth:]) + ("/" if is_dir else "")).include
            if decided is not None:
                return bool(decided)
        return False


def _compiled(spec_class, path: str, number: int, line: str) -> list:
    """The pattern of one ``.gitignore`` line, or none (and one warning) when git cannot read it either."""
    from .walk import display_name

    try:
        return list(spec_class.from_lines([line]).patterns)
    except Exception as exc:  # pathspec's GitIgnorePatternError, re.error for a range such as [z-a]
        why = "" if "pattern" in str(exc) else f" ({' '.join(str(exc).split())})"
        shown = os.path.relpath(path)
        shown = path if shown.startswith("..") else shown
        warnings.warn(
            f"{display_name(shown)} line {number}: {line!r} is not a valid pattern{why}; left out, as git does",
            GitIgnoreWarning,
            stacklevel=2,
        )
        return []


__all__ = ["GitIgnore", "GitIgnoreWarning", "work_tree"]
