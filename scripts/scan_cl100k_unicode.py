"""Which code points gigatoken and tiktoken pre-tokenise differently (their Unicode tables differ).

Every code point outside ASCII (surrogates excepted) is put into a few probe strings (between letters, before
punctuation, between spaces, next to digits, doubled) and encoded by gigatoken's BPE and by tiktoken's
``encode_ordinary``; a code point is listed when any probe differs. The ranges printed are the ones in
``chunkwise.segmentation.cl100k_encoder.UNICODE_DIFF_RANGES`` (re-run after upgrading either package). ~35 s.

Usage: python scripts/scan_cl100k_unicode.py   (needs the cl100k-fast extra)
"""

from __future__ import annotations

import sys
import time

from chunkwise.segmentation.cl100k_encoder import GigatokenEncoder
from chunkwise.segmentation.tiktoken_bpe import TiktokenTokenizer
from chunkwise.segmentation.tokenizers import get_tokenizer


def probes(c: str) -> tuple[str, ...]:
    return ("x" + c + "x", c + ":A", " " + c + " ", c + "1", "1" + c + "1", c + c)


def main() -> int:
    tok = get_tokenizer("cl100k")
    assert isinstance(tok, TiktokenTokenizer)
    giga = GigatokenEncoder(tok._rank_file)  # no fallback: gigatoken alone
    ref = tok.encoding
    t0 = time.time()
    bad = []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if any(list(map(int, giga.encode(p))) != ref.encode_ordinary(p) for p in probes(c)):
            bad.append(cp)
    ranges: list[tuple[int, int]] = []
    for cp in bad:
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    for a, b in ranges:
        print(f"U+{a:04X}" if a == b else f"U+{a:04X}-U+{b:04X}")
    print(f"{len(bad)} code points in {len(ranges)} ranges ({time.time() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
