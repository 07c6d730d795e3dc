"""Writes the data-import fixtures (run by tests/make_data_fixtures.sh; see there).

Every good input X comes with X.u32: the token stream accel_data must store for it, as uint32
little-endian, computed here independently of accel (from the arrays, or from Hugging Face
`tokenizers` for the tokenizer.json cases)."""
import json
import os
import sys

import numpy as np
import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

out = sys.argv[1]


def path(name):
    return os.path.join(out, name)


def expect(name, tokens):
    np.asarray(tokens, dtype="<u4").tofile(path(name + ".u32"))


# ---- llm.c shards, exactly as karpathy/llm.c dev/data/data_common.py write_datafile
HEADERS_INFO = {
    "gpt-2": {"magic": 20240520, "version": 1, "token_dtype": np.uint16},
    "llama-3": {"magic": 20240801, "version": 7, "token_dtype": np.uint32},
}


def write_datafile(filename, toks, model_desc="gpt-2"):
    assert len(toks) < 2**31, "token count too large"
    info = HEADERS_INFO[model_desc]
    header = np.zeros(256, dtype=np.int32)
    header[0] = info["magic"]
    header[1] = info["version"]
    header[2] = len(toks)
    toks_np = np.array(toks, dtype=info["token_dtype"])
    with open(filename, "wb") as f:
        f.write(header.tobytes())
        f.write(toks_np.tobytes())


rng = np.random.default_rng(20240520)
gpt2 = rng.integers(0, 50257, size=1500).tolist()
gpt2[0], gpt2[1], gpt2[-1] = 50256, 0, 50256           # <|endoftext|> and the extremes
write_datafile(path("gpt2.bin"), gpt2, "gpt-2")
expect("gpt2.bin", gpt2)
llama3 = rng.integers(0, 128256, size=1200).tolist()
llama3[0], llama3[5], llama3[-1] = 128000, 128255, 65536   # <|begin_of_text|>, max, just past uint16
write_datafile(path("llama3.bin"), llama3, "llama-3")
expect("llama3.bin", llama3)

# ---- .npy arrays written by numpy.save
u16 = rng.integers(0, 50257, size=900).astype("<u2")
np.save(path("u16.npy"), u16)
expect("u16.npy", u16)
big = rng.integers(0, 100000, size=6000).astype("<u4")     # vocab 100000 > 65536: uint32 dataset
big[:3] = [99999, 65535, 65536]
np.save(path("big_u32.npy"), big)
expect("big_u32.npy", big)
i32 = rng.integers(0, 1000, size=700).astype("<i4")
np.save(path("i32.npy"), i32)
expect("i32.npy", i32)
i64 = rng.integers(0, 1000, size=650).astype("<i8")
np.save(path("i64.npy"), i64)
expect("i64.npy", i64)

# ---- JSON Lines: non-ASCII, escapes, a surrogate pair, extra fields, a blank line
docs = [
    "Hello, world.\n",
    "Größe: 5 µm — naïve café ☕",
    'Quotes "inside", a back\\slash, a tab\tand a newline\nin one document.',
    "中文文本和 emoji 😀 (astral plane)",
    "",
    "The last document, no newline at its end",
]
with open(path("docs.jsonl"), "w", encoding="utf-8") as f:
    for i, d in enumerate(docs):
        # raw UTF-8 (document 1), and \uXXXX escapes with a surrogate pair (document 3)
        f.write(json.dumps({"id": i, "text": d, "meta": "doc %d" % i}, ensure_ascii=(i == 3)) + "\n")
        if i == 2:
            f.write("\n")
expect("docs.jsonl.bytes", list(b"".join(d.encode("utf-8") for d in docs)))
expect("docs.jsonl.meta.bytes", list(b"".join(("doc %d" % i).encode() for i in range(len(docs)))))

# ---- a tiny byte-level BPE tokenizer.json (Llama-3 style: BOS from the post-processor)
corpus = docs * 20 + [
    "the quick brown fox jumps over the lazy dog",
    "pack my box with five dozen liquor jugs",
    "accel trains models on clusters with MPI and HDF5",
] * 30
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=400, min_frequency=2,
                              special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(corpus, trainer)
bos = tok.token_to_id("<|begin_of_text|>")
tok.post_processor = processors.TemplateProcessing(
    single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
    special_tokens=[("<|begin_of_text|>", bos)])
os.makedirs(path("tinybpe"), exist_ok=True)
tok.save(path("tinybpe/tokenizer.json"))
tok = Tokenizer.from_file(path("tinybpe/tokenizer.json"))
ids = []
for d in docs:                        # the rule: BOS before every document
    ids += [bos] + tok.encode(d, add_special_tokens=False).ids
expect("docs.jsonl.tinybpe", ids)
np.save(path("tinybpe_ids.npy"), np.asarray(ids, dtype="<i4"))   # pre-tokenized with tinybpe
expect("tinybpe_ids.npy", ids)
text = "A text file is one document.\nIt has two lines, and ünïcödé.\n"
with open(path("text.txt"), "w", encoding="utf-8") as f:
    f.write(text)
expect("text.txt.tinybpe", [bos] + tok.encode(text, add_special_tokens=False).ids)
def xxh64(data, seed=0):
    """XXH64 (the reference algorithm), for the hash datasets record; no xxhash module needed."""
    P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
    M = (1 << 64) - 1
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M
    rnd = lambda acc, v: (rotl((acc + v * P2) & M, 31) * P1) & M
    merge = lambda acc, v: (((acc ^ rnd(0, v)) * P1) + P4) & M
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(data[i:i + 8], "little")), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * P1) & M, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5) & M, 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


assert xxh64(b"") == 0xEF46DB3751D8E999 and xxh64(b"a") == 0xD24EC4F1A98C6E5B
with open(path("tinybpe/tokenizer.json"), "rb") as f:
    with open(path("tinybpe/XXH64"), "w") as g:
        g.write("%016x\n" % xxh64(f.read()))
with open(path("tinybpe/VERSION"), "w") as f:
    f.write("tokenizers %s, vocab %d, bos %d\n" % (tokenizers.__version__, tok.get_vocab_size(), bos))

# ---- wrong inputs
write_datafile(path("bad_toolarge.bin"), [5, 6, 60000, 7], "gpt-2")   # 60000 >= GPT-2 vocab 50257
with open(path("gpt2.bin"), "rb") as f:
    good = f.read()
with open(path("bad_truncated.bin"), "wb") as f:     # header says 1500 tokens, 1000 follow
    f.write(good[:1024 + 2 * 1000])
bad = bytearray(good[:1024 + 2 * 100])
bad[0:4] = np.array([20240521], dtype="<i4").tobytes()
with open(path("bad_magic.bin"), "wb") as f:
    f.write(bytes(bad))
hdr = np.zeros(256, dtype="<i4")
hdr[:4] = [20240522, 1, 0, 0]                        # llm.c write_evalfile header
with open(path("bad_eval.bin"), "wb") as f:
    f.write(hdr.tobytes())
np.save(path("bad_f32.npy"), np.arange(10, dtype="<f4"))
np.save(path("bad_be.npy"), np.arange(10, dtype=">u2"))
np.save(path("bad_2d.npy"), np.arange(12, dtype="<u2").reshape(3, 4))
np.save(path("bad_fortran.npy"), np.asfortranarray(np.arange(12, dtype="<u2").reshape(3, 4)))
np.save(path("bad_negative.npy"), np.array([1, 2, -3, 4], dtype="<i4"))


def raw_npy(name, header, payload=b""):
    h = header.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * (pad % 64) + b"\n"
    with open(path(name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + payload)


data10 = np.arange(10, dtype="<u2").tobytes()
raw_npy("bad_hdr_tuple.npy", "{'descr': '<u2', 'fortran_order': False, 'shape': (10), }", data10)
raw_npy("bad_hdr_extra.npy", "{'descr': '<u2', 'fortran_order': False, 'shape': (10,), 'x': 1, }", data10)
raw_npy("bad_hdr_missing.npy", "{'descr': '<u2', 'shape': (10,), }", data10)
raw_npy("bad_hdr_junk.npy", "this is not a dict", data10)
raw_npy("bad_npy_truncated.npy", "{'descr': '<u2', 'fortran_order': False, 'shape': (20,), }", data10)
with open(path("bad_notjson.jsonl"), "w") as f:
    f.write('{"text": "fine"}\n{"text": "also fine"}\n{"text": unquoted}\n')
with open(path("bad_nofield.jsonl"), "w") as f:
    f.write('{"text": "fine"}\n{"body": "no text field", "id": 2}\n')
with open(path("bad_nonstring.jsonl"), "w") as f:
    f.write('{"text": "fine"}\n{"text": 42}\n')
with open(path("bad_utf8.jsonl"), "wb") as f:
    f.write(b'{"text": "fine"}\n{"text": "bad \xff byte"}\n')
with open(path("binary.dat"), "wb") as f:
    f.write(b"looks like text at first" + bytes(range(256)) * 4)
print("wrote the fixtures in", out, "(numpy %s, tokenizers %s)" % (np.__version__, tokenizers.__version__))
