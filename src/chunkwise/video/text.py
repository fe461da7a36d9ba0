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
    said = [
        " ".join(subtitles.text[c.start : c.end].split())
        for c in subtitles.cues
        if c.start_time < end and c.end_time > start
    ]
    return " ".join(s for s in said if s)


#: the frame's edges, each with the unit vector pointing into the frame (image y grows downwards)
_EDGES = {"left": (1.0, 0.0), "right": (-1.0, 0.0), "top": (0.0, 1.0), "bottom": (0.0, -1.0)}
#: a box this close to an edge (share of the frame) touches it
EDGE = 0.03
#: a move shorter than this share of the frame is "staying in place"
MOVE = 0.1
#: seconds an object that moves must stay put to be said to stop
STOP = 2.0


def _center(box) -> tuple[float, float]:
    return box[0] + box[2] / 2, box[1] + box[3] / 2


def _touching(box, width: float, height: float) -> list[str]:
    x, y, w, h = box
    sides = []
    if x <= EDGE * width:
        sides.append("left")
    if x + w >= (1 - EDGE) * width:
        sides.append("right")
    if y <= EDGE * height:
        sides.append("top")
    if y + h >= (1 - EDGE) * height:
        sides.append("bottom")
    return sides


def _region(box, width: float, height: float) -> str:
    """Where in the frame a box is, in words (thirds of the frame)."""
    cx, cy = _center(box)
    col = ("left", "", "right")[min(2, int(3 * cx / width))]
    row = ("upper", "", "lower")[min(2, int(3 * cy / height))]
    if not col and not row:
        return "in the centre"
    return "at the " + " ".join(w for w in (row, col) if w) + ("" if col else " middle")


def _side(box, move: tuple[float, float], width: float, height: float, entering: bool) -> str:
    """The edge an object comes in from (``entering``) or goes out by, else where in the frame it is.
    Of several edges a box touches, the one its motion leads away from (in) or towards (out)."""
    sides = _touching(box, width, height)
    if not sides:
        return _region(box, width, height)
    sign = 1.0 if entering else -1.0
    best = max(sides, key=lambda e: sign * (_EDGES[e][0] * move[0] + _EDGES[e][1] * move[1]))
    if entering:
        return "from the " + best
    return "at the " + best if best in ("top", "bottom") else "to the " + best


def _direction(move: tuple[float, float]) -> str | None:
    """``moves right``, ``moves up and left``...; ``None`` for a move shorter than :data:`MOVE`."""
    dx, dy = move
    if max(abs(dx), abs(dy)) < MOVE:
        return None
    horizontal = "right" if dx > 0 else "left"
    vertical = "down" if dy > 0 else "up"
    if abs(dx) >= MOVE and abs(dy) >= MOVE and 0.5 <= abs(dx) / abs(dy) <= 2:
        return f"moves {vertical} and {horizontal}"
    return f"moves {horizontal}" if abs(dx) > abs(dy) else f"moves {vertical}"


def size_class(area: float, width: float, height: float) -> str:
    """``small`` (under 1% of the frame), ``medium`` (under 10%) or ``large``."""
    share = area / max(1.0, width * height)
    return "small" if share < 0.01 else "medium" if share < 0.1 else "large"


def _object_text(o, clip: Clip, frame_size: tuple[int, int] | None) -> str:
    fps = clip.fps
    # an object at the very start or end of a clip entered or left then, unless a cut of a longer event
    # (max_duration) is what ends the piece there
    entered = o.first_frame > clip.start_frame or o.first_frame == clip.event_start
    left = o.last_frame < clip.end_frame or o.last_frame == clip.event_end
    enter = f"enters at {format_time(o.first_frame / fps)}" if entered else "in view from the start"
    leave = f"leaves at {format_time((o.last_frame + 1) / fps)}" if left else "still in view at the end"
    if not frame_size or o.first_box is None or o.last_box is None:
        return f"{o.cls} {o.track_id} {enter}, {leave}"
    width, height = frame_size
    (x0, y0), (x1, y1) = _center(o.first_box), _center(o.last_box)
    move = ((x1 - x0) / width, (y1 - y0) / height)
    parts = [f"{o.cls} {o.track_id} {enter} {_side(o.first_box, move, width, height, True)}"]
    direction = _direction(move)
    seconds = (o.last_frame - o.first_frame + 1) / fps
    if direction:
        parts.append(direction)
        if o.still_frames / fps >= STOP:
            parts.append(f"stops for {o.still_frames / fps:.0f} s")
    elif seconds >= 1.0:
        parts.append("stays in place")
    parts.append(f"{leave} {_side(o.last_box, move, width, height, False)}")
    return ", ".join(parts) + f" ({seconds:.1f} s in view, {size_class(o.max_area, width, height)})"


def _count(clip: Clip) -> str:
    """``1 object``, ``3 objects``; with classes ``3 objects (2 cars, 1 person)``."""
    n = len(clip.objects)
    head = f"{n} object{'s' if n != 1 else ''}"
    classes = clip.classes
    if classes and classes != ["object"]:
        counts: dict[str, int] = {}
        for o in clip.objects:
            counts[o.cls] = counts.get(o.cls, 0) + 1
        head += (
            " ("
            + ", ".join(
                f"{k} {c}{'s' if k != 1 and not c.endswith('s') else ''}"
                for c, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            )
            + ")"
        )
    return head


def _a(name: str, count: int) -> str:
    """``a person``, ``an umbrella``, ``2 cars``."""
    if count != 1:
        return f"{count} {name}{'' if name.endswith('s') else 'es' if name.endswith(('ch', 'sh', 'x')) else 's'}"
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _summary(clip: Clip, frame_size: tuple[int, int] | None) -> str:
    """What is seen, in words a search for the class finds: ``A person and a bicycle enter from the top;
    a car is in view from the start.`` (empty without classes)."""
    if not clip.objects or clip.classes == ["object"]:
        return ""
    where: dict[str, dict[str, int]] = {}
    for o in clip.objects[:MAX_LISTED]:
        entered = o.first_frame > clip.start_frame or o.first_frame == clip.event_start
        place = "" if entered else "in view from the start"
        if entered and frame_size and o.first_box is not None and o.last_box is not None:
            (x0, y0), (x1, y1) = _center(o.first_box), _center(o.last_box)
            width, height = frame_size
            place = _side(o.first_box, ((x1 - x0) / width, (y1 - y0) / height), width, height, True)
        counts = where.setdefault(place, {})
        counts[o.cls] = counts.get(o.cls, 0) + 1
    parts = []
    for place, counts in where.items():
        many = len(counts) > 1 or sum(counts.values()) > 1
        who = _and([_a(name, k) for name, k in counts.items()])
        if place == "in view from the start":
            verb = "are in view from the start" if many else "is in view from the start"
        else:
            verb = ("enter" if many else "enters") + (f" {place}" if place else "")
        parts.append(f"{who} {verb}")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def describe(
    clip: Clip, source: str, subtitles: Document | None = None, frame_size: tuple[int, int] | None = None
) -> str:
    """The searchable text of one clip: time range, how many objects (of which classes), each one's entry
    and exit (with ``frame_size`` and boxes also the edge it comes in by and goes out by, its direction of
    motion, how long it stays and its size), and the speech."""
    name = Path(source).name if source and not source.startswith("<") else source
    head = f"{format_time(clip.start_time)}-{format_time(clip.end_time)} ({clip.duration:.1f} s)"
    if name:
        head += f" in {name}"
    n = len(clip.objects)
    head += ": " + _count(clip)
    if clip.split is not None:
        head += f", part {clip.split + 1} of a longer event"
    parts = [_object_text(o, clip, frame_size) for o in clip.objects[:MAX_LISTED]]
    summary = _summary(clip, frame_size)
    text = head + ". " + (summary + " " if summary else "") + "; ".join(parts) + "."
    if n > MAX_LISTED:
        text = text[:-1] + f"; and {n - MAX_LISTED} more objects."
    said = speech(subtitles, clip.start_time, clip.end_time)
    if said:
        text += f" Speech: {said}"
    return text


__all__ = [
    "describe",
    "size_class",
    "format_time",
    "subtitles_beside",
    "load_subtitles",
    "speech",
    "SUBTITLE_EXTENSIONS",
]
