#!/usr/bin/python3
"""Read back a safetensors file exported by `accel_ckpt export` from a tests/ckpt_driver checkpoint
and check it against the driver's known values. Standard library only.

usage: ckpt_safetensors.py FILE SEED fp32|bf16
Checks: 8-byte little-endian header size, JSON header, tensors sorted by name with contiguous
data_offsets covering the whole data section, dtype and shape of every tensor, every element
(bf16: rounded to nearest even from the fp32 value)."""
import json
import struct
import sys

M64 = (1 << 64) - 1

# (name, shape) in the driver's layout order (index = tensor id in the value function).
LAYOUT = [("emb", [300, 70]), ("h.0.attn.qkv.weight", [3, 40, 1200]), ("h.0.bias", [17]),
          ("conv", [5, 7, 33, 61]), ("big", [150000]), ("lnf/gain", [64])]


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def f32_bits(seed, arena, tensor, i, base):
    h = splitmix64(base ^ i)
    v = ((h >> 40) / 16777216.0 - 0.5) * 4.0
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bf16_of(u):
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return ((u >> 16) | 0x40) & 0xFFFF
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    path, seed, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen % 8 or 8 + hlen > len(blob):
        fail("header size %d is not a multiple of 8 or exceeds the file" % hlen)
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = blob[8 + hlen:]
    meta = header.pop("__metadata__", {})
    if not all(isinstance(v, str) for v in meta.values()):
        fail("__metadata__ values must be strings")
    names = list(header.keys())
    if names != sorted(names):
        fail("tensors not sorted by name: %s" % names)
    want = dict(LAYOUT)
    if set(names) != set(want):
        fail("tensor names %s, expected %s" % (sorted(names), sorted(want)))
    esize = 4 if dtype == "fp32" else 2
    pos = 0
    for name in names:
        t = header[name]
        if t["dtype"] != ("F32" if dtype == "fp32" else "BF16"):
            fail("%s: dtype %s" % (name, t["dtype"]))
        if t["shape"] != want[name]:
            fail("%s: shape %s, expected %s" % (name, t["shape"], want[name]))
        b, e = t["data_offsets"]
        n = 1
        for d in t["shape"]:
            n *= d
        if b != pos or e - b != n * esize:
            fail("%s: data_offsets %s not contiguous (expected start %d, %d bytes)" % (name, [b, e], pos, n * esize))
        pos = e
        tid = [x[0] for x in LAYOUT].index(name)
        base = splitmix64((seed * 1000003 + 0 * 7919 + tid * 104729) & M64)
        fmt = "<%d%s" % (n, "I" if esize == 4 else "H")
        got = struct.unpack(fmt, data[b:e])
        for i in range(n):
            u = f32_bits(seed, 0, tid, i, base)
            w = u if esize == 4 else bf16_of(u)
            if got[i] != w:
                fail("%s element %d: 0x%x, expected 0x%x" % (name, i, got[i], w))
    if pos != len(data):
        fail("data section is %d bytes, tensors cover %d" % (len(data), pos))
    print("PASS: %s: %d tensors (%s), every element as saved" % (path, len(names), dtype))


if __name__ == "__main__":
    main()
