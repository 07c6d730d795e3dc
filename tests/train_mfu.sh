#!/bin/sh
# Achieved TFLOP/s and MFU (src/train/flops.c): the end-of-run throughput line prints MFU =
# achieved / train.peak_tflops, achieved = tokens/s x FLOP per token / ranks, FLOP per token =
# 6N + 6LCT (6N per sample for the mlp); the metrics step rows carry tflops and mfu; a negative
# peak is refused, an MFU above 100% warns once; on CPUs without the key the measured peak is printed and used; a GPU missing
# from the peak table (the emulated one) prints no MFU at all.
. "$top_srcdir/tests/lib.sh"
make_scratch
gpt="model.name=gpt model.layers=2 model.width=64 model.heads=4 model.context=32 model.vocab=256
     data.path=synthetic train.steps=8 train.global_batch=8 train.log_every=4 train.sample_tokens=0"

# check_summary LOG PEAK RANKS L C T: the throughput line's figures agree with each other.
check_summary() {
    line=$(grep "throughput: " "$1") || fail "no throughput line: $(tail -20 "$1")"
    n=$(sed -n 's/.* model [a-z]*: \([0-9]*\) parameters.*/\1/p' "$1")
    echo "$line" | awk -v peak="$2" -v ranks="$3" -v L="$4" -v C="$5" -v T="$6" -v N="$n" '{
        for (i = 1; i <= NF; i++) {
            if ($(i + 1) ~ /^(tokens|samples)\/s,$/) rate = $i
            if ($(i + 1) == "TFLOP/s" && $(i + 2) == "per") tf = $i
            if ($i == "MFU") { mfu = $(i + 1); sub(/%$/, "", mfu) }
            if ($i == "FLOP" && $(i + 1) == "per") { fpu = $(i - 1); sub(/^\(/, "", fpu) }
        }
        want_fpu = 6 * N + 6 * L * C * T
        if (fpu == "" || (fpu - want_fpu) / want_fpu > 1e-3 || (want_fpu - fpu) / want_fpu > 1e-3) {
            printf "FLOP per unit %s, expected 6N + 6LCT = %.0f (N = %s)\n", fpu, want_fpu, N; exit 1 }
        want_tf = rate * fpu / ranks / 1e12
        if (tf == "" || (tf - want_tf) / want_tf > 2e-3 || (want_tf - tf) / want_tf > 2e-3) {
            printf "%s TFLOP/s per rank, expected %s/s x %s FLOP / %d ranks = %.5g\n", tf, rate, fpu, ranks, want_tf; exit 1 }
        want_mfu = 100 * tf / peak         # tf has 4 significant digits, MFU two decimals
        d = mfu - want_mfu; if (d < 0) d = -d
        if (mfu == "" || d > 0.006 + want_mfu * 1e-3) {
            printf "MFU %s%%, expected %s / %s = %.3f%%\n", mfu, tf, peak, want_mfu; exit 1 }
        printf "%s TFLOP/s per rank / %s peak = MFU %s%% (FLOP per unit %s)\n", tf, peak, mfu, fpu }' ||
        fail "throughput line inconsistent: $line"
}

# A configured peak: the header names it, the progress lines and the summary print MFU against it.
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $gpt train.peak_tflops=0.05 train.metrics=m.jsonl 2>&1) ||
    fail "2-rank run with train.peak_tflops: $out"
echo "$out" > "$SCRATCH/peak.log"
grep -qF "peak: 0.05 TFLOP/s per rank (train.peak_tflops)" "$SCRATCH/peak.log" || fail "no configured peak in the header: $out"
[ "$(grep -c "TFLOP/s/rank  MFU [0-9.]*%" "$SCRATCH/peak.log")" -eq 3 ] || fail "progress lines lack TFLOP/s and MFU: $out"
check_summary "$SCRATCH/peak.log" 0.05 2 2 64 32
# Metrics step rows: tflops, and mfu = tflops / peak as a fraction.
awk '/"kind": "train"/ { t = $0; sub(/.*"tflops": /, "", t); sub(/,.*/, "", t); m = $0; sub(/.*"mfu": /, "", m); sub(/[,}].*/, "", m)
                if (t <= 0 || m == "null") { print "bad row: " $0; exit 1 }
                d = m - t / 0.05; if (d < 0) d = -d; if (d > 1e-5 * (m + 1)) { print "mfu != tflops/peak: " $0; exit 1 }
                n++ }
     END { if (n != 8) { print n " step rows"; exit 1 } }' "$SCRATCH/m.jsonl" || fail "metrics rows: $(head -3 "$SCRATCH/m.jsonl")"
pass "train.peak_tflops=0.05: progress lines, summary and metrics rows print MFU = achieved / peak"

expect_fail "configuration key 'train.peak_tflops' must not be negative" "$ACCEL_TRAIN" train.peak_tflops=-1

# A peak below what the run achieves is wrong: one warning says so and what to do.
out=$(cd "$SCRATCH" && run_mpi 1 "$ACCEL_TRAIN" $gpt train.peak_tflops=1e-7 2>&1) || fail "run with a tiny peak: $out"
[ "$(echo "$out" | grep -c "WARNING: MFU above 100%: .* against a peak of 1e-07 (train.peak_tflops)")" = 1 ] ||
    fail "an MFU above 100% did not warn exactly once: $out"
pass "an MFU above 100% warns once, naming where the peak came from"

# CPUs without the key: the measured peak, printed once, is the denominator.
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $gpt 2>&1) || fail "2-rank run with a measured peak: $out"
echo "$out" > "$SCRATCH/measured.log"
peak=$(sed -n 's/.*peak: \([0-9.e+-]*\) TFLOP\/s per rank (measured: best fp32 [0-9]*^3 product.*/\1/p' "$SCRATCH/measured.log")
[ -n "$peak" ] || fail "no measured peak in the header: $out"
check_summary "$SCRATCH/measured.log" "$peak" 2 2 64 32
# The mlp: 6N per sample, no attention term.
out=$(run_mpi 1 "$ACCEL_TRAIN" model.name=mlp train.steps=4 train.peak_tflops=0.01 2>&1) || fail "mlp run: $out"
echo "$out" > "$SCRATCH/mlp.log"
grep -q "FLOP per sample" "$SCRATCH/mlp.log" || fail "mlp: not counted per sample: $(grep throughput "$SCRATCH/mlp.log")"
check_summary "$SCRATCH/mlp.log" 0.01 1 0 0 0
pass "measured CPU peak ($peak TFLOP/s per rank) and the mlp's 6N per sample"

# A GPU the table does not know (the emulated device): no MFU anywhere, a hint instead.
mock="$top_builddir/tests/gpu_mock_train"
if [ -x "$mock" ]; then
    out=$(cd "$SCRATCH" && env -u ACCEL_DEVICE timeout -k 10 "$TEST_TIMEOUT" "$mock" $gpt device=cuda train.metrics=g.jsonl 2>&1) ||
        fail "emulated GPU run: $out"
    echo "$out" | grep -qF "peak unknown for emulated GPU (tests/gpu_mock.c) fp32: set train.peak_tflops for MFU" ||
        fail "no 'peak unknown' hint: $out"
    echo "$out" | grep -q "MFU [0-9]" && fail "MFU printed without a known peak: $out"
    echo "$out" | grep -q "TFLOP/s per rank" || fail "no achieved TFLOP/s without a peak: $out"
    grep -q '"mfu": null' "$SCRATCH/g.jsonl" || fail "metrics rows lack \"mfu\": null: $(head -2 "$SCRATCH/g.jsonl")"
    pass "unknown GPU: TFLOP/s only, no MFU, metrics mfu null"
fi
