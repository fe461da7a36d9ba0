"""`security.replace_folder`: a saved index folder is seen whole or not at all (the BM25 and vector copies
beside a Milvus Lite database are written through it)."""

from __future__ import annotations

import pytest

from chunkwise.security import replace_folder


def test_a_folder_is_replaced_whole(tmp_path):
    target = tmp_path / "chunkwise-bm25"
    target.mkdir()
    (target / "old.json").write_text("old")
    replace_folder(target, lambda tmp: (tmp / "ids.json").write_text("[1]"))
    assert sorted(p.name for p in target.iterdir()) == ["ids.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunkwise-bm25"]  # no temporary folder left


def test_a_failed_fill_leaves_the_old_folder_and_no_temporary_one(tmp_path):
    target = tmp_path / "chunkwise-vectors"
    target.mkdir()
    (target / "ids.json").write_text("[0]")

    def fill(tmp):
        (tmp / "ids.json").write_text("[1, 2]")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_folder(target, fill)
    assert (target / "ids.json").read_text() == "[0]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunkwise-vectors"]
