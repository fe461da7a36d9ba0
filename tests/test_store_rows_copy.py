"""The saved copy of the rows a hit shows (store/shown.py): a search of a Milvus Lite index whose copies are all
current ranks and shows its hits without starting the engine, and its hits are the engine's, field by field;
anything in doubt goes the engine's way with the same answer."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_data import LineStrategy, lines

from chunkwise import Document
from chunkwise.errors import ChunkwiseError
from chunkwise.retrieval import Index
from chunkwise.store import snapshot
from chunkwise.store.milvus_search import (
    BM25_FOLDER,
    DATA_KEY,
    VECTORS_FOLDER,
    copy_key,
    rekey_copies,
    remove_leftovers,
    write_key,
)
from chunkwise.store.shown import DATA, INDEX, META, ROWS_FOLDER, SavedRows, SpooledRows

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["lamp", "lens", "keeper", "tide", "harbour", "rope", "signal", "storm", "light", "night", "the", "phare"]
QUERIES = ["keeper lamp", "storm at night", "phare", "rope signal tide"]


def build(db: Path, docs: dict[str, str]) -> None:
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(
            [
                Document(text, source=f"kb/{name}.txt", metadata={"name": name, "tags": ["a", "é"]}, title=name)
                for name, text in docs.items()
            ],
            strategy=lines(),
        )


def search(db: Path, query: str, copies: bool, **kw):
    """Hits of one search in a fresh store, from the copies or (``copies=False``) from the engine; and whether
    the engine was started."""
    with Index(db, embedder=FakeEmbedder()) as ix:
        if not copies:
            ix.store.open_copies = lambda: False  # type: ignore[method-assign]
        hits = ix.search(query, k=4, **kw)
        expanded = ix.expand(hits, "neighbors:1") if hits else []
        return hits, expanded, ix.store._client is not None


def same_as_engine(db: Path, query: str, **kw) -> bool:
    """Assert the copies' answer is the engine's; True when it came without the engine."""
    fast, fast_expanded, started = search(db, query, True, **kw)
    slow, slow_expanded, engine = search(db, query, False, **kw)
    assert engine
    assert fast == slow
    assert fast_expanded == slow_expanded
    assert as_json(fast) == as_json(slow) and as_json(fast_expanded) == as_json(slow_expanded)  # 1 vs 1.0
    return not started


def as_json(items) -> str:
    """The results as a JSON output shows them (``==`` takes ``1 == 1.0``)."""
    return json.dumps([dataclasses.asdict(i) for i in items], sort_keys=True, default=repr)


text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=10).map(" ".join)
doc_st = st.lists(text_st, min_size=1, max_size=5).map("\n".join)
step_st = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 4), doc_st),
    st.tuples(st.just("delete"), st.integers(0, 4), st.just("")),
)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(step_st, min_size=1, max_size=5), query=st.sampled_from(QUERIES))
def test_hits_from_the_rows_copy_are_the_engines_after_upserts_and_deletes(tmp_path_factory, steps, query):
    db = tmp_path_factory.mktemp("rows") / "t.db"
    build(db, {"0": "the keeper trims the lamp\nstorm at night", "1": "phare lens\nrope and signal"})
    present = {0, 1}
    for kind, n, text in steps:
        with Index(db, embedder=FakeEmbedder()) as ix:  # each step a process of its own, as the CLI runs
            if kind == "add":
                ix.add([Document(text, source=f"kb/{n}.txt", metadata={"n": n})], strategy=lines())
                present.add(n)
            elif n in present:
                ix.delete(f"kb/{n}.txt")
                present.discard(n)
        assert same_as_engine(db, query)  # every copy kept by the writes: no engine
        with saved_rows(db) as rows:
            assert len(rows) == sum(1 for _ in _stored_ids(db))


def _stored_ids(db: Path):
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix._open_existing()
        yield from (r["id"] for r in ix.store.scan_chunks(["id"]))


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "t.db"
    build(
        path,
        {
            "0": "the keeper trims the lamp\nstorm at night\nthe tide",
            "1": "phare lens\nrope and signal\nharbour light",
            "2": "night signal\nlamp lens keeper",
        },
    )
    return path


def test_a_fresh_build_answers_without_the_engine(db):
    files = snapshot.fingerprint(db)
    hits, _, started = search(db, "keeper lamp", True)
    assert hits and not started
    assert snapshot.fingerprint(db) == files  # and changed no file of the database
    assert same_as_engine(db, "keeper lamp")
    assert same_as_engine(db, "keeper lamp", sections=True)


def test_a_filter_or_a_dense_search_uses_the_engine(db):
    for kw in ({"filter": 'source == "kb/1.txt"'}, {"hybrid": False}):
        hits, _, started = search(db, "lamp signal", True, **kw)
        assert started and hits == search(db, "lamp signal", False, **kw)[0]


def _damage(db: Path, how: str) -> None:
    folder = db / ROWS_FOLDER
    if how == "missing":
        shutil.rmtree(folder)
    elif how == "truncated":
        data = (folder / DATA).read_bytes()
        (folder / DATA).write_bytes(data[: len(data) // 2])
    elif how == "meta":
        (folder / META).write_text("{not json", encoding="utf-8")
    elif how == "index":
        (folder / INDEX).write_bytes(b"\x93NUMPY garbage")
    elif how == "empty-index":
        (folder / INDEX).write_bytes(b"")
    elif how == "empty-postings":
        (db / BM25_FOLDER / "postings.npz").write_bytes(b"")
    elif how == "garbled-postings":  # a zip's magic, then nothing of one
        (db / BM25_FOLDER / "postings.npz").write_bytes(b"PK\x03\x04 garbage")
    elif how == "empty-vectors":
        (db / VECTORS_FOLDER / "vectors.npy").write_bytes(b"")
    elif how == "line":  # same size, another row's bytes: caught when read
        data = (folder / DATA).read_bytes()
        first, rest = data.split(b"\n", 1)
        second, tail = rest.split(b"\n", 1)
        (folder / DATA).write_bytes(second[: len(first)].ljust(len(first)) + b"\n" + rest)
    elif how == "unkeyed":  # a save killed before the closing connection keyed it
        (folder / DATA_KEY).write_text(json.dumps({"collection": "chunkwise", "files": None}), encoding="utf-8")
    elif how == "other-collection":
        key = json.loads((folder / DATA_KEY).read_text(encoding="utf-8"))
        (folder / DATA_KEY).write_text(json.dumps({**key, "collection": "other"}), encoding="utf-8")
    elif how == "no-snapshot":
        next(db.glob("chunkwise-snapshot-*.json")).unlink()


@pytest.mark.parametrize(
    "how",
    [
        "missing",
        "truncated",
        "meta",
        "index",
        "empty-index",
        "empty-postings",
        "garbled-postings",
        "empty-vectors",
        "line",
        "unkeyed",
        "other-collection",
        "no-snapshot",
    ],
)
def test_a_doubtful_copy_goes_the_engines_way_with_the_same_hits(db, how):
    expected, _, _ = search(db, "keeper lamp", False)
    _damage(db, how)
    hits, _, started = search(db, "keeper lamp", True)
    assert started
    assert hits == expected
    if how != "no-snapshot":  # the rows copy read again by that search (a snapshot only a writer leaves)
        assert same_as_engine(db, "keeper lamp")


def test_another_process_holding_the_database_sends_the_search_to_the_engine(db):
    expected, _, _ = search(db, "keeper lamp", False)
    with open(db / "LOCK", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with Index(db, embedder=FakeEmbedder()) as ix:
            assert not ix.store.open_copies()
        fcntl.flock(lock, fcntl.LOCK_UN)
    assert search(db, "keeper lamp", True)[0] == expected


def test_a_run_finished_between_the_copies_and_the_engine_ends_the_search_with_one_line(db, monkeypatch):
    with Index(db, embedder=FakeEmbedder()) as ix:
        assert ix.search("keeper", k=2) and ix.store._client is None
        rows = ix.store._rows
        real_get = rows.get

        def get(ids):  # another run finishes once the search has ranked, and the rows copy then fails
            build(db, {"9": "a new storm"})
            raise OSError("damaged")

        monkeypatch.setattr(rows, "get", get)
        with pytest.raises(ChunkwiseError, match="changed during this search"):
            ix.search("keeper lamp", k=2)  # its hits would be ranked by one state and shown from another
        monkeypatch.setattr(rows, "get", real_get)
    assert same_as_engine(db, "storm")


@pytest.mark.parametrize("call", ["filter", "dense", "add", "delete", "documents", "count", "expand"])
def test_a_later_call_of_an_open_index_follows_a_run_finished_since(db, call):
    with Index(db, embedder=FakeEmbedder()) as ix:  # a long-lived reader that searched from the copies
        hits = ix.search("keeper lamp", k=2)
        assert ix.store._client is None
        build(db, {"9": "a new storm"})  # another process's run
        if call == "filter":
            assert [h.source for h in ix.search("storm", k=2, filter='source == "kb/9.txt"')] == ["kb/9.txt"]
        elif call == "dense":
            assert "kb/9.txt" in {h.source for h in ix.search("a new storm", k=9, hybrid=False)}
        elif call == "add":
            ix.add([Document("lamp rope", source="kb/8.txt")], strategy=lines())
        elif call == "delete":
            assert ix.delete("kb/9.txt") == 1
        elif call == "documents":
            assert "kb/9.txt" in {m.source for m in ix.documents()}
        elif call == "count":
            assert ix.count() == len(list(_stored_ids_of(ix)))
        else:
            assert ix.expand(hits, "neighbors:1")


def _stored_ids_of(ix: Index):
    ix._open_existing()
    yield from (r["id"] for r in ix.store.scan_chunks(["id"]))


ASKS = [{}, {"min_score": 0.0}, {"expand": "neighbors:1"}, {"budget": 300}, {"sections": True}]


def _ask(db: Path, copies: bool, **kw):
    with Index(db, embedder=FakeEmbedder()) as ix:
        if not copies:
            ix.store.open_copies = lambda: False  # type: ignore[method-assign]
        answer = ix.ask("keeper lamp", k=3, **kw)
        return answer, ix.store._client is not None


@pytest.mark.parametrize("kw", ASKS, ids=lambda kw: ",".join(kw) or "plain")
def test_a_question_is_answered_from_the_copies_as_the_engine_answers_it(db, kw):
    fast, started = _ask(db, True, **kw)
    slow, engine = _ask(db, False, **kw)
    assert engine and not started
    assert fast == slow


def test_a_long_lived_question_loop_sees_each_finished_run(db):
    with Index(db, embedder=FakeEmbedder()) as ix:  # `ask --interactive`
        assert ix.count() == 8 and ix.store._client is None
        build(db, {"9": "a new storm\nthe phare"})
        assert ix.count() == 10  # the files checked again: not the count held from before
        answer = ix.ask("a new storm", k=2)
        assert ix.store._client is None and "storm" in answer.text


def test_a_write_after_searching_from_the_copies_keeps_them_current(db):
    with Index(db, embedder=FakeEmbedder()) as ix:
        assert ix.search("keeper", k=2)
        assert ix.store._client is None
        ix.add([Document("storm lamp", source="kb/7.txt")], strategy=lines())
    assert same_as_engine(db, "storm lamp")


def test_the_spool_of_a_killed_save_is_removed_and_never_read(db):
    leftover = SpooledRows(db / ROWS_FOLDER, ["id"], {})
    leftover.upsert([{"id": "x"}])  # a writer killed before its save: its spool stays behind
    assert leftover.folder.exists()
    assert same_as_engine(db, "keeper lamp")  # the saved copy is still whole and current
    remove_leftovers(db)
    assert not leftover.folder.exists()


def test_a_copy_with_more_dead_rows_than_live_ones_is_compacted(db):
    sizes = []
    for n in range(6):  # the same document rewritten: its old rows die each time
        with Index(db, embedder=FakeEmbedder()) as ix:
            ix.add([Document(f"storm lamp {n}\nrope {n}\ntide {n}", source="kb/0.txt")], strategy=lines())
        with saved_rows(db) as rows:
            live = int(rows.index["size"].sum())
        sizes.append(os.path.getsize(db / ROWS_FOLDER / DATA))
        assert sizes[-1] - live <= live  # never more dead bytes than live ones
    assert any(later < size for size, later in zip(sizes, sizes[1:]))  # the live rows copied afresh
    assert same_as_engine(db, "storm lamp")


@contextlib.contextmanager
def saved_rows(db: Path):
    rows = SavedRows(db / ROWS_FOLDER)
    try:
        yield rows
    finally:
        rows.close()


def run_cli(db: Path, command: str, *args: str) -> tuple[str, bool]:
    """The command's output, and whether it imported Milvus Lite's engine (said when the import starts: the
    command may leave by ``os._exit``)."""
    code = (
        "import sys\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'milvus_lite.db':\n"
        "            sys.stderr.write('ENGINE\\n'); sys.stderr.flush()\n"
        "sys.meta_path.insert(0, Watch())\n"
        "from chunkwise import cli\n"
        f"sys.argv = ['chunkwise', '-q', {command!r}, *{list(args)!r}, '--db', {str(db)!r}, '--format', {'json' if command == 'ask' else 'jsonl'!r}]\n"
        "sys.exit(cli.run())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return out.stdout, "ENGINE" in out.stderr.split()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_cli_search_and_ask_answer_byte_identically_without_importing_the_engine(tmp_path):
    db = tmp_path / "ex.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    index = f"import sys\nfrom chunkwise import cli\nsys.argv = ['chunkwise', '-q', 'index', {str(ROOT / 'examples')!r}, '--db', {str(db)!r}]\nsys.exit(cli.run())\n"
    subprocess.run([sys.executable, "-c", index], env=env, check=True)
    for args in (
        ["search", "lighthouse lens"],
        ["search", "lighthouse lens", "--expand", "neighbors:1"],
        ["search", "cleaning", "--budget", "2k"],
        ["ask", "how is the lighthouse lens cleaned?"],
        ["ask", "how is the lighthouse lens cleaned?", "--min-score", "0", "--budget", "1k"],
    ):
        fast, engine = run_cli(db, *args)
        assert not engine
        shutil.rmtree(db / ROWS_FOLDER)
        slow, engine = run_cli(db, *args)
        assert engine
        assert fast == slow and fast.strip()
        assert (db / ROWS_FOLDER / DATA_KEY).is_file()  # read again by the engine's search, for the next one


def test_an_open_rows_copy_reads_what_it_opened_while_a_writer_replaces_it(db):
    rows = SavedRows(db / ROWS_FOLDER)
    ids = [i.decode() for i in rows.index["id"].tolist()]
    before = rows.get(ids)
    build(db, {"0": "keeper keeper lamp\nrewritten storm", "5": "lamp storm keeper"})  # another run
    assert rows.get(ids) == before  # one state (the file it opened), never a mix
    rows.close()
    with saved_rows(db) as again:
        assert again.get(ids) != before


def test_a_later_search_of_an_open_index_sees_a_run_finished_since(db):
    with Index(db, embedder=FakeEmbedder()) as ix:  # a long-lived reader (`ask --interactive`)
        before = ix.search("keeper lamp storm", k=4)
        build(db, {"0": "keeper keeper lamp\nrewritten storm", "5": "lamp storm keeper"})  # another run
        after = ix.search("keeper lamp storm", k=4)
        assert ix.store._client is None  # still without the engine
    assert after != before and after == search(db, "keeper lamp storm", False)[0]


def test_a_rebuilt_index_leaves_a_rows_copy_of_its_new_rows(db):
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add([Document("harbour rope\nsignal tide", source="kb/new.txt")], strategy=lines(), recreate=True)
    hits, _, started = search(db, "harbour rope signal", True)
    assert not started and {h.source for h in hits} == {"kb/new.txt"}
    assert same_as_engine(db, "harbour rope signal")


class Timed(LineStrategy):
    """Lines with whole-second times, as a caller's chunks may carry them (stored as DOUBLE)."""

    def chunk(self, doc):
        return [dataclasses.replace(c, start_time=c.index, end_time=c.index + 1) for c in super().chunk(doc)]


def test_whole_second_times_read_back_as_the_engine_gives_them(tmp_path):
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add([Document("the keeper lamp\nstorm at night", source="kb/t.txt")], strategy=Timed(tokenizer="words"))
    hits, _, started = search(db, "keeper lamp", True)
    assert not started and {type(h.chunk.start_time) for h in hits} == {float}
    assert same_as_engine(db, "keeper lamp")


def test_an_index_too_large_for_the_vectors_copy_keeps_no_rows_copy(tmp_path, monkeypatch):
    from chunkwise.store import milvus_search

    monkeypatch.setattr(milvus_search, "VECTORS_MAX_BYTES", 64)  # a vectors copy no search may hold
    db = tmp_path / "t.db"
    build(db, {"0": "the keeper trims the lamp\nstorm at night", "1": "phare lens\nrope and signal"})
    assert not (db / ROWS_FOLDER).exists()  # a search could not use it: not written
    hits, _, started = search(db, "keeper lamp", True)
    assert hits and started and not (db / ROWS_FOLDER).exists()  # nor built by the engine's search
    assert not same_as_engine(db, "keeper lamp")  # the engine's way, the same hits


def test_a_closing_writer_waits_for_a_reader_comparing_the_files(db):
    files = snapshot.fingerprint(db)
    saved = next(db.glob("chunkwise-snapshot-*.json"))
    state = json.loads(saved.read_text(encoding="utf-8"))
    saved.unlink()
    write_key(db / ROWS_FOLDER, "chunkwise", None)  # as the run's close saved it, keyed once it has closed
    with open(db / "LOCK", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a reader's check (open_copies) holds it a moment
        reader = threading.Timer(0.3, fcntl.flock, (lock, fcntl.LOCK_UN))
        reader.start()
        snapshot.save(db, "chunkwise", state)
        rekey_copies(db)
        reader.join()
    assert saved.is_file() and copy_key(db / ROWS_FOLDER, "chunkwise") == files
    assert same_as_engine(db, "keeper lamp")
