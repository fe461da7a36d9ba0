"""A tracker's fingerprint is part of a video's content key: pinned, so that a change to how a back-end
stores its parameters (they are dataclasses) cannot silently re-track every video already indexed."""

from __future__ import annotations

from chunkwise.video.trackers import DetectorTracker, MotionTracker, MotTracks, Tracker


def test_tracker_fingerprints_are_pinned():
    assert MotionTracker(width=400).fingerprint() == (
        "MotionTracker[('absorb', '1.0'), ('hold', '60.0'), ('lost_frames', 'None'), ('min_area', '0.0008'), "
        "('threshold', '25.0'), ('width', '400')]"
    )
    # the detector adds its weights' hash; the settings part is the base fingerprint
    assert Tracker.fingerprint(DetectorTracker(actors=["person", "dog"])) == (
        "DetectorTracker[('actors', \"('person', 'dog')\"), ('conf', '0.15'), ('high', '0.4'), ('lost', '2.0'), "
        "('sample_fps', '5.0'), ('start', '0.3'), ('threads', 'None'), ('window', '1.0')]"
    )
    assert MotTracks("a.mot.txt").fingerprint() == "MotTracks[('path', \"'a.mot.txt'\")]"


def test_trackers_compare_by_identity():
    """Two trackers with equal settings are two trackers (a back-end may hold a model or state)."""
    a, b = MotionTracker(), MotionTracker()
    assert a != b and len({a, b}) == 2
    assert a.fingerprint() == b.fingerprint()
