"""Token datasets as users write them with h5py (tests/make_h5py_fixtures.sh writes them into
tests/fixtures/data/h5py/; tests/data_import.sh reads them through accel's loader).

Every file holds the same 3000-token stream, train = the first 2500, val = the rest, with the
attributes accel's format asks for written the h5py way (str -> variable-length UTF-8, int ->
int64), and the tokens stored one way each:
  int64.h5         numpy's default integer (np.arange, lists): contiguous int64
  gzip_shuffle.h5  compression="gzip", shuffle=True (chunked, chunks chosen by h5py)
  appended.h5      maxshape=(None,), chunks=(512,), grown by resize in pieces of 700 (the way a
                   tokenizing loop appends), the last chunk partial
  fletcher32.h5    fletcher32=True (checksummed chunks)
  bigendian.h5     dtype ">u2"
  lzf.h5           compression="lzf": h5py's own filter, which a plain HDF5 cannot decode
tokens.u32 is the stream (uint32 little-endian) the readable ones must give.
"""
import sys

import h5py
import numpy as np

out = sys.argv[1]
tokens = (np.arange(3000, dtype=np.int64) * 31 + 7) % 1000
train, val = tokens[:2500], tokens[2500:]


def token_file(name):
    """A new file with the attributes of accel's token format, written the h5py way."""
    f = h5py.File(f"{out}/{name}", "w")
    f.attrs["format"] = "accel-tokens"
    f.attrs["version"] = 1
    f.attrs["vocab"] = 1000
    f.attrs["tokenizer"] = "h5py-test"
    return f


def write(name, dtype, **kw):
    with token_file(name) as f:
        for split, arr in (("train", train), ("val", val)):
            f.create_dataset(f"{split}/tokens", data=arr.astype(dtype), **kw)


write("int64.h5", np.int64)
write("gzip_shuffle.h5", np.uint16, compression="gzip", shuffle=True)
write("fletcher32.h5", np.uint16, fletcher32=True)
write("bigendian.h5", ">u2")
write("lzf.h5", np.uint16, compression="lzf")
with token_file("appended.h5") as f:
    for split, arr in (("train", train), ("val", val)):
        d = f.create_dataset(f"{split}/tokens", shape=(0,), maxshape=(None,), dtype=np.uint16, chunks=(512,))
        for i in range(0, len(arr), 700):
            piece = arr[i:i + 700]
            d.resize(d.shape[0] + len(piece), axis=0)
            d[-len(piece):] = piece
tokens.astype("<u4").tofile(f"{out}/tokens.u32")
