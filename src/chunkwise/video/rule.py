"""The clip rule: per-frame track IDs in, event clips out. Pure logic, no video needed.

The rule (``chunkwise video`` documents it the same way):

1. A clip **opens** on the first frame where a tracked object is present while no clip is open.
2. Objects whose IDs appear while it is open **join** it (each recorded with its first and last frame).
3. It **closes** when every tracked ID has been absent for ``gap`` seconds (at least one frame): the clip
   ends on the last frame where an object was present, so one missed detection does not split an event.
4. Events shorter than ``min_duration`` seconds are **dropped**.
5. ``pad`` seconds **widen** both ends (clamped to the video; padded clips may overlap their neighbours).
6. ``max_duration`` is a **hard cap** (like ``max_tokens``): a longer clip is split into pieces of at most
   that length, each cut placed on the frame with the fewest visible objects in the second half of the
   allowed window (latest such frame on ties), so pieces are never shorter than half the cap except the last.

Variant ``split_on_new_id=True``: a new ID entering while a clip is open closes it (on the last frame before
the entry) and opens the next clip, so every clip begins with an arrival.

Frames are counted from 0; ``end_frame`` is inclusive; a clip covers ``[start_frame/fps, (end_frame+1)/fps)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..errors import ConfigError, InputError
from ..validation import Interval, check, is_number
from .tracks import Detection

Box = tuple[float, float, float, float]


@dataclass
class ClipObject:
    """A tracked object inside one clip: its first and last frame there (inclusive) and, when the tracker
    gave boxes, its box ``(x, y, w, h)`` on those frames and its largest box area (what the clip text says
    about where it enters and leaves, which way it moves and how big it is)."""

    track_id: int
    cls: str
    first_frame: int
    last_frame: int
    first_box: Box | None = None
    last_box: Box | None = None
    max_area: float = 0.0
    #: the longest run of frames over which its box stayed put (someone waiting, a car stopped)
    still_frames: int = 0


@dataclass
class Clip:
    """One event clip: frames ``[start_frame, end_frame]`` (inclusive) at ``fps`` and the objects in it.

    ``event_start``/``event_end`` are the frames of the first and last presence before padding; ``split``
    is the piece number when ``max_duration`` split a longer event (``None`` otherwise).
    """

    start_frame: int
    end_frame: int
    fps: float
    objects: list[ClipObject] = field(default_factory=list)
    event_start: int = 0
    event_end: int = 0
    split: int | None = None

    @property
    def start_time(self) -> float:
        return self.start_frame / self.fps

    @property
    def end_time(self) -> float:
        return (self.end_frame + 1) / self.fps

    @property
    def duration(self) -> float:
        return (self.end_frame - self.start_frame + 1) / self.fps

    @property
    def track_ids(self) -> list[int]:
        return sorted(o.track_id for o in self.objects)

    @property
    def classes(self) -> list[str]:
        return sorted({o.cls for o in self.objects})


class _Event:
    """An open event: its first/last presence and the IDs present on each frame (for splitting)."""

    def __init__(self, frame: int):
        self.start = frame
        self.last = frame
        self.present: dict[int, tuple[int, ...]] = {}
        self.cls: dict[int, str] = {}
        self.boxes: dict[int, dict[int, Box]] = {}

    def add(self, frame: int, ids: dict[int, str], boxes: dict[int, Box] | None = None) -> None:
        self.last = frame
        self.present[frame] = tuple(sorted(ids))
        self.cls.update(ids)
        if boxes:
            self.boxes[frame] = boxes

    def objects(self, a: int, b: int) -> list[ClipObject]:
        """Objects present within frames ``[a, b]`` with their first and last frame (and box) there."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        area: dict[int, float] = {}
        anchor: dict[int, tuple[int, float, float, float]] = {}  # where the current still run began
        still: dict[int, int] = {}
        for f in range(max(a, self.start), min(b, self.last) + 1):
            boxes = self.boxes.get(f, {})
            for tid in self.present.get(f, ()):
                first.setdefault(tid, f)
                last[tid] = f
                box = boxes.get(tid)
                if box is None:
                    continue
                area[tid] = max(area.get(tid, 0.0), box[2] * box[3])
                cx, cy = box[0] + box[2] / 2, box[1] + box[3] / 2
                at = anchor.get(tid)
                # still: the centre within a quarter of the box's size of where the run began
                if at is None or math.hypot(cx - at[1], cy - at[2]) > at[3]:
                    at = anchor[tid] = (f, cx, cy, 0.25 * math.sqrt(max(box[2] * box[3], 1.0)))
                still[tid] = max(still.get(tid, 0), f - at[0] + 1)
        return [
            ClipObject(
                t,
                self.cls[t],
                first[t],
                last[t],
                self.boxes.get(first[t], {}).get(t),
                self.boxes.get(last[t], {}).get(t),
                area.get(t, 0.0),
                still.get(t, 0),
            )
            for t in sorted(first, key=lambda t: (first[t], t))
        ]


#: the one declaration of the clip rule's durations (``gap``, ``min_duration``, ``pad``; their flags too)
SECONDS = Interval(float, 0, math.inf, closed="left")


@dataclass
class ClipRule:
    """The clip rule's parameters (seconds); :meth:`clips` applies it. See the module docstring."""

    gap: float = 1.0
    min_duration: float = 0.0
    max_duration: float | None = None
    pad: float = 0.0
    split_on_new_id: bool = False

    def validate(self, fps: float) -> None:
        """Refuse parameters that cannot mean anything, before any frame is read."""
        check(fps, Interval(float, 0, math.inf, closed="neither"), "fps", "video rule")
        for name in ("gap", "min_duration", "pad"):
            check(getattr(self, name), SECONDS, name, "video rule")
        if self.max_duration is not None:
            v = self.max_duration
            if not is_number(v) or not math.isfinite(v) or v * fps < 1:
                raise ConfigError(f"max_duration must be at least one frame (1/fps = {1 / fps:.4f} s), got {v!r}")

    def frames(self, seconds: float, fps: float) -> int:
        return int(round(seconds * fps))

    def clips(
        self, frames: Iterable[tuple[int, Iterable[Detection]]], fps: float, n_frames: int | None = None
    ) -> list[Clip]:
        """Clips from ``(frame, detections)`` pairs in increasing frame order (frames with nothing may be
        left out). ``n_frames`` (the video length) clamps the end padding."""
        return list(self.iter_clips(frames, fps, n_frames))

    def iter_clips(
        self, frames: Iterable[tuple[int, Iterable[Detection]]], fps: float, n_frames: int | None = None
    ) -> Iterator[Clip]:
        """As :meth:`clips`, yielding each clip as soon as it closes (memory: the open event only)."""
        self.validate(fps)
        for event in self._events(frames, max(1, self.frames(self.gap, fps))):
            if (event.last - event.start + 1) / fps < self.min_duration - 1e-9:
                continue
            yield from self._shape(event, fps, n_frames)

    def _events(self, frames: Iterable[tuple[int, Iterable[Detection]]], gap_frames: int) -> Iterator[_Event]:
        event: _Event | None = None
        seen: set[int] = set()
        prev = -1
        for frame, dets in frames:
            if frame <= prev:
                raise InputError(f"frames must come in increasing order (frame {frame} after {prev})")
            prev = frame
            dets = list(dets)
            ids = {d.track_id: d.cls for d in dets}
            if not ids:
                continue
            boxes = {d.track_id: d.box for d in dets if d.box[2] > 0 and d.box[3] > 0}
            if event is not None and frame - event.last - 1 >= gap_frames:
                yield event
                event = None
            if event is not None and self.split_on_new_id and not set(ids) <= seen:
                yield event
                event = None
            seen.update(ids)
            if event is None:
                event = _Event(frame)
            event.add(frame, ids, boxes)
        if event is not None:
            yield event

    def _shape(self, event: _Event, fps: float, n_frames: int | None) -> Iterator[Clip]:
        """Pad an event, then cut it to the ``max_duration`` cap where the fewest objects are visible."""
        pad = self.frames(self.pad, fps)
        a = max(0, event.start - pad)
        b = event.last + pad
        if n_frames is not None:
            b = min(b, max(n_frames - 1, event.last))
        cap = None if self.max_duration is None else int(math.floor(self.max_duration * fps + 1e-9))
        pieces = list(split_points(a, b, cap, lambda f: len(event.present.get(f, ()))))
        for i, (s, e) in enumerate(pieces):
            yield Clip(s, e, fps, event.objects(s, e), event.start, event.last, split=i if len(pieces) > 1 else None)


def split_points(a: int, b: int, cap: int | None, visible) -> Iterator[tuple[int, int]]:
    """Frames ``[a, b]`` as pieces of at most ``cap`` frames. Each cut (the first frame of the next piece)
    is the frame with the fewest ``visible(frame)`` objects among those that leave the piece between half
    the cap and the cap long; the latest such frame on ties (fewer pieces)."""
    while cap is not None and b - a + 1 > cap:
        lo = a + max(1, cap // 2)
        hi = a + cap
        cut = min(range(lo, hi + 1), key=lambda f: (visible(f), -f))
        yield a, cut - 1
        a = cut
    yield a, b


__all__ = ["Clip", "ClipObject", "ClipRule", "split_points"]
