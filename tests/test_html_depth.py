"""Deeply nested HTML is bounded before parsing: HTML parsers take time quadratic in the nesting depth
(40,000 nested <div> took 6 CPU-s in lexbor alone, 200,000 ran for minutes). Tags deeper than
MAX_HTML_DEPTH are dropped, their text kept, with one warning; a real page passes through untouched."""

from __future__ import annotations

import pytest

from chunkwise.formats.html import html_to_document
from chunkwise.formats.html_depth import MAX_HTML_DEPTH, bound_nesting


@pytest.mark.timeout(120)  # unbounded, the 200,000-deep page parses for many minutes: a hang, not a wait
@pytest.mark.parametrize(
    "n",
    [
        40_000,
        pytest.param(200_000, marks=[pytest.mark.slow, pytest.mark.timeout(300)]),
    ],  # 200,000: about 5 s in main mode (2 cores)
)
@pytest.mark.parametrize("mode", ["full", "main"])
def test_deeply_nested_divs_are_one_document_with_a_warning(mode, n):
    html = "<html><body>" + "<div>" * n + "<p>deep text here</p>" + "</div>" * n + "<p>after it</p></body></html>"
    doc = html_to_document(html, "deep.html", mode=mode)
    assert "deep text here" in doc.text and "after it" in doc.text
    assert any("nest" in w and f"{MAX_HTML_DEPTH}" in w for w in doc.metadata["warnings"])


def test_the_bound_keeps_text_and_structure_above_the_limit():
    inner = "<section><h2>Title</h2><p>Body <b>bold</b></p></section>"
    html = "<div>" * (MAX_HTML_DEPTH + 50) + inner + "</div>" * (MAX_HTML_DEPTH + 50)
    out, deepest = bound_nesting(html)
    assert deepest == MAX_HTML_DEPTH + 53
    again, depth = bound_nesting(out)
    assert again is out and depth == MAX_HTML_DEPTH  # nothing deeper left
    assert out.count("<div>") == out.count("</div>") == MAX_HTML_DEPTH
    text = lambda h: "".join(part.split(">")[-1] for part in h.split("<"))  # noqa: E731
    assert text(out) == text(html)  # every character of text kept


@pytest.mark.parametrize(
    "html",
    [
        "<html><body>" + "<p>one<p>two<li>x<li>y" * 2000 + "</body></html>",  # optional end tags do not nest
        "<div>" + "<br><img src=x><input>" * 2000 + "</div>",  # void elements
        "<script>" + "<div>" * 5000 + "</script><p>x</p>",  # script text is not markup
        "<!-- " + "<div>" * 5000 + " --><p>x</p>",
        "<div>" * 100 + "</div>" * 100 + "</span>" * 5000,  # stray end tags
    ],
)
def test_real_shapes_are_not_counted_as_nesting(html):
    out, deepest = bound_nesting(html)
    assert out is html and deepest <= 101
