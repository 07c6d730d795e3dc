#!/bin/sh
# The GPU path's host code (src/nn/gpt_cuda.c: buffer plan, pointer arithmetic, cuBLAS product
# shapes, order of operations; src/train on device memory: every strategy) against the CPU reference, on an emulated device
# (tests/gpu_mock.c), so it runs on machines without a GPU. Skipped in builds without CUDA.
. "${top_srcdir:-.}/tests/lib.sh"
prog="$top_builddir/tests/gpu_mock_check"
[ -x "$prog" ] || skip "accel was built without CUDA (no tests/gpu_mock_check)"
timeout -k 10 "$TEST_TIMEOUT" "$prog"; rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || fail "gpu_mock_check failed (exit $rc): see the per-tensor errors above"
pass "the GPU engine's host code reproduces the CPU model on an emulated device"

# accel_train itself on the emulated device (tests/gpu_mock_train): the trainer's device=cuda path.
unset ACCEL_DEVICE
mock="$top_builddir/tests/gpu_mock_train"
make_scratch
common="model.name=gpt model.layers=2 model.heads=2 model.width=32 model.context=16 model.vocab=64 \
data.path=synthetic train.global_batch=4 train.log_every=10 optim.lr=3e-3 optim.warmup=5 \
train.sample_tokens=0 data.eval_samples=16"
train() {   # train NAME PROGRAM ARGS...: metrics into NAME.jsonl, output into NAME.log
    name=$1; prog=$2; shift 2
    # shellcheck disable=SC2086
    timeout -k 10 "$TEST_TIMEOUT" "$prog" $common train.metrics="$SCRATCH/$name.jsonl" "$@" > "$name.log" 2>&1 ||
        fail "$name: training failed: $(tail -30 "$name.log")"
}
train cpu "$ACCEL_TRAIN" device=cpu precision=fp32 train.steps=30
train emu "$mock" device=cuda precision=fp32 train.steps=30
grep -q "device: emulated GPU" emu.log || fail "device=cuda did not take the GPU path: $(head -30 emu.log)"
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu.jsonl" 1e-5 30 || fail "emulated GPU fp32 differs from the CPU"
grep -q "held-out loss" emu.log || fail "no evaluation at the end: $(tail -5 emu.log)"
cpu_eval=$(sed -n 's/.*held-out loss \([0-9.]*\).*/\1/p' cpu.log)
emu_eval=$(sed -n 's/.*held-out loss \([0-9.]*\).*/\1/p' emu.log)
[ "$cpu_eval" = "$emu_eval" ] || fail "held-out loss on the emulated GPU $emu_eval, on the CPU $cpu_eval"
# text generation on the device: the same sample as the CPU (byte vocabulary, fp32)
train gencpu "$ACCEL_TRAIN" device=cpu precision=fp32 train.steps=5 model.vocab=256 train.sample_tokens=24
train genemu "$mock" device=cuda precision=fp32 train.steps=5 model.vocab=256 train.sample_tokens=24
sed -n '/^sample/,$p' gencpu.log | grep -v "^\[" > gencpu.txt
sed -n '/^sample/,$p' genemu.log | grep -v "^\[" > genemu.txt
[ -s gencpu.txt ] || fail "no sample from the CPU run: $(tail -5 gencpu.log)"
cmp -s gencpu.txt genemu.txt || fail "the emulated GPU generated other text: $(cat genemu.txt) vs $(cat gencpu.txt)"
train emubf16 "$mock" device=cuda precision=bf16 train.steps=30
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emubf16.jsonl" 2e-2 30 || fail "emulated GPU bf16 differs from the CPU beyond bf16 tolerance"
train emuz1 "$mock" device=cuda precision=fp32 train.steps=30 dist.strategy=zero1
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emuz1.jsonl" 1e-5 30 || fail "emulated GPU zero1 differs from the CPU"
train emuacc "$mock" device=cuda precision=fp32 train.steps=30 train.grad_accum=2
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emuacc.jsonl" 1e-5 30 || fail "emulated GPU grad_accum=2 differs from the CPU"
train emusgd "$mock" device=cuda precision=fp32 train.steps=10 optim.name=sgd train.clip=0.5
train cpusgd "$ACCEL_TRAIN" device=cpu precision=fp32 train.steps=10 optim.name=sgd train.clip=0.5
compare_losses "$SCRATCH/cpusgd.jsonl" "$SCRATCH/emusgd.jsonl" 1e-5 10 || fail "emulated GPU SGD with clipping differs from the CPU"
train emu16 "$mock" device=cuda precision=fp16 train.steps=10 debug.overflow_step=3
grep -q "step 3: fp16 gradient overflow" emu16.log || fail "injected fp16 overflow not seen: $(grep -i overflow emu16.log)"
# a checkpoint written by the GPU path resumes on the CPU, and the other way round
train emuck "$mock" device=cuda precision=fp32 train.steps=30 ckpt.dir="$SCRATCH/ck" ckpt.every=15
train cpuresume "$ACCEL_TRAIN" device=cpu precision=fp32 train.steps=30 resume="$SCRATCH/ck/step-00000015.h5"
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/cpuresume.jsonl" 1e-5 15 || fail "CPU resumed from an emulated-GPU checkpoint differs"
train cpuck "$ACCEL_TRAIN" device=cpu precision=fp32 train.steps=30 dist.strategy=zero1 ckpt.dir="$SCRATCH/ck2" ckpt.every=15
train emuresume "$mock" device=cuda precision=fp32 train.steps=30 dist.strategy=zero1 resume="$SCRATCH/ck2/step-00000015.h5"
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emuresume.jsonl" 1e-5 15 || fail "emulated GPU resumed from a CPU checkpoint differs"
# several ranks: the engine's collectives (bucketed allreduce, per-layer reduce-scatter + allgather)
train() {   # train NAME NP ARGS...: as above, under mpirun (same train.steps: same schedule)
    name=$1; np=$2; shift 2
    # shellcheck disable=SC2086
    run_mpi "$np" "$mock" $common train.metrics="$SCRATCH/$name.jsonl" "$@" > "$name.log" 2>&1 ||
        fail "$name: training failed: $(tail -30 "$name.log")"
}
# Every strategy runs through the one trainer on device memory (NCCL-backed communicators; here
# the emulated ones): each against the CPU run, on 1, 2 and 4 ranks, small buckets so that ddp
# reduces in several buckets during backward.
for np in 1 2 4; do
    for strategy in ddp zero1 zero2 zero3; do
        train "emu$np$strategy" "$np" device=cuda precision=fp32 train.steps=30 dist.bucket_mb=0.01 \
            dist.strategy="$strategy"
        compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu$np$strategy.jsonl" 1e-5 30 ||
            fail "$np-rank emulated GPU $strategy differs from the CPU"
    done
done
# hybrid: sharded within a (pretend) node, replicated across nodes
train emu2hyb 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero3 dist.hybrid=true dist.fake_nodes=2
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu2hyb.jsonl" 1e-5 30 || fail "2-rank emulated GPU hybrid differs from the CPU"
train emu4hyb 4 device=cuda precision=fp32 train.steps=30 dist.strategy=zero2 dist.hybrid=true dist.fake_nodes=2
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu4hyb.jsonl" 1e-5 30 || fail "4-rank emulated GPU hybrid differs from the CPU"
# bf16 under ZeRO-3: the 16-bit weights are cast as each layer is gathered, before it is handed back
# (on one rank the same numbers as ddp; on two, within bf16's tolerance of the CPU)
train emu1z3bf16 1 device=cuda precision=bf16 train.steps=30 dist.strategy=zero3
compare_losses "$SCRATCH/emubf16.jsonl" "$SCRATCH/emu1z3bf16.jsonl" 1e-6 30 || fail "emulated GPU bf16 zero3 differs from bf16 ddp"
train emu2z3bf16 2 device=cuda precision=bf16 train.steps=30 dist.strategy=zero3
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu2z3bf16.jsonl" 2e-2 30 || fail "2-rank emulated GPU bf16 zero3 differs from the CPU beyond bf16 tolerance"
# gradient accumulation through the staging of sharded gradients, and sync_each_batch
train emu2z3acc 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero3 train.grad_accum=2
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu2z3acc.jsonl" 1e-5 30 || fail "2-rank emulated GPU zero3 with grad_accum=2 differs from the CPU"
train emu2each 2 device=cuda precision=fp32 train.steps=30 train.grad_accum=2 train.sync_each_batch=true
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/emu2each.jsonl" 1e-5 30 || fail "2-rank emulated GPU sync_each_batch differs from the CPU"
train emu2ck 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero1 ckpt.dir="$SCRATCH/ck3" ckpt.every=15
train cpu2resume 1 device=cpu precision=fp32 train.steps=30 resume="$SCRATCH/ck3/step-00000015.h5"
compare_losses "$SCRATCH/cpu.jsonl" "$SCRATCH/cpu2resume.jsonl" 1e-5 15 || fail "CPU resumed from a 2-rank zero1 emulated-GPU checkpoint differs"
# background saves (ckpt.async=true): the writer thread saves the same files from its snapshot
train emu2async 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero1 ckpt.dir="$SCRATCH/ck4" ckpt.every=15 \
    ckpt.async=true
grep -q "saving in the background" emu2async.log || fail "no background save: $(tail -20 emu2async.log)"
for f in step-00000015.h5 step-00000030.h5; do
    "$top_builddir/accel_ckpt" diff "$SCRATCH/ck3/$f" "$SCRATCH/ck4/$f" > diff.log 2>&1 ||
        fail "emulated GPU background checkpoint $f differs from the synchronous one: $(tail -5 diff.log)"
done
# the llama on the emulated device (src/nn/gpt_cuda.c with the llama's blocks): grouped-query
# attention (2 query heads per kv head), a separate LM head (layer L+1), q/k/v biases, a context of
# 13; every strategy against the CPU run's loss trajectory
llama="model.name=llama model.heads=4 model.kv_heads=2 model.tie_embeddings=false model.attention_bias=true \
model.context=13 model.rms_eps=1e-6"
# shellcheck disable=SC2086
train llcpu 1 device=cpu precision=fp32 train.steps=30 $llama
for strategy in ddp zero1 zero3; do
    # shellcheck disable=SC2086
    train "ll2$strategy" 2 device=cuda precision=fp32 train.steps=30 dist.bucket_mb=0.01 \
        dist.strategy="$strategy" $llama
    grep -q "fp32 Llama layers" "ll2$strategy.log" || fail "llama $strategy did not take the GPU path: $(head -30 "ll2$strategy.log")"
    compare_losses "$SCRATCH/llcpu.jsonl" "$SCRATCH/ll2$strategy.jsonl" 1e-5 30 ||
        fail "2-rank emulated GPU llama $strategy differs from the CPU"
done
# shellcheck disable=SC2086
train ll4hyb 4 device=cuda precision=fp32 train.steps=30 dist.strategy=zero3 dist.hybrid=true \
    dist.fake_nodes=2 $llama
compare_losses "$SCRATCH/llcpu.jsonl" "$SCRATCH/ll4hyb.jsonl" 1e-5 30 || fail "4-rank emulated GPU llama hybrid zero3 differs from the CPU"
# shellcheck disable=SC2086
train ll1bf16 1 device=cuda precision=bf16 train.steps=30 $llama
compare_losses "$SCRATCH/llcpu.jsonl" "$SCRATCH/ll1bf16.jsonl" 2e-2 30 || fail "emulated GPU llama bf16 differs from the CPU beyond bf16 tolerance"
# a tied multi-query llama, one rank (ddp)
# shellcheck disable=SC2086
train llmqcpu 1 device=cpu precision=fp32 train.steps=30 model.name=llama model.kv_heads=1 model.heads=2
# shellcheck disable=SC2086
train llmqemu 1 device=cuda precision=fp32 train.steps=30 model.name=llama model.kv_heads=1 model.heads=2
compare_losses "$SCRATCH/llmqcpu.jsonl" "$SCRATCH/llmqemu.jsonl" 1e-5 30 || fail "emulated GPU tied MQA llama differs from the CPU"
# Qwen3's attention (q/k norms, 4 heads of 24 over a width of 32) with a loss mask: 2 ranks, zero3
printf '{"prompt": "Q: %d+%d=", "completion": " %d."}\n' $(seq 1 600 | awk '{ print $1 % 50, $1 % 7, $1 % 50 + $1 % 7 }') > sft.jsonl
"$top_builddir/accel_data" prepare --prompt-field prompt --jsonl-field completion --context 13 --output sft.h5 sft.jsonl \
    > sft.log 2>&1 || fail "accel_data prepare --prompt-field: $(tail -3 sft.log)"
qwen3="model.name=llama model.heads=4 model.kv_heads=2 model.head_dim=24 model.qk_norm=true model.context=13 \
model.rms_eps=1e-6 model.vocab=256 data.path=sft.h5"
# shellcheck disable=SC2086
train q3cpu 1 device=cpu precision=fp32 train.steps=30 $qwen3
# shellcheck disable=SC2086
train q3emu 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero3 $qwen3
grep -q "fp32 Llama layers" q3emu.log || fail "qwen3 did not take the GPU path: $(head -30 q3emu.log)"
compare_losses "$SCRATCH/q3cpu.jsonl" "$SCRATCH/q3emu.jsonl" 1e-5 30 ||
    fail "2-rank emulated GPU Qwen3 with a loss mask differs from the CPU"
# the llama's sample at the end of a run: its logits from the device, the same text as the CPU's
# shellcheck disable=SC2086
train llgencpu 1 device=cpu precision=fp32 train.steps=5 model.vocab=256 train.sample_tokens=24 $llama
# shellcheck disable=SC2086
train llgenemu 1 device=cuda precision=fp32 train.steps=5 model.vocab=256 train.sample_tokens=24 $llama
sed -n '/^sample/,$p' llgencpu.log | grep -v "^\[" > llgencpu.txt
sed -n '/^sample/,$p' llgenemu.log | grep -v "^\[" > llgenemu.txt
[ -s llgencpu.txt ] || fail "no llama sample from the CPU run: $(tail -5 llgencpu.log)"
cmp -s llgencpu.txt llgenemu.txt || fail "the emulated GPU llama generated other text: $(cat llgenemu.txt) vs $(cat llgencpu.txt)"
expect_fail "model 'mlp' has no GPU path" "$mock" model.name=mlp data.path=synthetic train.steps=2 train.global_batch=2 device=cuda
expect_fail "model.experts=4: the GPU engine has no mixture-of-experts path" "$mock" model.name=llama model.experts=4 \
    data.path=synthetic train.steps=2 train.global_batch=2 device=cuda
# packed documents kept apart (data.document_mask: positions per document in the encoder, RoPE and
# the softmax): the Qwen3 run again and the GPT, both on the prompt/completion pairs (one document
# each), 2 ranks on the device against 1 on the CPU
# shellcheck disable=SC2086
train q3dcpu 1 device=cpu precision=fp32 train.steps=30 data.document_mask=true $qwen3
# shellcheck disable=SC2086
train q3demu 2 device=cuda precision=fp32 train.steps=30 dist.strategy=zero3 data.document_mask=true $qwen3
compare_losses "$SCRATCH/q3dcpu.jsonl" "$SCRATCH/q3demu.jsonl" 1e-5 30 || fail "emulated GPU qwen3 with data.document_mask differs from the CPU"
compare_losses "$SCRATCH/q3cpu.jsonl" "$SCRATCH/q3dcpu.jsonl" 1e-4 > /dev/null &&
    fail "data.document_mask=true changed nothing in the qwen3 run"
train gdcpu 1 device=cpu precision=fp32 train.steps=30 model.vocab=256 data.path=sft.h5 data.document_mask=true
train gdemu 2 device=cuda precision=fp32 train.steps=30 model.vocab=256 data.path=sft.h5 data.document_mask=true
compare_losses "$SCRATCH/gdcpu.jsonl" "$SCRATCH/gdemu.jsonl" 1e-5 30 || fail "emulated GPU gpt with data.document_mask differs from the CPU"
pass "accel_train's device=cuda path (ddp, zero1-3 and hybrid on 1, 2 and 4 ranks, bf16, fp16 overflow, grad_accum, SGD+clip, evaluation, checkpoints both ways and in the background; the llama: ddp, zero1, zero3, hybrid zero3, bf16; Qwen3's attention with a loss mask, zero3; packed documents kept apart, gpt and qwen3) matches the CPU on the emulated device"
