#!/bin/sh
# Regenerates the Llama reference fixtures (tests/fixtures/llama/*.h5) that tests/check_llama.c
# compares accel's built-in Llama with: tests/llama_reference.py runs Hugging Face transformers in
# float64 on fifteen tiny models (two of them rows of packed documents, five mixtures of experts,
# three OLMo: OLMo 2's post-norm blocks, OLMoE, and OLMo 3's sliding windows with YaRN on the full
# layers; Gemma 3's norms around both sublayers, 1 + weight RMSNorms, GeGLU, scaled embeddings and
# sliding layers at their own RoPE base beside linearly scaled full layers; gpt-oss's attention
# sinks, output bias, biased experts of clamped SwiGLU and untruncated YaRN) and stores logits, loss
# and gradients under accel's tensor names.
#
# Python is an oracle here, never a dependency of accel: `make check` only reads the committed
# fixtures. This script is for whoever changes the cases or wants to check them again.
#
#   tests/make_llama_fixtures.sh [--case NAME]... [--out DIR]
#
# It uses the virtual environment bench/.venv at the top of the source tree (VENV=path to use
# another), creating it when missing: python3 -m venv, then torch, transformers, h5py and numpy
# from PyPI (the Linux torch wheel from PyPI is large: its CUDA libraries come along; no other
# index is needed). The fixtures record the versions that made them (attributes torch_version,
# transformers_version, ...). With the same versions the files come out byte for byte the same.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, transformers, h5py, numpy" torch transformers h5py numpy

exec "$py" "$top/tests/llama_reference.py" "$@"
