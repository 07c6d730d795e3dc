#!/bin/bash
# GPT-2 124M training speed on one GPU: accel_train against PyTorch eager, PyTorch eager + Hugging
# Face Accelerate, and torch.compile, same model, same step, same micro-batch. Called by
# `bench/gpu/run.sh bench` (which sets up the environment); by hand, from a configured build:
#
#   bash bench/gpu/gpt2_bench.sh BUILD_DIR
#
# GPU: 12 layers, 12 heads, width 768, context 1024, vocab 50257, micro-batch BENCH_MICRO (16),
# bf16 (fp32 master weights, AdamW, clipping), BENCH_WARMUP (10) untimed steps then BENCH_STEPS (30)
# timed ones. accel_train device=cuda on a synthetic token dataset made by accel_data synth (read
# through accel's HDF5 loader, as a real run would); PyTorch on random tokens already on the GPU.
# No GPU: the same path on the CPU with a tiny GPT (2 layers, width 64, context 64, vocab 512), so
# the kit is exercised on any machine; MFU is then not computed.
#
# Peak memory column: GPU memory in use while the run went (nvidia-smi, sampled every 100 ms, minus
# the memory in use before it: the CUDA context included, the same meter for all); on the CPU each
# program's own figure (accel: resident memory above start-up; PyTorch: maximum resident size).
# Prints a table last: tokens/s, ms/step, MFU, peak GiB, accel's ratio to each PyTorch run.
#
# Variables: BENCH_SHAPE ("layers heads width context vocab"), BENCH_MICRO, BENCH_STEPS, BENCH_WARMUP,
# BENCH_DEVICE (cuda with a GPU, else cpu), BENCH_MODES ("accel eager accelerate compile"),
# BENCH_PEAK_FLOPS (989e12), BENCH_RAW (folder for raw logs), BENCH_TIMEOUT (per run, 240 s),
# PYTHON (default: the first of python3, /usr/bin/python3 that has PyTorch).
set -uo pipefail
build=${1:?usage: gpt2_bench.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
raw=${BENCH_RAW:-$(mktemp -d)}
mkdir -p "$raw"
modes=${BENCH_MODES:-accel eager accelerate compile}
tmo=${BENCH_TIMEOUT:-240}
# run.sh's deadline for the whole call (seconds since the epoch): each run gets at most what is left.
deadline=${ACCEL_GPU_DEADLINE:-$(( $(date +%s) + 3600 ))}
run_timeout() { # -> seconds for the next run, or nothing when there is no time left for one
    local l=$(( deadline - $(date +%s) - 10 ))
    [ "$l" -ge 30 ] || return 1
    [ "$l" -lt "$tmo" ] && echo "$l" || echo "$tmo"
}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    gpu=1 dev=${BENCH_DEVICE:-cuda}
    read -r L H C T V <<< "${BENCH_SHAPE:-12 12 768 1024 50257}"
    B=${BENCH_MICRO:-16} STEPS=${BENCH_STEPS:-30} WARM=${BENCH_WARMUP:-10}
    peak=${BENCH_PEAK_FLOPS:-989e12}
    threads=0
else
    gpu=0 dev=${BENCH_DEVICE:-cpu}
    read -r L H C T V <<< "${BENCH_SHAPE:-2 2 64 64 512}"
    B=${BENCH_MICRO:-4} STEPS=${BENCH_STEPS:-8} WARM=${BENCH_WARMUP:-3}
    peak=${BENCH_PEAK_FLOPS:-0}
    threads=1
fi
N=$(( V*C + T*C + L*(12*C*C + 13*C) + 2*C ))
FLOP_TOKEN=$(( 6*N + 6*L*C*T ))
echo "GPT: $L layers, $H heads, width $C, context $T, vocab $V: N = $N parameters, $FLOP_TOKEN FLOP/token"
echo "device $dev, micro-batch $B, $WARM warm-up + $STEPS timed steps, bf16, peak $peak FLOP/s"

# PyTorch must not see the kit's libraries (Debian's libssl, libgfortran ... on LD_LIBRARY_PATH).
pyenv() {
    env -u OPAL_PREFIX -u PMIX_PREFIX -u PMIX_INSTALL_PREFIX -u CPATH -u LIBRARY_PATH \
        LD_LIBRARY_PATH="${ACCEL_GPU_ORIG_LD_LIBRARY_PATH:-}" PATH="${ACCEL_GPU_ORIG_PATH:-$PATH}" \
        PYTHONUNBUFFERED=1 "$@"
}

# The first python3 with PyTorch: the PATH's (the device image's venv), else Debian's.
py=${PYTHON:-}
if [ -z "$py" ]; then
    for c in python3 /usr/bin/python3; do
        pyenv "$c" -c 'import torch' >/dev/null 2>&1 && { py=$c; break; }
    done
    py=${py:-python3}
fi
py_ok=1
pyenv "$py" -c 'import torch' >/dev/null 2>&1 || py_ok=0

# GPU memory meter: MiB in use, sampled in the background while a command runs.
meter_pid=""
meter_start() {
    [ $gpu = 1 ] || return 0
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 > "$raw/$1.mem.base" 2>/dev/null
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 > "$raw/$1.mem" 2>/dev/null &
    meter_pid=$!
}
meter_stop() { # NAME -> prints GiB above the baseline, or "-"
    [ $gpu = 1 ] || { echo -; return 0; }
    [ -n "$meter_pid" ] && kill "$meter_pid" 2>/dev/null && wait "$meter_pid" 2>/dev/null
    meter_pid=""
    awk -v base="$(head -n 1 "$raw/$1.mem.base" 2>/dev/null)" '$1 + 0 > m { m = $1 + 0 }
        END { if (m == "" || base == "") print "-"; else printf "%.2f", (m - base) / 1024 }' "$raw/$1.mem"
}

trap '[ -z "$meter_pid" ] || kill "$meter_pid" 2>/dev/null' EXIT

declare -A TPS MS MEM NOTE
rows=""

run_accel() {
    local data=$raw/synth_tokens.h5 log=$raw/accel.log
    rows="$rows accel"
    NOTE[accel]=""
    if ! "$build/accel_data" synth --kind tokens --output "$data" --force --vocab $V --context $T \
            --samples $(( (WARM + STEPS) * B )) --val-samples $B > "$raw/accel_data.log" 2>&1; then
        NOTE[accel]="accel_data synth failed: $(tail -n 1 "$raw/accel_data.log")"; return 1
    fi
    rm -f "$raw/accel.jsonl"
    local t
    t=$(run_timeout) || { NOTE[accel]="no time left in this call (run.sh's RUN_BUDGET)"; return 1; }
    meter_start accel
    # (ACCEL_* variables override arguments: none may steer this run elsewhere, e.g. ACCEL_DEVICE)
    env $(compgen -e | grep '^ACCEL_' | grep -v '^ACCEL_GPU_' | sed 's/^/-u /') \
    timeout "$t" "$build/accel_train" model.name=gpt device=$dev precision=bf16 \
        model.layers=$L model.heads=$H model.width=$C model.context=$T model.vocab=$V \
        data.path="$data" train.global_batch=$B train.steps=$((WARM + STEPS)) train.log_every=10 \
        train.sample_tokens=0 train.metrics="$raw/accel.jsonl" > "$log" 2>&1
    local rc=$?
    MEM[accel]=$(meter_stop accel)
    cat "$log"
    if [ $rc != 0 ] || [ ! -s "$raw/accel.jsonl" ]; then
        NOTE[accel]="accel_train failed (rc $rc$([ $rc = 124 ] && echo ": stopped after $t s")): $(grep -m1 -i 'error' "$log" | cut -c1-160)"
        return 1
    fi
    # tokens/s over the steps after the warm-up, from each step's end time (seconds since start).
    read -r TPS[accel] MS[accel] < <(awk -v w=$WARM -v tok=$((B * T)) '
        /"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
        END { if (n <= w) { print "- -"; exit }
              d = t[n] - t[w]; printf "%.1f %.3f\n", (n - w) * tok / d, 1e3 * d / (n - w) }' "$raw/accel.jsonl")
    if [ $gpu = 0 ]; then
        MEM[accel]=$(awk '/peak_bytes/ { s = $0; sub(/.*"peak_bytes": /, "", s); sub(/[,}].*/, "", s);
                          printf "%.2f", s / 1073741824 }' "$raw/accel.jsonl")
    fi
}

run_torch() { # MODE
    local m=$1 log=$raw/torch_$1.log extra=""
    rows="$rows $m"
    NOTE[$m]=""
    [ $m = eager ] && [ $gpu = 1 ] && extra=--matmul-peak
    [ $py_ok = 1 ] || { NOTE[$m]="no Python with PyTorch here ($py; set PYTHON=...)"; return 1; }
    local t
    t=$(run_timeout) || { NOTE[$m]="no time left in this call (run.sh's RUN_BUDGET)"; return 1; }
    meter_start "$m"
    pyenv timeout "$t" "$py" "$here/gpt2_torch.py" --mode "$m" --device $dev --layers $L --heads $H \
        --width $C --context $T --vocab $V --micro $B --steps $STEPS --warmup $WARM \
        --threads $threads $( [ "$peak" != 0 ] && echo --peak-flops "$peak") $extra > "$log" 2>&1
    local rc=$?
    local mem
    mem=$(meter_stop "$m")
    cat "$log"
    local res
    res=$(grep '^RESULT ' "$log" | tail -n 1 | cut -c8-)
    if [ -z "$res" ]; then
        NOTE[$m]=$(grep -m1 '^SKIP' "$log" || echo "failed (rc $rc$([ $rc = 124 ] && echo ": stopped after $t s")): $(tail -n 1 "$log" | cut -c1-160)")
        return 1
    fi
    read -r TPS[$m] MS[$m] pmem mm < <(echo "$res" | pyenv "$py" -c 'import json, sys
r = json.loads(sys.stdin.read())
print(r["tokens_per_s"], r["ms_per_step"], r["peak_gib"], r.get("matmul_bf16_flops", 0))')
    MEM[$m]=$([ $gpu = 1 ] && echo "$mem" || echo "$pmem")
    [ "${mm:-0}" != 0 ] && matmul=$mm
}

matmul=0
for m in $modes; do
    echo "==== $m"
    case $m in
        accel) run_accel ;;
        eager|accelerate|compile) run_torch "$m" ;;
        *) echo "unknown mode '$m' in BENCH_MODES" ;;
    esac
done

label() { case $1 in accel) echo "accel_train ($dev, bf16)";; eager) echo "PyTorch eager";;
          accelerate) echo "PyTorch eager + Accelerate";; compile) echo "torch.compile";; esac; }
ratio() { # A B -> A/B or -
    awk -v a="${1:--}" -v b="${2:--}" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
        else printf "%.2fx", a / b }'
}
echo "==== table: GPT $L x $C, context $T, vocab $V, micro-batch $B, bf16, $STEPS timed steps ($dev)"
printf '%-28s %11s %9s %7s %9s %11s\n' run tokens/s ms/step MFU "peak GiB" "accel/this"
for m in $rows; do
    if [ -n "${TPS[$m]:-}" ] && [ "${TPS[$m]}" != - ]; then
        mfu=$(awk -v t="${TPS[$m]}" -v f=$FLOP_TOKEN -v p="$peak" 'BEGIN {
              if (p + 0 > 0) printf "%.1f%%", 100 * t * f / p; else print "-" }')
        printf '%-28s %11.0f %9.1f %7s %9s %11s\n' "$(label $m)" "${TPS[$m]}" "${MS[$m]}" "$mfu" \
            "${MEM[$m]:--}" "$( [ $m = accel ] && echo - || ratio "${TPS[accel]:-}" "${TPS[$m]}")"
    else
        printf '%-28s %s\n' "$(label $m)" "n/a: ${NOTE[$m]:-no result}"
    fi
done
if [ $gpu = 1 ]; then
    echo "peak GiB: GPU memory in use during the run above the level before it (nvidia-smi every 100 ms; CUDA context included)"
else
    echo "peak GiB: accel: resident memory above start-up; PyTorch: the process's maximum resident size"
fi
if [ "$matmul" != 0 ]; then
    awk -v m="$matmul" -v p="$peak" 'BEGIN { printf "measured bf16 matrix product (8192^3): %.0f TFLOP/s = %.0f%% of the %.0f TFLOP/s used for MFU\n", m / 1e12, 100 * m / p, p / 1e12 }'
fi
a=${TPS[accel]:-}
if [ -n "$a" ] && [ "$a" != - ]; then
    echo "accel vs PyTorch eager + Accelerate: $(ratio "$a" "${TPS[accelerate]:-}") (target >= 1.00x);" \
         "vs torch.compile: $(ratio "$a" "${TPS[compile]:-}")"
fi
# Non-zero when accel produced no number (the PyTorch rows may be skipped on an old PyTorch).
[ -n "$a" ] && [ "$a" != - ] || [[ " $modes " != *" accel "* ]]
