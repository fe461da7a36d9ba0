"""Progress of long runs (``index``, ``chunk``): totals, rate and ETA, on a terminal and in logs alike.

Why: indexing 155 files took 31 minutes and showed ``embedding: 1737chunk [18:23, 1.75chunk/s]`` (no
total, no ETA), and nothing at all when stderr was not a terminal (CI, ``nohup``, ``docker logs``), so a
slow run could not be told from a stuck one. A run now lists its files first (so the number of files and
their bytes are known before anything is read) and keeps counters of files read, chunks made, embedded and
written:

- on a terminal, tqdm bars with ``total=`` (files; chunks embedded and written against the chunk total,
  estimated from the bytes read until the last file is chunked, then exact);
- elsewhere, a heartbeat line to stderr every :func:`heartbeat_seconds` (``$CHUNKWISE_PROGRESS_SECONDS``,
  default 30; ``0`` switches it off), from a daemon thread so that one long embedding call cannot
  silence it::

      chunkwise: indexing: 12/155 files read, 412/~1,737 chunks embedded, 24%, 1.8 chunks/s, ETA 12:03

The fraction done is the chunks embedded over the (estimated) chunk total once chunks exist, the bytes read
over all bytes before that; the ETA is the elapsed time scaled by what is left.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import Any, TextIO

#: environment variable: seconds between heartbeat lines when stderr is not a terminal (0: none)
HEARTBEAT_ENV = "CHUNKWISE_PROGRESS_SECONDS"
DEFAULT_HEARTBEAT = 30.0

#: counter names (the ``update`` names the index and the Ray engine use) and the bar units
_UNITS = {"files": "file", "chunks": "chunk", "embedding": "chunk", "chunks written": "chunk"}


def heartbeat_seconds(value: str | float | None = None) -> float:
    """Seconds between heartbeat lines: ``value``, else ``$CHUNKWISE_PROGRESS_SECONDS``, else 30.

    A value that is not a number >= 0 falls back to the default with a one-line warning (a typo in an
    environment variable must not stop an indexing run)."""
    raw = os.environ.get(HEARTBEAT_ENV) if value is None else value
    if raw is None or raw == "":
        return DEFAULT_HEARTBEAT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        print(
            f"chunkwise: warning: {HEARTBEAT_ENV}={raw!r} is not a number of seconds >= 0; using {DEFAULT_HEARTBEAT:g}",
            file=sys.stderr,
        )
        return DEFAULT_HEARTBEAT
    return seconds


def format_eta(seconds: float) -> str:
    """``12:03`` or ``1:02:03`` (whole seconds)."""
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counters of one run with bars (terminal) or heartbeat lines (anything else); see the module docstring.

    ``label`` names the run in heartbeat lines (``indexing``, ``chunking``); ``embeds``: whether chunks are
    embedded (the line then counts embedded chunks). ``tty``/``stream``/``interval`` default to stderr,
    whether it is a terminal and :func:`heartbeat_seconds`.
    """

    def __init__(
        self,
        enabled: bool,
        label: str = "indexing",
        *,
        embeds: bool = True,
        tty: bool | None = None,
        stream: TextIO | None = None,
        interval: float | None = None,
    ):
        self.stream = stream or sys.stderr
        self.label = label
        self.embeds = embeds
        self.on = bool(enabled)
        if tty is None:
            try:
                tty = self.stream.isatty()
            except (AttributeError, ValueError):
                tty = False
        self.enabled = self.on and bool(tty)  # tqdm bars (the attribute name callers test)
        self.interval = heartbeat_seconds(interval) if self.on and not tty else 0.0
        self.bars: dict[str, Any] = {}
        self.counts: dict[str, int] = dict.fromkeys(_UNITS, 0)
        self.total_files: int | None = None
        self.total_bytes = 0
        self.bytes_done = 0
        self.sizes: dict[str, int] = {}
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- totals and counters -------------------------------------------------------------------------
    def set_totals(self, files: int, sizes: dict[str, int] | None = None) -> None:
        """The run's inputs are listed: ``files`` of them, ``sizes`` (source -> bytes) for the estimate."""
        self.total_files = files
        self.sizes = dict(sizes or {})
        self.total_bytes = sum(self.sizes.values())
        self.started = time.monotonic()
        if self.enabled:
            self.bar("files", "file", files)
        elif self.on and self.interval > 0:  # a short run says nothing more than its summary
            self._thread = threading.Thread(target=self._beat, name="chunkwise-progress", daemon=True)
            self._thread.start()

    def file_done(self, source: str, chunks: int = 0) -> None:
        """One input read (and, when ``chunks`` is given, chunked into that many chunks)."""
        self.bytes_done += self.sizes.get(source, 0)
        self.update("files", "file")
        if chunks:
            self.update("chunks", "chunk", chunks)

    def chunk_total(self) -> tuple[int, bool]:
        """The number of chunks this run will have and whether that is exact (every file read)."""
        made = self.counts["chunks"]
        if self.total_files is None or self.counts["files"] >= self.total_files:
            return made, True
        if self.total_bytes and self.bytes_done:
            return max(made, round(made * self.total_bytes / self.bytes_done)), False
        return made, False

    def fraction(self) -> float | None:
        """Share of the run done (0..1), or ``None`` before anything can be said."""
        total, _ = self.chunk_total()
        if self.embeds and total and self.counts["chunks"]:
            return min(1.0, self.counts["embedding"] / total)
        if self.total_bytes:
            return min(1.0, self.bytes_done / self.total_bytes)
        if self.total_files:
            return min(1.0, self.counts["files"] / self.total_files)
        return None

    def line(self) -> str:
        """The heartbeat line (without the ``chunkwise:`` prefix)."""
        elapsed = time.monotonic() - self.started
        files = self.counts["files"]
        parts = [
            f"{files:,}/{self.total_files:,} files read" if self.total_files is not None else f"{files:,} files read"
        ]
        total, exact = self.chunk_total()
        tilde = "" if exact else "~"
        if self.embeds:
            if self.counts["chunks"]:
                parts.append(f"{self.counts['embedding']:,}/{tilde}{total:,} chunks embedded")
        else:
            parts.append(f"{self.counts['chunks']:,} chunks" + ("" if exact else f" (~{total:,} in all)"))
        f = self.fraction()
        if f is not None:
            parts.append(f"{f:.0%}")
        done = self.counts["embedding"] if self.embeds else self.counts["chunks"]
        if done and elapsed > 0:
            parts.append(f"{done / elapsed:.1f} chunks/s")
        if f:
            parts.append(f"ETA {format_eta(elapsed * (1 - f) / f)}")
        else:
            parts.append(f"elapsed {format_eta(elapsed)}")
        return f"{self.label}: " + ", ".join(parts)

    # -- bars (the interface of the index and the Ray engine) ----------------------------------------
    def bar(self, name: str, unit: str, total: int | None = None):
        if not self.enabled:
            return None
        if name not in self.bars:
            from tqdm import tqdm

            # the size from the terminal with a fallback: a terminal that reports 0 x 0 (some ptys, CI
            # consoles) would otherwise get no bar at all (tqdm hides bars below the last row)
            size = shutil.get_terminal_size((100, 20))
            self.bars[name] = tqdm(
                desc=name,
                unit=unit,
                total=total,
                file=self.stream,
                leave=False,
                position=len(self.bars),
                ncols=min(120, size.columns),
                nrows=max(size.lines, 4),
            )
        return self.bars[name]

    def update(self, name: str, unit: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n
        if not self.enabled or (name == "chunks" and self.embeds):
            return
        bar = self.bar(name, unit)
        if bar is None:
            return
        if name in ("embedding", "chunks written", "chunks") and self.total_files is not None:
            total, _ = self.chunk_total()
            if total and bar.total != total:
                bar.total = total
                bar.refresh()
        bar.update(n)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()

    # -- heartbeat -----------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        try:
            print(f"chunkwise: {text}", file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stderr must not break the run
            pass

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self._say(self.line())


__all__ = ["Progress", "heartbeat_seconds", "format_eta", "HEARTBEAT_ENV", "DEFAULT_HEARTBEAT"]
