"""Options shared by every command that chunks (chunk, inspect, index, eval, tune): one definition, one parser.

``add_chunking_options`` declares them; ``strategy_from_args`` builds the strategy. ``add_input_options``
declares the loader and folder-walk flags; ``input_options`` turns them into the keyword options of
:func:`chunkwise.formats.load` (one loader call for every command) and ``walk_options`` into the walk's
(``include``, ``exclude``, ``all_files``). Strategy-specific
parameters not covered by a dedicated flag are passed as ``--param NAME=VALUE`` (repeatable), and
``--config FILE`` (JSON written by ``chunkwise tune``) supplies a strategy and parameters as defaults.
"""

from __future__ import annotations

import argparse
import re
import warnings
from typing import Any

from ..deprecation import ChunkwiseDeprecationWarning, deprecation_message
from ..errors import ConfigError
from ..strategies import DEFAULT_STRATEGY, STRATEGY_NAMES
from ..validation import Interval, check_flag


class DeprecatedFlag(argparse.Action):
    """An old flag kept as a hidden alias: it still works and warns (once, on stderr) naming the new one.

    ``add_argument("--old", action=DeprecatedFlag, new="--new", dest="old", type=int)``.
    """

    def __init__(self, option_strings, dest, new: str, **kw):
        self.new = new
        kw["help"] = argparse.SUPPRESS
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        warnings.warn(deprecation_message(option_string, self.new), ChunkwiseDeprecationWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


#: a size limit in bytes (``--max-file-size``, ``--max-upload-size``)
SIZE_LIMIT = Interval(int, 1, None)


def parse_size(text: str, flag: str = "--max-file-size") -> int:
    """``"100MB"``, ``"512k"``, ``"2.5G"`` or plain bytes (units are powers of 1024), at least one byte;
    ``flag`` names it in the error."""
    m = _SIZE.match(str(text))
    if not m:
        raise ConfigError(f"{flag} expects a size like 100MB, 512KB or 1048576, got {text!r}")
    value = float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())
    return check_flag(int(value), flag, SIZE_LIMIT)


def add_walk_options(g: Any) -> None:
    """The folder-walk flags (``--include``, ``--exclude``, ``--code``, ``--all-files``, ``--no-gitignore``) of
    :func:`walk_options`."""
    g.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="when walking folders, only files matching this glob, e.g. '*.md' or "
        "'docs/**/*.pdf' (repeatable); one naming an extension ('*.svg') also reads "
        "files of a type chunkwise would skip",
    )
    g.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="when walking folders, skip files matching this glob (repeatable)",
    )
    g.add_argument(
        "--code",
        action="store_true",
        help="when walking folders, read source files too (.py, .js, .ts, .go, .rs, .java, .c, .cpp...), "
        "cut at functions and classes by `auto` (the code extra)",
    )
    g.add_argument(
        "--all-files",
        action="store_true",
        help="when walking folders, read every file, not only the supported types (text, "
        "Markdown, HTML, PDF, subtitles, video; extension-less text files), and what .gitignore ignores",
    )
    g.add_argument(
        "--no-gitignore",
        dest="gitignore",
        action="store_false",
        help="when walking folders in a git work tree, read what its .gitignore files ignore too "
        "(build/, *.egg-info/...); the other walk rules still apply",
    )


def add_input_options(p: argparse.ArgumentParser, globs: bool = True) -> None:
    """Flags for reading documents: globs (``globs=False`` for commands that read a dataset folder), format,
    encoding, size limit, HTML mode and the cleaning switches. One definition for every command."""
    g = p.add_argument_group("input")
    if globs:
        add_walk_options(g)
    g.add_argument(
        "--input-format",
        default=None,
        choices=(
            "text",
            "markdown",
            "rst",
            "code",
            "html",
            "pdf",
            "vtt",
            "srt",
            "sbv",
            "notebook",
            "table",
            "docx",
            "pptx",
        ),
        help="read every input as this format instead of detecting it",
    )
    g.add_argument(
        "--encoding",
        default=None,
        help="decode text inputs with this encoding (default: UTF-8; invalid bytes are replaced and reported)",
    )
    g.add_argument(
        "--max-file-size", default="100MB", metavar="SIZE", help="refuse files larger than this (default 100MB)"
    )
    g.add_argument(
        "--pdf-password",
        default=None,
        metavar="PASSWORD",
        help="password for encrypted PDFs (the empty password is always tried)",
    )
    g.add_argument(
        "--html-mode",
        choices=("main", "full"),
        default=None,
        help="HTML: main (default) keeps the page's main content (trafilatura); full keeps all visible text",
    )
    c = p.add_argument_group("cleaning (PDF and plain text)")
    c.add_argument("--no-clean", action="store_true", help="switch off every cleaning step")
    c.add_argument(
        "--no-clean-headers", action="store_true", help="keep running page headers/footers and page numbers (PDF)"
    )
    c.add_argument("--no-dehyphenate", action="store_true", help="keep words hyphenated across line breaks")
    c.add_argument("--no-reflow", action="store_true", help="keep line-wrapped paragraphs as they are")
    c.add_argument("--no-normalize-whitespace", action="store_true", help="keep whitespace as extracted")


def add_setting_flags(p: Any, *names: str) -> None:
    """The flags of run settings ``names`` (:class:`~chunkwise.pipeline.config.PipelineConfig` fields), each
    spelled, typed and explained by its one declaration (``setting(...)``). Every flag defaults to ``None``
    ("not given"), so a ``--config`` file's value stands unless the flag overrides it; the default shown in
    ``--help`` is the declaration's. A switch stores the value that is not the default (``--late``: true,
    ``--dense``: hybrid false)."""
    from ..pipeline.config import SETTINGS

    for name in names:
        st = SETTINGS[name]
        flag = st.flag_name(name)
        if not flag:
            raise ValueError(f"setting {name!r} has no flag of its own")
        if st.switch:
            p.add_argument(
                flag, dest=name, action="store_const", const=not st.default, default=None, help=st.flag_help(name)
            )
            continue
        kind = type(st.default) if isinstance(st.default, (int, float)) else str
        extra = {"choices": st.choices} if st.choices else {"metavar": st.metavar}
        p.add_argument(flag, dest=name, type=kind, default=None, help=st.flag_help(name), **extra)


def add_stage_flags(p: Any, *stages: str) -> None:
    """The flags of every run setting ``stages`` take that has a flag of its own (:func:`add_setting_flags`),
    and, with ``"search"``, the hidden ``--hybrid`` of old scripts (hybrid is the default now). A setting
    declared for these stages reaches every command built with this, with no flag written by hand."""
    from ..pipeline.config import SETTINGS, stage_names

    add_setting_flags(p, *(name for name in stage_names(*stages) if SETTINGS[name].flag_name(name)))
    if "search" in stages:
        p.add_argument("--hybrid", dest="hybrid_flag", action="store_true", help=argparse.SUPPRESS)


def settings_given(args: argparse.Namespace, *stages: str) -> dict[str, Any]:
    """The run settings of ``stages`` whose flags were given (``None``: not given); the old ``--hybrid`` is
    ``hybrid`` true, and with ``--dense`` a contradiction."""
    from ..pipeline.config import stage_names

    given = {name: getattr(args, name) for name in stage_names(*stages) if getattr(args, name, None) is not None}
    if "search" in stages and getattr(args, "hybrid_flag", False):
        if given.get("hybrid") is False:
            raise ConfigError("--dense and --hybrid contradict each other (hybrid is the default)")
        given["hybrid"] = True
    return given


def add_rerank_options(p: Any) -> None:
    """``--rerank SPEC`` and ``--rerank-depth N``: the second retrieval stage of ``search``, ``ask`` and
    ``eval`` (:mod:`chunkwise.retrieval.rerank`); given flags override a ``--config`` file's."""
    add_setting_flags(p, "rerank", "rerank_depth")


def walk_options(args: argparse.Namespace) -> dict[str, Any]:
    """The folder-walk keywords (``include``, ``exclude``, ``all_files``, ``code``, ``gitignore``) of :func:`chunkwise.formats.
    iter_documents` and ``Index.add`` from the flags of :func:`add_input_options`."""
    return {
        "include": list(getattr(args, "include", None) or []),
        "exclude": list(getattr(args, "exclude", None) or []),
        "all_files": bool(getattr(args, "all_files", False)),
        "code": bool(getattr(args, "code", False)),
        "gitignore": bool(getattr(args, "gitignore", True)),
    }


def input_options(args: argparse.Namespace) -> dict[str, Any]:
    """Loader keyword options (see :mod:`chunkwise.formats`) from the flags of :func:`add_input_options`."""
    opts: dict[str, Any] = {"max_bytes": parse_size(args.max_file_size)}
    if args.input_format:
        opts["format"] = args.input_format
    if args.encoding:
        import codecs

        try:
            codecs.lookup(args.encoding)
        except LookupError:
            raise ConfigError(f"unknown encoding {args.encoding!r}") from None
        opts["encoding"] = args.encoding
    if args.pdf_password is not None:
        opts["password"] = args.pdf_password
    if args.html_mode:
        opts["html_mode"] = args.html_mode
    if args.no_clean:
        opts["clean"] = False
    for flag in ("clean_headers", "dehyphenate", "reflow", "normalize_whitespace"):
        if getattr(args, f"no_{flag}"):
            opts[flag] = False
    return opts


#: the strategy parameters every strategy takes, as flags: (name, type, metavar)
SHARED_PARAM_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("max_tokens", int, "N"),
    ("min_tokens", int, "N"),
    ("overlap", int, "N"),
    ("tokenizer", str, "NAME"),
    ("respect_sections", int, "LEVEL"),
)


def strategies_epilog() -> str:
    """The epilog of ``chunk --help`` and ``viz --help``: :func:`.strategies.strategies_epilog`, whose module
    (and the strategies' parameter descriptions) is imported only when a help is printed, not by a run."""
    from .strategies import strategies_epilog as epilog

    return epilog()


def add_chunking_options(p: argparse.ArgumentParser, default_strategy: str = DEFAULT_STRATEGY) -> None:
    g = p.add_argument_group("chunking")
    g.add_argument(
        "--strategy",
        "-s",
        choices=STRATEGY_NAMES,
        default=None,
        help=f"chunking strategy (default: {default_strategy})",
    )
    from ..strategies.params import PARAM_HELP

    # the parameters every strategy shares: their help is the strategies' own (strategies/params.py), the
    # default the strategy's (`chunkwise strategies NAME` lists them)
    for name, kind, metavar in SHARED_PARAM_FLAGS:
        g.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=None,
            metavar=metavar,
            help=f"{PARAM_HELP[name]} (default: the strategy's, see `chunkwise strategies NAME`)",
        )
    g.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other strategy parameter, e.g. -p threshold_type=percentile -p buffer_size=0",
    )
    g.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help='JSON file with {"strategy": ..., "params": {...}} (as written by `chunkwise tune`)',
    )
    p.set_defaults(_default_strategy=default_strategy)


def parse_params(items: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        from ..strategies.factory import parse_value

        try:
            params[key.strip().replace("-", "_")] = parse_value(value.strip())
        except ConfigError as exc:
            raise ConfigError(f"--param {key.strip()}: {exc}") from None
    return params


def load_config(path: str) -> tuple[str | None, dict[str, Any], dict[str, Any]]:
    """Strategy name, strategy parameters and run settings of a ``--config`` file as ``chunkwise tune``
    writes it, read and checked as a :class:`~chunkwise.pipeline.PipelineConfig` (an unknown key or a bad
    value is one error naming the file). The run settings come back under their current names."""
    config = pipeline_config(path)
    return config.strategy, dict(config.params), config.to_mapping()["run"]


def pipeline_config(path: str):
    """The :class:`~chunkwise.pipeline.PipelineConfig` of a ``--config`` file."""
    from ..pipeline.config import PipelineConfig

    return PipelineConfig.load(path)


def strategy_params_from_args(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The strategy name and its parameters: --config first, then flags and --param override it."""
    name: str | None = None
    params: dict[str, Any] = {}
    if getattr(args, "config", None):
        name, params, _ = load_config(args.config)
    name = args.strategy or name or args._default_strategy
    for flag, _, _ in SHARED_PARAM_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            params[flag] = value
    params.update(parse_params(args.param))
    return name, params


def strategy_from_args(args: argparse.Namespace, embedder=None):
    """Build the strategy; semantic strategies get the global ``--embedder`` unless a parameter names one."""
    name, params = strategy_params_from_args(args)
    from ..strategies.factory import make_strategy

    return make_strategy(name, params, embedder)
