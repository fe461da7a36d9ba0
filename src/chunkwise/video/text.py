"""A clip's text: what happens in it, in words, so it can be embedded and searched beside documents.

``"0:04.0-0:09.5 (5.5 s) in lobby.mp4: 2 objects (person). person 1 enters at 0:04.0, leaves at 0:08.0;
person 2 enters at 0:05.1, still in view at the end. Speech: ..."``. The speech comes from a subtitle
file with the video's stem (``lobby.vtt``/``lobby.srt``) when one sits beside it: every cue that overlaps
the clip's time range, in order.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..document import Document
from ..errors import InputError
from .rule import Clip

SUBTITLE_EXTENSIONS = (".vtt", ".srt")
#: objects named one by one in a clip's text; more are summarised by count (all stay in ``track_ids``)
MAX_LISTED = 24


def format_time(seconds: float) -> str:
    """``65.25`` -> ``"1:05.2"``; ``3725.0`` -> ``"1:02:05.0"`` (the same form for transcripts and video)."""
    tenths = int(round(max(0.0, seconds) * 10))
    s, t = divmod(tenths, 10)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}.{t}" if h else f"{m}:{s:02d}.{t}"


def subtitles_beside(video: str | os.PathLike) -> Path | None:
    """A subtitle file with the video's stem in the same folder (``.vtt`` first), if any."""
    p = Path(video)
    for ext in SUBTITLE_EXTENSIONS:
        for candidate in (p.with_suffix(ext), p.with_suffix(ext.upper())):
            if candidate.is_file():
                return candidate
    return None


def load_subtitles(path: str | os.PathLike | None) -> Document | None:
    """The subtitle file as a timed :class:`Document` (its cues carry the times)."""
    if path is None:
        return None
    from ..formats import load

    doc = load(path)
    if not doc.cues:
        raise InputError("subtitle file has no timed cues", source=str(path))
    return doc


def speech(subtitles: Document | None, start: float, end: float) -> str:
    """The words spoken in ``[start, end)``: every cue overlapping it."""
    if subtitles is None:
        return ""
    said = [" ".join(subtitles.text[c.start:c.end].split()) for c in subtitles.cues
            if c.start_time < end and c.end_time > start]
    return " ".join(s for s in said if s)


def describe(clip: Clip, source: str, subtitles: Document | None = None) -> str:
    """The searchable text of one clip: time range, objects entering and leaving, speech."""
    fps = clip.fps
    name = Path(source).name if source and not source.startswith("<") else source
    head = f"{format_time(clip.start_time)}-{format_time(clip.end_time)} ({clip.duration:.1f} s)"
    if name:
        head += f" in {name}"
    classes = clip.classes
    n = len(clip.objects)
    head += f": {n} object{'s' if n != 1 else ''}"
    if classes and classes != ["object"]:
        head += f" ({', '.join(classes)})"
    if clip.split is not None:
        head += f", part {clip.split + 1} of a longer event"
    parts = []
    for o in clip.objects[:MAX_LISTED]:
        enter = (f"enters at {format_time(o.first_frame / fps)}" if o.first_frame > clip.start_frame
                 else "in view from the start")
        leave = (f"leaves at {format_time((o.last_frame + 1) / fps)}" if o.last_frame < clip.end_frame
                 else "still in view at the end")
        parts.append(f"{o.cls} {o.track_id} {enter}, {leave}")
    text = head + ". " + "; ".join(parts) + "."
    if n > MAX_LISTED:
        text = text[:-1] + f"; and {n - MAX_LISTED} more objects."
    said = speech(subtitles, clip.start_time, clip.end_time)
    if said:
        text += f" Speech: {said}"
    return text


__all__ = ["describe", "format_time", "subtitles_beside", "load_subtitles", "speech", "SUBTITLE_EXTENSIONS"]
