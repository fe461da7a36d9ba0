"""Long runs say how far they are (totals, ETA), also without a terminal; the language warning comes first."""

from __future__ import annotations

import io
import math
import re
import sys
import time
from types import SimpleNamespace

import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise import progress as progress_module
from chunkwise.cli import main
from chunkwise.progress import RECENT_CALLS, Progress, format_eta, heartbeat_seconds

GERMAN = (
    "Die Vorlesung behandelt topologische Räume, stetige Abbildungen und den Begriff der Kompaktheit. "
    "Zunächst werden metrische Räume eingeführt, danach allgemeine Topologien und ihre Basen. Am Ende "
    "jedes Kapitels stehen Übungsaufgaben, deren Lösungen im Anhang zu finden sind."
)


class SlowEmbedder(FakeEmbedder):
    """Takes its time, as a real model does, and marks each call on stderr (to see what came before it)."""

    def __init__(self, model_id: str = "fake-bow-64", delay: float = 0.0):
        super().__init__()
        self.model_id = model_id
        self.delay = delay

    def embed(self, texts):
        print("EMBED-CALL", file=sys.stderr)
        time.sleep(self.delay)
        return super().embed(texts)


@pytest.fixture
def kb(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "kb"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc{i}.txt").write_text(
            " ".join(f"Sentence {j} of document {i} is about bees and honey." for j in range(30)), encoding="utf-8"
        )
    return folder


def test_index_without_a_terminal_prints_heartbeat_lines_with_totals(kb, capsys, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder(delay=0.3))
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "0.05")
    code = main(["index", "kb", "--tokenizer", "words", "--max-tokens", "40", "--batch-size", "4"])
    _, err = capsys.readouterr()
    assert code == 0, err
    beats = [line for line in err.splitlines() if line.startswith("chunkwise: indexing: ")]
    assert beats, err
    pattern = re.compile(
        r"chunkwise: indexing: (\d)/3 files read(?:, (\d+)/~?(\d+) chunks embedded)?(?:, (\d+)%)?"
        r"(?:, [\d.]+ chunks/s)?, (?:(?:ETA|elapsed) \d+:\d\d|finishing)"
    )
    assert all(pattern.fullmatch(line) for line in beats), beats
    embedded = [pattern.fullmatch(line).groups() for line in beats if "chunks embedded" in line]
    assert embedded and all(int(done) <= int(total) for _, done, total, _ in [g[:4] for g in embedded])
    assert "ETA" in " ".join(beats)
    # a share is shown exactly when an ETA is, so the two always come from the same estimate
    assert all(("%" in line) == ("ETA" in line or "finishing" in line) for line in beats), beats
    assert "3 documents (3 indexed" in err


def test_quiet_or_interval_zero_prints_no_heartbeat(kb, capsys, monkeypatch):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder(delay=0.1))
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "0")
    assert main(["index", "kb", "--tokenizer", "words", "--max-tokens", "40", "--batch-size", "4"]) == 0
    _, err = capsys.readouterr()
    assert "indexing:" not in err and "3 documents (3 indexed" in err


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _work(p: Progress, clock: Clock, phase: str, seconds: float) -> None:
    with p.phase(phase):
        clock.t += seconds


def test_eta_is_the_work_left_in_every_phase_times_its_cost():
    clock = Clock()
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    p.set_totals(4, {"a": 100, "b": 100, "c": 100, "d": 100})
    assert p.line() == "indexing: 0/4 files read, elapsed 0:00"  # nothing measured: no share, no ETA
    for source in "abc":  # read ahead of the chunking, as a semantic strategy's group is
        _work(p, clock, "read", 1.0)
        p.file_done(source)
    _work(p, clock, "chunk", 2.0)
    p.chunked("a", 10)
    # 10 chunks from the 100 bytes chunked: about 40 in all (the 300 bytes read are not chunked yet)
    assert p.chunk_total() == (10 * 4, False)
    assert p.eta() is None and "%" not in p.line()  # embedding has no cost yet: no ETA rather than a wrong one
    with p.phase("embed"):
        clock.t += 5.0  # the first call loads the model
        p.update("embedding", "chunk", 5)
        clock.t += 1.0
        p.update("embedding", "chunk", 5)
    _work(p, clock, "write", 0.5)
    p.update("chunks written", "chunk", 10)
    # read 1 s/100 B, chunk 2 s/100 B, embed 0.2 s/chunk (the first call left out), write 0.05 s/chunk
    expected = 100 * 0.01 + 300 * 0.02 + 30 * 0.2 + 30 * 0.05
    assert p.eta() == pytest.approx(expected)
    spent = 3.0 + 2.0 + 6.0 + 0.5
    assert p.fraction() == pytest.approx(spent / (spent + expected))
    share, eta = f"{spent / (spent + expected):.0%}", format_eta(expected)
    assert re.fullmatch(
        rf"indexing: 3/4 files read, 10/~40 chunks embedded, {share}, [\d.]+ chunks/s, ETA {eta}", p.line()
    )
    p.close()


def test_the_estimate_does_not_shrink_when_files_are_read_ahead():
    """The old share (chunks embedded over a total scaled by the bytes *read*) said 75 % at 11 %: chunks are
    projected from the bytes chunked."""
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=Clock())
    p.set_totals(10, {str(i): 1000 for i in range(10)})
    for i in range(9):
        p.file_done(str(i))
    p.chunked("0", 50)
    assert p.chunk_total() == (500, False)
    p.file_done("9")
    for i in range(1, 10):
        p.chunked(str(i), 50)
    assert p.chunk_total() == (500, True)  # every file chunked: exact


def test_skipped_and_failed_inputs_leave_no_work():
    clock = Clock()
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    p.set_totals(2, {"done": 100, "unchanged": 100})
    _work(p, clock, "read", 1.0)
    p.file_done("unchanged")
    p.chunked("unchanged", 0)
    assert p.remaining() is None  # nothing chunked yet: no cost for chunking
    _work(p, clock, "read", 1.0)
    p.file_done("done")
    _work(p, clock, "chunk", 1.0)
    p.chunked("done", 4)
    with p.phase("embed"):
        clock.t += 2.0
        p.update("embedding", "chunk", 4)
    _work(p, clock, "write", 1.0)
    p.update("chunks written", "chunk", 4)
    assert p.chunk_total() == (4, True) and p.eta() == 0.0 and p.fraction() == 1.0


def test_without_timed_phases_the_share_is_the_chunks_embedded():
    """A caller that times nothing (the Ray engine) still gets a share and an ETA from the counters."""
    clock = Clock()
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    p.set_totals(2, {"a": 100, "b": 100})
    p.file_done("a", 10)
    p.file_done("b", 10)
    p.update("embedding", "chunk", 5)
    clock.t += 10
    assert p.fraction() == 0.25 and p.eta() == pytest.approx(30.0)


def test_heartbeat_interval_and_eta_format(monkeypatch, capsys):
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "2.5")
    assert heartbeat_seconds() == 2.5
    monkeypatch.setenv("CHUNKWISE_PROGRESS_SECONDS", "soon")
    assert heartbeat_seconds() == 30.0
    assert "CHUNKWISE_PROGRESS_SECONDS='soon' is not a number" in capsys.readouterr().err
    assert (format_eta(723), format_eta(3723), format_eta(-1)) == ("12:03", "1:02:03", "0:00")


def test_index_warns_about_the_language_before_anything_is_embedded(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skript.txt").write_text(GERMAN, encoding="utf-8")
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder("minilm-fake"))
    code = main(["index", "skript.txt", "--tokenizer", "words"])
    _, err = capsys.readouterr()
    assert code == 0, err
    lines = err.splitlines()
    warning = [i for i, line in enumerate(lines) if "looks German" in line]
    assert len(warning) == 1  # one document: the early line says it all, no second line at the end
    assert lines[warning[0]] == (
        "chunkwise: warning: skript.txt looks German; the embedder minilm-fake is "
        "English-only - try --embedder e5 (extra e5) or --embedder auto"
    )
    assert warning[0] < lines.index("EMBED-CALL")


def test_chunk_warns_about_the_language_before_a_semantic_strategy_embeds(tmp_path, capsys, monkeypatch):
    (tmp_path / "skript.txt").write_text(GERMAN, encoding="utf-8")
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: SlowEmbedder("minilm-fake"))
    code = main(["chunk", str(tmp_path), "--strategy", "semantic", "-q"])
    _, err = capsys.readouterr()
    assert code == 0, err
    lines = err.splitlines()
    warning = [i for i, line in enumerate(lines) if "looks German" in line]
    assert len(warning) == 1 and warning[0] < lines.index("EMBED-CALL")


def test_embedding_costs_by_tokens_and_the_running_call_counts_what_it_has_done():
    """Chunks of different lengths cost by their tokens; the call running now is credited with the time it
    has run, but the ETA never drops below the work after it."""
    clock = Clock()
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    p.set_totals(1, {"a": 100})
    _work(p, clock, "read", 0.0)
    p.file_done("a")
    _work(p, clock, "chunk", 0.0)
    p.chunked("a", 4, tokens=1000)
    with p.phase("embed"):
        clock.t += 10.0  # the first call (100 tokens) also loads the model
        p.embedded(1, 100)
        clock.t += 3.0  # 300 tokens: 0.01 s a token
        p.embedded(2, 300)
        assert p.eta() == pytest.approx(600 * 0.01)  # by chunks it would say 1 chunk x 1.5 s
        clock.t += 2.0  # the next call has run 2 s
        assert p.eta() == pytest.approx(600 * 0.01 - 2.0)
        clock.t += 10.0  # longer than expected: the work after this call is still left
        assert p.eta() == pytest.approx((600 - 300) * 0.01)
    p.close()


def test_a_steady_run_gets_an_eta_equal_to_the_time_it_really_takes():
    """A simulated run with steady costs (files read and chunked ahead of batched embedding calls, a model
    load in the first call, writes): from the first timed batch on, every ETA is the real time left."""
    clock = Clock()
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    files = {f"f{i}": 1000 for i in range(10)}
    p.set_totals(10, files)
    etas, pending = [], []
    for name in files:
        with p.phase("chunk"):
            with p.phase("read"):
                clock.t += 0.1
            p.file_done(name)
            clock.t += 0.2
        p.chunked(name, 10, 1000)
        pending.append(name)
        if len(pending) == 2:
            with p.phase("embed"):
                clock.t += 3.0 if not etas else 0.0  # loading the model
                for _ in range(4):
                    clock.t += 5.0
                    p.embedded(5, 500)
                    etas.append((clock.t, p.eta()))
            with p.phase("write"):
                clock.t += 0.5
            p.update("chunks written", "chunk", 20)
            pending = []
    end = clock.t
    timed = etas[1:]  # after the first call its cost still holds the model load: from the second call on
    assert len(timed) == 19
    # the writes of the first batch are not known before it is written: 0.5 s per batch left out until then
    for t, eta in timed[3:]:
        assert eta == pytest.approx(end - t, abs=1e-6)
    for t, eta in timed[:3]:
        assert end - t - 5 * 0.5 <= eta <= end - t


def _simulate(
    files,
    *,
    seconds_per_token,
    first_call_extra=0.0,
    batch=64,
    wanted=lambda i: True,
    cpu_per_token=None,
    clocks=None,
):
    """Run a synthetic indexing trace through :class:`Progress` on a hand-moved clock, the way the index calls
    it: each file read and chunked (``files``: (bytes, chunks, tokens of each chunk)), embedding calls of
    ``batch`` chunks once that many are pending, each costing ``seconds_per_token(call number)`` a token
    (plus ``first_call_extra`` in the first: loading the model), a write after each flush. Returns the ETA
    after every embedding call whose number ``wanted`` accepts, with the time the run really still took.
    ``clocks``: the (wall, CPU) clocks to move, ``cpu_per_token(call number)`` the process's CPU seconds a
    token on the second."""
    clock, cpu = clocks or (Clock(), Clock())
    p = Progress(True, "indexing", tty=False, stream=io.StringIO(), interval=0, clock=clock)
    sizes = {f"f{i}": size for i, (size, _, _) in enumerate(files)}
    p.set_totals(len(files), sizes)
    seen, pending, calls = [], [], [0]

    def flush(chunk_tokens):
        with p.phase("embed"):
            for start in range(0, len(chunk_tokens), batch):
                part = chunk_tokens[start : start + batch]
                clock.t += sum(part) * seconds_per_token(calls[0]) + (first_call_extra if not calls[0] else 0.0)
                if cpu_per_token:
                    cpu.t += sum(part) * cpu_per_token(calls[0]) + (first_call_extra if not calls[0] else 0.0)
                calls[0] += 1
                p.embedded(len(part), sum(part))
                if wanted(calls[0]):
                    seen.append((clock.t, p.eta()))
        _work(p, clock, "write", 0.001 * len(chunk_tokens))
        p.update("chunks written", "chunk", len(chunk_tokens))

    for i, (size, chunks, tokens) in enumerate(files):
        with p.phase("chunk"):
            with p.phase("read"):
                clock.t += size * 1e-6
            p.file_done(f"f{i}")
            clock.t += size * 2e-6
        p.chunked(f"f{i}", chunks, chunks * tokens)
        pending += [tokens] * chunks
        if len(pending) >= batch:
            flush(pending)
            pending = []
    if pending:
        flush(pending)
    p.close()
    return [(t, eta, clock.t - t) for t, eta in seen]


def test_a_constant_rate_trace_gets_exact_etas():
    """Files of different sizes, the same chunks and tokens a byte, every token and byte costing the same:
    from the first write on (its cost is not known before; the first call's cost, holding the model's load,
    is left out once a second call is timed) every ETA is the time really left."""
    files = [(1000 * n, 10 * n, 120) for n in [3, 7, 1, 12, 5, 2, 9] * 12]
    rows = _simulate(files, seconds_per_token=lambda call: 0.002, first_call_extra=5.0)
    assert len(rows) > 40
    for _, eta, real in rows[2:]:  # the first flush (100 chunks) is two calls, then its write
        assert eta is not None and eta == pytest.approx(real, rel=1e-6, abs=1e-6)


def test_a_huge_denser_file_early_does_not_make_the_later_etas_too_long():
    """A large file read early (a project's release notes: more chunks and tokens a byte than the rest)
    must not speak for every file after it: the ETAs after it stay close to the time really left, not
    the (bytes left x its density) a byte-weighted projection would give."""
    small = [(3000, 6, 140)] * 8
    huge = [(300_000, 800, 180)]  # 0.48 tokens a byte against 0.28 in the others
    rows = _simulate(small + huge + small * 6, seconds_per_token=lambda call: 0.002)
    after = rows[1:]
    assert len(after) > 10
    for _, eta, real in after:
        assert eta is not None and real / 1.1 <= eta <= 1.1 * real
    # what a byte-weighted density would have assumed for the files left: over 1.3x their tokens
    byte_weighted = (8 * 6 * 140 + 800 * 180) / (8 * 3000 + 300_000)
    assert byte_weighted > 1.3 * (6 * 140 / 3000)


def test_a_costly_first_batch_does_not_make_the_later_etas_too_long():
    """The first embedding calls cost far more (the model's load, cold caches): their cost is not
    extrapolated to the rest of the run once later calls are timed."""
    files = [(5000, 10, 150)] * 200
    rows = _simulate(
        files, seconds_per_token=lambda call: 0.02 if call < 2 else 0.002, first_call_extra=30.0, wanted=lambda c: c > 2
    )
    assert len(rows) > 20
    for _, eta, real in rows[:16]:  # the slow second call is in the window of recent calls: never too short
        assert eta is not None and eta >= real - 1e-6
    # past that window it counts only in the whole run's cost, less with every call
    ratios = [eta / real for _, eta, real in rows[16:-1]]
    assert all(1.0 <= r <= 1.15 for r in ratios) and ratios == sorted(ratios, reverse=True)


def _outside(rows, bar: float = 1.5) -> list[float]:
    """ETA / real of the rows after the first 10 % of the run that are not within ``bar`` of the real time."""
    end = rows[-1][0] + rows[-1][2]
    late = [eta / real for t, eta, real in rows if t >= 0.1 * end and real > 0]
    assert len(late) > 40
    return [r for r in late if not 1 / bar <= r <= bar]


def test_a_slow_spell_does_not_make_the_etas_after_it_too_long():
    """The machine is busy for a while (another job, a stress test: eight calls at 2.2x the cost), then as
    before. The cost of the recent calls alone says 1.6x too long when the spell ends; blended with the
    whole run's it stays within 1.5x of the time really left, on every line after the first 10 %."""
    rows = _simulate([(5000, 10, 150)] * 600, seconds_per_token=lambda call: 0.0044 if 50 <= call < 58 else 0.002)
    assert _outside(rows) == []


def test_a_quiet_spell_does_not_make_the_etas_after_it_too_short():
    """The other way round: the machine is idle for a while (eight calls at a quarter of the cost), then as
    busy as before. The recent calls alone say 0.62x of the time left when the spell ends."""
    rows = _simulate([(5000, 10, 150)] * 600, seconds_per_token=lambda call: 0.0005 if 50 <= call < 58 else 0.002)
    assert _outside(rows) == []


def test_a_lasting_change_of_pace_is_followed():
    """The machine becomes twice as fast (or slow) for good: no estimate from past calls foresees that, but
    once the window of recent calls has seen it the ETAs are within 1.5x, and closer with every call."""
    for after in (0.001, 0.004):
        rows = _simulate(
            [(5000, 10, 150)] * 600,
            seconds_per_token=lambda call, a=after: 0.002 if call < 30 else a,
            wanted=lambda call: call > 30 + RECENT_CALLS,
        )
        off = [abs(math.log(eta / real)) for _, eta, real in rows[:-1]]
        assert len(off) > 100 and max(off) < math.log(1.5) and off[-1] < off[0] / 3


def test_a_lasting_change_of_the_machines_speed_in_cpu_seconds_too_is_followed(monkeypatch):
    """The machine becomes twice as fast (or slow) for good, and the process's CPU seconds a token change
    with it, the pace (wall over CPU seconds) steady: a virtual machine's CPU seconds are no fixed cost of
    the text (the idle FastAPI run: 0.62 falling to 0.40 ms a token for text of the same cost). With the
    process's clocks replaced by hand-moved ones, once the window of recent calls has seen the change the
    ETAs are within 1.5x, as for a change of pace alone; a whole-run CPU cost a token times the pace said
    1.6x too long."""
    for after in (0.001, 0.004):
        clocks = (Clock(), Clock())
        monkeypatch.setattr(progress_module, "time", SimpleNamespace(monotonic=clocks[0], process_time=clocks[1]))
        rows = _simulate(
            [(5000, 10, 150)] * 600,
            seconds_per_token=lambda call, a=after: 0.002 if call < 30 else a,
            cpu_per_token=lambda call, a=after: 1.8 * (0.002 if call < 30 else a),
            clocks=clocks,
            wanted=lambda call: call > 30 + RECENT_CALLS,
        )
        off = [abs(math.log(eta / real)) for _, eta, real in rows[:-1]]
        assert len(off) > 100 and max(off) < math.log(1.5) and off[-1] < off[0] / 3
