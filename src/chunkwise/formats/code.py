"""Source code: the file as written, its language, and its definitions as nested sections (tree-sitter).

The document text is the source (line endings normalised); ``metadata["language"]`` is the language, from
the extension or, for a string or an unknown extension, from the content (:func:`guess_language`). With the
``code`` extra installed (``pip install 'chunkwise[code]'``: tree-sitter and the grammars below, all
offline wheels), the classes, functions and methods are sections, so a chunk's ``section`` is the enclosing
definition (``["Flask", "route"]``); without it the file is read the same and has no sections.

Folders do not read source files unless asked (``--code``, ``code=True``, or an ``--include`` naming the
extension): in a docs-and-code repository the code is often not what should be searched.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import Any

from ..document import Document, Section
from . import CODE_EXTENSIONS  # defined beside the other formats' extensions: a text run does not import this module
from .text import emit_warnings, read_source

#: language -> (module, function returning the grammar) of the ``code`` extra's grammar wheels
GRAMMARS = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

#: node types that are definitions: each is a section, named by its ``name`` (or ``type``, ``declarator``)
DEFINITIONS = frozenset(
    """function_definition class_definition decorated_definition function_declaration
    generator_function_declaration class_declaration abstract_class_declaration method_definition
    interface_declaration enum_declaration method_declaration constructor_declaration record_declaration
    function_item impl_item struct_item enum_item trait_item mod_item struct_specifier class_specifier
    namespace_definition type_declaration function_signature method_signature""".split()
)
#: node types that attach to the code after them (a docstring inside a body stays with its body anyway)
COMMENTS = frozenset({"comment", "line_comment", "block_comment"})

_GUESSES = [  # (language, patterns that each count one vote)
    (
        "python",
        [
            r"^(?:async\s+)?def \w+\(.*\)\s*(?:->.*)?:\s*$",
            r"^class \w+.*:\s*$",
            r"^(?:from \S+ )?import \w",
            r"^\s*self\.",
        ],
    ),
    ("go", [r"^package \w+\s*$", r"^func (?:\(.*?\) )?\w+\(", r":= "]),
    ("rust", [r"^\s*(?:pub )?fn \w+", r"\blet mut\b", r"^use \w+::", r"^impl\b"]),
    (
        "java",
        [
            r"^\s*(?:public|private|protected) (?:static )?(?:final )?(?:class|interface|void|\w+) \w+",
            r"^import java\.",
        ],
    ),
    (
        "typescript",
        [r"^\s*(?:export )?interface \w+", r":\s*(?:string|number|boolean)\b", r"^\s*(?:export )?type \w+ ="],
    ),
    ("javascript", [r"^\s*(?:export )?(?:async )?function\b", r"^\s*(?:const|let|var) \w+ = ", r"=>", r"require\("]),
    ("cpp", [r"^#include <\w+>\s*$", r"\bstd::", r"^\s*namespace \w+", r"^\s*template\s*<"]),
    ("c", [r"^#include [<\"]\w+\.h[>\"]", r"^\s*(?:static )?(?:int|void|char) \w+\(", r"\bmalloc\("]),
]


def guess_language(text: str, min_votes: int = 1) -> str | None:
    """The language ``text`` looks like (a shebang, else the most votes, at least ``min_votes``, of a few
    line patterns), or ``None``: for source code with no name or an unknown extension."""
    head = text[:20000]
    shebang = re.match(r"#!\S*?(?:env\s+)?(python|node|bash|sh)\b", head)
    if shebang:
        return {"node": "javascript", "sh": "bash"}.get(shebang.group(1), shebang.group(1))
    best, votes = None, min_votes - 1
    for language, patterns in _GUESSES:
        n = sum(bool(re.search(p, head, re.MULTILINE)) for p in patterns)
        if n > votes:
            best, votes = language, n
    return best


@functools.lru_cache(maxsize=16)
def parser_for(language: str) -> Any:
    """A tree-sitter parser for ``language``, or ``None`` (no grammar for it, or the ``code`` extra is
    not installed)."""
    if language not in GRAMMARS:
        return None
    module, attr = GRAMMARS[language]
    try:
        import importlib

        import tree_sitter

        grammar = getattr(importlib.import_module(module), attr)()
        return tree_sitter.Parser(tree_sitter.Language(grammar))
    except (ImportError, AttributeError, ValueError, TypeError):
        return None


_warned: set[str] = set()


def warn_no_grammar(language: str | None) -> None:
    """Say once per language why code is split by the recursive rules instead of at definitions."""
    key = language or "?"
    if key in _warned:
        return
    _warned.add(key)
    if language in GRAMMARS:
        why = f"the code extra is not installed (pip install 'chunkwise[code]'), so {language} code"
    else:
        why = f"no tree-sitter grammar for {language or 'this text (language unknown)'}, so it"
    warnings.warn(f"code strategy: {why} is split by the recursive rules with code separators", UserWarning, 3)


@dataclass(frozen=True)
class CodeTree:
    """A parsed source text: the tree, and byte offsets (tree-sitter's) mapped to character offsets."""

    root: Any
    text: str
    _char_of: tuple[int, ...] | None  # None: ASCII, bytes are characters

    def pos(self, byte: int) -> int:
        return byte if self._char_of is None else self._char_of[byte]

    def span(self, node) -> tuple[int, int]:
        return self.pos(node.start_byte), self.pos(node.end_byte)


@functools.lru_cache(maxsize=4)
def parse_code(text: str, language: str | None) -> CodeTree | None:
    """The tree of ``text`` in ``language``, or ``None`` when there is no parser for it."""
    parser = parser_for(language) if language else None
    if parser is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    char_of = None
    if len(data) != len(text):
        table = [0] * (len(data) + 1)
        b = 0
        for i, ch in enumerate(text):
            n = len(ch.encode("utf-8", "surrogatepass"))
            for k in range(n):
                table[b + k] = i
            b += n
        table[b] = len(text)
        char_of = tuple(table)
    return CodeTree(parser.parse(data).root_node, text, char_of)


def definition_name(node) -> str | None:
    """The name of a definition node (``name``, an impl's ``type``, a C declarator's identifier)."""
    if node.type in ("decorated_definition", "export_statement"):
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        return definition_name(inner) if inner is not None else None
    if node.type == "type_declaration":  # Go: type X struct {...}
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        return definition_name(spec) if spec is not None else None
    for field in ("name", "type", "declarator"):
        child = node.child_by_field_name(field)
        while child is not None and child.type not in ("identifier", "field_identifier", "type_identifier"):
            if child.type in ("qualified_identifier", "scoped_identifier", "destructor_name", "operator_name"):
                break
            nxt = child.child_by_field_name("declarator") or child.child_by_field_name("name")
            if nxt is None:
                break
            child = nxt
        if child is not None and child.text:
            return child.text.decode("utf-8", "replace")
    return None


def is_definition(node) -> bool:
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration")
        return inner is not None and inner.type in DEFINITIONS
    return node.type in DEFINITIONS


def leading_comments_start(tree: CodeTree, node) -> int:
    """Where ``node`` starts with the comments right above it (no blank line between) taken along."""
    start = tree.pos(node.start_byte)
    prev = node.prev_sibling
    while prev is not None and prev.type in COMMENTS:
        gap = tree.text[tree.pos(prev.end_byte) : start]
        if gap.count("\n") > 1:
            break
        start = tree.pos(prev.start_byte)
        prev = prev.prev_sibling
    return start


def code_sections(text: str, language: str | None) -> list[Section]:
    """One section per definition (class, function, method...), nested, sorted by start; its heading is
    the definition's first line, its path the chain of enclosing definition names."""
    tree = parse_code(text, language)
    if tree is None:
        return []
    sections: list[Section] = []

    def walk(node, path: tuple[str, ...]) -> None:
        for child in node.named_children:
            here = path
            if is_definition(child) and child.type not in ("decorated_definition", "export_statement"):
                name = definition_name(child)
                if name:
                    here = (*path, name)
                    a = leading_comments_start(tree, child)
                    if child.parent is not None and child.parent.type in ("decorated_definition", "export_statement"):
                        a = min(a, leading_comments_start(tree, child.parent))
                    b = tree.pos(child.end_byte)
                    line_end = text.find("\n", tree.pos(child.start_byte))
                    h_end = b if line_end < 0 else min(b, line_end)
                    sections.append(Section(a, b, here, len(here), tree.pos(child.start_byte), h_end))
            walk(child, here)

    walk(tree.root, ())
    sections.sort(key=lambda s: (s.start, s.level))
    return sections


def load_code(data: bytes, source: str, **options) -> Document:
    """A source file: its text as written, its language, and its definitions as sections."""
    from pathlib import Path

    text, smap, warns = read_source(data, source, options.get("encoding"))
    language = CODE_EXTENSIONS.get(Path(source).suffix.lower()) or guess_language(text)
    tree = parse_code(text, language)
    if tree is not None and tree.root.has_error:
        bad = _first_error(tree)
        warns.append(f"{language} syntax error near line {bad}; the definitions around it may be cut as text")
    sections = code_sections(text, language)
    emit_warnings(source, warns)
    return Document(
        text,
        source=source,
        sections=sections,
        title=Path(source).name if source and not source.startswith("<") else None,
        metadata={"format": "code", "language": language, "warnings": warns},
        source_map=smap,
    )


def _first_error(tree: CodeTree) -> int:
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0] + 1
        if node.has_error:
            stack.extend(reversed(node.children))
    return 1


__all__ = [
    "CODE_EXTENSIONS",
    "GRAMMARS",
    "CodeTree",
    "code_sections",
    "guess_language",
    "load_code",
    "parse_code",
    "parser_for",
]
