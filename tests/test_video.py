"""Videos end to end: synthetic scenes made here (shapes entering and leaving at known frames), the motion
tracker against the truth, tracks: input, subtitles, cutting, bad input, the CLI and `chunkwise index`."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")
pytest.importorskip("trackers")

from video_synth import Shape, truth_events, write_video  # noqa: E402

from chunkwise.cli import main  # noqa: E402
from chunkwise.errors import ConfigError, InputError, MissingDependencyError  # noqa: E402
from chunkwise.video import clips, load_video, probe  # noqa: E402
from chunkwise.video.cut import cut_clips  # noqa: E402
from chunkwise.video.trackers import UltralyticsTracker, get_tracker  # noqa: E402

FPS = 25
N = 260
# red square 20..80; blue square 60..120 hidden 95..102 (an occlusion shorter than the 1 s gap);
# yellow square 180..230: two events, the first with overlapping presences
SHAPES = [
    Shape(20, 80),
    Shape(60, 120, x=200, y=150, vx=-2, color=(40, 40, 230), hidden=tuple(range(95, 103))),
    Shape(180, 230, x=100, y=30, vx=2, vy=1.5, color=(240, 240, 60)),
]


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    d = tmp_path_factory.mktemp("video")
    return write_video(d / "scene.mp4", SHAPES, N)


@pytest.fixture(scope="module")
def motion_chunks(scene):
    return clips(scene, tracker="motion")


def test_motion_tracker_matches_truth_within_two_frames(motion_chunks):
    truth = truth_events(SHAPES, N, gap_frames=FPS)
    assert truth == [(20, 120), (180, 230)]
    assert len(motion_chunks) == len(truth)
    for c, (a, b) in zip(motion_chunks, truth):
        assert abs(c.start_frame - a) <= 2 and abs(c.end_frame - b) <= 2, (c.start_frame, c.end_frame, a, b)
    first = motion_chunks[0]
    assert len(first.track_ids) == 2  # overlapping presences join one clip; the occlusion kept the ID
    assert first.classes == ["object"] and first.strategy == "video"
    assert first.start_time == pytest.approx(first.start_frame / FPS)


def test_chunks_are_exact_spans_of_the_video_document(scene):
    doc = load_video(scene, tracker="motion", subtitles=None)
    assert doc.chunks and doc.metadata["kind"] == "video" and doc.metadata["fps"] == FPS
    for c in doc.chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.doc_id == doc.id and c.token_count > 0
    assert len({c.id for c in doc.chunks}) == len(doc.chunks)


def write_mot(path, shapes):
    lines = []
    for tid, s in enumerate(shapes, start=1):
        for f in range(s.first, s.last + 1):
            if s.visible(f):
                lines.append(f"{f + 1},{tid},10,10,20,20,1,-1,-1,-1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_tracks_input_gives_exact_clips(scene, tmp_path):
    mot = write_mot(tmp_path / "t.txt", SHAPES)
    chunks = clips(scene, tracker=f"tracks:{mot}")
    assert [(c.start_frame, c.end_frame) for c in chunks] == truth_events(SHAPES, N, FPS)
    assert [c.track_ids for c in chunks] == [[1, 2], [3]]
    # a gap shorter than the occlusion splits the blue square's event
    chunks = clips(scene, tracker=f"tracks:{mot}", gap=0.2)
    assert [(c.start_frame, c.end_frame) for c in chunks] == [(20, 94), (103, 120), (180, 230)]


def test_auto_uses_mot_file_beside_the_video_and_subtitles(scene, tmp_path):
    video = tmp_path / "lobby.mp4"
    shutil.copy(scene, video)
    write_mot(tmp_path / "lobby.mot.txt", SHAPES)
    (tmp_path / "lobby.vtt").write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nThe red square arrives.\n\n"
        "00:00:07.500 --> 00:00:08.000\nNow the yellow one.\n"
    )
    doc = load_video(video)
    assert doc.metadata["tracker"].startswith("tracks from")
    assert [c.track_ids for c in doc.chunks] == [[1, 2], [3]]
    assert "Speech: The red square arrives." in doc.chunks[0].text
    assert "Speech: Now the yellow one." in doc.chunks[1].text and "red" not in doc.chunks[1].text


def test_cut_copy_and_reencode(scene, tmp_path, motion_chunks):
    copies = cut_clips(scene, motion_chunks, tmp_path / "copy")
    assert [r.mode for r in copies] == ["copy", "copy"]  # keyframes every second: at most 1 s early
    for r, c in zip(copies, motion_chunks):
        # MP4 has edit lists: the frames from the keyframe to the clip start are decoded, never shown
        assert r.start_time == pytest.approx(c.start_time) and r.lead == 0 and r.preroll < 1.0 + 1e-6
        assert len(_grey_levels(r.path)) == c.end_frame + 1 - c.start_frame
    mkv = write_video(tmp_path / "scene.mkv", SHAPES, N)  # no edit lists: the copy shows its lead
    for r, c in zip(cut_clips(mkv, motion_chunks, tmp_path / "mkv"), motion_chunks):
        assert r.mode == "copy" and r.start_time <= c.start_time and 0 <= r.lead < 1.0 + 1e-6
        assert len(_grey_levels(r.path)) == c.end_frame + 1 - round(r.start_time * FPS)
    exact = cut_clips(scene, motion_chunks, tmp_path / "exact", mode="reencode")
    for r, c in zip(exact, motion_chunks):
        assert r.mode == "reencode"
        assert probe(r.path).n_frames == c.end_frame - c.start_frame + 1
    far = cut_clips(scene, motion_chunks, tmp_path / "far", max_lead=0.0)
    for r in far:  # no lead allowed: copy only from a keyframe exactly at the start, else re-encode
        assert (r.mode == "copy" and r.lead < 1e-6) or (r.mode == "reencode" and "keyframe" in r.reason)
    assert any(r.mode == "reencode" for r in far)


# -- command line -------------------------------------------------------------------------------------------------
def test_cli_jsonl_table_and_cut(scene, tmp_path, capsys):
    mot = write_mot(tmp_path / "t.txt", SHAPES)
    assert main(["video", scene, "--tracker", f"tracks:{mot}", "--pad", "0.2", "--cut", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["start_frame"], r["end_frame"]) for r in rows] == [(15, 125), (175, 235)]
    assert {"source", "index", "id", "doc_id", "start_time", "end_time", "track_ids", "classes", "text"} <= set(rows[0])
    assert "stream copy" in err and "2 clips" in err
    assert len(list((tmp_path / "o").iterdir())) == 2
    assert main(["video", scene, "--tracker", f"tracks:{mot}", "--format", "table", "--max-duration", "2"]) == 0
    out, _ = capsys.readouterr()
    assert "frames 20-" in out and "part 1 of a longer event" in out


def test_cli_no_objects(tmp_path, capsys):
    blank = write_video(tmp_path / "blank.mp4", [], 50)
    assert main(["video", blank, "--tracker", "motion"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "no tracked objects" in err and "0 clips" in err


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "empty file"),
        (b"this is plain text, not a video at all\n" * 20, "not a video file"),
    ],
)
def test_cli_bad_files(tmp_path, capsys, content, problem):
    p = tmp_path / "bad.mp4"
    p.write_bytes(content)
    assert main(["video", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"chunkwise: error: {p}: ") and problem in err


def test_truncated_files(scene, tmp_path, capsys):
    data = open(scene, "rb").read()
    cut_mp4 = tmp_path / "cut.mp4"  # mp4 keeps its index at the end: nothing readable
    cut_mp4.write_bytes(data[: len(data) // 2])
    assert main(["video", str(cut_mp4)]) == 2
    assert "chunkwise: error:" in capsys.readouterr().err
    ts = write_video(tmp_path / "scene.mkv", SHAPES, N)  # Matroska: the first half still decodes
    raw = open(ts, "rb").read()
    cut_ts = tmp_path / "cut.mkv"
    cut_ts.write_bytes(raw[: len(raw) // 2])
    assert main(["video", str(cut_ts), "--tracker", "motion"]) == 0
    out, err = capsys.readouterr()
    assert "warning" in err and "truncated" in err
    assert len(out.splitlines()) >= 1


def test_unknown_tracker_and_bad_options(scene, capsys):
    assert main(["video", scene, "--tracker", "magic"]) == 2
    assert "unknown tracker 'magic'" in capsys.readouterr().err
    assert main(["video", scene, "--tracker", "tracks"]) == 2
    assert "needs a file" in capsys.readouterr().err
    assert main(["video", scene, "--tracker", "motion", "--classes", "car"]) == 2
    assert "--classes needs" in capsys.readouterr().err
    assert main(["video", scene, "--gap", "-1"]) == 2
    assert capsys.readouterr().err == "chunkwise: error: --gap must be a number in [0, inf), got -1.0\n"
    assert main(["video", scene, "--pad", "inf"]) == 2
    assert "--pad must be a number in [0, inf), got inf" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        get_tracker("nope")


def test_malformed_mot_line_cli(scene, tmp_path, capsys):
    mot = tmp_path / "m.txt"
    mot.write_text("1,1,1,1,1,1,1\n2,1,1,1\n")
    assert main(["video", scene, "--tracker", f"tracks:{mot}"]) == 2
    assert f"{mot}: line 2:" in capsys.readouterr().err


def test_ultralytics_missing_names_the_extra(scene, tmp_path):
    try:
        import ultralytics  # noqa: F401

        pytest.skip("ultralytics is installed")
    except ImportError:
        pass
    info = probe(scene)
    with pytest.raises(MissingDependencyError, match=r"video-yolo"):
        next(UltralyticsTracker(str(tmp_path / "yolo.pt")).track(info))


def test_ultralytics_missing_cli(scene, capsys):
    try:
        import ultralytics  # noqa: F401

        pytest.skip("ultralytics is installed")
    except ImportError:
        pass
    assert main(["video", scene, "--tracker", "ultralytics:yolo11n.pt"]) == 2
    err = capsys.readouterr().err
    assert "chunkwise[video-yolo]" in err and err.count("\n") == 1


def test_missing_input(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        clips(tmp_path / "none.mp4", tracker="motion")


# -- index and search ---------------------------------------------------------------------------------------------
def test_index_and_search_video(scene, tmp_path, capsys):
    folder = tmp_path / "media"
    folder.mkdir()
    shutil.copy(scene, folder / "hall.mp4")
    write_mot(folder / "hall.mot.txt", SHAPES)
    (folder / "hall.vtt").write_text("WEBVTT\n\n00:00:07.300 --> 00:00:08.000\nThe yellow lamp drops to the floor.\n")
    (folder / "notes.md").write_text("# Notes\n\nThe keeper cleans the lens on foggy days.\n")
    db = str(tmp_path / "v.db")
    assert main(["index", str(folder / "hall.mp4"), str(folder / "notes.md"), "--db", db, "-q"]) == 0
    assert main(["search", "yellow lamp drops", "--db", db, "-k", "1", "--format", "jsonl"]) == 0
    hit = json.loads(capsys.readouterr().out.splitlines()[0])
    assert hit["source"].endswith("hall.mp4") and hit["strategy"] == "video"
    assert hit["start_time"] == pytest.approx(180 / FPS) and hit["end_time"] == pytest.approx(231 / FPS)
    assert hit["metadata"]["video"] == {"start_frame": 180, "end_frame": 230, "track_ids": [3], "classes": ["object"]}
    assert main(["search", "yellow lamp drops", "--db", db, "-k", "1"]) == 0
    assert "0:07.2-0:09.2  frames 180-230 ids 3" in capsys.readouterr().out


def test_chunk_command_gives_the_clips(scene, tmp_path, capsys):
    video = tmp_path / "yard.mp4"
    shutil.copy(scene, video)
    write_mot(tmp_path / "yard.mot.txt", SHAPES)
    assert main(["chunk", str(video)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["start_frame"], r["end_frame"], r["track_ids"]) for r in rows] == [(20, 120, [1, 2]), (180, 230, [3])]
    assert all(r["strategy"] == "video" for r in rows)


def test_unchanged_video_is_recognised_by_its_file_hash_before_tracking(scene, tmp_path, monkeypatch, fake_embedder):
    """A no-op re-index must not decode or track a video again: that is where all its time goes."""
    from chunkwise.retrieval import Index
    from chunkwise.store.memory import MemoryStore
    from chunkwise.video.trackers import MotionTracker

    folder = tmp_path / "media"
    folder.mkdir()
    shutil.copy(scene, folder / "hall.mp4")
    (folder / "notes.md").write_text("# Notes\n\nThe keeper cleans the lens on foggy days.\n")
    calls = []
    real = MotionTracker.track

    def counting(self, info, classes=None):
        calls.append(info.path)
        yield from real(self, info, classes)

    monkeypatch.setattr(MotionTracker, "track", counting)
    monkeypatch.setattr("chunkwise.video.trackers.detector_available", lambda: False)  # auto: motion
    with Index(store=MemoryStore(), embedder=fake_embedder) as ix:
        first = ix.add([str(folder)])
        assert (first.indexed, len(calls)) == (2, 1)
        again = ix.add([str(folder)])
        assert (again.indexed, again.skipped, len(calls)) == (0, 2, 1)  # the tracker was not called
        # a subtitle file beside it changes the clip text: the video (and the new .vtt) are read again
        (folder / "hall.vtt").write_text("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nA red square.\n")
        changed = ix.add([str(folder)])
        assert (changed.indexed, len(calls)) == (2, 2)
        assert ix.add([str(folder)]).skipped == 3 and len(calls) == 2


# -- the motion tracker on what real footage does ------------------------------------------------------------------
def spans(chunks):
    return [(c.start_frame, c.end_frame) for c in chunks]


def near(found, truth, frames=2):
    return len(found) == len(truth) and all(
        abs(a - x) <= frames and abs(b - y) <= frames for (a, b), (x, y) in zip(found, truth)
    )


@pytest.mark.timeout(120)
def test_an_object_standing_still_stays_one_object_and_leaves_no_ghost(tmp_path):
    """Someone walks in, stands still for 10 s and walks on; a second one arrives 1.6 s after the first
    left. A background model that learns the still object splits the first visit, and the ghost it leaves
    where the object stood joins the second visit."""
    shapes = [
        Shape(10, 330, x=20, y=80, vx=2, size=40, stop=(50, 299)),
        Shape(370, 420, x=250, y=60, vx=-2, color=(40, 40, 230)),
    ]
    video = write_video(tmp_path / "still.mp4", shapes, 440)
    chunks = clips(video, tracker="motion")
    assert near(spans(chunks), [(10, 330), (370, 420)]), spans(chunks)
    assert [len(c.track_ids) for c in chunks] == [1, 1]
    assert "moves right, stops for 10 s, leaves at 0:13.2" in chunks[0].text  # said where it waited


@pytest.mark.timeout(120)
def test_whole_frame_light_changes_are_not_objects(tmp_path):
    """Auto-exposure dims the whole frame while nothing is there, then the light changes colour at once;
    a square crossing during a second dip gives the one clip, ending when the square does."""

    def gain(f):
        dip = 1.0 - 0.4 * max(0.0, 1 - abs(f - 50) / 25) - 0.4 * max(0.0, 1 - abs(f - 200) / 25)
        colour = (1.5, 1.0, 0.6) if f >= 110 else (1.0, 1.0, 1.0)
        return [dip * c for c in colour]

    video = write_video(tmp_path / "light.mp4", [Shape(180, 220, x=30, y=100, vx=3)], 250, gain=gain)
    chunks = clips(video, tracker="motion")
    assert near(spans(chunks), [(180, 220)]), spans(chunks)


@pytest.mark.timeout(60)
def test_an_object_seen_in_pieces_is_one_object(tmp_path):
    """A shape the subtractor sees as two blobs (a gap through it) is one object, in the IDs and the text."""
    video = write_video(tmp_path / "pieces.mp4", [Shape(20, 120, x=20, y=80, vx=2, size=40, split=5)], 150)
    chunks = clips(video, tracker="motion")
    assert near(spans(chunks), [(20, 120)]), spans(chunks)
    assert len(chunks[0].track_ids) == 1 and ": 1 object" in chunks[0].text


@pytest.mark.timeout(60)
def test_clip_text_says_where_objects_enter_and_leave_and_how_they_move(tmp_path):
    """Clips are found by what happens in them: the edge an object comes in by and goes out by, its
    direction, how long it stays and how big it is."""
    crossing = Shape(20, 90, x=0, y=100, vx=4.1, size=40)  # from the left edge to the right edge
    video = write_video(tmp_path / "cross.mp4", [crossing], 110)
    (chunk,) = clips(video, tracker="motion")
    assert (
        ": 1 object. object 1 enters at 0:00.8 from the left, moves right, leaves at 0:03.6 to the right" in chunk.text
    )
    assert "s in view, medium)" in chunk.text


def test_clip_text_counts_classes_from_tracks(scene, tmp_path):
    mot = tmp_path / "cls.txt"  # MOT16 ground truth: column 8 is the class (1 pedestrian, 3 car)
    mot.write_text(
        "".join(
            f"{f},{tid},{10 + f},50,40,30,1,{cls},1\n" for f in range(21, 60) for tid, cls in ((1, 3), (2, 3), (3, 1))
        )
    )
    (chunk,) = clips(scene, tracker=f"tracks:{mot}")
    assert (
        ": 3 objects (2 cars, 1 pedestrian). 2 cars and a pedestrian enter at the upper left. "
        "car 1 enters at 0:00.8 at the upper left, moves right"
    ) in chunk.text


@pytest.mark.timeout(30)
def test_unchanged_check_never_opens_a_fifo(tmp_path):
    """The hash before loading must not block on a FIFO that took an indexed video's name."""
    import os

    from chunkwise.video.document import VideoDocument, unchanged_video

    fifo = tmp_path / "hall.mp4"
    os.mkfifo(fifo)
    marker = type("M", (), {"content_hash": "x", "complete": True})()
    assert unchanged_video(fifo, {VideoDocument(text="", source=str(fifo)).id: marker}) is None


@pytest.mark.timeout(120)
def test_an_object_in_the_first_frame_leaves_no_ghost(tmp_path):
    """A car parked in the first frame drives off after 1.6 s; two more events follow, each 5 s after the
    last. The first frame is the background, so where the car stood differs from it once the car is gone:
    that ghost must become background, not an object that "stays in place" and holds one clip open over all
    three events. A square that is there from the first frame to the last and never moves is background."""
    shapes = [
        Shape(0, 70, x=200, y=100, vx=3, stop=(0, 40), color=(200, 200, 210)),
        Shape(200, 260, x=20, y=60, vx=3),
        Shape(380, 440, x=20, y=160, vx=3, color=(40, 40, 230)),
        Shape(0, 479, x=100, y=200, vx=0, size=20, color=(30, 160, 30)),
    ]
    video = write_video(tmp_path / "parked.mp4", shapes, 480)
    chunks = clips(video, tracker="motion")
    # the parked car is an object from the frame it starts moving (41): before, it is the background
    assert near(spans(chunks), [(41, 70), (200, 260), (380, 440)]), spans(chunks)
    assert [len(c.track_ids) for c in chunks[1:]] == [1, 1]
    assert "stays in place" not in " ".join(c.text for c in chunks)


@pytest.mark.timeout(120)
def test_a_person_standing_in_the_first_frame_then_leaving_is_its_own_event(tmp_path):
    """Someone stands in view from the first frame, walks off at 2 s, and 3 s later another visit starts:
    two clips (the ghost of where they stood must not join the second visit)."""
    shapes = [
        Shape(0, 90, x=120, y=80, vx=-3, size=36, stop=(0, 50), color=(230, 200, 60)),
        Shape(165, 260, x=20, y=150, vx=2.5, color=(40, 40, 230)),
    ]
    video = write_video(tmp_path / "standing.mp4", shapes, 290)
    chunks = clips(video, tracker="motion")
    assert near(spans(chunks), [(51, 90), (165, 260)]), spans(chunks)
    assert chunks[1].track_ids and len(chunks[1].track_ids) == 1


def _write_with_preroll(path, pre: int = 8, n: int = 50):
    """An MP4 whose first ``pre`` frames have negative times: its edit list hides them (a source cut from a
    longer recording without re-encoding). Frame ``i`` is grey level ``4 * i``."""
    from fractions import Fraction

    import av
    import numpy as np

    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt, stream.gop_size = 64, 48, "yuv420p", 25
        stream.options = {"preset": "ultrafast", "tune": "zerolatency", "crf": "10"}
        for i in range(-pre, n):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), (4 * i) % 256, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return str(path)


def _grey_levels(path):
    import av

    with av.open(path) as c:
        return [int(round(f.to_ndarray(format="gray").mean())) for f in c.decode(video=0)]


def test_stream_copy_honours_edit_lists(tmp_path):
    """The source's keyframe is 8 frames before its first shown frame: a copy from it must not show those
    frames, nor report a negative keyframe time; a copy from a later start hides its lead the same way."""
    source = _write_with_preroll(tmp_path / "preroll.mp4")
    assert probe(source).n_frames == 50 and _grey_levels(source)[0] < 3
    spans = [(0, 0.0, 1.0), (1, 1.2, 1.8)]
    from chunkwise.video.cut import ClipCutter

    results = ClipCutter(tmp_path / "out", mode="copy").cut(source, spans)
    for r, (_, start, end) in zip(results, spans):
        assert r.mode == "copy" and r.start_time == start and r.lead == 0 and r.preroll > 0
        assert "-0." not in r.describe() and "frame-exact" in r.describe()
        levels = _grey_levels(r.path)
        first = round(start * FPS)
        assert len(levels) == round((end - start) * FPS)
        assert abs(levels[0] - 4 * first) <= 3 and abs(levels[-1] - 4 * (first + len(levels) - 1)) <= 3
