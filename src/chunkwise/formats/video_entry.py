"""The video input format's entry: its name, loader and file extensions, registered without importing the
video package (:mod:`chunkwise.registry` imports this module the first time a format is looked up, so a
command that chunks text does not load the video code, its dataclasses and its rules)."""

from __future__ import annotations

from . import register_format

#: file extensions read as video (decoded frame by frame: ``chunkwise.video.load_video``)
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts", ".wmv", ".flv")

register_format("video", "chunkwise.video:load_video", VIDEO_EXTENSIONS, streamed=True)
