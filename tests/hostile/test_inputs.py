"""Issue 20, failures 1-3: hostile folders for ``chunk`` and ``index``.

A folder holds a good file next to a file whose name is not UTF-8, a FIFO named ``x.txt``, a symlink to
``/dev/zero`` named ``zero.txt`` and (as an unprivileged user) a folder without read permission. Every bad
input must give one line, the good ones must be processed, ``--prune`` must remove nothing it could not
read, and nothing may hang, trace back or read without bound.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile import GOOD, NOBODY, can_drop_privileges, run_cli, shared_dir  # noqa: F401

from chunkwise.errors import InputError
from chunkwise.formats import iter_documents, load
from chunkwise.formats.walk import display_name, os_path, read_bounded

BAD_NAME = b"caf\xff\xfe.txt"


def build(folder: Path, fifo: bool = True, zero: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.txt").write_text(GOOD, encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), BAD_NAME), "w", encoding="utf-8") as fh:
        fh.write("A file whose name is not UTF-8. It still has perfectly good text in it.")
    if fifo:
        os.mkfifo(folder / "x.txt")
    if zero:
        os.symlink("/dev/zero", folder / "zero.txt")
    (folder / "z_last.txt").write_text("The last file is read after all the bad ones. It is fine.", encoding="utf-8")


def lines_about(err: str, needle: str) -> list[str]:
    return [line for line in err.splitlines() if needle in line and line.startswith("chunkwise: error:")]


def test_display_names_round_trip():
    raw = os.fsdecode(b"dir/caf\xff\xfe\n.txt")
    shown = display_name(raw)
    assert shown == "dir/caf\\xff\\xfe\\x0a.txt"
    shown.encode("utf-8")  # always writable
    assert os_path(shown) == raw


@pytest.mark.timeout(30)  # an unbounded read of /dev/zero never ends: the timeout is the failure
def test_read_bounded_never_trusts_st_size():
    with pytest.raises(InputError, match="character device"):
        read_bounded("/dev/zero", 1 << 20, "/dev/zero")
    # a file the file system reports as 0 bytes (procfs) is still read, and still bounded
    assert os.stat("/proc/self/status").st_size == 0
    assert b"Name:" in read_bounded("/proc/self/status", 1 << 20, "status")
    with pytest.raises(InputError, match="too large"):
        read_bounded("/proc/self/status", 10, "status")


@pytest.mark.timeout(60)  # opening a FIFO with no writer blocks forever: the timeout is the failure
def test_fifo_and_devices_are_refused_without_blocking(tmp_path):
    build(tmp_path)
    results = dict(iter_documents([tmp_path]))
    assert "FIFO" in results[str(tmp_path / "x.txt")].problem
    assert "character device" in results[str(tmp_path / "zero.txt")].problem
    good = results[str(tmp_path / "good.txt")]
    assert good.text.startswith("The lighthouse keeper")
    bad_name = display_name(os.path.join(os.fsencode(tmp_path), BAD_NAME))
    assert results[bad_name].source == bad_name
    with pytest.raises(InputError, match="FIFO"):
        load(tmp_path / "x.txt")


def test_chunk_folder_with_hostile_files(tmp_path):
    build(tmp_path / "in")
    out = tmp_path / "out.jsonl"
    done = run_cli(["chunk", tmp_path / "in", "-o", out, "--max-file-size", "1MB"], timeout=120)
    assert done.returncode == 1, done.err
    assert len(lines_about(done.err, "x.txt: not a regular file (FIFO")) == 1
    assert len(lines_about(done.err, "zero.txt: not a regular file (character device")) == 1
    sources = {json.loads(line)["source"] for line in out.read_text(encoding="utf-8").splitlines()}
    assert {os.path.basename(s) for s in sources} == {"good.txt", "caf\\xff\\xfe.txt", "z_last.txt"}
    # nothing read without bound (a /dev/zero read died at 2.7 GB); the baseline varies with what the parent
    # process imported before (cv2 rewrites LD_LIBRARY_PATH for its children), hence the margin
    assert done.peak_mb < 1024, done.peak_mb


def test_explicit_dev_zero_link_stops_at_the_size_limit(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.txt")
    (tmp_path / "good.txt").write_text(GOOD, encoding="utf-8")
    done = run_cli(["chunk", tmp_path / "zero.txt", tmp_path / "good.txt", "--max-file-size", "1MB"], timeout=60)
    assert done.returncode == 1
    assert len(lines_about(done.err, "zero.txt")) == 1
    assert "lighthouse" in done.out


@pytest.mark.slow  # indexes with the real model in a CLI subprocess (about 10 s)
def test_index_with_a_non_utf8_name_and_special_files(tmp_path):
    folder = tmp_path / "in"
    build(folder)
    db = tmp_path / "x.db"
    done = run_cli(["-q", "--no-cache", "index", folder, "--db", db, "--max-tokens", "64"])
    assert done.returncode == 1, done.err  # the two special files failed, the rest is indexed
    assert len(lines_about(done.err, "x.txt")) == 1 and len(lines_about(done.err, "zero.txt")) == 1
    search = run_cli(["-q", "--no-cache", "search", "perfectly good text", "--db", db, "--format", "jsonl"])
    sources = {os.path.basename(json.loads(line)["source"]) for line in search.out.splitlines()}
    assert "caf\\xff\\xfe.txt" in sources and "good.txt" in sources
    # unchanged on a re-run, and --prune keeps the file with the odd name (it still exists)
    again = run_cli(["--no-cache", "index", folder, "--db", db, "--max-tokens", "64", "--prune"])
    assert "3 unchanged and skipped" in again.err and "pruned" not in again.err, again.err


@pytest.mark.slow  # three index runs as another user, each a CLI subprocess with the real model
@pytest.mark.skipif(
    not can_drop_privileges(),
    reason="needs root (to run a child as nobody) and setpriv; as a normal user chmod 000 works but root reads anyway",
)
def test_prune_never_deletes_what_it_could_not_read(shared_dir):  # noqa: F811 (the imported fixture)
    folder = shared_dir / "in"
    build(folder, fifo=False, zero=False)
    secret = folder / "locked"
    secret.mkdir()
    for k in range(4):
        (secret / f"doc{k}.txt").write_text(GOOD.replace("keeper", f"keeper number {k}"), encoding="utf-8")
    for root, dirs, files in os.walk(shared_dir):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666)
    db = shared_dir / "x.db"
    first = run_cli(["-q", "--no-cache", "index", folder, "--db", db, "--max-tokens", "64"], user=NOBODY)
    assert first.returncode == 0, first.err
    os.chmod(secret, 0o700)  # owned by root: nobody can no longer list it
    os.remove(folder / "z_last.txt")  # really gone: this one must be pruned
    done = run_cli(["--no-cache", "index", folder, "--db", db, "--max-tokens", "64", "--prune"], user=NOBODY)
    assert done.returncode == 1, done.err
    assert len(lines_about(done.err, "locked: cannot read this folder (permission denied)")) == 1, done.err
    assert "1 pruned" in done.err, done.err
    os.chmod(secret, 0o777)
    listing = run_cli(
        ["-q", "--no-cache", "search", "keeper number", "-k", "20", "--db", db, "--format", "jsonl"], user=NOBODY
    )
    sources = {os.path.basename(json.loads(line)["source"]) for line in listing.out.splitlines()}
    assert {f"doc{k}.txt" for k in range(4)} <= sources
    assert "z_last.txt" not in sources
