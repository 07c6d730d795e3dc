#!/usr/bin/env python3
"""Peer of bench/tokenizer_bench.c: Hugging Face `tokenizers` encoding speed, one thread.

Encodes the whole text with one Tokenizer.encode(text, add_special_tokens=False) call, REPS times,
each with a freshly loaded tokenizer (a cold word cache, as accel's driver; loading is not timed);
prints the best MB/s and the id count. DOC > 0 cuts the text into documents first (each ends at the
first newline at or after DOC bytes from its start, as the C driver cuts) and encodes them with one
encode_batch call. Run with RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false (one thread;
bench/tokenizer_bench.sh sets them).
    tokenizer_hf.py TOKENIZER_JSON TEXT_FILE [REPS [DOC]]
"""
import sys
import time

from tokenizers import Tokenizer


def main():
    path, text_path = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    doc = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    raw = open(text_path, "rb").read()
    text = raw.decode("utf-8")
    docs, a = [], 0
    while a < len(raw):
        b = len(raw)
        if doc > 0 and a + doc < len(raw):
            nl = raw.find(b"\n", a + doc)
            b = nl + 1 if nl >= 0 else len(raw)
        docs.append(raw[a:b].decode("utf-8"))
        a = b
    js = open(path, encoding="utf-8").read()
    best, n = 1e30, 0
    for _ in range(reps):
        tok = Tokenizer.from_str(js)
        t0 = time.perf_counter()
        if doc > 0:
            n = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
        else:
            n = len(tok.encode(text, add_special_tokens=False).ids)
        dt = time.perf_counter() - t0
        best = min(best, dt)
    print("hf %.2f MB/s %d ids %.4f s" % (len(raw) / best / 1e6, n, best))


if __name__ == "__main__":
    main()
