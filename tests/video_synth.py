"""Synthetic test videos: coloured shapes that appear, move and vanish at known frames (PyAV + libx264).

``Shape(first, last, ...)`` is drawn on frames ``first..last`` inclusive, except the frames listed in
``hidden`` (an occlusion). The truth of a video is therefore known exactly, frame by frame.
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

    def visible(self, f: int) -> bool:
        return self.first <= f <= self.last and f not in self.hidden


def render(shapes: list[Shape], f: int, width: int, height: int) -> np.ndarray:
    img = np.full((height, width, 3), 90, dtype=np.uint8)
    img[:, :, 1] = 100
    for s in shapes:
        if not s.visible(f):
            continue
        t = f - s.first
        x = int(s.x + s.vx * t) % max(1, width - s.size)
        y = int(s.y + s.vy * t) % max(1, height - s.size)
        img[y:y + s.size, x:x + s.size] = s.color
    return img


def write_video(path, shapes: list[Shape], n_frames: int, fps: int = 25, width: int = 320, height: int = 240,
                codec: str = "libx264", gop: int = 25, crf: int = 18) -> str:
    """Encode the scene to ``path`` (one keyframe every ``gop`` frames)."""
    import av

    with av.open(str(path), mode="w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.gop_size = gop
        if codec == "libx264":
            stream.options = {"crf": str(crf), "preset": "ultrafast", "tune": "zerolatency"}
        for f in range(n_frames):
            frame = av.VideoFrame.from_ndarray(render(shapes, f, width, height), format="rgb24")
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
