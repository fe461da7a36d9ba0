"""The clip rule on track records (pure logic), the MOTChallenge reader, and real MOTChallenge ground truth
checked against a second, independent computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import ConfigError, InputError
from chunkwise.video import clips_from_tracks, read_mot
from chunkwise.video.rule import ClipRule
from chunkwise.video.tracks import Detection, group_frames

DATA = Path(__file__).parent / "data" / "mot"
FPS = 25


def spans(chunks):
    return [(c.start_frame, c.end_frame) for c in chunks]


def presence(ranges: dict[int, list[tuple[int, int]]]):
    """{track_id: [(first, last), ...]} -> (frame, track_id) records."""
    return [(f, tid) for tid, rs in ranges.items() for a, b in rs for f in range(a, b + 1)]


def test_open_join_close_exact():
    tracks = presence({1: [(10, 40)], 2: [(30, 60)], 3: [(200, 220)]})
    chunks = clips_from_tracks(tracks, FPS, gap=1.0)
    assert spans(chunks) == [(10, 60), (200, 220)]
    first = chunks[0]
    assert first.track_ids == [1, 2] and first.classes == ["object"]
    assert first.start_time == pytest.approx(10 / FPS) and first.end_time == pytest.approx(61 / FPS)
    assert "object 2 enters at 0:01.2" in first.text and "leaves at 0:01.6" in first.text


def test_absence_shorter_than_gap_does_not_split_and_longer_does():
    # object absent for 24 frames (< 25 = 1 s): one event; absent 25 frames: two
    assert spans(clips_from_tracks(presence({1: [(0, 9), (34, 50)]}), FPS, gap=1.0)) == [(0, 50)]
    assert spans(clips_from_tracks(presence({1: [(0, 9), (35, 50)]}), FPS, gap=1.0)) == [(0, 9), (35, 50)]
    # a new ID after the others left closes nothing if it comes within the gap
    assert spans(clips_from_tracks(presence({1: [(0, 9)], 2: [(20, 30)]}), FPS, gap=1.0)) == [(0, 30)]


def test_min_duration_pad_and_video_bounds():
    tracks = presence({1: [(5, 8)], 2: [(100, 149)]})
    assert spans(clips_from_tracks(tracks, FPS, min_duration=1.0)) == [(100, 149)]  # 4 frames dropped
    assert spans(clips_from_tracks(tracks, FPS, pad=0.4)) == [(0, 18), (90, 159)]  # 10 frames each side
    assert spans(clips_from_tracks(tracks, FPS, pad=0.4, n_frames=155)) == [(0, 18), (90, 154)]
    # min_duration is judged on the event itself, before padding
    assert spans(clips_from_tracks(tracks, FPS, pad=2.0, min_duration=1.0)) == [(50, 199)]


def test_max_duration_is_a_hard_cap_split_where_fewest_visible():
    # 1 and 3 overlap everywhere except frames 60..69 where only 2 is visible
    tracks = presence({1: [(0, 59)], 2: [(0, 119)], 3: [(70, 119)]})
    chunks = clips_from_tracks(tracks, FPS, max_duration=3.0)  # 75 frames
    assert spans(chunks) == [(0, 68), (69, 119)]  # the cut lands inside 60..69, where one object is visible
    assert all(c.end_frame - c.start_frame + 1 <= 75 for c in chunks)
    assert spans(chunks)[0][0] == 0 and spans(chunks)[-1][1] == 119
    assert "part 1 of a longer event" in chunks[0].text


def test_split_on_new_id():
    tracks = presence({1: [(0, 50)], 2: [(20, 60)], 3: [(40, 45)]})
    assert spans(clips_from_tracks(tracks, FPS)) == [(0, 60)]
    chunks = clips_from_tracks(tracks, FPS, split_on_new_id=True)
    assert spans(chunks) == [(0, 19), (20, 39), (40, 60)]
    assert [c.track_ids for c in chunks] == [[1], [1, 2], [1, 2, 3]]


def test_classes_filter_and_records():
    dets = [Detection(f, 1, cls="pedestrian") for f in range(10)] + [Detection(f, 2, cls="car") for f in range(50, 60)]
    assert spans(clips_from_tracks(dets, FPS, classes="car")) == [(50, 59)]
    assert spans(clips_from_tracks(dets, FPS, classes=["pedestrian", "car"])) == [(0, 9), (50, 59)]
    assert clips_from_tracks([], FPS) == []


def test_bad_parameters():
    with pytest.raises(ConfigError):
        clips_from_tracks([(0, 1)], 0)
    with pytest.raises(ConfigError):
        clips_from_tracks([(0, 1)], FPS, gap=-1)
    with pytest.raises(ConfigError):
        clips_from_tracks([(0, 1)], FPS, max_duration=0.01)  # under one frame
    with pytest.raises(InputError):
        clips_from_tracks([(-1, 1)], FPS)
    with pytest.raises(InputError):
        ClipRule().clips([(5, [Detection(5, 1)]), (3, [Detection(3, 1)])], FPS)


# -- property: the rule equals a brute-force reading of its definition ---------------------------------------
def reference_events(frames: set[int], gap_frames: int) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for f in sorted(frames):
        if out and f - out[-1][1] - 1 < gap_frames:
            out[-1][1] = f
        else:
            out.append([f, f])
    return [tuple(e) for e in out]


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 5), st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=4), max_size=5
    ),
    st.integers(1, 40),
    st.one_of(st.none(), st.integers(1, 90)),
)
def test_rule_matches_reference(ranges, gap_frames, cap):
    tracks = presence({tid: [(a, a + n) for a, n in rs] for tid, rs in ranges.items()})
    frames = {f for f, _ in tracks}
    chunks = clips_from_tracks(tracks, FPS, gap=gap_frames / FPS, max_duration=None if cap is None else cap / FPS)
    events = reference_events(frames, gap_frames)
    if cap is None:
        assert spans(chunks) == events
    else:
        assert all(c.end_frame - c.start_frame + 1 <= cap for c in chunks)
        # pieces of one event tile it exactly
        tiled = []
        for c in chunks:
            if tiled and c.start_frame == tiled[-1][1] + 1 and c.start_frame not in [e[0] for e in events]:
                tiled[-1] = (tiled[-1][0], c.end_frame)
            else:
                tiled.append((c.start_frame, c.end_frame))
        assert tiled == events
    for c in chunks:  # every ID in a clip is present in it, and every present ID is listed
        present = {t for f, t in tracks if c.start_frame <= f <= c.end_frame}
        assert set(c.track_ids) == present


# -- MOT reader -------------------------------------------------------------------------------------------------
def test_mot_formats(tmp_path):
    p = tmp_path / "gt.txt"
    p.write_text("# comment\n1,1,10,20,30,40,1,1,1\n2,1,10,20,30,40,0,3,1\n2,2,5,5,5,5,1,3,0.5\n\n")
    dets = read_mot(p)
    assert [(d.frame, d.track_id, d.cls) for d in dets] == [(0, 1, "pedestrian"), (1, 2, "car")]  # flag 0 skipped
    p.write_text("1,7,10,20,30,40,0.9,-1,-1,-1\n")
    assert read_mot(p)[0].cls == "object" and read_mot(p)[0].box == (10.0, 20.0, 30.0, 40.0)


@pytest.mark.parametrize(
    "bad, line",
    [
        ("1,1,10,20,30,40,1\n2,1,10,20\n", 2),
        ("1,1,10,20,30,40,1\n1,1,10,20,30,40,1\nx,1,1,1,1,1,1\n", 3),
        ("0,1,10,20,30,40,1\n", 1),
        ("1,-1,10,20,30,40,1\n", 1),
    ],
)
def test_malformed_mot_line_names_the_line(tmp_path, bad, line):
    p = tmp_path / "bad.txt"
    p.write_text(bad)
    with pytest.raises(InputError, match=rf"line {line}\b") as err:
        read_mot(p)
    assert str(p) in str(err.value)


def test_mot_missing_and_binary(tmp_path):
    with pytest.raises(InputError, match="no such tracks file"):
        read_mot(tmp_path / "nope.txt")
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(InputError):
        read_mot(tmp_path / "b.txt")


# -- real MOTChallenge ground truth vs an independent computation ---------------------------------------------
def independent(path: Path, gap_frames: int, cap: int | None):
    """Events and visible counts straight from the file with numpy (no chunkwise code)."""
    a = np.loadtxt(path, delimiter=",")
    a = a[a[:, 6] != 0]
    frames = a[:, 0].astype(int) - 1
    counts = np.bincount(frames)
    present = np.flatnonzero(counts)
    breaks = np.flatnonzero(np.diff(present) - 1 >= gap_frames)
    starts = np.r_[present[0], present[breaks + 1]]
    ends = np.r_[present[breaks], present[-1]]
    return list(zip(starts.tolist(), ends.tolist())), counts


@pytest.mark.parametrize("name", ["TUD-Campus-gt.txt", "TUD-Stadtmitte-gt.txt"])
@pytest.mark.parametrize("gap", [0.04, 0.2, 1.0])
def test_real_mot_ground_truth(name, gap):
    path = DATA / name
    gap_frames = max(1, round(gap * FPS))
    events, _ = independent(path, gap_frames, None)
    chunks = clips_from_tracks(read_mot(path), FPS, gap=gap)
    assert len(chunks) == len(events)
    assert [round(c.end_time - c.start_time, 6) for c in chunks] == [round((b - a + 1) / FPS, 6) for a, b in events]
    ids = set(np.loadtxt(path, delimiter=",")[:, 1].astype(int).tolist())
    assert set().union(*(c.track_ids for c in chunks)) == ids


@pytest.mark.parametrize("name", ["TUD-Campus-gt.txt", "TUD-Stadtmitte-gt.txt"])
def test_real_mot_max_duration_cuts_at_fewest_visible(name):
    path = DATA / name
    cap = 40  # frames (1.6 s at 25 fps)
    events, counts = independent(path, 25, None)
    chunks = clips_from_tracks(read_mot(path), FPS, gap=1.0, max_duration=cap / FPS)
    assert all(c.end_frame - c.start_frame + 1 <= cap for c in chunks)
    # expected pieces, computed here greedily from the numpy counts
    expected = []
    for a, b in events:
        while b - a + 1 > cap:
            window = np.arange(a + cap // 2, a + cap + 1)
            vis = counts[window] if window[-1] < len(counts) else np.r_[counts, 0][np.minimum(window, len(counts))]
            best = window[np.flatnonzero(vis == vis.min())[-1]]
            expected.append((a, int(best) - 1))
            a = int(best)
        expected.append((a, b))
    assert spans(chunks) == expected
    assert len(chunks) > len(events)


def test_group_frames_sorts_any_order():
    frames = group_frames([(5, 1), (1, 2), (5, 3)])
    assert [f for f, _ in frames] == [1, 5] and [d.track_id for d in frames[1][1]] == [1, 3]
