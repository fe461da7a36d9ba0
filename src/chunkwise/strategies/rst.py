"""reStructuredText by structure: the ``markdown`` strategy's rules over rst's blocks.

Titles (found by docutils, :mod:`chunkwise.formats.rst`) start chunks and name their section, a title is never
the last thing in a chunk, and a directive with its body (``.. code-block::``, ``.. note::``) or a paragraph
with its literal block is one block, kept whole when it fits. Only the blocks differ from Markdown's; the
packing is :class:`~chunkwise.strategies.markdown.MarkdownChunker`'s.
"""

from __future__ import annotations

from ..formats.markdown_blocks import Block
from ..formats.rst import rst_blocks
from .markdown import MarkdownChunker


class RstChunker(MarkdownChunker):
    """Split at rst titles, pack whole blocks (directives with their bodies), sub-split with the recursive
    rules."""

    name = "rst"

    def blocks(self, text: str) -> list[Block]:
        return rst_blocks(text)


__all__ = ["RstChunker"]
