#!/bin/sh
# Regenerates tests/fixtures/data/h5py/: token datasets written by h5py the ways users write them
# (see tests/h5py_fixtures.py). Python is an oracle here, never a dependency of accel: `make check`
# only reads the committed files.
#   tests/make_h5py_fixtures.sh [OUTDIR]        (default tests/fixtures/data/h5py)
# Python: bench/venv.sh ($PYTHON, else bench/.venv with h5py and numpy, made when missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$top/tests/fixtures/data/h5py"}
. "$top/bench/venv.sh"
python_with "import h5py, numpy" h5py numpy
mkdir -p "$out"
exec "$py" "$top/tests/h5py_fixtures.py" "$out"
