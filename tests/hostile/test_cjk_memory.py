"""Issue 20, failure 8: token counting of CJK text without whitespace streams in bounded memory.

Before the fix the whole run was one block for the Rust tokenizer: 10.5 MB peaked at 1.78 GB RSS in the
tokenizer alone (1.83 GB for ``chunkwise chunk``). Blocks are now also cut before CJK ideographs (where a
BERT token can never continue) and encoded a group at a time. The 10 MB measurement is
``benchmarks/bench_cjk_memory.py``; here 2 MB in a child process, whose own peak RSS is checked.
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

from chunkwise.segmentation.tokenizers import get_tokenizer

CHILD = """
import resource, sys
from chunkwise.segmentation.token_map import TokenMap
from chunkwise.segmentation.tokenizers import get_tokenizer
text = open(sys.argv[1], encoding="utf-8").read()
t = get_tokenizer("minilm")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
n = t.count(text)
assert len(TokenMap(text, t)) == n
print(n, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def _bench_module():
    """benchmarks/bench_cjk_memory.py, whose ``cjk`` text generator the test shares (stdlib imports only)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cjk_memory.py"
    spec = importlib.util.spec_from_file_location("bench_cjk_memory", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cjk = _bench_module().cjk


def test_blocks_give_the_same_tokens_as_the_whole_text():
    tok = get_tokenizer("minilm")
    rng = random.Random(5)
    pieces = [
        "漢字",
        "かな",
        "テスト",
        "。",
        "、",
        "abc",
        "Déjà",
        " ",
        "\n",
        "123",
        "𠀀",
        "ｱｲ",
        "e\u0301",
        "!?",
        "한국어",
    ]
    text = "".join(rng.choice(pieces) for _ in range(300_000))
    whole = tok.hf.encode(text, add_special_tokens=False)
    starts, ends = tok.offset_arrays(text)
    assert tok.count(text) == len(whole.ids) == len(starts)
    assert [tuple(o) for o in whole.offsets] == list(zip(starts.tolist(), ends.tolist()))
    assert tok.count_batch([text, "漢字", text[:1000]]) == [len(whole.ids), 2, tok.count(text[:1000])]


def test_cjk_without_whitespace_counts_in_bounded_memory(tmp_path):
    path = tmp_path / "cjk.txt"
    path.write_text(cjk(700_000), encoding="utf-8")  # 2.1 MB of UTF-8, as in the issue (456 MB before)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tokens, grown_mb = map(int, done.stdout.split())
    assert tokens > 600_000
    assert grown_mb < 150, f"tokenising 2.1 MB of CJK grew RSS by {grown_mb} MB"
