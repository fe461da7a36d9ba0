"""Track records and the MOTChallenge reader.

A :class:`Detection` is one tracked object in one frame: the unit every tracker yields and the clip rule
consumes. :func:`read_mot` reads MOTChallenge text files (``frame,id,x,y,w,h,conf,...``), so the output of
any external tracker (or a benchmark's ground truth) can be cut into clips without running one here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import InputError

#: MOT16/17/20 ground-truth class ids (column 8 of the 9-column format)
MOT_CLASSES = {
    1: "pedestrian",
    2: "person on vehicle",
    3: "car",
    4: "bicycle",
    5: "motorbike",
    6: "non motorized vehicle",
    7: "static person",
    8: "distractor",
    9: "occluder",
    10: "occluder on the ground",
    11: "occluder full",
    12: "reflection",
    13: "crowd",
}


@dataclass(frozen=True)
class Detection:
    """One tracked object in one frame. ``frame`` is 0-based (MOT files count from 1); ``box`` is
    ``(x, y, w, h)`` in pixels of the original frame; ``cls`` a class name (``"object"`` when unknown)."""

    frame: int
    track_id: int
    box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    cls: str = "object"
    conf: float | None = None


def class_filter(classes: Iterable[str] | str | None) -> set[str] | None:
    """``"person,car"`` or a list as a set of lower-case class names (``None``: keep every class)."""
    if classes is None:
        return None
    if isinstance(classes, str):
        classes = classes.split(",")
    wanted = {c.strip().lower() for c in classes if c.strip()}
    return wanted or None


def keep(det: Detection, wanted: set[str] | None) -> bool:
    """Does ``--classes`` keep this detection? A class matches by name, or by its MOT class number."""
    if wanted is None:
        return True
    if det.cls.lower() in wanted:
        return True
    return any(det.cls == name and str(num) in wanted for num, name in MOT_CLASSES.items())


def _parse_mot_line(line: str, lineno: int, source: str) -> Detection | None:
    """One MOT line as a :class:`Detection`; ``None`` for rows a MOT file marks as ignored (conf 0)."""
    parts = [p.strip() for p in line.replace(";", ",").split(",")]
    if len(parts) == 1:
        parts = line.split()
    if len(parts) < 6:
        raise InputError(
            f"line {lineno}: expected frame,id,x,y,w,h[,conf,...], got {line.strip()[:80]!r}", source=source
        )
    try:
        frame = int(float(parts[0]))
        track_id = int(float(parts[1]))
        x, y, w, h = (float(v) for v in parts[2:6])
        conf = float(parts[6]) if len(parts) > 6 and parts[6] != "" else None
        cls_num = int(float(parts[7])) if len(parts) == 9 else None
    except ValueError:
        raise InputError(
            f"line {lineno}: not a number in {line.strip()[:80]!r} (expected frame,id,x,y,w,h[,conf,...])",
            source=source,
        ) from None
    if frame < 1 or float(parts[0]) != frame:
        raise InputError(
            f"line {lineno}: frame must be a whole number >= 1 (MOT counts from 1), got {parts[0]!r}", source=source
        )
    if track_id < 0:
        raise InputError(
            f"line {lineno}: track id {track_id} (a detection file without track ids?); "
            "tracks: needs tracker output or ground truth",
            source=source,
        )
    if w < 0 or h < 0:
        raise InputError(f"line {lineno}: negative box size {w}x{h}", source=source)
    if conf == 0:
        return None  # MOT ground truth: 'consider' flag 0 = ignore this row
    cls = MOT_CLASSES.get(cls_num, str(cls_num)) if cls_num is not None and cls_num > 0 else "object"
    return Detection(frame - 1, track_id, (x, y, w, h), cls, conf)


def iter_mot(path: str | os.PathLike) -> Iterator[Detection]:
    """The detections of a MOTChallenge file, line by line (blank lines and ``#`` comments skipped).

    Formats: MOT15 (10 columns, world coordinates last), MOT16/17/20 ground truth (9 columns: ``conf`` is
    the 'consider' flag and rows with 0 are skipped, column 8 is the class) and tracker output (``conf`` a
    score, ``-1`` for none). A malformed line raises :class:`InputError` naming its line number.
    """
    source = os.fspath(path)
    try:
        fh = open(source, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such tracks file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read tracks file ({exc.strerror or exc})", source=source) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                det = _parse_mot_line(line, lineno, source)
                if det is not None:
                    yield det
        except UnicodeDecodeError:
            raise InputError("not a MOTChallenge text file (not UTF-8 text)", source=source) from None


def read_mot(path: str | os.PathLike) -> list[Detection]:
    """All detections of a MOTChallenge file (see :func:`iter_mot`)."""
    return list(iter_mot(path))


def group_frames(tracks: Iterable[Detection | tuple]) -> list[tuple[int, list[Detection]]]:
    """Track records (in any order) as ``[(frame, detections)]`` sorted by frame.

    Plain tuples ``(frame, track_id)`` or ``(frame, track_id, cls)`` are accepted for convenience.
    """
    by_frame: dict[int, list[Detection]] = {}
    for t in tracks:
        if not isinstance(t, Detection):
            try:
                frame, tid, *rest = t
                t = Detection(int(frame), int(tid), cls=str(rest[0]) if rest else "object")
            except (TypeError, ValueError):
                raise InputError(f"expected Detection or (frame, track_id[, cls]) records, got {t!r}") from None
        if t.frame < 0:
            raise InputError(f"frame numbers are 0-based and >= 0, got {t.frame} (track {t.track_id})")
        by_frame.setdefault(t.frame, []).append(t)
    return sorted(by_frame.items())


__all__ = ["Detection", "MOT_CLASSES", "iter_mot", "read_mot", "group_frames", "class_filter", "keep"]
