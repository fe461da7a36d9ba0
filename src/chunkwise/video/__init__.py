"""Video cut into event clips from object-tracking IDs, as chunks that can be embedded and searched.

Python API::

    from chunkwise import video
    chunks = video.clips("lobby.mp4", tracker="motion", gap=1.0, min_duration=0.5)
    chunks = video.clips_from_tracks(video.read_mot("gt.txt"), fps=25, max_duration=10)

Modules: :mod:`.tracks` (track records, MOTChallenge reader), :mod:`.rule` (the clip rule, pure logic),
:mod:`.frames` (PyAV probing and streamed decoding), :mod:`.trackers` (motion / ultralytics / tracks:FILE
behind one interface), :mod:`.text` (a clip's searchable text), :mod:`.document` (clips as chunks),
:mod:`.cut` (writing clips with PyAV).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from typing import Any

from ..document import Chunk
from .document import VideoDocument, build_document, content_key
from .frames import VIDEO_EXTENSIONS, VideoInfo, probe
from .rule import Clip, ClipObject, ClipRule
from .tracks import Detection, group_frames, read_mot

RULE_DEFAULTS = {"gap": 1.0, "min_duration": 0.0, "max_duration": None, "pad": 0.0, "split_on_new_id": False}


def load_video(
    path: str | os.PathLike,
    tracker: Any = "auto",
    classes: Iterable[str] | str | None = None,
    gap: float = 1.0,
    min_duration: float = 0.0,
    max_duration: float | None = None,
    pad: float = 0.0,
    split_on_new_id: bool = False,
    subtitles: Any = "auto",
    tokenizer: Any = "minilm",
) -> VideoDocument:
    """Track a video, cut it into clips and return the :class:`VideoDocument` (``.chunks`` are the clips).

    ``subtitles``: ``"auto"`` (a ``.vtt``/``.srt`` with the video's stem beside it), a path, or ``None``.
    """
    from .text import load_subtitles, subtitles_beside
    from .trackers import MotionTracker, get_tracker

    source = os.fspath(path)
    rule = ClipRule(gap, min_duration, max_duration, pad, split_on_new_id)
    trk = get_tracker(tracker, video=source)
    fingerprint = trk.fingerprint()
    info = probe(source)
    rule.validate(info.fps)
    if isinstance(trk, MotionTracker) and trk.lost_frames is None:
        # a lost object keeps its ID at least as long as the rule waits, so one back within --gap is the same
        trk = copy.copy(trk)
        trk.lost_frames = max(1, rule.frames(gap, info.fps), int(round(2 * info.fps)))
    sub_path = subtitles_beside(source) if subtitles == "auto" else subtitles
    subs = load_subtitles(sub_path) if sub_path else None
    rule_meta = {
        "gap": gap,
        "min_duration": min_duration,
        "max_duration": max_duration,
        "pad": pad,
        "split_on_new_id": split_on_new_id,
    }
    # hashed before tracking: the key says what was read, whatever happens to the file meanwhile
    key = content_key(source, fingerprint, rule_meta, [*trk.side_files(), sub_path], tokenizer)
    found = rule.clips(trk.track(info, classes), info.fps, info.n_frames or None)
    n_frames = info.n_frames  # the decoded count once a tracker has read every frame
    for c in found:  # clamp end padding to the real length (the container's count may be an estimate)
        if n_frames and c.end_frame >= n_frames:
            c.end_frame = max(n_frames - 1, c.event_end)
    found = [c for c in found if c.start_frame <= c.end_frame]
    meta = _metadata(info, n_frames, trk.describe(), rule_meta, sub_path)
    doc = build_document(found, source, subs, tokenizer, meta)
    doc.file_key = key
    doc.problems = list(info.problems)
    if doc.problems:
        doc.metadata["warnings"] = list(doc.problems)
    return doc


def _metadata(info: VideoInfo, n_frames: int, tracker: Any, rule: dict[str, Any], sub_path: Any) -> dict[str, Any]:
    """The document metadata of a video: what was decoded, with which tracker and clip rule."""
    return {
        "kind": "video",
        "fps": info.fps,
        "frames": n_frames,
        "width": info.width,
        "height": info.height,
        "codec": info.codec,
        "tracker": tracker,
        "rule": rule,
        "subtitles": str(sub_path) if sub_path else None,
    }


def clips(
    path: str | os.PathLike, tracker: Any = "auto", classes: Iterable[str] | str | None = None, **options: Any
) -> list[Chunk]:
    """The event clips of a video as chunks (see :func:`load_video` for the options)."""
    return load_video(path, tracker, classes, **options).chunks


def clips_from_tracks(
    tracks: Iterable[Detection | tuple],
    fps: float,
    gap: float = 1.0,
    min_duration: float = 0.0,
    max_duration: float | None = None,
    pad: float = 0.0,
    split_on_new_id: bool = False,
    n_frames: int | None = None,
    source: str = "<tracks>",
    classes: Iterable[str] | str | None = None,
    subtitles: Any = None,
    tokenizer: Any = "minilm",
) -> list[Chunk]:
    """Clips from track records alone (pure logic, no video): :class:`Detection` objects or
    ``(frame, track_id[, cls])`` tuples with 0-based frames, in any order."""
    from .text import load_subtitles
    from .tracks import class_filter, keep

    rule = ClipRule(gap, min_duration, max_duration, pad, split_on_new_id)
    rule.validate(fps)
    wanted = class_filter(classes)
    frames = group_frames(tracks)
    if wanted is not None:
        frames = [(f, [d for d in dets if keep(d, wanted)]) for f, dets in frames]
    found = rule.clips(frames, fps, n_frames)
    subs = load_subtitles(subtitles) if subtitles else None
    return build_document(found, source, subs, tokenizer).chunks


# a video file is an input like any other: the folder walk takes VIDEO_EXTENSIONS and ``formats.load`` hands
# such a file to load_video, registered by ``chunkwise.formats.video_entry`` (which ``chunkwise.registry``
# imports the first time a format is looked up, so neither formats nor a text command imports this package)

__all__ = [
    "clips",
    "clips_from_tracks",
    "load_video",
    "read_mot",
    "probe",
    "Clip",
    "ClipObject",
    "ClipRule",
    "Detection",
    "VideoDocument",
    "VideoInfo",
    "VIDEO_EXTENSIONS",
    "RULE_DEFAULTS",
]
