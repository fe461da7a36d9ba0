"""The weight-free `motion` tracker: clips against the truth on public videos, tracking metrics, speed, memory.

    .venv/bin/python benchmarks/bench_video.py --public /tmp/v          # real videos, before and after
    .venv/bin/python benchmarks/bench_video.py --mot                    # IDF1 / MOTA / ID switches
    .venv/bin/python benchmarks/bench_video.py                          # 720p and 1080p speed, 10-minute RSS
    .venv/bin/python benchmarks/bench_video.py --seconds 5 --minutes 2  # quicker

**Public videos** (`--public DIR`): three clips of Intel's sample videos, https://github.com/intel-iot-devkit/
sample-videos (CC BY 4.0): `one-by-one-person-detection.mp4` (768x432, 10 fps, 139 s: six people come in one
after the other, each stands at the table for 10-20 s and leaves to the right), `car-detection.mp4` (768x432,
12.5 fps, 30 s, a road seen from above with strong auto-exposure swings: three events, four cars) and
`bottle-detection.mp4` (640x360, 29.8 fps, 40 s: hands take bottles away and put them back). Fetch them with
`git clone https://github.com/intel-iot-devkit/sample-videos` (or copy the three files into DIR).

The ground truth (:data:`EVENTS`) was read from the frames by eye: contact sheets of one frame per second (0.5 s
for the car and bottle videos) to find each event, then every frame within a second of each boundary. A
person's event runs from the first frame any part of them is in view to the last (their shadow on the floor,
visible for ~0.5 s after they leave, is not counted); a car's from the first to the last frame any part of it is
on the road; a bottle event while a hand is in view (bottle-video boundaries are only +-0.5 s sure). For each
video and tracker one row: events found / missed, false clips (overlapping no event), clips per found event,
IDs per real object (distinct track IDs in the clips of an event over the objects in it), the worst boundary
error of the events found by exactly one clip, speed as a multiple of real time, and peak RSS (each run in a
fresh child process). `legacy` is the tracker this replaced (OpenCV MOG2 at 480 px + ByteTrack, kept below so
the "before" row can be reproduced).

**Tracking metrics** (`--mot`): py-motmetrics IDF1, MOTA and ID switches of the motion tracker's linking stage
(:class:`chunkwise.video.motion.BoxTracker`) beside ByteTrack from the `trackers` library, both fed the same
boxes: the MOT15 TUD-Campus ground truth (tests/data/mot, 71 frames, 8 people, 640x480) degraded the way a
background subtractor sees people (seeded: 10% of boxes missed, 20% cut in two at the waist with a 4 px gap,
2 px jitter). No frames of that sequence are needed, so this measures how boxes become IDs, not detection.

**Speed and memory** (default): synthetic videos generated here with PyAV/libx264 (moving squares that enter and
leave on a plain background, 25 fps; the generator is tests/video_synth.py), so that part needs no data:

1. Speed at 720p and 1080p: frames per second, and that as a multiple of real time (25 fps), for decoding
   alone (the floor every tracker pays) and the motion tracker at processing widths 320 (default), 480, 640.
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
        shapes.append(
            Shape(
                start, min(n_frames - 1, start + 3 * FPS), x=20 * k, y=(40 + 30 * (i % 4)) * k, vx=3.0 * k, size=30 * k
            )
        )
        if i % 2:
            shapes.append(
                Shape(
                    start + FPS,
                    min(n_frames - 1, start + 4 * FPS),
                    x=width - 60 * k,
                    y=height // 2,
                    vx=-2.5 * k,
                    vy=0.5 * k,
                    size=24 * k,
                    color=(40, 40, 230),
                )
            )
    return shapes


def make_video(path: Path, seconds: float, width: int, height: int) -> str:
    from video_synth import write_video

    n = int(seconds * FPS)
    t = time.perf_counter()
    write_video(path, scene(n, width, height), n, FPS, width, height, gop=50, crf=23)
    print(
        f"  generated {path.name}: {width}x{height}, {seconds:.0f} s ({time.perf_counter() - t:.0f} s to make)",
        file=sys.stderr,
    )
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


#: the truth read from the frames (see the module docstring): per video, events as (first s, end s, objects)
EVENTS = {
    "one-by-one-person-detection.mp4": [
        (6.1, 19.8, 1),
        (22.6, 44.8, 1),
        (50.3, 69.8, 1),
        (74.5, 86.6, 1),
        (92.3, 119.8, 1),
        (123.5, 135.8, 1),
    ],
    "car-detection.mp4": [(4.40, 8.88, 1), (14.48, 19.12, 2), (25.28, 28.0, 1)],
    # the same two videos from a later start (:data:`TRIMMED`): an object is in view in the first frame
    "car-from6.mp4": [(0.0, 2.88, 1), (8.48, 13.12, 2), (19.28, 22.0, 1)],
    "people-from10.mp4": [
        (0.0, 9.8, 1),
        (12.6, 34.8, 1),
        (40.3, 59.8, 1),
        (64.5, 76.6, 1),
        (82.3, 109.8, 1),
        (113.5, 125.8, 1),
    ],
    "bottle-detection.mp4": [
        (5.8, 7.3, 1),
        (11.4, 13.4, 1),
        (15.9, 18.0, 2),
        (22.0, 24.5, 1),
        (27.5, 29.0, 1),
        (31.0, 32.0, 1),
        (34.6, 37.0, 1),
    ],
}


#: videos made here from the public ones: re-encoded from a later start, so the first frame has an object in it
TRIMMED = {"car-from6.mp4": ("car-detection.mp4", 6.0), "people-from10.mp4": ("one-by-one-person-detection.mp4", 10.0)}


def trimmed(folder: str) -> None:
    """Write the :data:`TRIMMED` videos into ``folder`` (H.264, same size and rate) when missing."""
    from fractions import Fraction

    import av

    for name, (source, start) in TRIMMED.items():
        out, src = Path(folder) / name, Path(folder) / source
        if out.is_file() or not src.is_file():
            continue
        with av.open(str(src)) as i, av.open(str(out), "w") as o:
            vin = i.streams.video[0]
            rate = vin.average_rate
            vout = o.add_stream("libx264", rate=rate)
            vout.width, vout.height, vout.pix_fmt = vin.codec_context.width, vin.codec_context.height, "yuv420p"
            vout.options = {"crf": "18", "preset": "veryfast"}
            n = 0
            for frame in i.decode(vin):
                if frame.time is None or frame.time < start - 1e-6:
                    continue
                g = frame.reformat(format="yuv420p")
                g.pts, g.time_base = n, Fraction(1) / Fraction(rate)
                n += 1
                for packet in vout.encode(g):
                    o.mux(packet)
            for packet in vout.encode():
                o.mux(packet)


def legacy_tracker():
    """The motion tracker this project shipped before (MOG2 at 480 px + ByteTrack, one second of lost-track
    buffer), for the "before" rows."""
    import numpy as np

    from chunkwise.video.frames import iter_frames
    from chunkwise.video.trackers import Tracker
    from chunkwise.video.tracks import Detection

    class LegacyMotion(Tracker):
        name = "legacy"

        def track(self, info, classes=None):
            import cv2
            import supervision as sv
            from trackers import ByteTrackTracker

            cv2.setNumThreads(1)
            sub = cv2.createBackgroundSubtractorMOG2(history=500, varThreshold=32.0, detectShadows=False)
            kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
            tracker = ByteTrackTracker(
                lost_track_buffer=max(1, int(round(info.fps))), frame_rate=info.fps, minimum_consecutive_frames=2
            )
            for index, image in iter_frames(info, width=480, fmt="bgr24"):
                scale = info.width / image.shape[1]
                min_px = 0.0008 * image.shape[0] * image.shape[1]
                mask = sub.apply(image)
                if index == 0:
                    continue
                mask = cv2.dilate(cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel), kernel, iterations=2)
                n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
                blobs = stats[1:n][stats[1:n, cv2.CC_STAT_AREA] >= min_px]
                xyxy = (
                    np.stack(
                        [blobs[:, 0], blobs[:, 1], blobs[:, 0] + blobs[:, 2], blobs[:, 1] + blobs[:, 3]], axis=1
                    ).astype(np.float32)
                    if len(blobs)
                    else np.empty((0, 4), np.float32)
                )
                out = tracker.update(sv.Detections(xyxy=xyxy))
                ids = out.tracker_id if out.tracker_id is not None else []
                yield (
                    index,
                    [
                        Detection(
                            index,
                            int(t),
                            tuple(float(v) * scale for v in (b[0], b[1], b[2] - b[0], b[3] - b[1])),
                            "object",
                        )
                        for b, t in zip(out.xyxy, ids)
                        if t is not None and int(t) >= 0
                    ],
                )

    return LegacyMotion()


ONE = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
t = time.perf_counter()
from chunkwise.video import load_video
import bench_video
tracker = bench_video.legacy_tracker() if sys.argv[2] == "legacy" else sys.argv[2]
doc = load_video(sys.argv[1], tracker=tracker, subtitles=None)
print(json.dumps({"clips": [[c.start_time, c.end_time, c.track_ids] for c in doc.chunks],
                  "texts": [c.text for c in doc.chunks], "seconds": time.perf_counter() - t,
                  "duration": doc.metadata["frames"] / doc.metadata["fps"],
                  "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def score(events, clips) -> dict:
    """Clips against the truth: found / missed events, false clips, clips per event, IDs per object, and the
    worst boundary error (s) of the events one clip found."""
    per = [[c for c in clips if c[0] < b and c[1] > a] for a, b, _ in events]
    found = [p for p in per if p]
    ids = [len({i for c in p for i in c[2]}) / n for p, (_, _, n) in zip(per, events) if p]
    errors = [max(abs(p[0][0] - a), abs(p[0][1] - b)) for p, (a, b, _) in zip(per, events) if len(p) == 1]
    merged = sum(1 for c in clips if sum(1 for a, b, _ in events if c[0] < b and c[1] > a) > 1)
    return {
        "events": len(events),
        "found": len(found),
        "missed": len(events) - len(found),
        "merged": merged,
        "false": sum(1 for c in clips if not any(c[0] < b and c[1] > a for a, b, _ in events)),
        "clips": len(clips),
        "clips_per_event": sum(len(p) for p in found) / max(1, len(found)),
        "ids_per_object": sum(ids) / max(1, len(ids)),
        "max_ids_per_object": max(ids, default=0),
        "worst_boundary_s": max(errors, default=None),
    }


def public(folder: str, trackers: list[str]) -> list[dict]:
    trimmed(folder)
    rows = []
    print(
        f"\n{'video':32} {'tracker':8} {'found':>7} {'false':>6} {'clips':>6} {'merged':>7} {'clips/ev':>9} {'IDs/obj':>8} "
        f"{'max IDs':>8} {'worst s':>8} {'x real':>7} {'RSS MB':>7}"
    )
    for name, events in EVENTS.items():
        path = Path(folder) / name
        if not path.is_file():
            print(f"  {name}: not in {folder} (see the module docstring)", file=sys.stderr)
            continue
        for tracker in trackers:
            out = subprocess.run(
                [sys.executable, "-c", ONE, str(path), tracker, str(Path(__file__).parent)],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            row = {
                "video": name,
                "tracker": tracker,
                **score(events, r["clips"]),
                "x_realtime": r["duration"] / r["seconds"],
                "x_realtime_cpu": r["duration"] / r["cpu_seconds"],
                "peak_rss_mb": r["peak_rss_mb"],
                "texts": r["texts"],
            }
            rows.append(row)
            worst = "-" if row["worst_boundary_s"] is None else f"{row['worst_boundary_s']:.2f}"
            print(
                f"{name:32} {tracker:8} {row['found']:>3}/{row['events']:<3} {row['false']:>6} {row['clips']:>6} {row['merged']:>7} "
                f"{row['clips_per_event']:9.2f} {row['ids_per_object']:8.1f} {row['max_ids_per_object']:8.0f} "
                f"{worst:>8} {row['x_realtime']:7.1f} {row['peak_rss_mb']:7.0f}"
            )
    return rows


#: content queries per video of the search test (the videos renamed cam1.mp4, cam2.mp4, cam3.mp4)
QUERIES = {
    "one-by-one-person-detection.mp4": ["a person", "someone walks in and stands at the table"],
    "car-detection.mp4": ["a car", "a car drives along the road"],
    "bottle-detection.mp4": ["a bottle", "someone picks up a bottle"],
}


def search_figures(rows: list[dict]) -> list[dict]:
    """Search by content: the clip texts of each tracker (from the ``--public`` rows) with the videos renamed
    ``cam1.mp4``... (only the name in the text changes), embedded with MiniLM (the default embedder); for each
    query, the rank of the first clip of the right video (1 = found first) by cosine similarity."""
    import numpy as np

    from chunkwise.embeddings import get_embedder

    embedder = get_embedder("minilm")
    names = list(QUERIES)
    out = []
    for tracker in sorted({r["tracker"] for r in rows}):
        texts, owner = [], []
        for cam, name in enumerate(names, start=1):
            row = next((r for r in rows if r["video"] == name and r["tracker"] == tracker), None)
            for t in row["texts"] if row else []:
                texts.append(t.replace(f" in {name}:", f" in cam{cam}.mp4:"))
                owner.append(name)
        if not texts:
            continue
        vectors = embedder.embed(texts)
        for name, queries in QUERIES.items():
            for q in queries:
                score = vectors @ embedder.embed_queries([q])[0]
                order = [owner[i] for i in np.argsort(-score)]
                rank = order.index(name) + 1 if name in order else None
                out.append({"tracker": tracker, "video": name, "query": q, "rank": rank, "top": order[0]})
                print(f"  {tracker:7} {q!r:45} right video ({name}) first at rank {rank} (top: {order[0]})")
    return out


OPENCV4 = """
import sys, numpy as np, av, cv2
cfg, weights, out, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
net = cv2.dnn.readNetFromDarknet(cfg, weights)
blobs, raw = [], [[], []]
for video in sys.argv[5:]:
    with av.open(video) as c:
        frames = [f.to_ndarray(format="bgr24") for f in c.decode(video=0)]
    for f in frames[:: max(1, len(frames) // per)][:per]:
        blob = cv2.dnn.blobFromImage(f, 1 / 255.0, (416, 416), swapRB=True, crop=False)
        net.setInput(blob)
        a, b = net.forward(["conv_15", "conv_22"])
        blobs.append(blob)
        raw[0].append(a)
        raw[1].append(b)
np.savez(out, version=cv2.__version__, blobs=np.concatenate(blobs), raw0=np.concatenate(raw[0]),
         raw1=np.concatenate(raw[1]))
"""


def opencv4_figures(folder: str, cv4_path: str, per: int = 10) -> dict:
    """The converted graph against OpenCV 4's own Darknet reader (``readNetFromDarknet``, removed in OpenCV 5)
    on ``per`` frames of each public video: the same input tensors (OpenCV's ``blobFromImage``), the raw maps
    of both yolo layers, and the detections above 0.3 after decoding. ``cv4_path``: a folder with an OpenCV 4
    wheel unpacked (``pip install --no-deps --target DIR opencv-python-headless==4.10.0.84``), put first on
    the child's path."""
    import numpy as np
    import onnxruntime as ort

    from chunkwise.video import detector as det

    files = det.model_files()
    videos = [str(Path(folder) / n) for n in QUERIES if (Path(folder) / n).is_file()]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cv4.npz"
        env = dict(os.environ, PYTHONPATH=cv4_path)
        subprocess.run(
            [sys.executable, "-c", OPENCV4, str(files["cfg"]), str(files["weights"]), str(out), str(per), *videos],
            check=True,
            env=env,
        )
        ref = np.load(out)
        session = ort.InferenceSession(str(det.graph_path()), providers=["CPUExecutionProvider"])
        names = det.class_names(files)
        same = differ = 0
        worst = [0.0, 0.0]
        for k in range(len(ref["blobs"])):
            ours = session.run(None, {"images": ref["blobs"][k : k + 1]})
            for j in range(2):
                worst[j] = max(worst[j], float(np.abs(ours[j][0] - ref[f"raw{j}"][k]).max()))
            sets = []
            for maps in (ours, [ref["raw0"][k : k + 1], ref["raw1"][k : k + 1]]):
                found = set()
                for m, a in zip(maps, ((81, 82, 135, 169, 344, 319), (10, 14, 23, 27, 37, 58))):
                    boxes, scores, labels = det._decode(m[0], list(zip(a[0::2], a[1::2])), len(names), 0.3)
                    found |= {(names[c], tuple(np.round(b, 2))) for b, c in zip(boxes, labels)}
                sets.append(found)
            same += len(sets[0] & sets[1])
            differ += len(sets[0] ^ sets[1])
    r = {
        "opencv": str(ref["version"]),
        "frames": int(len(ref["blobs"])),
        "max_abs_diff_yolo0": worst[0],
        "max_abs_diff_yolo1": worst[1],
        "detections_same": same,
        "detections_differ": differ,
    }
    print(f"  converted graph vs OpenCV {r['opencv']} Darknet reader on {r['frames']} frames: {r}")
    return r


def degraded_boxes(gt, seed: int = 0):
    """The ground-truth boxes as a background subtractor sees people: some missed, some cut in two at the
    waist, all jittered (seeded, so every tracker gets the very same boxes)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    frames: dict[int, list] = {}
    for d in gt:
        if rng.random() < 0.1:
            continue
        x, y, w, h = (v + rng.normal(0, 2) for v in d.box)
        if rng.random() < 0.2:  # two blobs: upper and lower body, 4 px apart
            pieces = [(x, y, w, h / 2 - 2), (x, y + h / 2 + 2, w, h / 2 - 2)]
        else:
            pieces = [(x, y, w, h)]
        frames.setdefault(d.frame, []).extend(pieces)
    return frames


def mot_figures() -> list[dict]:
    """IDF1 / MOTA / ID switches of the motion tracker's box linking and of ByteTrack on the same boxes."""
    import motmetrics as mm
    import numpy as np
    import supervision as sv

    if not hasattr(np, "asfarray"):  # motmetrics 1.4 still calls it; NumPy 2 removed it
        np.asfarray = lambda a, dtype=float: np.asarray(a, dtype=dtype)  # type: ignore[attr-defined]
    from trackers import ByteTrackTracker

    from chunkwise.video.motion import Blobs, BoxTracker
    from chunkwise.video.tracks import read_mot

    gt_path = ROOT / "tests" / "data" / "mot" / "TUD-Campus-gt.txt"
    gt = read_mot(gt_path)
    fps, width = 25, 640
    n_frames = max(d.frame for d in gt) + 1
    boxes = degraded_boxes(gt)

    def xyxy(frame):
        b = np.array(boxes.get(frame, []), np.float32).reshape(-1, 4)
        return np.stack([b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]], axis=1) if len(b) else b

    results: dict[str, list] = {"motion (BoxTracker)": [], "ByteTrack (trackers)": []}
    margin = 0.02 * width
    linker = BoxTracker(lost=2 * fps, hold=10**9, margin=margin, travel=2.5 * margin, delay=2 * fps, settle=fps)
    ready = []
    for f in range(n_frames):
        b = xyxy(f)
        ready += linker.step(f, Blobs(b, np.ones(len(b)), 0.0))
    ready += linker.flush()
    for f, found in ready:
        results["motion (BoxTracker)"] += [(f, tid, box) for tid, box in found]
    byte = ByteTrackTracker(lost_track_buffer=2 * fps, frame_rate=fps, minimum_consecutive_frames=2)
    for f in range(n_frames):
        b = xyxy(f)
        out = byte.update(sv.Detections(xyxy=b, confidence=np.ones(len(b), np.float32)))
        ids = out.tracker_id if out.tracker_id is not None else []
        results["ByteTrack (trackers)"] += [(f, int(t), box) for box, t in zip(out.xyxy, ids) if int(t) >= 0]
    gt_df = mm.io.loadtxt(str(gt_path), fmt="mot15-2D")
    rows = []
    print(f"\nTUD-Campus (MOT15), {len(gt)} boxes of 8 people degraded as in the docstring")
    print(f"  {'tracker':24} {'IDF1':>6} {'MOTA':>6} {'ID sw':>6} {'frag':>5} {'IDs':>4}")
    for name, hyp in results.items():
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            for f, tid, (x0, y0, x1, y1) in hyp:
                fh.write(f"{f + 1},{tid},{x0:.1f},{y0:.1f},{x1 - x0:.1f},{y1 - y0:.1f},1,-1,-1,-1\n")
        acc = mm.utils.compare_to_groundtruth(gt_df, mm.io.loadtxt(fh.name, fmt="mot15-2D"), "iou", distth=0.5)
        os.remove(fh.name)
        m = mm.metrics.create().compute(acc, metrics=["idf1", "mota", "num_switches", "num_fragmentations"], name=name)
        row = {
            "tracker": name,
            "idf1": float(m["idf1"].iloc[0]),
            "mota": float(m["mota"].iloc[0]),
            "id_switches": int(m["num_switches"].iloc[0]),
            "fragmentations": int(m["num_fragmentations"].iloc[0]),
            "ids": len({t for _, t, _ in hyp}),
        }
        rows.append(row)
        print(
            f"  {name:24} {row['idf1']:6.3f} {row['mota']:6.3f} {row['id_switches']:6d} {row['fragmentations']:5d} "
            f"{row['ids']:4d}"
        )
    return rows


REINDEX = """
import json, resource, sys, time
t = time.perf_counter()
from chunkwise.retrieval import Index
with Index(db=sys.argv[2]) as index:
    r = index.add([sys.argv[1]])
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": use.ru_utime + use.ru_stime, "indexed": r.indexed,
                  "skipped": r.skipped, "setup": r.timings["setup"], "load": r.timings["load"]}))
"""


def reindex(folder: str) -> dict:
    """``Index.add`` of a folder holding the people and car videos, then the same again with nothing
    changed (answered from the database's snapshot, store/snapshot.py), then again without the snapshot (the
    full run: Milvus Lite started, the document list read), each in a fresh process on the same new Milvus
    Lite file: the whole run (imports and opening the database included), its CPU time (steadier than the
    wall clock on a shared machine) and its load phase (reading, decoding and tracking the videos)."""
    import shutil

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        media = Path(tmp) / "media"
        media.mkdir()
        for name in ("one-by-one-person-detection.mp4", "car-detection.mp4"):
            shutil.copy(Path(folder) / name, media / name)
        for i in range(3):
            if i == 2:  # the no-op again, through the full run
                for snap in (Path(tmp) / "v.db").glob("chunkwise-snapshot-*.json"):
                    snap.unlink()
            out = subprocess.run(
                [sys.executable, "-c", REINDEX, str(media), str(Path(tmp) / "v.db")],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = runs[-1]
            print(
                f"  {r['seconds']:6.1f} s, CPU {r['cpu']:5.2f} s ({r['indexed']} indexed, {r['skipped']} unchanged): "
                f"setup {r['setup']:.2f} s, load {r['load']:.2f} s"
            )
    first, again, full = runs
    r = {
        "first": first,
        "again": again,
        "full": full,
        "share": again["seconds"] / first["seconds"],
        "cpu_share": again["cpu"] / first["cpu"],
        "load_share": again["load"] / first["load"],
        "full_cpu_share": full["cpu"] / first["cpu"],
    }
    print(
        f"  no-op re-index: {100 * r['share']:.1f}% of the first run, {100 * r['cpu_share']:.1f}% of its CPU time "
        f"({100 * r['load_share']:.2f}% of its load); without the snapshot {100 * r['full_cpu_share']:.1f}% of its CPU"
    )
    return r


CHILD = """
import json, resource, sys, time
t = time.perf_counter()
from chunkwise.video import clips
chunks = clips(sys.argv[1], tracker="motion", subtitles=None)
print(json.dumps({"clips": len(chunks), "seconds": time.perf_counter() - t,
                  "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
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
    ap.add_argument("--public", metavar="DIR", help="the public-video table only (DIR holds the sample videos)")
    ap.add_argument("--trackers", default="motion,detect", help="trackers for --public (legacy, motion, detect)")
    ap.add_argument("--mot", action="store_true", help="the IDF1 / MOTA figures only")
    ap.add_argument("--rows", metavar="JSON", help="search figures from the public rows of an earlier --json")
    ap.add_argument("--opencv4", metavar="DIR", help="with --public: compare the detector with OpenCV 4 in DIR")
    ap.add_argument("--reindex", metavar="DIR", help="a no-op re-index of the people and car videos in DIR")
    args = ap.parse_args()
    results: dict = {"speed": [], "memory": []}
    if args.rows:
        results["search"] = search_figures(json.loads(Path(args.rows).read_text())["public"])
    if args.rows and not args.public:
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return 0
    if args.public or args.mot or args.reindex:
        if args.reindex:
            results["reindex"] = reindex(args.reindex)
        if args.public:
            results["public"] = public(args.public, args.trackers.split(","))
            results["search"] = search_figures(results["public"])
        if args.opencv4 and args.public:
            results["opencv4"] = opencv4_figures(args.public, args.opencv4)
        if args.mot:
            results["mot"] = mot_figures()
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return 0
    from chunkwise.video.trackers import MotionTracker

    MotionTracker()._libs()  # import OpenCV before anything is timed
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
                results["speed"].append(
                    {
                        "video": name,
                        "run": label,
                        "frames": n,
                        "seconds": s,
                        "fps": fps,
                        "x_realtime": fps / FPS,
                        "clips": c,
                    }
                )
        w, h = (int(v) for v in args.long_size.lower().split("x"))
        print(f"\npeak RSS, motion tracker end to end ({w}x{h})")
        for minutes in sorted({1.0, args.minutes}):
            path = make_video(Path(tmp) / f"long{minutes:g}.mp4", minutes * 60, w, h)
            r = peak_rss(path)
            r.update(minutes=minutes, size=f"{w}x{h}")
            results["memory"].append(r)
            print(
                f"  {minutes:4g} min: peak RSS {r['peak_rss_mb']:7.1f} MB, {r['clips']} clips, "
                f"{r['seconds']:.0f} s ({minutes * 60 / r['seconds']:.1f}x real time)"
            )
            os.remove(path)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
