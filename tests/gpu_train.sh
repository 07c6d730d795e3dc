#!/bin/sh
# accel_train on the GPU against the CPU reference (skipped where no GPU is usable):
#   200 steps: GPU fp32 and GPU bf16 loss curves against CPU fp32; zero1 and grad_accum=2 against
#   ddp on one GPU (compared runs share train.steps, hence the learning-rate schedule);
#   the NCCL communicator is created from MPI on one rank; 2 ranks (ddp, zero1) when 2 GPUs exist;
#   fp16 with loss scaling runs; the llama (fp32, bf16 zero3) and Qwen3's attention (fp32, bf16)
#   against their CPU runs; a checkpoint written on the GPU resumes on the CPU.
. "${top_srcdir:-.}/tests/lib.sh"
unset ACCEL_DEVICE      # lib.sh keeps the other tests on the CPU; these choose their device
probe=$("$top_builddir/tests/gpu_gpt_check" --probe 2>&1); rc=$?
[ "$rc" -eq 77 ] && skip "${probe#SKIP: }"
[ "$rc" -eq 0 ] || fail "GPU probe failed: $probe"
ngpu=$(printf '%s\n' "$probe" | sed -n 's/^\([0-9]*\) CUDA device.*/\1/p')
make_scratch
common="model.name=gpt model.layers=2 model.heads=4 model.width=64 model.context=32 model.vocab=128 \
data.path=synthetic train.global_batch=8 train.log_every=50 optim.lr=1e-3 optim.warmup=10 \
train.sample_tokens=0 data.eval_samples=64"
train() {   # train NAME NP ARGS...: metrics into NAME.jsonl, output into NAME.log
    name=$1; np=$2; shift 2
    # shellcheck disable=SC2086
    run_mpi "$np" "$ACCEL_TRAIN" $common train.metrics="$SCRATCH/$name.jsonl" "$@" > "$name.log" 2>&1 ||
        fail "$name: accel_train failed: $(tail -30 "$name.log")"
    grep "step \|device:\|gpu:\|cuda:" "$name.log" | head -8
}
train cpu32 1 device=cpu precision=fp32 train.steps=200
train gpu32 1 device=cuda precision=fp32 train.steps=200
grep -q "device: .*(cuda:" gpu32.log || fail "device=cuda did not train on the GPU: $(head -40 gpu32.log)"
compare_losses "$SCRATCH/cpu32.jsonl" "$SCRATCH/gpu32.jsonl" 2e-3 200 || fail "GPU fp32 loss curve differs from CPU fp32"
train gpubf16 1 device=cuda precision=bf16 train.steps=200
compare_losses "$SCRATCH/cpu32.jsonl" "$SCRATCH/gpubf16.jsonl" 5e-2 200 || fail "GPU bf16 loss curve differs from CPU fp32 beyond bf16 tolerance"
grep -q "collectives in device memory (NCCL)" gpu32.log || fail "the GPU state is not reduced with NCCL: $(grep -i device gpu32.log)"
# every strategy runs on the GPU through the one trainer
for strategy in zero1 zero2 zero3; do
    train "gpu$strategy" 1 device=cuda precision=fp32 train.steps=200 dist.strategy=$strategy
    compare_losses "$SCRATCH/gpu32.jsonl" "$SCRATCH/gpu$strategy.jsonl" 1e-4 200 || fail "$strategy on one GPU differs from ddp"
done
train gpu16 1 device=cuda precision=fp16 train.steps=50 debug.overflow_step=3
grep -q "step 3: fp16 gradient overflow" gpu16.log || fail "injected fp16 overflow not seen on the GPU: $(grep -i overflow gpu16.log)"
train gpuacc 1 device=cuda precision=fp32 train.steps=200 train.grad_accum=2
compare_losses "$SCRATCH/gpu32.jsonl" "$SCRATCH/gpuacc.jsonl" 1e-3 200 || fail "grad_accum=2 on the GPU differs from one micro-batch"
if [ "${ngpu:-1}" -ge 2 ]; then
    train gpu2 2 device=cuda precision=fp32 train.steps=200 dist.bucket_mb=0.05
    compare_losses "$SCRATCH/gpu32.jsonl" "$SCRATCH/gpu2.jsonl" 1e-3 200 || fail "2-rank GPU ddp differs from 1 rank"
    for strategy in zero1 zero3; do
        train "gpu2$strategy" 2 device=cuda precision=fp32 train.steps=200 dist.strategy=$strategy
        compare_losses "$SCRATCH/gpu2.jsonl" "$SCRATCH/gpu2$strategy.jsonl" 1e-3 200 || fail "2-rank GPU $strategy differs from ddp"
    done
else
    echo "only ${ngpu:-1} GPU: the 2-rank part is skipped"
fi
# the llama (grouped-query attention, separate LM head, q/k/v biases, RoPE) against the CPU, fp32 and bf16
llama="model.name=llama model.kv_heads=2 model.tie_embeddings=false model.attention_bias=true model.context=29"
# shellcheck disable=SC2086
train llcpu32 1 device=cpu precision=fp32 train.steps=200 $llama
# shellcheck disable=SC2086
train llgpu32 1 device=cuda precision=fp32 train.steps=200 $llama
grep -q "fp32 Llama layers" llgpu32.log || fail "the llama did not train on the GPU: $(head -40 llgpu32.log)"
compare_losses "$SCRATCH/llcpu32.jsonl" "$SCRATCH/llgpu32.jsonl" 2e-3 200 || fail "GPU fp32 llama loss curve differs from CPU fp32"
# shellcheck disable=SC2086
train llgpubf16 1 device=cuda precision=bf16 train.steps=200 dist.strategy=zero3 $llama
compare_losses "$SCRATCH/llcpu32.jsonl" "$SCRATCH/llgpubf16.jsonl" 5e-2 200 || fail "GPU bf16 zero3 llama loss curve differs from CPU fp32 beyond bf16 tolerance"
# Qwen3's attention (q/k norms, 4 heads of 24 over a width of 64) against the CPU, fp32 and bf16
qwen3="model.name=llama model.kv_heads=2 model.head_dim=24 model.qk_norm=true model.context=29"
# shellcheck disable=SC2086
train q3cpu32 1 device=cpu precision=fp32 train.steps=100 $qwen3
# shellcheck disable=SC2086
train q3gpu32 1 device=cuda precision=fp32 train.steps=100 $qwen3
compare_losses "$SCRATCH/q3cpu32.jsonl" "$SCRATCH/q3gpu32.jsonl" 2e-3 100 || fail "GPU fp32 Qwen3 loss curve differs from CPU fp32"
# shellcheck disable=SC2086
train q3gpubf16 1 device=cuda precision=bf16 train.steps=100 $qwen3
compare_losses "$SCRATCH/q3cpu32.jsonl" "$SCRATCH/q3gpubf16.jsonl" 5e-2 100 || fail "GPU bf16 Qwen3 loss curve differs from CPU fp32 beyond bf16 tolerance"
# text generation on the device at the end of a run
train gpugen 1 device=cuda precision=bf16 train.steps=5 model.vocab=256 train.sample_tokens=32
grep -q "^sample" gpugen.log || fail "no generated sample on the GPU: $(tail -5 gpugen.log)"
# A checkpoint written on the GPU resumes on the CPU (device-independent format).
train gpuck 1 device=cuda precision=bf16 train.steps=20 ckpt.dir="$SCRATCH/ck" ckpt.every=10
ck="$SCRATCH/ck/step-00000010.h5"
[ -f "$ck" ] || fail "no checkpoint at $ck: $(ls "$SCRATCH/ck")"
"$top_builddir/accel_ckpt" verify "$ck" > verify.log 2>&1 || fail "accel_ckpt verify $ck: $(cat verify.log)"
train cpuresume 1 device=cpu precision=fp32 train.steps=20 resume="$ck"
grep -q "resumed from" cpuresume.log || fail "the CPU run did not resume: $(head -30 cpuresume.log)"
compare_losses "$SCRATCH/gpuck.jsonl" "$SCRATCH/cpuresume.jsonl" 5e-2 10 || fail "CPU resumed from a GPU checkpoint does not continue its loss curve"
# A background save (ckpt.async=true) of the device state writes the same files as the synchronous one.
train gpuasync 1 device=cuda precision=bf16 train.steps=20 ckpt.dir="$SCRATCH/cka" ckpt.every=10 ckpt.async=true
for f in step-00000010.h5 step-00000020.h5; do
    "$top_builddir/accel_ckpt" diff "$SCRATCH/ck/$f" "$SCRATCH/cka/$f" > diff.log 2>&1 ||
        fail "GPU background checkpoint $f differs from the synchronous one: $(tail -5 diff.log)"
done
pass "GPU training (gpt, llama, Qwen3's attention) follows the CPU reference; GPU checkpoints (also background ones) resume on the CPU"
