"""The ``chunkwise`` command ends without Python's finalisation (``cli.run``), and loses nothing by it:
the output is whole on a pipe or in a file, the exit status is main's, ``atexit`` handlers and logging
run, and a non-daemon thread still running gets Python's normal exit, which waits for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from chunkwise.cli import main


def _run(code: str, *args: str, tmp_path=None) -> subprocess.CompletedProcess:
    env_code = textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", env_code, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def test_the_output_is_whole_and_the_status_is_mains(tmp_path, capsys):
    """A large chunk listing written through the command equals main's in process, byte for byte; a failed
    input keeps main's status and its lines."""
    doc = tmp_path / "doc.txt"
    doc.write_text(" ".join(f"Sentence number {i} talks about valves and pumps." for i in range(3000)))
    args = ["chunk", str(doc), "--strategy", "fixed", "--max-tokens", "32", "--format", "jsonl"]
    assert main(args) == 0
    expected = capsys.readouterr().out
    out = tmp_path / "out.jsonl"
    code = "import sys; from chunkwise.cli import run; sys.argv = ['chunkwise', *sys.argv[1:]]; run()"
    with open(out, "w") as f:  # a file: fully buffered, so only the flush before the exit writes the end
        proc = subprocess.run([sys.executable, "-c", code, *args], stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == expected and len(expected) > 100_000
    piped = _run(code, *args)
    assert piped.returncode == 0 and piped.stdout == expected
    missing = ["chunk", str(tmp_path / "missing.txt")]
    status = main(missing)
    said = capsys.readouterr().err
    bad = _run(code, *missing)
    assert status != 0 and bad.returncode == status and bad.stderr == said and "Traceback" not in bad.stderr


def test_atexit_and_logging_run_and_finalisation_is_skipped(tmp_path):
    log = tmp_path / "log.txt"
    code = f"""
        import atexit, logging, sys
        from chunkwise.cli import run

        class Finalised:
            def __del__(self):
                print("finalised", flush=True)

        keep = Finalised()  # collected only by Python's finalisation
        handler = logging.FileHandler({str(log)!r}, delay=False)
        logging.getLogger("probe").addHandler(handler)
        logging.getLogger("probe").warning("logged")
        atexit.register(lambda: print("atexit ran", flush=True))
        sys.argv = ["chunkwise", "--version"]
        run()
    """
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("chunkwise ")
    assert "atexit ran" in proc.stdout and "finalised" not in proc.stdout
    assert log.read_text() == "logged\n"


@pytest.mark.timeout(120)
def test_a_running_non_daemon_thread_gets_the_normal_exit(tmp_path):
    """A thread the command left running finishes its work (the fast exit would cut it off)."""
    done = tmp_path / "done.txt"
    code = f"""
        import sys, threading, time
        from chunkwise.cli import run

        def work():
            time.sleep(1.0)
            open({str(done)!r}, "w").write("finished")

        threading.Thread(target=work).start()
        sys.argv = ["chunkwise", "--version"]
        run()
    """
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert done.read_text() == "finished"
