"""The weight-free motion tracker's two halves: a background model that finds what is not background, and
a box tracker that turns those blobs into one ID per object.

Why not MOG2 + ByteTrack as they come: on real footage a person standing still fades into MOG2's
background after a few seconds (one visit became two or three clips), the empty room then stays
"foreground" as a ghost for seconds (two visits became one), a camera's auto-exposure lights up the whole
frame at once (a false clip on an empty road, clip ends 1-2 s late), and one object breaks into many blobs
whose IDs churn (one car was "110 objects"). So:

- :class:`Background` keeps one background image. Each frame is first corrected for a global gain change
  (the median ratio of frame to background over the background pixels: auto-exposure and dimming cancel
  out); when most of the frame still differs, the scene changed as a whole (lights switched) and the
  background is re-seeded instead of reporting foreground. The background learns only where nothing is
  tracked: an object that arrived and stands still stays foreground (no fading, so no ghost when it
  leaves), while a blob that appeared in place and does not move (a ghost, a moved chair, sensor
  glare) is absorbed after ``absorb`` seconds.
- :class:`BoxTracker` links blobs to tracks by overlap: pieces of one object (several blobs inside or
  overlapping one track's box) join that track, blobs no track claims are merged with their neighbours before
  they start one, a lost track keeps its ID for ``lost`` frames and gives it back to a blob that reappears
  beside it, and tracks that come to overlap mostly merge into the older ID. A track is reported once it has
  been seen twice, moved and travelled; what an object leaves behind (a gap where it took something: the
  track shrinks to under half its size and freezes) stops being an object. Answers wait ``delay`` frames, so
  an object is named from its first frame under its final ID and a frozen residue's stretch is cut off.

Both work on frames scaled down (the caller's ``width``); boxes are in those pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .boxes import box_gap, box_overlap, merge_boxes

#: a blob whose share of pixels that changed over half a second is below this is "still"
STILL_MOTION = 0.02
#: ... and above this is "moving" (a track must have moved once to be reported)
MOVING_MOTION = 0.1
#: a track with less motion than this is frozen (a person standing still still shows more: breath, hair)
ALIVE_MOTION = 0.002
#: a still blob whose outline has this many times more edge in the background image than in the frame is a
#: ghost (the outline of something that left), not an object
GHOST_EDGES = 1.5


@dataclass
class Blobs:
    """What :meth:`Background.detect` found in one frame: boxes ``(x0, y0, x1, y1)``, each box's share of
    pixels in motion, and the frame's foreground share; ``reseeded`` when the scene changed as a whole;
    ``pixels``: each blob's foreground pixel count (``None``: its box area)."""

    boxes: np.ndarray
    motion: np.ndarray
    foreground: float
    reseeded: bool = False
    pixels: np.ndarray | None = None


class Background:
    """A background image with gain correction, selective learning and absorption of still blobs.

    ``threshold``: a pixel is foreground when a colour channel differs from the background by more than
    this (0-255), after gain correction. ``adapt``: seconds over which background pixels follow slow
    changes. ``absorb``: seconds a blob that is neither moving nor protected stays before it becomes
    background. ``reseed``: foreground share of the frame above which the whole background is replaced.
    ``min_area``: smallest blob kept, as a share of the frame.
    """

    def __init__(
        self,
        fps: float,
        threshold: float = 25.0,
        adapt: float = 2.0,
        absorb: float = 1.0,
        reseed: float = 0.5,
        min_area: float = 0.0008,
    ):
        import cv2

        self.cv2 = cv2
        self.fps = fps
        self.threshold = threshold
        self.alpha = min(1.0, 1.0 / max(1.0, adapt * fps))
        self.absorb_frames = max(1, int(round(absorb * fps)))
        self.reseed = reseed
        self.min_area = min_area
        self.lag = max(1, int(round(fps / 2)))
        self.kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
        self.bg: np.ndarray | None = None
        self.bg_luma: np.ndarray | None = None
        self.recent: list[np.ndarray] = []
        self.still: np.ndarray | None = None
        self.prev_fg: np.ndarray | None = None
        self._frame: np.ndarray | None = None
        self._fg: np.ndarray | None = None
        self._labels: np.ndarray | None = None
        self._still_blob: np.ndarray | None = None
        self._ghost: np.ndarray = np.zeros(1, bool)
        self.gain = 1.0

    def detect(self, image: np.ndarray) -> Blobs:
        """Blobs of one frame (``uint8`` H x W x 3); call :meth:`learn` after the tracker has seen them."""
        cv2 = self.cv2
        frame = image.astype(np.float32)
        if self.bg is None:  # the first frame is the background
            self._reset(frame)
            return Blobs(np.empty((0, 4), np.float32), np.empty(0), 0.0)
        assert self.bg_luma is not None
        luma = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        ratio = (luma[::4, ::4] + 1.0) / (self.bg_luma[::4, ::4] + 1.0)
        if self.prev_fg is not None:
            sample = ~self.prev_fg[::4, ::4]
            if sample.mean() > 0.1:
                ratio = ratio[sample]
        self.gain = float(np.median(ratio))
        frame *= 1.0 / self.gain
        diff = _channel_max(cv2, cv2.absdiff(frame, self.bg))
        mask = (diff > self.threshold).astype(np.uint8)
        share = float(mask.mean())
        if share > self.reseed:  # the whole scene changed (lights, a camera move): start again from it
            self._reset(frame)
            return Blobs(np.empty((0, 4), np.float32), np.empty(0), share, reseeded=True)
        raw = cv2.morphologyEx(mask, cv2.MORPH_OPEN, self.kernel)
        mask = cv2.dilate(raw, self.kernel, iterations=2)
        n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        moving = _channel_max(cv2, cv2.absdiff(frame, self.recent[0])) > self.threshold
        area = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
        motion = np.bincount(labels.ravel(), weights=moving.ravel(), minlength=n) / np.maximum(area, 1.0)
        keep = np.flatnonzero(area >= self.min_area * mask.size)
        keep = keep[keep > 0]
        still = motion < STILL_MOTION
        still[0] = False
        ghost = np.zeros(n, bool)
        if still[keep].any():
            ghost = self._ghosts(frame, luma / self.gain, raw, labels, n) & still
            keep = keep[~ghost[keep]]
        x, y = stats[keep, cv2.CC_STAT_LEFT], stats[keep, cv2.CC_STAT_TOP]
        w, h = stats[keep, cv2.CC_STAT_WIDTH], stats[keep, cv2.CC_STAT_HEIGHT]
        boxes = np.stack([x, y, x + w, y + h], axis=1).astype(np.float32) if len(keep) else np.empty((0, 4), np.float32)
        self._frame, self._fg, self._labels, self._still_blob = frame, mask.astype(bool), labels, still
        self._ghost = ghost
        self.recent.append(frame)
        if len(self.recent) > self.lag:
            self.recent.pop(0)
        return Blobs(boxes, motion[keep], share, pixels=area[keep])

    def _ghosts(self, frame: np.ndarray, luma: np.ndarray, raw: np.ndarray, labels: np.ndarray, n: int) -> np.ndarray:
        """Which blobs are ghosts: places where the background holds an object the frame no longer shows
        (something in view in the first frame that has since left, the gap where a thing was taken). Along
        a blob's outline a real object has edges in the frame; a ghost has them in the background image
        instead (the outline is the object's that left), and the frame there is as plain as around it."""
        cv2 = self.cv2
        assert self.bg_luma is not None
        outline = (raw > 0) & ~cv2.erode(raw, self.kernel).astype(bool)
        if not outline.any():
            return np.zeros(n, bool)
        near = cv2.dilate(outline.astype(np.uint8), self.kernel).astype(bool)

        def edges(image: np.ndarray) -> np.ndarray:
            gx = cv2.Sobel(image, cv2.CV_32F, 1, 0, ksize=3)
            gy = cv2.Sobel(image, cv2.CV_32F, 0, 1, ksize=3)
            return cv2.dilate(cv2.magnitude(gx, gy), self.kernel)  # an edge a pixel off still counts

        where = labels[near]
        in_frame = np.bincount(where, weights=edges(luma)[near], minlength=n)
        in_background = np.bincount(where, weights=edges(self.bg_luma)[near], minlength=n)
        return in_background > GHOST_EDGES * np.maximum(in_frame, 1e-6)

    def _reset(self, frame: np.ndarray) -> None:
        self.bg = frame.copy()
        self.bg_luma = self.cv2.cvtColor(self.bg, self.cv2.COLOR_BGR2GRAY)
        self.still = np.zeros(frame.shape[:2], np.int32)
        self.prev_fg = None
        self.recent = [frame]
        self._frame, self._fg = None, None

    def learn(self, protected: list[tuple[float, float, float, float]]) -> None:
        """Update the background after a frame: background pixels adapt, pixels inside ``protected`` boxes
        (objects that arrived and are tracked) are left alone, and still blobs outside them that have been
        still for ``absorb`` seconds become background."""
        if self._frame is None or self._fg is None or self.bg is None or self.still is None:
            return
        assert self._labels is not None and self._still_blob is not None
        frame, fg = self._frame, self._fg
        guard = np.zeros(fg.shape, bool)
        for x0, y0, x1, y1 in protected:
            guard[max(0, int(y0)) : int(np.ceil(y1)), max(0, int(x0)) : int(np.ceil(x1))] = True
        still = self._still_blob[self._labels] & ~guard
        self.still = np.where(still, self.still + 1, 0)
        # a ghost becomes background at once, even inside a tracked object's box (its pixels show the scene)
        absorbed = (self.still >= self.absorb_frames) | self._ghost[self._labels]
        learn = (~fg & ~guard).astype(np.uint8)
        self.cv2.accumulateWeighted(frame, self.bg, self.alpha, mask=learn)
        if absorbed.any():
            np.copyto(self.bg, frame, where=absorbed[:, :, None])
            self.still[absorbed] = 0
        self.bg_luma = self.cv2.cvtColor(self.bg, self.cv2.COLOR_BGR2GRAY)
        self.prev_fg = fg & ~absorbed


def _channel_max(cv2: Any, image: np.ndarray) -> np.ndarray:
    """The largest of the three channels, per pixel (OpenCV's max: several times numpy's ``max(axis=2)``)."""
    b, g, r = cv2.split(image)
    return cv2.max(cv2.max(b, g), r)


@dataclass
class Track:
    """One object: its latest box, when it was first and last seen, and whether it has moved/travelled."""

    id: int
    box: np.ndarray
    first: int
    last: int
    birth: np.ndarray
    hits: int = 1
    moved: bool = False
    travelled: bool = False
    last_motion: int = 0
    last_alive: int = 0
    pixels: float = 0.0
    max_pixels: float = 0.0
    #: finished runs of frames without any motion longer than the settle time (first, last)
    frozen: list[tuple[int, int]] = field(default_factory=list)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(4, np.float32))

    @property
    def confirmed(self) -> bool:
        """An object, not noise: seen twice, moving once, and come some way (glare and ghosts stay put)."""
        return self.hits >= 2 and self.moved and self.travelled

    def predicted(self, frame: int) -> np.ndarray:
        return self.box + self.velocity * min(frame - self.last, 5)

    def residue(self, frame: int, settle: int) -> bool:
        """What an object left behind (a gap where it took something, a thing it put down): the track
        shrank to under half its largest size (foreground pixels) and has not moved at all for ``settle``
        frames. It is no object any more: not reported, and the background may learn it."""
        return self.pixels < 0.5 * self.max_pixels and frame - self.last_alive > settle

    def frozen_at(self, frame: int, pixels: float, now: int, settle: int) -> bool:
        """Was ``frame`` (when the track had ``pixels``) part of a residue: a motionless stretch longer than
        ``settle`` frames of a track shrunk to under half its largest size?"""
        if pixels >= 0.5 * self.max_pixels:
            return False
        if frame > self.last_alive and now - self.last_alive > settle:
            return True
        return any(a <= frame <= b for a, b in self.frozen)


class BoxTracker:
    """Blobs to object IDs (see the module docstring). ``lost``: frames a track that is not seen keeps
    its ID; ``hold``: frames an arrived object that no longer moves stays protected from the background;
    ``margin``: pixels between fragments that still count as one object; ``travel``: pixels a track's
    centre must move from where it appeared before it counts as an object; ``delay``: frames each frame's
    answer waits, so a track confirmed (or merged into an older one) within that time is reported from its
    first frame under its final ID.
    """

    def __init__(self, lost: int, hold: int, margin: float, travel: float, delay: int, settle: int | None = None):
        self.lost = lost
        self.settle = max(1, delay - 1) if settle is None else settle
        self.hold = hold
        self.margin = margin
        self.travel = travel
        self.delay = delay
        self.tracks: list[Track] = []
        self.next_id = 1
        self.alias: dict[int, int] = {}
        self.pending: list[tuple[int, list[tuple[int, np.ndarray, float]]]] = []
        self.by_id: dict[int, Track] = {}
        self.public: dict[int, int] = {}
        self.frame = 0

    def step(self, frame: int, blobs: Blobs) -> list[tuple[int, list[tuple[int, np.ndarray]]]]:
        """Take one frame's blobs; answer the frames now ready: ``(frame, [(id, box)])`` of the confirmed
        objects, ``delay`` frames late. :meth:`flush` answers the rest at the end."""
        self.frame = frame
        seen = self.update(frame, blobs)
        self.pending.append((frame, [(t.id, t.box.copy(), t.pixels) for t in seen]))
        ready = []
        while self.pending and frame - self.pending[0][0] >= self.delay:
            ready.append(self._answer(*self.pending.pop(0)))
        return ready

    def flush(self) -> list[tuple[int, list[tuple[int, np.ndarray]]]]:
        ready = [self._answer(*p) for p in self.pending]
        self.pending = []
        return ready

    def _final(self, tid: int) -> int:
        while tid in self.alias:
            tid = self.alias[tid]
        return tid

    def _answer(
        self, frame: int, seen: list[tuple[int, np.ndarray, float]]
    ) -> tuple[int, list[tuple[int, np.ndarray]]]:
        out: dict[int, np.ndarray] = {}
        for tid, box, pixels in seen:
            final = self._final(tid)
            t = self.by_id.get(final)
            if t is None or not t.confirmed:
                continue
            if t.frozen_at(frame, pixels, self.frame, self.settle):
                continue  # the frozen stretch of what an object left behind
            if final not in self.public:  # objects are numbered 1, 2, ... in the order they are confirmed
                self.public[final] = len(self.public) + 1
            if final in out:  # two pieces of one object on this frame: one box
                b = out[final]
                box = np.array([min(b[0], box[0]), min(b[1], box[1]), max(b[2], box[2]), max(b[3], box[3])])
            out[final] = box
        return frame, sorted((self.public[k], box) for k, box in out.items())

    def update(self, frame: int, blobs: Blobs) -> list[Track]:
        """Link one frame's blobs to tracks; the tracks seen on it (confirmed or not)."""
        boxes, motion = blobs.boxes, blobs.motion
        pixels = blobs.pixels if blobs.pixels is not None else (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        self.tracks = [t for t in self.tracks if frame - t.last <= self.lost]
        live = list(self.tracks)
        assigned, free = self._assign(frame, boxes, live)
        seen: list[Track] = []
        for k, ds in assigned.items():
            t = live[k]
            b = boxes[ds]
            box = np.array([b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()], np.float32)
            m = float(np.average(motion[ds], weights=(b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) + 1e-9))
            self._observe(t, box, m, frame, float(pixels[ds].sum()))
            seen.append(t)
        # the pieces of a new object are one object: blobs no track claims are merged before they start one
        new = (
            merge_boxes(boxes[free], motion[free], self.margin, pixels[free])
            if free
            else (boxes[:0], motion[:0], pixels[:0])
        )
        for box, m, n in zip(*new):
            seen.append(self._start(frame, box, m, n))
        self._merge(seen)
        gone = {t.id for t in seen} - {t.id for t in self.tracks}
        return [t for t in seen if t.id not in gone] + [
            self.by_id[self._final(i)] for i in gone if self._final(i) not in {t.id for t in seen}
        ]

    def _assign(self, frame: int, boxes: np.ndarray, live: list[Track]) -> tuple[dict[int, list[int]], list[int]]:
        """Which blobs each live track takes (track number -> blob numbers) and the blobs no track takes: the
        association step of :meth:`update`, in its three passes."""
        assigned: dict[int, list[int]] = {}
        if not (live and len(boxes)):
            return assigned, list(range(len(boxes)))
        pred = np.stack([t.predicted(frame) for t in live])
        iou, inside = box_overlap(boxes, pred)
        gap = box_gap(boxes, pred)
        size = np.sqrt(np.maximum((pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1]), 1.0))
        recent = np.array([frame - t.last for t in live])
        # overlap (or a piece inside the box) first; else near it; among equals the most recently seen
        overlaps = (iou > 0.05) | (inside > 0.5)
        near = gap <= np.maximum(self.margin, 0.5 * size)[None, :]
        score = np.where(overlaps, 1.0 + iou, np.where(near, 0.5 - gap / (1.0 + size[None, :]), -1.0))
        score -= 0.01 * np.minimum(recent, 40)[None, :]
        # 1. one blob per track, best overlaps first: objects side by side keep their own tracks
        taken: set[int] = set()
        for d, k in sorted(zip(*np.nonzero(overlaps)), key=lambda dk: -score[dk[0], dk[1]]):
            if d not in taken and k not in assigned:
                assigned[k] = [int(d)]
                taken.add(d)
        # 2. the other overlapping blobs are pieces of the track they overlap most
        for d in range(len(boxes)):
            if d not in taken and overlaps[d].any():
                k = int(np.argmax(np.where(overlaps[d], score[d], -np.inf)))
                assigned.setdefault(k, []).append(d)
                taken.add(d)
        # 3. a blob only near a track takes it up when nothing overlaps it (an object back from an occlusion)
        free = []
        for d in range(len(boxes)):
            if d in taken:
                continue
            k = int(np.argmax(np.where(near[d], score[d], -np.inf))) if near[d].any() else -1
            if k >= 0 and k not in assigned and score[d, k] > 0:
                assigned[k] = [d]
            else:
                free.append(d)
        return assigned, free

    def _start(self, frame: int, box: np.ndarray, motion: float, pixels: float) -> Track:
        """A new track for a blob no track claimed (after its pieces were merged), under the next ID."""
        t = Track(self.next_id, box.copy(), frame, frame, self._center(box))
        self.next_id += 1
        t.moved = motion >= MOVING_MOTION
        t.last_motion = t.last_alive = frame
        t.pixels = t.max_pixels = float(pixels)
        self.tracks.append(t)
        self.by_id[t.id] = t
        return t

    @staticmethod
    def _center(box: np.ndarray) -> np.ndarray:
        return np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2], np.float32)

    def _observe(self, t: Track, box: np.ndarray, motion: float, frame: int, pixels: float) -> None:
        steps = max(1, frame - t.last)
        t.velocity = 0.5 * t.velocity + 0.5 * (box - t.box) / steps
        t.box, t.last = box, frame
        t.hits += 1
        t.pixels = pixels
        t.max_pixels = max(t.max_pixels, pixels)
        if motion >= ALIVE_MOTION:
            if frame - t.last_alive - 1 > self.settle:
                t.frozen.append((t.last_alive + 1, frame - 1))
                del t.frozen[:-8]
            t.last_alive = frame
        if motion >= MOVING_MOTION:
            t.moved = True
            t.last_motion = frame
        if not t.travelled:
            t.travelled = float(np.linalg.norm(self._center(box) - t.birth)) > self.travel

    def _merge(self, seen: list[Track]) -> None:
        """Tracks seen on this frame whose boxes overlap mostly are one object: the younger joins the older
        (and earlier frames still waiting are answered with the older ID)."""
        if len(seen) < 2:
            return
        boxes = np.stack([t.box for t in seen])
        iou, inside = box_overlap(boxes, boxes)
        gone: set[int] = set()
        order = sorted(range(len(seen)), key=lambda i: seen[i].id)
        for a in order:
            for b in order:
                if a == b or seen[a].id in gone or seen[b].id in gone or seen[b].id < seen[a].id:
                    continue
                if iou[a, b] > 0.6 or inside[b, a] > 0.8:  # the same object, or a piece inside an older one
                    old, young = seen[a], seen[b]
                    old.box = np.array(
                        [
                            min(old.box[0], young.box[0]),
                            min(old.box[1], young.box[1]),
                            max(old.box[2], young.box[2]),
                            max(old.box[3], young.box[3]),
                        ],
                        np.float32,
                    )
                    old.moved |= young.moved
                    old.travelled |= young.travelled
                    old.hits += young.hits
                    old.last_motion = max(old.last_motion, young.last_motion)
                    old.last_alive = max(old.last_alive, young.last_alive)
                    old.max_pixels = max(old.max_pixels, young.max_pixels)
                    gone.add(young.id)
                    self.alias[young.id] = old.id
        self.tracks = [t for t in self.tracks if t.id not in gone]

    def protected(self, frame: int) -> list[Any]:
        """Boxes the background must not learn: objects that arrived (travelled) and are still held."""
        return [
            tuple(t.box)
            for t in self.tracks
            if t.travelled
            and frame - t.last <= self.lost
            and frame - t.last_motion <= self.hold
            and not t.residue(frame, self.settle)
        ]


__all__ = ["Background", "BoxTracker", "Blobs", "Track", "merge_boxes"]
