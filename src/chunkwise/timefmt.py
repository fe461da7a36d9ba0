"""One way to print a time position everywhere (chunk tables, search results, inspect, the HTML report).

Transcripts carry times in seconds; people read ``1:36:50.4`` (hours:minutes:seconds.tenths) or ``4:07.2``
under an hour. Every command formats through :func:`format_time` so the same moment looks the same.
"""

from __future__ import annotations


def format_time(seconds: float | None) -> str:
    """``5810.4 -> "1:36:50.4"``, ``247.25 -> "4:07.2"``, ``None -> "?"`` (tenths, rounded half to even)."""
    if seconds is None:
        return "?"
    tenths = int(round(float(seconds) * 10))
    sign = "-" if tenths < 0 else ""
    tenths = abs(tenths)
    s, t = divmod(tenths, 10)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h}:{m:02d}:{s:02d}.{t}" if h else f"{sign}{m}:{s:02d}.{t}"


def format_time_range(start: float | None, end: float | None) -> str:
    """``"1:36:50.4-1:37:02.0"``; empty when there is no time at all."""
    if start is None and end is None:
        return ""
    return f"{format_time(start)}-{format_time(end)}"


__all__ = ["format_time", "format_time_range"]
