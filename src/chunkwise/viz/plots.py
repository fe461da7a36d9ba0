"""The two charts of a chunking, as Plotly figures: the distance curve and the chunk-size histogram.

Plotly (``pip install 'chunkwise[viz]'``) builds and validates the figures in Python; the report embeds
``plotly.min.js`` from the installed package once and draws every figure with it, so the HTML file needs no
network. :func:`plotly_js` is that script; :func:`distance_figure` and :func:`size_figure` return figure
dictionaries (``{"data": [...], "layout": {...}}``) ready for ``Plotly.newPlot``.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .model import CAUSES, StrategyView

#: marker colour per cause of a cut
CAUSE_COLORS = {
    "threshold": "#d62728",
    "objective": "#9467bd",
    "max_tokens": "#ff7f0e",
    "section": "#2ca02c",
    "end": "#7f7f7f",
    "rule": "#1f77b4",
}


def _go():
    try:
        import plotly.graph_objects as go
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise ConfigError("the report needs plotly: pip install 'chunkwise[viz]'") from None
    return go


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The minified plotly.js shipped inside the plotly Python package (read once per process)."""
    _go()
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # pragma: no cover - a broken plotly install
        raise ConfigError(f"cannot read plotly.js from the plotly package ({exc})") from None


@lru_cache(maxsize=1)
def plotly_js_gzip_base64() -> str:
    """plotly.js gzip-compressed and base64-encoded (4.8 MB -> about 1.9 MB): the report unpacks it in the
    browser with ``DecompressionStream``, which keeps a report e-mailable."""
    import base64
    import gzip

    return base64.b64encode(gzip.compress(plotly_js().encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def plotly_js_path() -> Path:
    """Where ``plotly.min.js`` lies (the web app serves it from there)."""
    _go()
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _layout(title: str, x: str, y: str, height: int = 260) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 13}},
        "height": height,
        "margin": {"l": 48, "r": 12, "t": 36, "b": 40},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "closest",
        "template": "plotly_white",
    }


def _line(go, xs: list, ys: list, name: str, line: dict[str, Any], text: list[str] | None = None):
    """One line trace of the distance figure; hovering shows ``text`` (when given), ``name`` and the value."""
    hover = ("%{text}<br>" if text is not None else "") + name + " %{y:.4f}<extra></extra>"
    extra = {} if text is None else {"text": text}
    return go.Scatter(x=xs, y=ys, mode="lines", name=name, line=line, hovertemplate=hover, **extra)


def distance_figure(view: StrategyView) -> dict[str, Any] | None:
    """Distance to the next sentence per sentence gap, the threshold as a dashed line and one marker per
    breakpoint (coloured by its cause); ``None`` for strategies without distances."""
    rows = view.rows
    if not rows or len(rows) < 2:
        return None
    go = _go()
    gaps = rows[:-1]
    xs = list(range(len(gaps)))
    dist = [r["distance_to_next"] for r in gaps]
    hover = [f"gap {k}: after “{_short(r['sentence'])}”" for k, r in enumerate(gaps)]
    fig = go.Figure()
    fig.add_trace(_line(go, xs, dist, "distance", {"color": "#4c78a8", "width": 1.5}, hover))
    thr = [r["threshold"] for r in gaps]
    if any(t is not None for t in thr):
        fig.add_trace(_line(go, xs, thr, "threshold", {"color": "#d62728", "dash": "dash", "width": 1.2}))
    bp = view.breakpoints
    # a cut at a section edge has no distance: draw it on the axis so every breakpoint has its marker
    ys = [gaps[k]["distance_to_next"] if gaps[k]["distance_to_next"] is not None else 0.0 for k in bp]
    causes = [gaps[k]["cause"] or "rule" for k in bp]
    fig.add_trace(
        go.Scatter(
            x=bp,
            y=ys,
            mode="markers",
            name="breakpoints",
            marker={
                "size": 9,
                "color": [CAUSE_COLORS.get(c, "#333") for c in causes],
                "line": {"width": 1, "color": "#fff"},
            },
            text=[f"cut after gap {k}: {c} ({CAUSES.get(c, c)})" for k, c in zip(bp, causes)],
            hovertemplate="%{text}<extra></extra>",
        )
    )
    fig.update_layout(**_layout(f"{view.label}: distance per sentence gap", "sentence gap", "cosine distance"))
    return _plain(fig)


def size_figure(view: StrategyView) -> dict[str, Any]:
    """Histogram of tokens per chunk with ``max_tokens`` as a vertical line."""
    go = _go()
    tokens = [c["token_count"] for c in view.chunks]
    size = max(1, view.max_tokens // 16)
    # bins end at max_tokens + 0.5, so a chunk of exactly max_tokens is drawn left of the cap line
    end = view.max_tokens + 0.5
    start = end - size * math.ceil(end / size)
    fig = go.Figure(
        go.Histogram(
            x=tokens,
            xbins={"start": start, "end": end, "size": size},
            marker={"color": "#72b7b2"},
            name="chunks",
            hovertemplate="%{x} tokens: %{y} chunks<extra></extra>",
        )
    )
    fig.add_vline(
        x=view.max_tokens,
        line={"color": "#d62728", "dash": "dash"},
        annotation_text=f"max_tokens={view.max_tokens}",
        annotation_position="top left",
    )
    fig.update_layout(**_layout(f"{view.label}: tokens per chunk ({len(tokens)} chunks)", "tokens", "chunks"))
    fig.update_xaxes(range=[0, view.max_tokens * 1.08])
    return _plain(fig)


def _plain(fig) -> dict[str, Any]:
    """The figure as plain JSON data (no numpy arrays, no typed-array encoding)."""
    return json.loads(fig.to_json())


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


__all__ = ["plotly_js", "plotly_js_gzip_base64", "plotly_js_path", "distance_figure", "size_figure", "CAUSE_COLORS"]
