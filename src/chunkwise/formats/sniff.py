"""What a text is, from the text itself: Markdown, a program or build file, JSON data, or prose.

Used where no extension says it (an extension-less file, standard input, a string given to ``chunk_text``
or to the LangChain/LlamaIndex adapters) and where the extension is wrong (JSON in a ``.txt`` file). One
rule for all of them, so the same Markdown gives the same chunks whichever way it comes in.

Markdown needs two kinds of Markdown mark (a heading, a fence, a table, a link, emphasis, a list), not
many more marks of reStructuredText (directives, roles, ``::``, ````literals````, ``~~~~`` adornments), and no
mark of a program or a configuration file: a ``Makefile``, a shell script or a YAML file has ``# comment``
lines that look like headings, so a shebang, a build file's name, make rules, two top-level imports or
definitions, a quarter of the lines reading as code (``;`` and ``{`` line ends...), or a third reading as
``key: value``/``key = value`` settings rule Markdown out.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from ..registry import lazy_regex

#: file names (without extension) that are build or configuration files, never documents
CODE_NAMES = frozenset(
    {
        "makefile",
        "gnumakefile",
        "dockerfile",
        "containerfile",
        "jenkinsfile",
        "vagrantfile",
        "rakefile",
        "gemfile",
        "procfile",
        "brewfile",
        "justfile",
        "snakefile",
        "cmakelists.txt",
    }
)
#: the Markdown extensions a source name may carry (an adapter's file path)
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"})

_HEAD = 8192
#: how a JSON object or array starts (checked when the sniff window cut the text before it could parse)
_JSON_START = lazy_regex(r'(?:\{\s*"[^"\n]{0,200}"\s*:|\[\s*(?:[{\["]|-?\d+(?:\.\d+)?\s*,|(?:true|false|null)\s*,))')
_ATX = lazy_regex(r"^ {0,3}#{1,6}[ \t]+\S.*$", re.MULTILINE)
_FENCE = lazy_regex(r"^ {0,3}(```|~~~)", re.MULTILINE)
_TABLE_DELIM = lazy_regex(r"^ {0,3}\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)
_LINK = lazy_regex(r"!?\[[^\]\n]+\]\([^)\s]+[^)\n]*\)")
_EMPHASIS = lazy_regex(r"(\*\*|__)\S[^\n]*?\S\1|`[^`\n]+`")
_LIST = lazy_regex(r"^ {0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+\S", re.MULTILINE)
_SETEXT = lazy_regex(r"^[^\n\s][^\n]*\n {0,3}(?:=+|-{2,})[ \t]*$", re.MULTILINE)
_MAKE_RULE = lazy_regex(r"^[\w.$(){}/%-]+[ \t]*:{1,2}(?:[ \t][^=\n]*)?\n\t", re.MULTILINE)
_MAKE_VAR = lazy_regex(r"^[A-Z_][A-Z0-9_]*[ \t]*[:?+]?=", re.MULTILINE)
_CODE_LINE = lazy_regex(
    r"^\s*(?:import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|#include\b|package \w|function \w|"
    r"(?:const|let|var) \w+ ?=|(?:public|private|static) \w|fi$|done$|esac$|then$|set -\w)"
    r"|[;{]\s*$",
    re.MULTILINE,
)

#: a top-level import or definition (not indented: an indented one may be a Markdown code block's example)
_TOP_CODE = lazy_regex(r"^(?:import [\w.]+|from [\w.]+ import |def \w+\(.*|class \w+[(:].*|async def \w+\(.*)$")
#: a configuration line: ``key: value``, ``key = value`` or a ``[table]`` header (YAML, TOML, INI)
_CONFIG_LINE = lazy_regex(r"^\s*(?:- )?[\w.\-\"']+\s*(?::(?:\s|$)|=\s*\S)|^\[[\w.\- \"]+\]\s*$")
#: reStructuredText: a directive, a link target, a role, a literal-block ``::`` or a title adornment of
#: a character Markdown never uses for headings
_RST_MARK = lazy_regex(
    r"^\.\. [\w:-]+::|^\.\. _[^:]+:|:[\w:-]+:`[^`]+`|::\s*$|^([~^\"'+*#])\1{3,}\s*$|``[^`\n]+``",
    re.MULTILINE,
)


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data[:_HEAD]
    return data[:_HEAD].decode("utf-8", "replace")


def is_code_name(name: str | None) -> bool:
    """Is ``name`` (a path) a build or configuration file that has no extension of its own (``Makefile``)?"""
    return bool(name) and PurePosixPath(str(name).replace("\\", "/")).name.lower() in CODE_NAMES


def looks_like_json(data: bytes | str) -> bool:
    """Does the text open as a JSON object or array (the first 8 KB parse, or parse up to where they stop)?"""
    head = _text(data).lstrip("\ufeff \t\r\n")
    if head[:1] not in ("{", "["):
        return False
    try:
        json.loads(head)
        return True
    except ValueError:
        pass
    truncated = len(head) >= _HEAD - 16 or (isinstance(data, (bytes, str)) and len(data) > _HEAD)
    return truncated and _JSON_START.match(head) is not None


def looks_like_notebook(data: bytes | str) -> bool:
    """Is the text a Jupyter notebook's JSON (an object with ``cells`` and ``cell_type`` or ``nbformat``)?"""
    head = _text(data).lstrip("\ufeff \t\r\n")
    return head.startswith("{") and '"cells"' in head and ('"cell_type"' in head or '"nbformat"' in head)


def looks_like_code(data: bytes | str, name: str | None = None) -> bool:
    """A program, script or build file rather than prose: a shebang, a build file's name, make rules, or
    at least a quarter of the non-blank lines reading as code (``import``, ``def``, ``;``/``{`` line ends)."""
    if is_code_name(name):
        return True
    text = _text(data).lstrip("\ufeff")
    if text.startswith("#!"):
        return True
    if len(_MAKE_RULE.findall(text)) >= 1 and len(_MAKE_VAR.findall(text)) + len(_MAKE_RULE.findall(text)) >= 2:
        return True
    from .markdown_lines import FRONT_MATTER

    m = FRONT_MATTER.match(text)
    lines = [ln for ln in text[m.end() if m else 0 :].split("\n") if ln.strip()]
    if not lines:
        return False
    in_fence = False
    code = top = config = 0
    for ln in lines:  # lines inside Markdown fences are a document's examples, not the document
        if _FENCE.match(ln):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        code += bool(_CODE_LINE.search(ln))
        top += bool(_TOP_CODE.match(ln))
        config += bool(_CONFIG_LINE.match(ln))
    return top >= 2 or code >= max(2, len(lines) // 4) or config >= max(3, len(lines) // 3)


def markdown_marks(text: str) -> int:
    """How many kinds of Markdown mark the text has (headings, fences, tables, links, emphasis or inline
    code, lists, setext headings; headings count twice when there are two or more)."""
    kinds = 0
    heads = len(_ATX.findall(text))
    kinds += 2 if heads >= 2 else 1 if heads else 0
    for pattern in (_TABLE_DELIM, _LINK, _EMPHASIS, _LIST, _SETEXT):
        if pattern.search(text):
            kinds += 1
    if len(_FENCE.findall(text)) >= 2:
        kinds += 1
    return kinds


def looks_like_markdown(data: bytes | str, name: str | None = None) -> bool:
    """Markdown by content: two marks of Markdown (:func:`markdown_marks`) and nothing that says code or
    data (:func:`looks_like_code`, :func:`looks_like_json`). A name ending in a Markdown extension decides."""
    if name and PurePosixPath(str(name)).suffix.lower() in MARKDOWN_SUFFIXES:
        return True
    text = _text(data)
    if looks_like_json(text) or looks_like_code(text, name):
        return False
    marks = markdown_marks(text)
    rst = len(_RST_MARK.findall(text))
    # setext titles, lists and emphasis are also reStructuredText's: with any mark of rst, one of the marks
    # only Markdown has (an ATX heading, a fence, a pipe table, an inline link) must be there too
    only_markdown = bool(_ATX.search(text) or _TABLE_DELIM.search(text) or _LINK.search(text))
    only_markdown = only_markdown or len(_FENCE.findall(text)) >= 2
    return marks >= 2 and (only_markdown or rst == 0) and rst < 2 * marks


__all__ = [
    "CODE_NAMES",
    "MARKDOWN_SUFFIXES",
    "is_code_name",
    "looks_like_code",
    "looks_like_json",
    "looks_like_markdown",
    "looks_like_notebook",
    "markdown_marks",
]
