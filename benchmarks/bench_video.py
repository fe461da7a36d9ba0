"""Speed and memory of the weight-free `motion` tracker (MOG2 background subtraction + ByteTrack).

    .venv/bin/python benchmarks/bench_video.py                 # 720p and 1080p speed, 10-minute RSS
    .venv/bin/python benchmarks/bench_video.py --seconds 5 --minutes 2     # quicker

All videos are synthetic (generated here with PyAV/libx264: moving squares that enter and leave on a plain
background, 25 fps; the generator is tests/video_synth.py), so the run needs no data and no network.

1. Speed at 720p and 1080p: frames per second, and that as a multiple of real time (25 fps), for decoding
   alone (the floor every tracker pays) and the motion tracker at processing widths 320, 480 (default), 640.
2. Memory: peak RSS of `chunkwise.video.clips(...)` on a 1-minute and a 10-minute video (each in a fresh
   child process, so the numbers are that run's own peak): frames are streamed, so the two should match.

Numbers depend on the machine; compare the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

FPS = 25


def scene(n_frames: int, width: int, height: int):
    """Squares entering and leaving every few seconds, two at a time now and then."""
    from video_synth import Shape

    k = max(1, width // 320)
    shapes = []
    period = 6 * FPS
    for i, start in enumerate(range(FPS, n_frames, period)):
        shapes.append(Shape(start, min(n_frames - 1, start + 3 * FPS), x=20 * k, y=(40 + 30 * (i % 4)) * k,
                            vx=3.0 * k, size=30 * k))
        if i % 2:
            shapes.append(Shape(start + FPS, min(n_frames - 1, start + 4 * FPS), x=width - 60 * k, y=height // 2,
                                vx=-2.5 * k, vy=0.5 * k, size=24 * k, color=(40, 40, 230)))
    return shapes


def make_video(path: Path, seconds: float, width: int, height: int) -> str:
    from video_synth import write_video

    n = int(seconds * FPS)
    t = time.perf_counter()
    write_video(path, scene(n, width, height), n, FPS, width, height, gop=50, crf=23)
    print(f"  generated {path.name}: {width}x{height}, {seconds:.0f} s ({time.perf_counter() - t:.0f} s to make)",
          file=sys.stderr)
    return str(path)


def time_decode(path: str) -> tuple[int, float]:
    from chunkwise.video.frames import iter_frames, probe

    info = probe(path)
    t = time.perf_counter()
    n = sum(1 for _ in iter_frames(info, width=480, fmt="bgr24"))
    return n, time.perf_counter() - t


def time_motion(path: str, width: int) -> tuple[int, float, int]:
    from chunkwise.video.frames import probe
    from chunkwise.video.rule import ClipRule
    from chunkwise.video.trackers import MotionTracker

    info = probe(path)
    t = time.perf_counter()
    frames = 0

    def counted():
        nonlocal frames
        for item in MotionTracker(width=width).track(info):
            frames += 1
            yield item

    clips = ClipRule().clips(counted(), info.fps)
    return frames, time.perf_counter() - t, len(clips)


CHILD = """
import json, resource, sys, time
t = time.perf_counter()
from chunkwise.video import clips
chunks = clips(sys.argv[1], tracker="motion", subtitles=None)
print(json.dumps({"clips": len(chunks), "seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak_rss(path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=12, help="length of the 720p/1080p speed videos")
    ap.add_argument("--minutes", type=float, default=10, help="length of the long video for peak RSS")
    ap.add_argument("--long-size", default="640x360", help="frame size of the long video (default 640x360)")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    results: dict = {"speed": [], "memory": []}
    from chunkwise.video.trackers import MotionTracker

    MotionTracker()._libs()  # import OpenCV, supervision and trackers before anything is timed
    with tempfile.TemporaryDirectory() as tmp:
        for name, (w, h) in (("720p", (1280, 720)), ("1080p", (1920, 1080))):
            path = make_video(Path(tmp) / f"{name}.mp4", args.seconds, w, h)
            n, s = time_decode(path)
            rows = [("decode only (PyAV, to 480 px)", n, s, None)]
            for width in (320, 480, 640):
                n, s, c = time_motion(path, width)
                rows.append((f"motion tracker @{width} px", n, s, c))
            print(f"\n{name} ({args.seconds:.0f} s of video, {FPS} fps)")
            print(f"  {'':34} {'frames/s':>9} {'x real time':>12} {'clips':>6}")
            for label, n, s, c in rows:
                fps = n / s
                print(f"  {label:34} {fps:9.1f} {fps / FPS:12.2f} {'' if c is None else c:>6}")
                results["speed"].append({"video": name, "run": label, "frames": n, "seconds": s, "fps": fps,
                                         "x_realtime": fps / FPS, "clips": c})
        w, h = (int(v) for v in args.long_size.lower().split("x"))
        print(f"\npeak RSS, motion tracker end to end ({w}x{h})")
        for minutes in sorted({1.0, args.minutes}):
            path = make_video(Path(tmp) / f"long{minutes:g}.mp4", minutes * 60, w, h)
            r = peak_rss(path)
            r.update(minutes=minutes, size=f"{w}x{h}")
            results["memory"].append(r)
            print(f"  {minutes:4g} min: peak RSS {r['peak_rss_mb']:7.1f} MB, {r['clips']} clips, "
                  f"{r['seconds']:.0f} s ({minutes * 60 / r['seconds']:.1f}x real time)")
            os.remove(path)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
