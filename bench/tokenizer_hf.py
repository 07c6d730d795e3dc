#!/usr/bin/env python3
"""Peer of bench/tokenizer_bench.c: Hugging Face `tokenizers` encoding speed, one thread.

Encodes the whole text with one Tokenizer.encode(text, add_special_tokens=False) call, REPS times,
each with a freshly loaded tokenizer (a cold word cache, as accel's driver; loading is not timed);
prints the best MB/s and the id count. Run with RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
(bench/tokenizer_bench.sh sets them).
    tokenizer_hf.py TOKENIZER_JSON TEXT_FILE [REPS]
"""
import sys
import time

from tokenizers import Tokenizer


def main():
    path, text_path = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    raw = open(text_path, "rb").read()
    text = raw.decode("utf-8")
    js = open(path, encoding="utf-8").read()
    best, n = 1e30, 0
    for _ in range(reps):
        tok = Tokenizer.from_str(js)
        t0 = time.perf_counter()
        ids = tok.encode(text, add_special_tokens=False).ids
        dt = time.perf_counter() - t0
        best = min(best, dt)
        n = len(ids)
    print("hf %.2f MB/s %d ids %.4f s" % (len(raw) / best / 1e6, n, best))


if __name__ == "__main__":
    main()
