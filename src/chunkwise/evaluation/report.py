"""Presenting evaluation results: a terminal table, JSON, and a self-contained HTML report.

The HTML report is one file with inline CSS and SVG (no scripts, no fonts or libraries from the internet),
so it can be mailed, archived or opened on an air-gapped machine: the comparison table, recall against
tokens retrieved per strategy (the trade-off a chunk size really makes), and chunk-size histograms.
Tables fit the page: headers, run names and confidence intervals wrap (a name made of a run spec has no
spaces to wrap at), and each table sits in its own horizontal scroll container, so a table wider than the
page still never widens the page or hides its last columns past the edge.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .results import EvaluationReport, RunResult

#: (metric key, column title) of the main table; span metrics print as percentages like Chroma's table
MAIN_COLUMNS = (
    ("recall@5", "Recall@5"),
    ("precision@5", "Prec@5"),
    ("precision_omega", "PrecΩ"),
    ("iou@5", "IoU@5"),
    ("recall@10", "Recall@10"),
    ("iou@10", "IoU@10"),
    ("recall@min", "Recall@min"),
    ("iou@min", "IoU@min"),
)
EXTRA_COLUMNS = (
    ("recall_set@5", "Recall·set@5"),
    ("precision_set@5", "Prec·set@5"),
    ("iou_set@5", "IoU·set@5"),
    ("ndcg@10", "nDCG@10"),
    ("mrr", "MRR"),
)
PERCENT = {k for k, _ in MAIN_COLUMNS + EXTRA_COLUMNS} - {"ndcg@10", "mrr"}
NS_MARK = "≈"


def fmt(metric: str, value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric in PERCENT or metric.split("@")[0] in (
        "recall",
        "precision",
        "iou",
        "recall_set",
        "precision_set",
        "iou_set",
        "doc_recall",
    ):
        return f"{100 * value:.1f}"
    return f"{value:.3f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def baseline_marks(report: EvaluationReport, metric: str) -> dict[str, str]:
    """Per run, ``Δ vs the first run [CI]`` with ``≈`` where the difference is not significant."""
    out: dict[str, str] = {}
    if len(report.runs) < 2:
        return out
    base = report.runs[0].name
    scale = 100 if fmt(metric, 0.5) == "50.0" else 1
    for r in report.runs[1:]:
        c = report.comparison(base, r.name, metric)
        if c is None:
            continue
        # comparison stores base - run; show run - base
        # + 0.0 turns a negated 0.0 into 0.0: a bound at 0 printed "-0.0" read as excluding 0
        d, lo, hi = (-x * scale + 0.0 for x in (c.diff, c.hi, c.lo))
        mark = "" if c.significant else f" {NS_MARK}"
        out[r.name] = f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]{mark}"
    return out


def format_table(report: EvaluationReport) -> str:
    """The terminal report: the Chroma-style table, the corrected and document-level metrics, context."""
    k = report.k
    parts = [
        report.dataset_summary,
        f"embedder {report.embedder}; {report.queries} queries; "
        f"sizes in {report.count_tokenizer} tokens; span metrics in % (Chroma's arithmetic unless ·set)",
    ]
    marks = {m: baseline_marks(report, m) for m in ("recall@5", "iou@5")}
    headers = ["run", *[t for _, t in MAIN_COLUMNS]]
    rows = [[r.name, *[fmt(m, r.scores.get(m)) for m, _ in MAIN_COLUMNS]] for r in report.runs]
    parts += ["", _table(headers, rows)]
    headers = ["run", *[t for _, t in EXTRA_COLUMNS], f"doc R@{k}"]
    if any("pk" in r.scores for r in report.runs):
        headers += ["Pk", "WindowDiff"]
    rows = []
    for r in report.runs:
        row = [
            r.name,
            *[fmt(m, r.scores.get(m)) for m, _ in EXTRA_COLUMNS],
            fmt(f"doc_recall@{k}", r.scores.get(f"doc_recall@{k}")),
        ]
        if "Pk" in headers:
            row += [fmt("pk", r.scores.get("pk")), fmt("window_diff", r.scores.get("window_diff"))]
        rows.append(row)
    parts += ["", _table(headers, rows)]
    headers = ["run", "chunks", "tok/chunk", "median", "max", f"tok retrieved@{k}", "embed s", "embedded", "run s"]
    rows = [
        [
            r.name,
            str(r.stats["chunks"]),
            f"{r.stats['tokens_per_chunk_mean']:.0f}",
            f"{r.stats['tokens_per_chunk_median']:.0f}",
            str(r.stats["tokens_per_chunk_max"]),
            f"{r.stats[f'tokens_retrieved@{k}']:.0f}",
            f"{r.stats.get('embed_seconds', 0):.1f}",
            str(r.stats.get("texts_embedded", 0)),
            f"{r.stats.get('seconds', 0):.1f}",
        ]
        for r in report.runs
    ]
    parts += ["", _table(headers, rows)]
    if marks["recall@5"]:
        base = report.runs[0].name
        headers = ["run", f"ΔRecall@5 vs {base}", f"ΔIoU@5 vs {base}"]
        rows = [[r.name, marks["recall@5"].get(r.name, "-"), marks["iou@5"].get(r.name, "-")] for r in report.runs[1:]]
        parts += [
            "",
            _table(headers, rows),
            f"(paired bootstrap 95% CI over queries, points; {NS_MARK} = not significant)",
        ]
    if report.problems:
        parts += [
            "",
            f"{len(report.problems)} problem(s) in the dataset (skipped):",
            *[f"  {p}" for p in report.problems[:10]],
        ]
        if len(report.problems) > 10:
            parts.append(f"  ... and {len(report.problems) - 10} more (see --format json)")
    return "\n".join(parts)


def format_json(report: EvaluationReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=float)


# -- HTML ---------------------------------------------------------------------------------------------

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1150px;color:#222;
padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.88em;margin:.5em 0}
th,td{padding:.3em .5em;border-bottom:1px solid #e5e5e5;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;overflow-wrap:anywhere;min-width:10em;max-width:20em}
th{background:#f5f5f5;white-space:normal;vertical-align:bottom}td.best{font-weight:bold;background:#eef7ee}
td.ns,td.sig{white-space:normal;min-width:6.5em}
.ns{color:#999}.sig{color:#222}.muted{color:#666;font-size:.9em}
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.4em;border-radius:2px;vertical-align:-.05em}
.hists{display:flex;flex-wrap:wrap;gap:1em}.scroll{overflow-x:auto;max-width:100%}
table.wrap{table-layout:fixed;width:100%}table.wrap td,table.wrap th{white-space:normal;overflow-wrap:anywhere;
text-align:left;vertical-align:top;max-width:none}table.wrap th:nth-child(1){width:30%}
table.wrap th:nth-child(2){width:55%}
svg text{font-family:system-ui,sans-serif}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t <= hi + 1e-9:
        if t >= lo - 1e-9:
            ticks.append(round(t, 10))
        t += step
    return ticks


def curve_svg(runs: Sequence[RunResult], width: int = 760, height: int = 380) -> str:
    """Recall (Chroma) against mean tokens retrieved per query, one line per run, a point per n."""
    pad_l, pad_r, pad_t, pad_b = 60, 20, 20, 50
    pts = [(t, rec) for r in runs for (t, rec, _) in r.curve.values()]
    if not pts:
        return "<p class=muted>no retrieval curve</p>"
    xmax = max(t for t, _ in pts) * 1.05 or 1
    ymin = max(0.0, min(rec for _, rec in pts) - 0.05)
    ymax = min(1.0, max(rec for _, rec in pts) + 0.03)
    sx = lambda x: pad_l + (width - pad_l - pad_r) * x / xmax
    sy = lambda y: height - pad_b - (height - pad_t - pad_b) * (y - ymin) / max(ymax - ymin, 1e-9)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="recall against tokens retrieved">'
    ]
    for t in _nice_ticks(0, xmax):
        x = sx(t)
        out.append(
            f'<line x1="{x:.1f}" y1="{pad_t}" x2="{x:.1f}" y2="{height - pad_b}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{height - pad_b + 16}" font-size="11" text-anchor="middle">{t:g}</text>'
        )
    for t in _nice_ticks(ymin, ymax):
        y = sy(t)
        out.append(
            f'<line x1="{pad_l}" y1="{y:.1f}" x2="{width - pad_r}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{pad_l - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{100 * t:.0f}%</text>'
        )
    out.append(
        f'<text x="{(pad_l + width - pad_r) / 2}" y="{height - 10}" font-size="12" text-anchor="middle">'
        "mean tokens retrieved per query (n = 1, 2, 3, 4, 5, 6, 8, 10, 15, 20 chunks)</text>"
    )
    out.append(
        f'<text x="14" y="{(pad_t + height - pad_b) / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {(pad_t + height - pad_b) / 2})">recall</text>'
    )
    for i, r in enumerate(runs):
        color = PALETTE[i % len(PALETTE)]
        xy = [(sx(t), sy(rec), n) for n, (t, rec, _) in sorted(r.curve.items())]
        out.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in xy)
            + '"/>'
        )
        for x, y, n in xy:
            tip = f"{r.name}: n={n}, {r.curve[n][0]:.0f} tokens, recall {100 * r.curve[n][1]:.1f}%"
            radius = 4.5 if n == 5 else 3
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{color}"><title>{_esc(tip)}</title></circle>'
            )
    out.append("</svg>")
    return "".join(out)


def histogram_svg(
    run: RunResult, color: str, lo: int, hi: int, width: int = 360, height: int = 170, bins: int = 30
) -> str:
    """Histogram of chunk sizes (count tokenizer), on a shared x range so runs compare."""
    vals = np.asarray(run.chunk_tokens)
    counts, edges = np.histogram(vals, bins=bins, range=(lo, max(hi, lo + 1)))
    pad_l, pad_b, pad_t = 40, 32, 22
    cmax = max(int(counts.max()), 1)
    bw = (width - pad_l - 10) / bins
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="chunk sizes of {_esc(run.name)}">',
        f'<text x="{pad_l}" y="14" font-size="12">{_esc(run.name)[:60]}</text>',
    ]
    for i, c in enumerate(counts.tolist()):
        h = (height - pad_t - pad_b) * c / cmax
        x = pad_l + i * bw
        out.append(
            f'<rect x="{x:.1f}" y="{height - pad_b - h:.1f}" width="{max(bw - 1, 1):.1f}" height="{h:.1f}" '
            f'fill="{color}"><title>{edges[i]:.0f}–{edges[i + 1]:.0f} tokens: {c} chunks</title></rect>'
        )
    for t in _nice_ticks(lo, hi, 4):
        x = pad_l + (width - pad_l - 10) * (t - lo) / max(hi - lo, 1)
        out.append(f'<text x="{x:.1f}" y="{height - pad_b + 14}" font-size="10" text-anchor="middle">{t:g}</text>')
    out.append(
        f'<text x="{pad_l - 4}" y="{pad_t + 8}" font-size="10" text-anchor="end">{cmax}</text>'
        f'<text x="{pad_l - 4}" y="{height - pad_b}" font-size="10" text-anchor="end">0</text>'
        f'<text x="{(pad_l + width) / 2}" y="{height - 6}" font-size="10" text-anchor="middle">'
        f"tokens per chunk (median {run.stats['tokens_per_chunk_median']:.0f})</text></svg>"
    )
    return "".join(out)


def _html_table(report: EvaluationReport, cols, best, deltas=None, extra: bool = False) -> str:
    runs, k = report.runs, report.k
    h = ["<div class=scroll><table><tr><th>run</th>", *[f"<th>{_esc(t)}</th>" for _, t in cols]]
    if extra:
        h.append(f"<th>doc R@{k}</th><th>chunks</th><th>tok/chunk</th><th>tok retrieved@{k}</th>")
    if deltas and len(runs) > 1:
        h.append("<th>ΔRecall@5 vs first</th><th>ΔIoU@5 vs first</th>")
    h.append("</tr>")
    for i, r in enumerate(runs):
        color = PALETTE[i % len(PALETTE)]
        h.append(f'<tr><td><span class=swatch style="background:{color}"></span>{_esc(r.name)}</td>')
        for m, _ in cols:
            v = r.scores.get(m)
            cls = " class=best" if v is not None and len(runs) > 1 and v == best[m] else ""
            h.append(f"<td{cls}>{fmt(m, v)}</td>")
        if extra:
            h.append(
                f"<td>{fmt(f'doc_recall@{k}', r.scores.get(f'doc_recall@{k}'))}</td><td>{r.stats['chunks']}</td>"
                f"<td>{r.stats['tokens_per_chunk_mean']:.0f}</td><td>{r.stats[f'tokens_retrieved@{k}']:.0f}</td>"
            )
        if deltas and len(runs) > 1:
            for mk in deltas:
                v = mk.get(r.name, "baseline" if i == 0 else "-")
                cls = "ns" if NS_MARK in v else "sig"
                h.append(f"<td class={cls}>{_esc(v)}</td>")
        h.append("</tr>")
    h.append("</table></div>")
    return "".join(h)


def _shared_summary(report: EvaluationReport) -> str:
    """The dataset line of a report that is shared: its folder by :func:`~chunkwise.formats.walk.shown_name`,
    not the absolute path of this machine."""
    from ..formats.walk import shown_name

    path = str(report.dataset)
    summary = report.dataset_summary
    return shown_name(path) + summary[len(path) :] if summary.startswith(path) else summary


def format_html(report: EvaluationReport, title: str = "chunkwise evaluation") -> str:
    runs = report.runs
    cols = [*MAIN_COLUMNS, *EXTRA_COLUMNS]
    best = {m: max(r.scores.get(m, -1) for r in runs) for m, _ in cols}
    marks = baseline_marks(report, "recall@5")
    marks_iou = baseline_marks(report, "iou@5")
    h = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_esc(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p class=muted>{_esc(_shared_summary(report))}<br>embedder <b>{_esc(report.embedder)}</b>; "
        f"{report.queries} queries; chunk sizes in {_esc(report.count_tokenizer)} tokens; span metrics in %, "
        "computed with Chroma's published arithmetic (·set = corrected set arithmetic).</p>",
        "<h2>Comparison</h2>",
    ]
    h.append(_html_table(report, MAIN_COLUMNS, best, deltas=(marks, marks_iou)))
    if len(runs) > 1:
        h.append(
            f"<p class=muted>Δ: difference to the first run in points with its paired-bootstrap 95% "
            f"confidence interval over the same queries; {NS_MARK} and grey = not significant.</p>"
        )
    h.append("<h2>Corrected (set) span metrics, document ranking, context</h2>")
    h.append(_html_table(report, EXTRA_COLUMNS, best, extra=True))
    h += _html_by_document(runs)
    h += _html_sizes(runs)
    h += _html_cost(runs, report.k)
    h += _html_boundaries(runs)
    h += _html_comparisons(report)
    if report.generated:
        h.append(_generated_html(report.generated))
    if report.problems:
        h.append(f"<h2>Dataset problems ({len(report.problems)}, skipped)</h2><ul>")
        h += [f"<li>{_esc(p)}</li>" for p in report.problems[:200]]
        h.append("</ul>")
    h.append("</body></html>\n")
    return "".join(h)


def _html_by_document(runs) -> list[str]:
    """The per-document table (none when no run has per-document scores): a section of :func:`format_html`,
    apart so the report reads as its list of sections."""
    by_doc = [r for r in runs if r.stats.get("by_document")]
    if not by_doc:
        return []
    docs = list(by_doc[0].stats["by_document"])
    h = ["<h2>By document (Recall@5 / IoU@5)</h2><div class=scroll><table><tr><th>run</th>"]
    h += [f"<th>{_esc(d)} ({by_doc[0].stats['by_document'][d]['queries']})</th>" for d in docs]
    h.append("</tr>")
    for r in by_doc:
        h.append(f"<tr><td>{_esc(r.name)}</td>")
        for d in docs:
            v = r.stats["by_document"].get(d)
            h.append(f"<td>{fmt('recall@5', v['recall@5'])} / {fmt('iou@5', v['iou@5'])}</td>" if v else "<td>-</td>")
        h.append("</tr>")
    h.append("</table></div>")
    return h


def _html_sizes(runs) -> list[str]:
    """The recall-against-tokens curve and the chunk size histograms (one shared range): a section of
    :func:`format_html`."""
    h = [
        "<h2>Recall against tokens retrieved</h2>",
        "<p class=muted>Each point retrieves n chunks; larger dots are n = 5. Up and to the left is better: "
        "more of the answer for fewer tokens in the prompt.</p>",
        curve_svg(runs),
    ]
    all_tokens = [t for r in runs for t in r.chunk_tokens]
    lo, hi = (min(all_tokens), max(all_tokens)) if all_tokens else (0, 1)
    h += ["<h2>Chunk sizes</h2><div class=hists>"]
    h += [histogram_svg(r, PALETTE[i % len(PALETTE)], lo, hi) for i, r in enumerate(runs)]
    h.append("</div>")
    return h


def _html_cost(runs, k: int) -> list[str]:
    """The context and cost table (chunk counts and sizes, tokens retrieved, seconds): a section of
    :func:`format_html`."""
    h = [
        "<h2>Context and cost</h2><div class=scroll><table><tr><th>run</th><th>chunks</th><th>mean</th><th>median</th><th>max</th>"
        f"<th>tokens retrieved@{k}</th><th>chunking s</th><th>embedding s</th><th>texts embedded</th></tr>"
    ]
    for r in runs:
        s = r.stats
        h.append(
            f"<tr><td>{_esc(r.name)}</td><td>{s['chunks']}</td><td>{s['tokens_per_chunk_mean']:.1f}</td>"
            f"<td>{s['tokens_per_chunk_median']:.0f}</td><td>{s['tokens_per_chunk_max']}</td>"
            f"<td>{s[f'tokens_retrieved@{k}']:.0f}</td><td>{s.get('chunk_seconds', 0):.1f}</td>"
            f"<td>{s.get('embed_seconds', 0):.1f}</td><td>{s.get('texts_embedded', 0)}</td></tr>"
        )
    h.append("</table></div>")
    return h


def _html_boundaries(runs) -> list[str]:
    """Pk and WindowDiff per run (none without gold boundaries): a section of :func:`format_html`."""
    if not any(r.boundary_scores for r in runs):
        return []
    h = [
        "<h2>Boundaries (lower is better)</h2><div class=scroll><table><tr><th>run</th><th>Pk</th><th>WindowDiff</th></tr>"
    ]
    for r in runs:
        h.append(
            f"<tr><td>{_esc(r.name)}</td><td>{fmt('pk', r.scores.get('pk'))}</td>"
            f"<td>{fmt('window_diff', r.scores.get('window_diff'))}</td></tr>"
        )
    h.append("</table></div>")
    return h


def _html_comparisons(report: EvaluationReport) -> list[str]:
    """Every pairwise difference with its interval (none for one run): a section of :func:`format_html`."""
    if not report.comparisons:
        return []
    h = [
        "<h2>All pairwise differences</h2><div class=scroll><table><tr><th>a − b</th><th>metric</th><th>Δ</th><th>95% CI</th></tr>"
    ]
    for c in report.comparisons:
        scale = 1 if c.metric in ("ndcg@10", "mrr") else 100
        cls = "sig" if c.significant else "ns"
        h.append(
            f"<tr class={cls}><td>{_esc(c.a)} − {_esc(c.b)}</td><td>{_esc(c.metric)}</td>"
            f"<td>{scale * c.diff:+.2f}</td><td>[{scale * c.lo:+.2f}, {scale * c.hi:+.2f}]"
            f"{'' if c.significant else ' ' + NS_MARK}</td></tr>"
        )
    h.append("</table></div>")
    return h


def _generated_html(generated: dict[str, Any]) -> str:
    """The questions of a generated dataset beside the excerpts they were made from: numbers from generated
    questions are only as good as the questions, so the report shows them."""
    m = generated.get("manifest") or {}
    how = ", ".join(f"{k} {_esc(m[k])}" for k in ("method", "model", "seed") if m.get(k) not in (None, ""))
    shown, total = generated.get("questions") or [], generated.get("total", 0)
    out = [
        f"<h2>Generated questions ({_esc(how) or 'chunkwise questions'})</h2>",
        f"<p class=muted>{len(shown)} of {total} shown, each beside the exact excerpt it was made from"
        + (f"; known bias: {_esc(m['bias'])}" if m.get("bias") else "")
        + "</p><table class=wrap><tr><th>question</th><th>excerpt</th><th>document</th></tr>",
    ]
    for q in shown:
        out.append(f"<tr><td>{_esc(q['query'])}</td><td>{_esc(q['excerpt'])}</td><td>{_esc(q['doc'])}</td></tr>")
    out.append("</table>")
    return "".join(out)


def format_leaderboard(result, k: int) -> str:
    """The ``tune`` leaderboard as a terminal table: the tuned metric first, then the usual context
    columns, each metric once (the tuned one is not repeated under another spelling)."""
    titles = dict(MAIN_COLUMNS + EXTRA_COLUMNS)
    context = [m for m in ("recall@5", "iou@5", "ndcg@10") if m != result.metric]
    headers = [
        "#",
        "parameters",
        titles.get(result.metric, result.metric),
        *(titles[m] for m in context),
        f"tok retrieved@{k}",
        "chunks",
        "s",
    ]
    rows = []
    rank = 0
    for row in result.rows:
        params = " ".join(
            f"{a}={json.dumps(b) if not isinstance(b, str) else b}"
            for a, b in row.params.items()
            if a not in result.fixed
        )
        if row.result is None:
            rows.append(["-", params or "(defaults)", "error", *([""] * (len(headers) - 4)), (row.error or "")[:60]])
            continue
        rank += 1
        s = row.result.scores
        mark = (
            " *"
            if row is result.best
            else (" (over budget)" if row.over_budget else f" (fails {', '.join(row.failed)})" if row.failed else "")
        )
        rows.append(
            [
                f"{rank}{mark}",
                params or "(defaults)",
                fmt(result.metric, row.score),
                *(fmt(m, s[m]) for m in context),
                f"{s[f'tokens_retrieved@{k}']:.0f}",
                str(row.result.stats["chunks"]),
                f"{row.result.stats['seconds']:.1f}",
            ]
        )
    return _table(headers, rows)
