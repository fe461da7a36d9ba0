"""A usage error is two lines: the problem, with the closest known name where one is close, and where the
help is. Never the whole usage block (17-25 lines per command)."""

from __future__ import annotations

import pytest

from chunkwise.cli import main


def _error(capsys, argv: list[str]) -> list[str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.splitlines()


@pytest.mark.parametrize(
    "argv, prog, expected",
    [
        (["chunk", "x.md", "-s", "cohesin"], "chunkwise chunk", "did you mean 'cohesion'?"),
        (["index", "x.md", "--strategy", "recursiv"], "chunkwise index", "did you mean 'recursive'?"),
        (
            ["chunk", "x.md", "--max-tokns", "5"],
            "chunkwise chunk",
            "unknown option --max-tokns (did you mean --max-tokens?)",
        ),
        (["search", "q", "--dence"], "chunkwise search", "(did you mean --dense?)"),
        (["chunk", "x.md", "--overlapp=3"], "chunkwise chunk", "(did you mean --overlap?)"),
        (["chnk", "x.md"], "chunkwise", "did you mean 'chunk'?"),
    ],
)
def test_a_typo_is_two_lines_with_did_you_mean(capsys, argv, prog, expected):
    lines = _error(capsys, argv)
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{prog}: error: ") and expected in lines[0], lines
    assert lines[1] == f"Try '{prog} --help' for the options."


def test_nothing_close_lists_the_choices_or_names_the_option(capsys):
    lines = _error(capsys, ["chunk", "x.md", "-s", "zzzz"])
    assert len(lines) == 2 and "did you mean" not in lines[0]
    from chunkwise.strategies import STRATEGY_NAMES

    assert f"choose from {', '.join(STRATEGY_NAMES)})" in lines[0] and "cohesion" in STRATEGY_NAMES
    lines = _error(capsys, ["chunk", "x.md", "--qqqqqqqq"])
    assert len(lines) == 2 and lines[0] == "chunkwise chunk: error: unknown option --qqqqqqqq"


def test_other_usage_errors_are_two_lines_too(capsys):
    lines = _error(capsys, ["chunk"])
    assert len(lines) == 2 and "the following arguments are required: PATH" in lines[0]
    lines = _error(capsys, ["chunk", "x.md", "--max-tokens", "many"])
    assert len(lines) == 2 and "invalid int value: 'many'" in lines[0]


def test_help_is_still_the_whole_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["chunk", "--help"])
    assert exc.value.code == 0
    assert len(capsys.readouterr().out.splitlines()) > 20


def test_a_shortened_option_is_not_taken_for_the_whole_one(capsys):
    """argparse would read ``--max-token`` as ``--max-tokens``; chunkwise names it instead."""
    from chunkwise.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["chunk", "examples", "--max-token", "200"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "unknown option --max-token (did you mean --max-tokens?)" in err[0]


def test_a_mistyped_strategy_parameter_is_one_line_with_did_you_mean(capsys, tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nSome text.\n", encoding="utf-8")
    assert main(["chunk", str(doc), "-s", "semantic", "-p", "threshold_amout=90"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no parameter threshold_amout (did you mean threshold_amount?)" in err[0]
