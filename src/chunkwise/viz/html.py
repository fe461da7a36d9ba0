"""The self-contained HTML view of one document chunked by 1-4 strategies.

Layout: one column per strategy, side by side: its numbers, the distance curve (semantic strategies), the
chunk-size histogram and the document text with every chunk coloured. Hovering a chunk shows its card:
index, tokens against ``max_tokens``, offsets, pages or time range, section and why the chunk ends there.
The columns scroll together (the text at the top of one is kept at the top of the others, by character
offset: each column wraps its own cut marks), since comparing strategies means reading the same passage in
each; a checkbox above them turns it off.

The text is rendered in Python (it reads without scripts; the text content of a column is exactly the
document text: cut marks are drawn by CSS, not characters). Chunk details and figures travel as one JSON
block; ``viz.js`` unpacks the single embedded (gzip-compressed) copy of plotly.js, draws the plots with it
and shows the hover cards.
:func:`render_columns` is the part the web app reuses; :func:`render_report` wraps it in a page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ..document import Document
from ..formats.walk import shown_name
from .model import CAUSES, StrategyView
from .plots import distance_figure, plotly_js_gzip_base64, size_figure

#: chunk background colours (cycled); adjacent chunks never share one
PALETTE_SIZE = 8
MAX_COLUMNS = 4


def asset(name: str) -> str:
    """A file of ``chunkwise/viz/static`` (the report's CSS and script)."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def segments(text: str, chunks: Sequence[dict[str, Any]]) -> list[tuple[int, int, list[int]]]:
    """``(start, end, covering chunk numbers)`` pieces covering the whole text, cut at every chunk edge;
    overlapping chunks give pieces covered by two chunks, text between chunks pieces covered by none."""
    found = {0, len(text)}
    for c in chunks:
        found.add(c["start"])
        found.add(c["end"])
    edges = sorted(e for e in found if 0 <= e <= len(text))
    out = []
    for a, b in zip(edges, edges[1:]):
        if b > a:
            out.append((a, b, [i for i, c in enumerate(chunks) if c["start"] <= a and c["end"] >= b]))
    return out


def render_text(text: str, chunks: Sequence[dict[str, Any]]) -> str:
    """The document as HTML spans, one class per chunk colour; the first piece of each chunk carries
    ``data-first`` and the last ``data-cut`` (its cause), where CSS draws the cut mark."""
    starts = {c["start"]: i for i, c in enumerate(chunks)}
    ends: dict[int, int] = {}
    for i, c in enumerate(chunks):
        ends[c["end"]] = i
    out = []
    for a, b, cover in segments(text, chunks):
        piece = html.escape(text[a:b])
        if not cover:
            out.append(piece)
            continue
        first = cover[-1]  # the latest chunk colours an overlap; the card lists all of them
        attrs = [
            f'class="chunk c{first % PALETTE_SIZE}{" overlap" if len(cover) > 1 else ""}"',
            f'data-chunks="{" ".join(map(str, cover))}"',
        ]
        if a in starts and starts[a] in cover:
            attrs.append(f'data-first="{starts[a]}"')
        if b in ends and ends[b] in cover:
            attrs.append(f'data-cut="{html.escape(chunks[ends[b]].get("cause") or "")}"')
        out.append(f"<span {' '.join(attrs)}>{piece}</span>")
    return "".join(out)


def _stats(view: StrategyView) -> str:
    tokens = sorted(c["token_count"] for c in view.chunks)
    median = tokens[len(tokens) // 2] if tokens else 0
    causes: dict[str, int] = {}
    for c in view.chunks:
        causes[c["cause"]] = causes.get(c["cause"], 0) + 1
    params = ", ".join(f"{k}={v}" for k, v in view.to_dict()["params"].items() if v not in (None, 0, "", False))
    cause_text = ", ".join(f"{n} {html.escape(k)}" for k, n in sorted(causes.items(), key=lambda kv: -kv[1]))
    return (
        f'<p class="params">{html.escape(params)}</p>'
        f'<p class="stats"><b class="n-chunks">{len(view.chunks)}</b> chunks · median {median} tokens · '
        f"largest {tokens[-1] if tokens else 0} / {view.max_tokens} · cuts: {cause_text} · "
        f"{view.seconds:.2f}s</p>"
    )


def render_columns(doc: Document, views: Sequence[StrategyView]) -> tuple[str, dict[str, Any]]:
    """The side-by-side columns (HTML) and the JSON data their script needs (chunk cards and figures)."""
    views = list(views)[:MAX_COLUMNS]
    cols: list[str] = []
    data: dict[str, Any] = {"strategies": [], "causes": CAUSES}
    figures = [distance_figure(view) for view in views]
    for s, (view, dist) in enumerate(zip(views, figures)):
        cards = [
            {
                k: c[k]
                for k in (
                    "index",
                    "start",
                    "end",
                    "token_count",
                    "page_start",
                    "page_end",
                    "section",
                    "start_time",
                    "end_time",
                    "speakers",
                    "cause",
                    "where",
                )
            }
            for c in view.chunks
        ]
        data["strategies"].append(
            {
                "label": view.label,
                "max_tokens": view.max_tokens,
                "chunks": cards,
                "breakpoints": view.breakpoints,
                "figures": {"distance": dist, "sizes": size_figure(view)},
            }
        )
        plots = (
            f'<div class="plot plot-distance" id="plot-distance-{s}" data-breakpoints="{len(view.breakpoints)}"></div>'
            if dist
            # a column beside one with a distance curve keeps its place empty, so every column's text
            # starts at the same height and the same passage sits side by side
            else (
                '<div class="plot plot-none"><p class="info">no distance curve: this strategy does not cut '
                "between sentence embeddings</p></div>"
                if any(figures)
                else ""
            )
        )
        plots += f'<div class="plot plot-sizes" id="plot-sizes-{s}"></div>'
        cols.append(
            f'<section class="column" data-strategy="{html.escape(view.label)}" data-index="{s}">'
            f"<h2>{html.escape(view.label)}</h2>{_stats(view)}{plots}"
            f'<div class="doc" data-chunks="{len(view.chunks)}">{render_text(doc.text, view.chunks)}</div>'
            f"</section>"
        )
    sync = (
        (
            '<label class="info sync"><input type="checkbox" class="sync-scroll" checked> scroll the columns '
            "together (the text at the top of one is kept at the top of the others)</label>"
        )
        if len(views) > 1
        else ""
    )
    body = f'{sync}<div class="columns n{len(views)}">{"".join(cols)}</div>'
    return body, data


def _inline(js: str) -> str:
    """Script text safe inside ``<script>``: a ``</script`` in a string literal would end the element."""
    return js.replace("</script", "<\\/script")


def _legend() -> str:
    items = "".join(
        f'<li><i class="cut-key" data-cut="{k}"></i><b>{k}</b>: {html.escape(v)}</li>' for k, v in CAUSES.items()
    )
    return f'<details class="legend"><summary>Why a chunk ends (the mark after it)</summary><ul>{items}</ul></details>'


def render_report(doc: Document, views: Sequence[StrategyView], title: str | None = None) -> str:
    """A complete HTML page: no network, works from disk. plotly.js is embedded once, gzip-compressed
    (see :func:`~chunkwise.viz.plots.plotly_js_gzip_base64`); ``viz.js`` unpacks it before drawing."""
    body, data = render_columns(doc, views)
    name = shown_name(doc.source)
    title = title or f"chunkwise: {name}"
    info = f"{len(doc.text):,} characters"
    if doc.pages:
        info += f" · {len(doc.pages)} pages"
    if doc.cues:
        info += f" · {len(doc.cues)} cues"
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{asset('viz.css')}</style></head><body>"
        f'<header><h1>{html.escape(name)}</h1><p class="info">{info} · hover a chunk for its details</p>'
        f"{_legend()}</header><main>{body}</main>"
        '<div id="card" class="card" hidden></div>'
        f'<script type="application/json" id="viz-data">{payload}</script>'
        f'<script type="application/gzip;base64" id="plotly-gz">{plotly_js_gzip_base64()}</script>'
        f"<script>{_inline(asset('viz.js'))}</script>"
        "</body></html>\n"
    )


__all__ = ["render_report", "render_columns", "render_text", "segments"]
