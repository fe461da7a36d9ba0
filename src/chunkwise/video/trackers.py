"""Trackers behind one interface: ``track(info, classes) -> (frame, [Detection])`` for every frame.

- ``motion`` (:class:`MotionTracker`): weight-free. A gain-corrected background model finds what is not
  background and a box tracker makes one ID per object (:mod:`chunkwise.video.motion`). Needs the ``video``
  extra only; one class, ``object``.
- ``ultralytics:WEIGHTS`` (:class:`UltralyticsTracker`): a YOLO model in tracking mode
  (``model.track(..., persist=True)``) on the frames decoded here. AGPL, so only in the ``video-yolo``
  extra, never a default; the user supplies the weights file (nothing is downloaded).
- ``tracks:FILE`` (:class:`MotTracks`): any external tracker's output in MOTChallenge format.
- ``auto``: ``tracks:`` with ``VIDEO_STEM.mot.txt`` when that file sits beside the video, else ``motion``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import ConfigError, InputError, MissingDependencyError
from .frames import VideoInfo, iter_frames
from .tracks import Detection, class_filter, iter_mot, keep

TRACKER_NAMES = ("auto", "motion", "ultralytics:WEIGHTS", "tracks:FILE")


class Tracker:
    """One tracking back-end. The constructor stores parameters; :meth:`track` does the work, streaming."""

    name = "tracker"

    def track(self, info: VideoInfo, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        """``(frame, detections)`` in increasing frame order; frames without objects may be skipped."""
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    def fingerprint(self) -> str:
        """The tracker and every setting, as text: part of a video's content key (equal fingerprints and
        equal inputs give equal tracks)."""
        return f"{type(self).__name__}{sorted((k, repr(v)) for k, v in vars(self).items())}"

    def side_files(self) -> list[str]:
        """Files besides the video that the tracks are read from (their bytes are part of the content key)."""
        return []


class MotionTracker(Tracker):
    """Weight-free: a background model finds what is not background, a box tracker makes one ID per object
    (:mod:`chunkwise.video.motion` says why each part is there).

    ``width``: frames are scaled to this width first (speed; boxes are scaled back). ``min_area``:
    smallest blob kept, as a share of the frame. ``threshold``: colour difference (0-255) from the
    background that makes a pixel foreground, after the frame's gain is corrected. ``lost_frames``: how
    long an object that is not seen keeps its ID (default: the clip rule's gap, at least two seconds).
    ``hold``: seconds an object that arrived and stands still stays an object (then it becomes background,
    like a parked car). ``absorb``: seconds before a still blob that never arrived (a ghost, glare) becomes
    background.
    """

    name = "motion"

    def __init__(
        self,
        width: int = 320,
        min_area: float = 0.0008,
        threshold: float = 25.0,
        lost_frames: int | None = None,
        hold: float = 60.0,
        absorb: float = 1.0,
    ):
        self.width = width
        self.min_area = min_area
        self.threshold = threshold
        self.lost_frames = lost_frames
        self.hold = hold
        self.absorb = absorb

    def _libs(self):
        try:
            import cv2
        except ImportError as exc:
            raise MissingDependencyError("the motion tracker", "video", getattr(exc, "name", None)) from None
        return cv2

    def track(self, info: VideoInfo, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        wanted = class_filter(classes)
        if wanted is not None and "object" not in wanted:
            raise ConfigError(
                "the motion tracker finds moving objects without classes (class 'object'); "
                "--classes needs --tracker ultralytics:WEIGHTS or tracks:FILE"
            )
        cv2 = self._libs()
        from .motion import Background, BoxTracker

        cv2.setNumThreads(1)
        fps = info.fps
        lost = self.lost_frames if self.lost_frames is not None else max(1, int(round(2 * fps)))
        background = Background(fps, threshold=self.threshold, absorb=self.absorb, min_area=self.min_area)
        boxes: BoxTracker | None = None
        scale = 1.0

        def detections(ready) -> Iterator[tuple[int, list[Detection]]]:
            for index, found in ready:
                yield (
                    index,
                    [
                        Detection(
                            index,
                            tid,
                            (
                                float(b[0]) * scale,
                                float(b[1]) * scale,
                                float(b[2] - b[0]) * scale,
                                float(b[3] - b[1]) * scale,
                            ),
                            "object",
                        )
                        for tid, b in found
                    ],
                )

        for index, image in iter_frames(info, width=self.width, fmt="bgr24"):
            if boxes is None:
                scale = info.width / image.shape[1] if image.shape[1] else 1.0
                margin = 0.02 * image.shape[1]
                # answers wait two seconds: an object is named from its first frame once it is sure, and
                # the frozen tail of what it left behind is cut off
                boxes = BoxTracker(
                    lost,
                    max(1, int(round(self.hold * fps))),
                    margin,
                    travel=2.5 * margin,
                    delay=max(2, int(round(2 * fps))),
                    settle=max(1, int(round(fps))),
                )
            blobs = background.detect(image)
            ready = boxes.step(index, blobs)
            background.learn(boxes.protected(index))
            yield from detections(ready)
        if boxes is not None:
            yield from detections(boxes.flush())

    def describe(self) -> str:
        return f"motion (background model at {self.width}px + box tracker)"


class UltralyticsTracker(Tracker):
    """A YOLO weights file in tracking mode (``model.track(frame, persist=True)``); ``tracker`` is the
    ultralytics tracker configuration (``bytetrack.yaml`` or ``botsort.yaml``)."""

    name = "ultralytics"

    def __init__(self, weights: str, tracker: str = "bytetrack.yaml", conf: float = 0.25):
        self.weights = weights
        self.tracker = tracker
        self.conf = conf

    def _model(self):
        try:
            from ultralytics import YOLO
        except ImportError:
            raise MissingDependencyError("--tracker ultralytics", "video-yolo", "ultralytics, AGPL-3.0") from None
        if not os.path.isfile(self.weights):
            raise InputError(
                "weights file not found (give a local .pt/.onnx file; nothing is downloaded)", source=self.weights
            )
        return YOLO(self.weights)

    def track(self, info: VideoInfo, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        model = self._model()
        names = {int(k): str(v) for k, v in dict(model.names).items()}
        wanted = class_filter(classes)
        cls_ids = None
        if wanted is not None:
            cls_ids = [k for k, v in names.items() if v.lower() in wanted or str(k) in wanted]
            if not cls_ids:
                raise ConfigError(
                    f"--classes {','.join(sorted(wanted))}: none of these is a class of "
                    f"{self.weights} (it knows {', '.join(list(names.values())[:12])}...)"
                )
        for index, frame in iter_frames(info, fmt="bgr24"):
            result = model.track(
                frame, persist=True, classes=cls_ids, conf=self.conf, tracker=self.tracker, verbose=False
            )[0]
            boxes = result.boxes
            dets = []
            if boxes is not None and boxes.id is not None:
                for box, tid, c in zip(boxes.xyxy.tolist(), boxes.id.int().tolist(), boxes.cls.int().tolist()):
                    x0, y0, x1, y1 = box
                    dets.append(Detection(index, int(tid), (x0, y0, x1 - x0, y1 - y0), names.get(c, str(c))))
            yield index, dets

    def describe(self) -> str:
        return f"ultralytics ({Path(self.weights).name})"


class MotTracks(Tracker):
    """Tracks read from a MOTChallenge file instead of computed (the video is not decoded)."""

    name = "tracks"

    def __init__(self, path: str):
        self.path = path

    def track(self, info: VideoInfo | None, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        from .tracks import group_frames

        wanted = class_filter(classes)
        frames = group_frames(d for d in iter_mot(self.path) if keep(d, wanted))
        if info is not None and info.n_frames and frames and frames[-1][0] >= info.n_frames:
            info.problems.append(
                f"{self.path}: tracks reach frame {frames[-1][0] + 1} but the video has {info.n_frames} frames"
            )
        yield from frames

    def describe(self) -> str:
        return f"tracks from {self.path}"

    def side_files(self) -> list[str]:
        return [self.path]


def mot_beside(video: str | os.PathLike) -> Path | None:
    """``VIDEO_STEM.mot.txt`` beside the video, when it exists."""
    p = Path(video)
    candidate = p.with_name(p.stem + ".mot.txt")
    return candidate if candidate.is_file() else None


def get_tracker(spec: str | Tracker | None = "auto", video: str | os.PathLike | None = None) -> Tracker:
    """A tracker from its CLI spelling: ``auto``, ``motion``, ``ultralytics:WEIGHTS`` or ``tracks:FILE``."""
    if isinstance(spec, Tracker):
        return spec
    spec = (spec or "auto").strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind == "auto" and not arg:
        found = mot_beside(video) if video is not None else None
        return MotTracks(str(found)) if found else MotionTracker()
    if kind == "motion" and not arg:
        return MotionTracker()
    if kind in ("ultralytics", "yolo") and arg:
        return UltralyticsTracker(arg)
    if kind == "tracks" and arg:
        return MotTracks(arg)
    if kind in ("ultralytics", "yolo", "tracks"):
        raise ConfigError(f"--tracker {kind} needs a file: {kind}:PATH")
    raise ConfigError(f"unknown tracker {spec!r}; choose one of {', '.join(TRACKER_NAMES)}")


__all__ = ["Tracker", "MotionTracker", "UltralyticsTracker", "MotTracks", "get_tracker", "mot_beside", "TRACKER_NAMES"]
