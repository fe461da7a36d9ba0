"""The CLI starts like a small tool: ``--version`` without the package's dependencies, and a command that
imports only its own module. (What start-up costs is measured in benchmarks/bench_startup.py.)"""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys

import pytest

from chunkwise.cli import COMMAND_HELP, COMMAND_MODULES, COMMANDS, build_parser, command_of, main


def registered(module: str) -> set[str]:
    """The commands ``chunkwise.cli.MODULE.register`` adds to a parser."""
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(f"chunkwise.cli.{module}").register(sub)
    return set(sub.choices)


def test_the_command_table_is_what_the_modules_register():
    by_module: dict[str, set[str]] = {}
    for command, module in COMMANDS.items():
        by_module.setdefault(module, set()).add(command)
    assert set(by_module) == set(COMMAND_MODULES)
    for module in COMMAND_MODULES:
        assert registered(module) == by_module[module], module


def test_the_overview_shows_what_the_modules_register():
    def lines(parser: argparse.ArgumentParser) -> dict[str, str | None]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return {a.dest: a.help for a in sub._choices_actions}

    assert lines(build_parser(overview=True)) == lines(build_parser()) == COMMAND_HELP


def test_help_imports_no_command_module():
    code = (
        "import sys; from chunkwise.cli import main\n"
        "try: main(['--help'])\nexcept SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('chunkwise.cli.', "
        "'chunkwise.strategies', 'chunkwise.llm', 'pymilvus'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "usage: chunkwise" in out and out.splitlines()[-1] == "[]", out


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["search", "q"], "search"),
        (["--embedder", "static", "index", "docs/"], "index"),
        (["--cache-dir", "search", "ask", "q"], "ask"),  # an option's value is not the command
        (["-q", "--no-cache", "eval", "ds"], "eval"),
        (["--help"], None),
        ([], None),
        (["nonsense"], None),
    ],
)
def test_command_of(argv, command):
    assert command_of(argv) == command


def test_one_command_parser_parses_like_the_whole_one():
    argv = ["--embedder", "static", "search", "lens", "-k", "3", "--db", "x.db"]
    assert vars(build_parser("search").parse_args(argv)).keys() == vars(build_parser().parse_args(argv)).keys()
    assert build_parser("search").parse_args(argv).k == 3


def test_version_imports_nothing_heavy():
    code = (
        "import sys; from chunkwise.cli import main; main(['--version']); "
        "print(sorted(m for m in ('numpy', 'chunkwise.strategies', 'pymilvus', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["chunkwise 0.1.0", "[]"]


def test_import_chunkwise_is_lazy_and_complete():
    code = (
        "import sys, chunkwise; heavy = 'numpy' in sys.modules; "
        "missing = [n for n in chunkwise.__all__ if getattr(chunkwise, n, None) is None]; print(heavy, missing)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "False []"


def test_version_and_help_exit_cleanly(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip().startswith("chunkwise ")
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(command in out for command in COMMANDS)


def test_one_default_strategy_everywhere():
    """CLI commands, the Python API, the index, the web app and the adapters fall back on one strategy."""
    import inspect

    from chunkwise import api
    from chunkwise.cli.options import strategy_params_from_args
    from chunkwise.pipeline.config import PipelineConfig
    from chunkwise.retrieval.add import add_request
    from chunkwise.strategies import DEFAULT_STRATEGY

    for command in ("chunk", "index", "viz", "summarize"):
        args = build_parser(command).parse_args([command, "x"])
        assert strategy_params_from_args(args)[0] == DEFAULT_STRATEGY, command
    for fn in (api.chunk, api.chunk_file, api.chunk_text):
        assert inspect.signature(fn).parameters["strategy"].default == DEFAULT_STRATEGY, fn
    # Index.add's strategy is its configuration's unless one is named: PipelineConfig's default
    assert PipelineConfig().strategy == DEFAULT_STRATEGY == add_request(None, None, None, {}).strategy
    pytest.importorskip("langchain_text_splitters")
    from chunkwise.integrations.langchain import ChunkwiseTextSplitter

    assert ChunkwiseTextSplitter().strategy.name == DEFAULT_STRATEGY
    pytest.importorskip("llama_index.core")
    from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

    assert ChunkwiseNodeParser().strategy == DEFAULT_STRATEGY
    assert ChunkwiseNodeParser.from_strategy()._get_strategy().name == DEFAULT_STRATEGY


def test_chunk_imports_neither_retrieval_nor_stores_nor_models(tmp_path):
    """``chunkwise chunk`` of a text file with the default strategy imports what chunking needs: no index,
    store, engine, embedder, ONNX runtime or numpy (a small text's tokens are counted in Python; what it
    costs: benchmarks/bench_startup.py)."""
    small = tmp_path / "small.txt"
    small.write_text("The keeper trims the wick.\n\nShips pass in the storm.\n", encoding="utf-8")
    code = (
        "import sys, io, contextlib\nfrom chunkwise.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    rc = main(['chunk', {str(small)!r}])\n"
        "heavy = ('chunkwise.retrieval', 'chunkwise.store', 'chunkwise.embeddings', 'chunkwise.strategies.semantic',"
        " 'onnxruntime', 'milvus_lite', 'pyarrow', 'pandas', 'bm25s', 'numpy', 'statistics', 'gzip',"
        # what a plain text needs none of: the code and table loaders, the cl100k pre-tokeniser, the strategies'
        # help and parameter descriptions (imported when a help is printed), the Markdown parser's blocks (the
        # line rules are in markdown_lines), importlib.util (package look-ups), the sentence segmenter (the
        # recursive splitter imports it when a paragraph needs it)
        " 'chunkwise.formats.code', 'chunkwise.formats.table', 'chunkwise.segmentation.tiktoken_bpe',"
        " 'chunkwise.segmentation.cl100k_encoder', 'chunkwise.cli.strategies', 'chunkwise.strategies.param_docs',"
        " 'chunkwise.formats.markdown_blocks', 'importlib.util', 'chunkwise.segmentation.sentences')\n"
        "print(rc, out.getvalue().count('\\n'), sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.splitlines()[-1] == "0 1 []", out


def test_chunk_of_a_small_text_loads_no_retrieval_engine_or_model_runtime(tmp_path):
    """``chunkwise chunk`` of a small ASCII text: nothing of the retrieval package (the progress line is
    ``chunkwise.progress``), no pymilvus, Milvus Lite or onnxruntime, and not the Rust tokenizer either:
    MiniLM's tokens are counted by the Python WordPiece (segmentation/wordpiece.py). All of these are
    installed here, so the test fails as soon as a change makes ``chunk`` import one of them again."""
    small = tmp_path / "small.txt"
    small.write_text("The keeper trims the wick.\n\nShips pass in the storm.\n", encoding="utf-8")
    code = (
        "import sys, io, json, contextlib, importlib.util\nfrom chunkwise.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    rc = main(['chunk', {str(small)!r}])\n"
        "installed = all(importlib.util.find_spec(m) for m in ('pymilvus', 'onnxruntime', 'milvus_lite', 'tokenizers'))\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pymilvus', 'onnxruntime', 'milvus_lite',"
        " 'tokenizers') or m.split('.')[:2] == ['chunkwise', 'retrieval'])\n"
        "print(json.dumps([rc, installed, loaded, json.loads(out.getvalue())['token_count']]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    import json

    from chunkwise.segmentation.tokenizers import get_tokenizer

    rc, installed, loaded, tokens = json.loads(out.splitlines()[-1])
    assert rc == 0 and installed and loaded == [], out
    assert tokens == len(get_tokenizer("minilm").hf.encode(small.read_text().strip(), add_special_tokens=False).ids)


def test_the_entry_point_collects_no_garbage_during_start_up_and_freezes_it(tmp_path):
    """``chunkwise`` (:func:`chunkwise.cli.run`) parses its command line with the cyclic collector off, then
    freezes what start-up made and runs the command with the collector on; ``main`` in process leaves the
    collector as it is."""
    small = tmp_path / "small.txt"
    small.write_text("The keeper trims the wick.\n\nShips pass in the storm.\n", encoding="utf-8")
    code = (
        "import atexit, gc, sys\nfrom chunkwise import cli\nseen = []\n"
        "build, run_command = cli.build_parser, cli._run\n"
        "def spy_build(*a, **k):\n    seen.append(('parse', gc.isenabled(), gc.get_freeze_count()))\n"
        "    return build(*a, **k)\n"
        "def spy_run(args):\n    seen.append(('command', gc.isenabled(), gc.get_freeze_count()))\n"
        "    return run_command(args)\n"
        "cli.build_parser, cli._run = spy_build, spy_run\n"
        "atexit.register(lambda: print(seen))\n"
        f"sys.argv = ['chunkwise', 'chunk', {str(small)!r}]\ncli.run()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    (parse, off, frozen_before), (command, on, frozen_after) = ast.literal_eval(out.splitlines()[-1])
    assert (parse, off, command, on) == ("parse", False, "command", True), out
    assert frozen_after > frozen_before, out  # start-up frozen (Python 3.12 may hold frozen objects of its own)
    assert '"token_count": ' in out.splitlines()[0], out  # the command ran as before

    in_process = (
        "import gc, io, contextlib\nfrom chunkwise.cli import main\nbefore = gc.get_freeze_count()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['chunk', {str(small)!r}])\n"
        "print(rc, gc.isenabled(), gc.get_freeze_count() == before)"
    )
    out = subprocess.run([sys.executable, "-c", in_process], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["0", "True", "True"], out  # nothing frozen, the collector left on
