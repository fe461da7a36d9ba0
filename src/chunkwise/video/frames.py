"""Reading video with PyAV: what a file holds (:func:`probe`) and its frames one at a time (:func:`iter_frames`).

Frames are decoded and handed on one by one (optionally scaled down by FFmpeg's swscale while converting),
so memory stays bounded however long the video is. Files PyAV cannot open become one clear
:class:`~chunkwise.errors.InputError`; a file that breaks off mid-stream yields what could be decoded and
records the problem in :attr:`VideoInfo.problems`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, MissingDependencyError
from ..formats.video_entry import VIDEO_EXTENSIONS  # file extensions read as video (one home: the format entry)


def import_av():
    try:
        import av
    except ImportError:
        raise MissingDependencyError("video support", "video", "av") from None
    return av


@dataclass
class VideoInfo:
    """What :func:`probe` found: frame rate, frame count (estimated from the duration when the container
    does not say), size, codec, and problems met while decoding."""

    path: str
    fps: float
    n_frames: int
    width: int
    height: int
    codec: str
    duration: float
    problems: list[str] = field(default_factory=list)


def _open(path: str):
    av = import_av()
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
    except FileNotFoundError:
        raise InputError("no such file", source=p) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", source=p) from None
    if os.path.isdir(p):
        raise InputError("is a directory, not a video file", source=p)
    if size == 0:
        raise InputError("empty file (0 bytes), not a video", source=p)
    try:
        container = av.open(p, mode="r")
    except (av.error.FFmpegError, ValueError, OSError) as exc:
        raise InputError(f"not a video file FFmpeg can read ({_reason(exc)})", source=p) from None
    if not container.streams.video:
        container.close()
        raise InputError("has no video stream", source=p)
    return container


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or str(exc).split(":")[0] or type(exc).__name__


def probe(path: str | os.PathLike) -> VideoInfo:
    """Frame rate, length, size and codec of a video file, without decoding it."""
    p = os.fspath(path)
    container = _open(p)
    with container:
        s = container.streams.video[0]
        rate = s.average_rate or s.guessed_rate or s.base_rate
        fps = float(rate) if rate else 0.0
        if fps <= 0:
            raise InputError("video stream has no frame rate", source=p)
        duration = 0.0
        if s.duration is not None and s.time_base is not None:
            duration = float(s.duration * s.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        n = int(s.frames or 0) or int(round(duration * fps))
        if duration > 0 and n > round(duration * fps) + 1:
            # MP4's frame count includes pre-roll frames an edit list hides; the duration does not
            n = int(round(duration * fps))
        return VideoInfo(p, fps, n, s.codec_context.width, s.codec_context.height, s.codec_context.name, duration)


def iter_frames(
    info: VideoInfo,
    width: int | None = None,
    fmt: str = "gray",
    every: int = 1,
    size: tuple[int, int] | None = None,
) -> Iterator[tuple[int, Any]]:
    """``(frame_index, ndarray)`` for every decoded frame, scaled to ``width`` (keeping the aspect ratio)
    when given, or to exactly ``size`` (width, height). With ``every=k`` only frames ``0, k, 2k, ...`` are
    converted and handed on (all are decoded: a sampling detector pays no conversion for the rest). A
    decoding error after the first frame ends the stream and is noted in ``info.problems``; one before it is
    an :class:`InputError` (nothing usable)."""
    av = import_av()
    container = _open(info.path)
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        height = None
        if size is not None:
            width, height = size
        elif width is not None and info.width and width < info.width:
            height = max(2, int(round(info.height * width / info.width / 2)) * 2)
        else:
            width = None
        index = 0
        try:
            for frame in container.decode(stream):
                if index % every:
                    index += 1
                    continue
                if width is not None:
                    arr = frame.to_ndarray(format=fmt, width=width, height=height)
                else:
                    arr = frame.to_ndarray(format=fmt)
                yield index, arr
                index += 1
        except av.error.FFmpegError as exc:
            if index == 0:
                raise InputError(f"cannot decode any frame ({_reason(exc)})", source=info.path) from None
            info.problems.append(
                f"decoding stopped at frame {index} ({_reason(exc)}): the file looks "
                "truncated; clips cover the frames before it"
            )
        if index == 0:
            raise InputError("no decodable video frames (truncated or empty stream)", source=info.path)
        if info.n_frames and index < info.n_frames - max(2, int(info.fps)):
            info.problems.append(
                f"only {index} of {info.n_frames} frames could be decoded: the file looks "
                "truncated; clips cover the frames before that"
            )
        info.n_frames = index


__all__ = ["VIDEO_EXTENSIONS", "VideoInfo", "probe", "iter_frames", "import_av"]
