# Shared helpers for the shell tests (sourced). make check exports top_builddir, top_srcdir, MPIRUN.
# Every MPI launch is bounded by a timeout: a hung collective must fail the test, not the CI run.
: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$top_builddir}"
: "${MPIRUN:=mpirun}"
ACCEL="$top_builddir/accel"
ACCEL_TRAIN="$top_builddir/accel_train"

# mpirun as root, 4 ranks on 2 cores, traffic on loopback, Check without fork (MPI in-process).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export CK_FORK=no
# The CPU is the reference the tests compare against at ~1e-7: keep accel_train there even on a
# machine with GPUs (device=auto would pick them). The GPU tests (tests/gpu_*.sh) unset this.
export ACCEL_DEVICE="${ACCEL_DEVICE:-cpu}"

TEST_TIMEOUT=${ACCEL_TEST_TIMEOUT:-300}

# Each test runs in its own directory under the build tree (what it leaves there, such as the
# default corpus data/corpus.h5 that accel_train prepares, goes away with 'make clean').
TEST_DIR="$top_builddir/tests/run/$(basename "$0" .sh)"
mkdir -p "$TEST_DIR" && cd "$TEST_DIR" || { echo "FAIL: cannot enter $TEST_DIR"; exit 1; }

# run_mpi NP CMD...: mpirun -np NP CMD, killed after TEST_TIMEOUT seconds.
run_mpi() {
    np=$1; shift
    timeout -k 10 "$TEST_TIMEOUT" "$MPIRUN" -np "$np" "$@"
}

# bf16_paths: the bf16 product paths (ACCEL_BF16_GEMM values) this build and CPU can run, from
# accel env: always emulate; kernel with AVX512-BF16; onednn with oneDNN and AVX512-BF16 or AMX.
bf16_paths() {
    ACCEL_BF16_GEMM= "$ACCEL" env 2>/dev/null |
        sed -n 's/^bf16 products .*this machine runs: *\([^)]*\)).*/\1/p'
}
# for_each_bf16_path CMD...: CMD once with each path forced; says which ones this machine lacks.
for_each_bf16_path() {
    paths=$(bf16_paths)
    [ -n "$paths" ] || fail "accel env does not list the bf16 product paths"
    for want in onednn kernel; do
        case " $paths " in *" $want "*) ;;
        *) echo "note: ACCEL_BF16_GEMM=$want not tested: this build or CPU cannot run it ($paths only)" ;; esac
    done
    for path in $paths; do
        ACCEL_BF16_GEMM=$path "$@" || fail "'$*' failed with ACCEL_BF16_GEMM=$path"
    done
}

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
pass() { echo "PASS: $*"; }

# wait_for_line FILE PATTERN [TENTHS]: until FILE has a line matching PATTERN (up to TENTHS/5 s,
# default 30 s); signal_ranks SIG PATTERN: SIG to the accel_train processes whose command line
# matches PATTERN, themselves (not mpirun or timeout), as srun delivers Slurm's signals.
wait_for_line() {
    for i in $(seq 1 "${3:-150}"); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}
signal_ranks() {
    for p in $(pgrep -f "$2"); do
        case $(cat /proc/$p/comm 2>/dev/null) in *accel_train*) kill -"$1" "$p" ;; esac
    done
}

# A scratch directory removed when the test exits.
make_scratch() {
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/accel-test.XXXXXX")
    trap 'rm -rf "$SCRATCH"' EXIT
}

# h5_values FILE DATASET [TYPE]: the dataset's values, one a line (h5dump's little-endian binary
# output through od; TYPE u1, u2 or u4, default u1). Needs make_scratch.
h5_values() {
    rm -f "$SCRATCH/h5_values.bin"
    timeout -k 5 120 h5dump -d "$2" -b LE -o "$SCRATCH/h5_values.bin" "$1" > /dev/null 2>&1 || fail "h5dump -d $2 $1"
    od -An -v --endian=little -t"${3:-u1}" "$SCRATCH/h5_values.bin" | tr -s ' ' '\n' | sed '/^$/d'
}

# expect_fail EXPECTED_TEXT CMD...: CMD must exit non-zero (not by a signal) and print the text.
expect_fail() {
    want=$1; shift
    out=$("$@" 2>&1); rc=$?
    [ "$rc" -ne 0 ] || fail "expected failure from: $* (got exit 0)"
    [ "$rc" -lt 124 ] || fail "'$*' crashed or hung (exit $rc): $out"
    printf '%s\n' "$out" | grep -qF -- "$want" || fail "'$*' did not say '$want'; it said: $out"
    pass "$* -> exit $rc, says '$want'"
}

# compare_losses REF RUN [TOL] [STEPS]: the step lines of two train.metrics files agree within TOL
# relative (default 1e-5) step by step (lines are matched by step number, so evaluation lines and
# resumed runs are fine), and RUN holds STEPS of them when given. Prints the largest difference.
compare_losses() {
    awk -v tol="${3:-1e-5}" -v want="${4:-0}" -v a="$1" -v b="$2" '
        function field(line, key) { sub(".*\"" key "\": ", "", line); sub(/[,}].*/, "", line); return line + 0 }
        FNR == NR { if ($0 ~ /"kind": "train"/) ref[field($0, "step")] = field($0, "loss"); next }
        /"kind": "train"/ { k = field($0, "step"); d = field($0, "loss") - ref[k]; if (d < 0) d = -d;
                   r = d / (ref[k] < 0 ? -ref[k] : ref[k]); if (r > w) w = r; n++ }
        END { printf "%s vs %s: %d steps, max relative difference %.2e\n", b, a, n, w;
              exit ((want == 0 || n == want) && n > 0 && w <= tol) ? 0 : 1 }' "$1" "$2"
}
