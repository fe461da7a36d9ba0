"""Writing clips as files with PyAV: stream copy from the previous keyframe when possible, else re-encode.

Stream copy (``mode="copy"``) is lossless and fast but can only start on a keyframe: the file begins at the
keyframe at or before the clip start (``lead`` seconds early). ``auto`` copies when that lead is at most
``max_lead`` seconds and the output container accepts the stream, and re-encodes otherwise
(``mode="reencode"``: frame-exact, H.264 via libx264, or MPEG-4 Part 2 when libx264 is missing; video only).
Every :class:`CutResult` says which was done. Copy mode carries the audio streams along with the video.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..errors import ConfigError, InputError
from .frames import _open, _reason, import_av

CUT_MODES = ("auto", "copy", "reencode")
COPY_CONTAINERS = {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".ts", ".avi"}
#: containers with edit lists: a copy starts its timeline at the clip start and the frames from the keyframe
#: up to it are decoded but never shown (as in a source whose own edit list hides pre-roll frames)
EDIT_LIST_CONTAINERS = {".mp4", ".m4v", ".mov"}


@dataclass
class CutResult:
    """One written clip: its file, how it was made, and the time range the file really covers."""

    index: int
    path: str
    mode: str  # "copy" or "reencode"
    start_time: float  # actual start in the source (the keyframe for copies)
    end_time: float
    lead: float = 0.0  # seconds shown before the requested start (copy mode without an edit list)
    reason: str = ""  # why a re-encode was chosen
    preroll: float = 0.0  # seconds from the keyframe to the start, decoded but hidden by an edit list

    def describe(self) -> str:
        if self.mode == "copy" and self.lead <= 0 and self.preroll > 0:
            how = f"stream copy, frame-exact (edit list hides {self.preroll:.2f} s of pre-roll from the keyframe)"
        elif self.mode == "copy":
            how = f"stream copy from the keyframe at {self.start_time:.2f} s ({self.lead:.2f} s early)"
        else:
            how = f"re-encoded, frame-exact{f' ({self.reason})' if self.reason else ''}"
        return f"clip {self.index}: {self.path}: {how}"


class ClipCutter:
    """Cut ``[(index, start_time, end_time)]`` out of one video into ``outdir``."""

    def __init__(self, outdir: str | os.PathLike, mode: str = "auto", max_lead: float = 2.0):
        if mode not in CUT_MODES:
            raise ConfigError(f"unknown cut mode {mode!r}; choose one of {', '.join(CUT_MODES)}")
        self.outdir = Path(outdir)
        self.mode = mode
        self.max_lead = max_lead

    def cut(self, video: str | os.PathLike, spans: list[tuple[int, float, float]]) -> list[CutResult]:
        try:
            self.outdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create output folder ({exc.strerror or exc})", source=str(self.outdir)) from None
        keyframes = self._keyframes(video) if self.mode != "reencode" else []
        results = []
        for index, start, end in spans:
            results.append(self._one(video, index, start, end, keyframes))
        return results

    def _name(self, video, index: int, ext: str) -> Path:
        return self.outdir / f"{Path(video).stem}.clip{index:03d}{ext}"

    def _keyframes(self, video) -> list[float]:
        """Keyframe times of the video stream, read from packets (no decoding)."""
        times = []
        with _open(str(video)) as container:
            stream = container.streams.video[0]
            for packet in container.demux(stream):
                if packet.is_keyframe and packet.pts is not None:
                    times.append(float(packet.pts * stream.time_base))
        return sorted(times)

    def _one(self, video, index: int, start: float, end: float, keyframes: list[float]) -> CutResult:
        av = import_av()
        ext = Path(video).suffix.lower()
        key = max((k for k in keyframes if k <= start + 1e-6), default=None)
        reason = ""
        if self.mode != "reencode":
            if ext not in COPY_CONTAINERS:
                reason = f"{ext or 'this'} container is not copied"
            elif key is None:
                reason = "no keyframe before the clip"
            elif self.mode == "auto" and start - key > self.max_lead:
                reason = f"previous keyframe {start - key:.1f} s before the start (> {self.max_lead} s)"
            else:
                out = self._name(video, index, ext)
                hidden = ext in EDIT_LIST_CONTAINERS
                try:
                    self._copy(video, out, key, end, shift=start if hidden else max(key, 0.0))
                    if hidden:  # the edit list hides the frames before the start: frame-exact
                        return CutResult(index, str(out), "copy", start, end, preroll=start - key)
                    return CutResult(index, str(out), "copy", max(key, 0.0), end, lead=start - max(key, 0.0))
                except (av.error.FFmpegError, ValueError) as exc:
                    if self.mode == "copy":
                        raise InputError(
                            f"stream copy failed for clip {index} ({_reason(exc)})", source=str(video)
                        ) from None
                    reason = f"stream copy failed: {_reason(exc)}"
                    out.unlink(missing_ok=True)
        out = self._name(video, index, ".mp4")
        self._reencode(video, out, start, end)
        return CutResult(index, str(out), "reencode", start, end, reason=reason)

    @staticmethod
    def _copy(video, out: Path, start: float, end: float, shift: float | None = None) -> None:
        """Remux packets from the keyframe at ``start`` until ``end``, timestamps shifted by ``shift`` seconds
        (default ``start``). Packets that land before 0 are pre-roll: MP4/MOV write an edit list that starts
        the timeline at 0, so players and decoders skip them (a source's own pre-roll, the frames an edit
        list hides, has negative times and is hidden the same way)."""
        shift = start if shift is None else shift
        av = import_av()
        with _open(str(video)) as src, av.open(str(out), mode="w") as dst:
            streams = [s for s in src.streams if s.type in ("video", "audio")]
            mapping = {s.index: dst.add_stream_from_template(s) for s in streams}
            vstream = src.streams.video[0]
            src.seek(int(start / vstream.time_base), stream=vstream, backward=True, any_frame=False)
            started = False
            for packet in src.demux(*streams):
                if packet.dts is None or packet.pts is None:
                    continue
                t = float(packet.pts * packet.time_base)
                if packet.stream.type == "video":
                    if not started:
                        if not packet.is_keyframe or t < start - 1e-6:
                            continue
                        started = True
                    elif t >= end - 1e-6 and float(packet.dts * packet.time_base) >= end - 1e-6:
                        break
                elif not started or t < start - 1e-6 or t >= end:
                    continue
                offset = int(round(shift / packet.time_base))
                packet.pts -= offset
                packet.dts -= offset
                packet.stream = mapping[packet.stream.index]
                dst.mux(packet)
            if not started:
                raise ValueError("no keyframe found at the clip start")

    @staticmethod
    def _reencode(video, out: Path, start: float, end: float) -> None:
        """Decode from the keyframe before ``start``; encode the frames in ``[start, end)``."""
        av = import_av()
        with _open(str(video)) as src:
            vin = src.streams.video[0]
            rate = vin.average_rate or vin.guessed_rate or 25
            src.seek(int(start / vin.time_base), stream=vin, backward=True, any_frame=False)
            codec = "libx264"
            try:
                av.codec.Codec(codec, "w")
            except Exception:
                codec = "mpeg4"
            with av.open(str(out), mode="w") as dst:
                vout = dst.add_stream(codec, rate=rate)
                vout.width = vin.codec_context.width
                vout.height = vin.codec_context.height
                vout.pix_fmt = "yuv420p"
                step = Fraction(1) / Fraction(rate)
                n = 0
                for frame in src.decode(vin):
                    if frame.time is None or frame.time < start - 1e-6:
                        continue
                    if frame.time >= end - 1e-6:
                        break
                    frame = frame.reformat(format="yuv420p")
                    frame.pts = n
                    frame.time_base = step
                    n += 1
                    for packet in vout.encode(frame):
                        dst.mux(packet)
                for packet in vout.encode():
                    dst.mux(packet)


def cut_clips(
    video: str | os.PathLike, chunks, outdir: str | os.PathLike, mode: str = "auto", max_lead: float = 2.0
) -> list[CutResult]:
    """Write each clip chunk (or :class:`~chunkwise.video.rule.Clip`) of ``video`` as its own file."""
    spans = [(getattr(c, "index", i), float(c.start_time), float(c.end_time)) for i, c in enumerate(chunks)]
    return ClipCutter(outdir, mode, max_lead).cut(video, spans)


__all__ = ["ClipCutter", "CutResult", "cut_clips", "CUT_MODES"]
