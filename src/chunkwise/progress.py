"""Progress of long runs (``index``, ``chunk``): totals, share done and an ETA, on a terminal and in logs alike.

A run lists its files first (so their number and bytes are known before anything is read) and counts the work
of each phase as it is done: bytes read, bytes chunked (and the chunks made), chunks embedded, chunks
written. The callers wrap each phase's work in :meth:`Progress.phase`, so the time each phase has taken is
known too, and with it its cost per unit of work. The ETA is the work left in every phase times that
phase's cost so far::

    remaining = bytes left to read × s/byte read + bytes left to chunk × s/byte chunked
              + chunks left to embed × s/chunk embedded + chunks left to write × s/chunk written

The chunks and tokens still to come are the bytes not yet chunked times the chunks and tokens a byte of
the files chunked so far, each file weighted by its bytes up to the median input's (exact once every file
is chunked): a byte-weighted density lets one large, dense file read early stand for all the others.
Why per phase: a run's phases advance at different paces (files are read well ahead of the embedding, a
semantic strategy reads a group of documents before it yields any), so a share taken from any one counter, or
the elapsed time scaled by it, says "75 % done" at 11 % and counts one-off costs (loading the model) as if
they recurred. The embedding cost per token is the geometric mean of that of the last :data:`RECENT_CALLS`
calls and that of the whole run (:data:`RECENT_WEIGHT`): the pace of a shared machine changes during a long
run, and a spell of it (another job for a minute, an idle minute) is not the rest of the run. Wall time, not
the process's CPU time: on a virtual machine the CPU seconds a token change with the machine too (MiniLM on
FastAPI's docs: from 0.62 to 0.40 ms a token within one idle run, for text of the same cost; the same first
calls at 0.63 in one run and 0.31 in another), while the text moves them less (parts of the same docs within
10 %, chunks of 432 tokens 7-22 % dearer a token than chunks of 27: benchmarks/bench_embed_token_cost.py), so
they are no fixed cost of the text to scale by a pace. The first call, which may load the model, is left out
once a second call has been timed. No ETA is shown before each phase that has work left has a cost (the write
cost, the smallest, counts as 0 until the first write); the share done is the time spent over the time spent
plus the ETA, so the two always agree. Once every counted unit is done the line says ``finishing`` (the
store's flush and count are in no phase) rather than ``ETA 0:00``.

- on a terminal, one tqdm line with that share, the counters and the ETA, refreshed every second;
- elsewhere, a heartbeat line to stderr every :func:`heartbeat_seconds` (``$CHUNKWISE_PROGRESS_SECONDS``,
  default 30; ``0`` switches it off), from a daemon thread so that one long embedding call cannot
  silence it::

      chunkwise: indexing: 12/155 files read, 412/~1,737 chunks embedded, 24%, 1.8 chunks/s, ETA 12:03

A caller that times no phases (the Ray engine) gets the share of chunks embedded and the elapsed time scaled
by it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

#: environment variable: seconds between heartbeat lines when stderr is not a terminal (0: none)
HEARTBEAT_ENV = "CHUNKWISE_PROGRESS_SECONDS"
DEFAULT_HEARTBEAT = 30.0
#: seconds between refreshes of the terminal line
TTY_REFRESH = 1.0

#: counter names (the ``update`` names the index and the Ray engine use)
_UNITS = {"files": "file", "chunks": "chunk", "embedding": "chunk", "chunks written": "chunk"}
#: embedding calls the embedding cost is measured over (the most recent ones): the pace of a shared machine
#: changes during a long run, and a run's early calls may cost more than its later ones
RECENT_CALLS = 16
#: the weight of the recent calls' cost against the whole run's, geometrically: with 0.5, a spell whose
#: pace is k times the run's moves the estimate by sqrt(k) only, and a lasting change is followed within
#: the window. Replayed on eight recorded FastAPI runs, weights 0.25 / 0.5 / 0.75 / 1 left 181 / 171 / 168 /
#: 173 ETA lines outside 1.5x of 1,075 (benchmarks/results/progress.md): the misses are the machine's pace
#: changing after the estimate
RECENT_WEIGHT = 0.5
#: the timed phases (:meth:`Progress.phase`)
PHASES = ("read", "chunk", "embed", "write")


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
    """Counters and phase times of one run, shown as one terminal line or as heartbeat lines; see the module
    docstring.

    ``label`` names the run (``indexing``, ``chunking``); ``embeds``: whether chunks are embedded (the line
    then counts embedded chunks). ``tty``/``stream``/``interval`` default to stderr, whether it is a
    terminal and :func:`heartbeat_seconds`; ``clock`` to :func:`time.monotonic` (tests pass their own).
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
        clock=time.monotonic,
    ):
        self.stream = stream or sys.stderr
        self.label = label
        self.embeds = embeds
        self.on = bool(enabled)
        self.clock = clock
        if tty is None:
            try:
                tty = self.stream.isatty()
            except (AttributeError, ValueError):
                tty = False
        self.enabled = self.on and bool(tty)  # a terminal line (the attribute name callers test)
        self.interval = heartbeat_seconds(interval) if self.on and not tty else 0.0
        self.bars: dict[str, Any] = {}
        self.counts: dict[str, int] = dict.fromkeys(_UNITS, 0)
        self.total_files: int | None = None
        self.total_bytes = 0
        self.bytes_done = 0  # read
        self.bytes_chunked = 0  # chunked, or needing no chunking (unchanged, failed)
        self.bytes_skipped = 0  # of those, needing no chunking: no cost measured on them
        self.sizes: dict[str, int] = {}
        self._cap = 0  # the median input's bytes: the most one file's density counts for (:meth:`_density`)
        self._weights = [0.0, 0.0, 0.0]  # capped bytes chunked, and the chunks, tokens per byte weighted by them
        self.spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._stack: list[list] = []  # [phase, entered or resumed] (nested phases pause the outer one)
        self.tokens_made = 0  # tokens of the chunks made, and of those embedded (the embedding's unit of work)
        self.tokens_embedded = 0
        self._last_embed: tuple[float, int, int] | None = None  # (seconds, tokens, tokens of that call): the last
        self._embed_marks: list[tuple[float, int]] = []  # (seconds, units) at the end of each call
        self._lock = threading.Lock()
        self.started = self.clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- totals and counters -------------------------------------------------------------------------
    def set_totals(self, files: int, sizes: dict[str, int] | None = None) -> None:
        """The run's inputs are listed: ``files`` of them, ``sizes`` (source -> bytes) for the estimate."""
        self.total_files = files
        self.sizes = dict(sizes or {})
        self.total_bytes = sum(self.sizes.values())
        listed = sorted(size for size in self.sizes.values() if size > 0)
        self._cap = listed[len(listed) // 2] if listed else 0
        self.started = self.clock()
        if self.enabled:
            self._thread = threading.Thread(target=self._refresh, name="chunkwise-progress", daemon=True)
            self._thread.start()
        elif self.on and self.interval > 0:  # a short run says nothing more than its summary
            self._thread = threading.Thread(target=self._beat, name="chunkwise-progress", daemon=True)
            self._thread.start()

    def file_done(self, source: str, chunks: int | None = None) -> None:
        """One input read; when ``chunks`` is given, also chunked into that many chunks (:meth:`chunked`)."""
        self.bytes_done += self.sizes.get(source, 0)
        self.update("files", "file")
        if chunks is not None:
            self.chunked(source, chunks)

    def chunked(self, source: str, chunks: int, tokens: int = 0) -> None:
        """One input chunked into ``chunks`` chunks of ``tokens`` tokens in all (0 chunks: it needs no
        chunking: unchanged, failed, empty)."""
        size = self.sizes.get(source, 0)
        self.bytes_chunked += size
        self.tokens_made += tokens
        if chunks:
            if size > 0:
                weight = min(size, self._cap) if self._cap else size
                self._weights[0] += weight
                self._weights[1] += weight * chunks / size
                self._weights[2] += weight * tokens / size
            self.update("chunks", "chunk", chunks)
        else:
            self.bytes_skipped += size

    def embedded(self, chunks: int, tokens: int = 0) -> None:
        """One embedding call done: ``chunks`` chunks of ``tokens`` tokens."""
        self.tokens_embedded += tokens
        self.update("embedding", "chunk", chunks)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the work inside as phase ``name`` (one of :data:`PHASES`); a phase inside another pauses it."""
        with self._lock:
            now = self.clock()
            if self._stack:
                outer = self._stack[-1]
                self.spent[outer[0]] += now - outer[1]
            self._stack.append([name, now])
        try:
            yield
        finally:
            with self._lock:
                now = self.clock()
                left, entered = self._stack.pop()
                self.spent[left] += now - entered
                if self._stack:
                    self._stack[-1][1] = now

    def _spent(self) -> dict[str, float]:
        """Seconds per phase, the one running now included."""
        with self._lock:
            spent = dict(self.spent)
            if self._stack:
                name, entered = self._stack[-1]
                spent[name] += self.clock() - entered
        return spent

    def chunk_total(self) -> tuple[int, bool]:
        """The number of chunks this run will have and whether that is exact (every file chunked)."""
        made = self.counts["chunks"]
        if (
            self.total_files is None
            or self.bytes_chunked >= self.total_bytes
            and self.counts["files"] >= self.total_files
        ):
            return made, True
        per_byte = self._density(1)
        if per_byte is None:
            return made, False
        return made + round(per_byte * max(0, self.total_bytes - self.bytes_chunked)), False

    def _density(self, which: int) -> float | None:
        """Chunks (``which`` 1) or tokens (2) per byte of the files chunked, to project the files not chunked
        yet: each file's own density, weighted by its bytes up to the median input's. A byte-weighted average
        lets one huge file speak for all the others (FastAPI's 700 KB release notes: 0.41 tokens a byte against
        0.30 in its other files, read early, made every later ETA 10-20 % too long), an unweighted one lets a
        70-byte stub (one chunk) do the same."""
        weight = self._weights[0]
        return self._weights[which] / weight if weight > 0 else None

    def remaining(self) -> float | None:
        """Seconds of work left by the per-phase costs so far; ``None`` while a phase with work left has no
        cost yet (or no phase is timed)."""
        spent = self._spent()
        if not any(spent.values()):
            return None
        total_chunks, _ = self.chunk_total()
        left = 0.0
        work = [
            ("read", self.total_bytes - self.bytes_done, self.bytes_done),
            ("chunk", self.total_bytes - self.bytes_chunked, self.bytes_chunked - self.bytes_skipped),
        ]
        if self.embeds:
            work += [
                ("embed", total_chunks - self.counts["embedding"], self.counts["embedding"]),
                ("write", total_chunks - self.counts["chunks written"], self.counts["chunks written"]),
            ]
        for name, todo, done in work:
            if todo <= 0:
                continue
            if done <= 0:
                if name == "write":  # the cheapest phase: 0 until the first batch is written
                    continue
                return None
            if name == "embed" and self._last_embed is not None:
                left += self._embed_left(spent["embed"], total_chunks)
                continue
            left += todo * spent[name] / done
        if self.total_bytes == 0 and not self.counts["chunks"]:
            return None
        return left

    def _embed_left(self, live: float, total_chunks: int) -> float:
        """Seconds of embedding left. The unit is the token when chunks carry counts (a call costs by its
        tokens), else the chunk. The cost counts finished calls only, without the first once there is a
        second (it may hold loading the model); the call running now is credited with the time it has run,
        but never below the work after it."""
        assert self._last_embed is not None
        at, units, last_call = self._last_embed
        by_tokens = self.tokens_made > 0 and self.tokens_embedded > 0
        if by_tokens:  # the tokens still to come, projected from the bytes not chunked yet as the chunks are
            left = max(0, self.total_bytes - self.bytes_chunked) if self.total_files is not None else 0
            todo = self.tokens_made + (self._density(2) or 0.0) * left - self.tokens_embedded
        else:
            todo = total_chunks - self.counts["embedding"]
        if todo <= 0:
            return 0.0
        cost = self._embed_cost(at, units)
        running = max(0.0, live - at)
        return max(todo * cost - running, max(0.0, todo - last_call) * cost)

    def _embed_cost(self, at: float, units: int) -> float:
        """Seconds per unit of embedding: the cost of the last :data:`RECENT_CALLS` calls blended with the whole
        run's (geometric, :data:`RECENT_WEIGHT`, so a spell of load moves it by the square root of its change),
        the first call left out once there is a second."""
        marks = self._embed_marks
        if len(marks) < 2 or units <= marks[0][1]:
            return at / units
        first_at, first_units = marks[0]
        since_at, since_units = marks[max(0, len(marks) - 1 - RECENT_CALLS)]
        whole = max(0.0, at - first_at) / (units - first_units)
        recent = max(0.0, at - since_at) / (units - since_units)
        if whole <= 0 or recent <= 0:
            return recent if whole <= 0 else whole
        return whole ** (1 - RECENT_WEIGHT) * recent**RECENT_WEIGHT

    def fraction(self) -> float | None:
        """Share of the run done (0..1): the time spent over the time spent plus :meth:`remaining`; without
        timed phases, the chunks embedded (or the bytes, files read) over their total."""
        left = self.remaining()
        if left is not None:
            spent = sum(self._spent().values())
            return spent / (spent + left) if spent + left > 0 else 1.0
        if any(self._spent().values()):
            return None  # timed, but some phase has no cost yet: no share rather than a wrong one
        total, _ = self.chunk_total()
        if self.embeds and total and self.counts["chunks"]:
            return min(1.0, self.counts["embedding"] / total)
        if self.total_bytes:
            return min(1.0, self.bytes_done / self.total_bytes)
        if self.total_files:
            return min(1.0, self.counts["files"] / self.total_files)
        return None

    def eta(self) -> float | None:
        """Seconds left, or ``None`` before anything can be said."""
        left = self.remaining()
        if left is not None:
            return left
        f = self.fraction()
        if f:
            return (self.clock() - self.started) * (1 - f) / f
        return None

    def line(self) -> str:
        """The heartbeat line (without the ``chunkwise:`` prefix)."""
        elapsed = self.clock() - self.started
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
        eta = self.eta()
        f = self.fraction()
        if f is not None and eta is not None:  # a share only beside the ETA it agrees with
            parts.append(f"{min(f, 0.99) if eta > 0 else 1.0:.0%}")
        done = self.counts["embedding"] if self.embeds else self.counts["chunks"]
        if done and elapsed > 0:
            parts.append(f"{done / elapsed:.1f} chunks/s")
        if eta is not None and eta < 0.5 and self.remaining() is not None:
            parts.append("finishing")  # every counted unit done; the store's flush and count are in no phase
        else:
            parts.append(f"ETA {format_eta(eta)}" if eta is not None else f"elapsed {format_eta(elapsed)}")
        return f"{self.label}: " + ", ".join(parts)

    # -- counters (the interface of the index and the Ray engine) ------------------------------------
    def update(self, name: str, unit: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n
        if name == "embedding":
            by_tokens = self.tokens_embedded > 0
            units = self.tokens_embedded if by_tokens else self.counts[name]
            call = units - (self._last_embed[1] if self._last_embed else 0)
            self._last_embed = (self._spent()["embed"], units, call)
            self._embed_marks.append(self._last_embed[:2])

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()

    # -- output --------------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        try:
            print(f"chunkwise: {text}", file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stderr must not break the run
            pass

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self._say(self.line())

    def _refresh(self) -> None:
        """The terminal line: one tqdm bar of the share done (percent), its text the heartbeat line."""
        from tqdm import tqdm

        size = shutil.get_terminal_size((100, 20))  # a 0 x 0 terminal (some ptys) would hide the bar
        bar = self.bars["run"] = tqdm(
            total=100,
            file=self.stream,
            leave=False,
            ncols=min(120, size.columns),
            bar_format="{l_bar}{bar}| {postfix}",
        )
        while not self._stop.wait(TTY_REFRESH):
            text = self.line()
            f = self.fraction()
            bar.n = round(100 * min(f, 0.99)) if f is not None else 0
            bar.set_postfix_str(text.split(": ", 1)[1], refresh=False)
            bar.refresh()


__all__ = ["Progress", "heartbeat_seconds", "format_eta", "HEARTBEAT_ENV", "DEFAULT_HEARTBEAT", "PHASES"]
