"""Synthetic test videos: coloured shapes that appear, move and vanish at known frames (PyAV + libx264).

``Shape(first, last, ...)`` is drawn on frames ``first..last`` inclusive, except the frames listed in
``hidden`` (an occlusion). The truth of a video is therefore known exactly, frame by frame. ``stop=(a, b)``
holds a shape still on frames ``a..b`` (someone standing), ``split`` draws it as two halves with a gap of
that many pixels (an object a background subtractor sees in pieces), and ``write_video(gain=...)``
scales each whole frame's brightness (a camera's auto-exposure, lights switched on).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Shape:
    first: int
    last: int
    x: float = 40.0
    y: float = 60.0
    vx: float = 2.0
    vy: float = 0.0
    size: int = 28
    color: tuple[int, int, int] = (230, 40, 40)
    hidden: tuple[int, ...] = field(default_factory=tuple)
    stop: tuple[int, int] | None = None
    split: int = 0

    def visible(self, f: int) -> bool:
        return self.first <= f <= self.last and f not in self.hidden

    def moved(self, f: int) -> int:
        """Frames of motion since ``first`` (the frames of ``stop`` do not count)."""
        t = f - self.first
        if self.stop is not None:
            a, b = self.stop
            t -= max(0, min(f, b) - a + 1) if f >= a else 0
        return t


def render(shapes: list[Shape], f: int, width: int, height: int) -> np.ndarray:
    img = np.full((height, width, 3), 90, dtype=np.uint8)
    img[:, :, 1] = 100
    for s in shapes:
        if not s.visible(f):
            continue
        t = s.moved(f)
        x = int(s.x + s.vx * t) % max(1, width - s.size)
        y = int(s.y + s.vy * t) % max(1, height - s.size)
        img[y : y + s.size, x : x + s.size] = s.color
        if s.split:
            mid = x + (s.size - s.split) // 2
            img[y : y + s.size, mid : mid + s.split] = (90, 100, 90)
    return img


def write_video(
    path,
    shapes: list[Shape],
    n_frames: int,
    fps: int = 25,
    width: int = 320,
    height: int = 240,
    codec: str = "libx264",
    gop: int = 25,
    crf: int = 18,
    gain=None,
) -> str:
    """Encode the scene to ``path`` (one keyframe every ``gop`` frames); ``gain(frame)`` scales whole
    frames: one factor (brightness) or three (R, G, B: the light's colour changes)."""
    import av

    with av.open(str(path), mode="w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.gop_size = gop
        if codec == "libx264":
            stream.options = {"crf": str(crf), "preset": "ultrafast", "tune": "zerolatency"}
        for f in range(n_frames):
            img = render(shapes, f, width, height)
            if gain is not None:
                img = np.clip(img.astype(np.float32) * np.asarray(gain(f), np.float32), 0, 255).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return str(path)


def truth_events(shapes: list[Shape], n_frames: int, gap_frames: int) -> list[tuple[int, int]]:
    """The clip rule on the drawn truth: [(first frame, last frame)] of each event."""
    present = [any(s.visible(f) for s in shapes) for f in range(n_frames)]
    events: list[list[int]] = []
    last = None
    for f, p in enumerate(present):
        if not p:
            continue
        if events and f - last - 1 < gap_frames:
            events[-1][1] = f
        else:
            events.append([f, f])
        last = f
    return [tuple(e) for e in events]
