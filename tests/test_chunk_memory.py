"""One huge document is refused with the reason when cutting it would need more memory than is available,
instead of running the system out of memory; the other inputs are still chunked."""

from __future__ import annotations

import pytest

from chunkwise.cli import main
from chunkwise.errors import InputError
from chunkwise.strategies import base, get_strategy


@pytest.fixture
def little_memory(monkeypatch):
    monkeypatch.setattr(base, "_CHEAP", 0)  # the estimate is checked for any size
    monkeypatch.setattr(base, "available_memory", lambda: 100 * base.BYTES_PER_CHAR)  # room for 100 characters
    return 100


def test_a_document_too_large_for_memory_is_refused_with_the_reason(little_memory):
    strategy = get_strategy("recursive")
    assert strategy.chunk("small enough.")  # within the room
    with pytest.raises(InputError, match="GiB of memory") as err:
        strategy.chunk("word " * 1000)
    assert "split the file" in str(err.value)


def test_the_cli_refuses_that_file_only(tmp_path, capsys, little_memory):
    (tmp_path / "huge.txt").write_text("word " * 1000, encoding="utf-8")
    (tmp_path / "small.txt").write_text("A small file.", encoding="utf-8")
    code = main(["chunk", str(tmp_path / "huge.txt"), str(tmp_path / "small.txt"), "--strategy", "recursive"])
    out, err = capsys.readouterr()
    assert code == 1 and "A small file." in out
    assert "huge.txt" in err and "memory" in err and "Traceback" not in err


def test_available_memory_is_read_where_the_system_says():
    free = base.available_memory()
    assert free is None or free > 0
