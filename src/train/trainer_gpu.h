/* The trainer's GPU path: glue between the training loop (src/train/trainer.c) and the CUDA GPT
 * engine (include/accel/gpt_cuda.h). The host-side distributed state (accel_dist) and optimizer
 * (accel_optim) stay the reference layout and the staging area for checkpoints: the engine is
 * created from them, and copies its state back into them whenever the host needs it. */
#ifndef ACCEL_TRAINER_GPU_H
#define ACCEL_TRAINER_GPU_H

#include <stdbool.h>

#include "accel/dist.h"
#include "accel/gpt_cuda.h"
#include "accel/optim.h"
#include "accel/runtime.h"

/* Whether this job trains on the GPU. With a CUDA device selected: true when the GPU path supports
 * the job (the built-in gpt, ddp or zero1); otherwise device=cuda is an error naming the model or
 * setting (ACCEL_ERR_UNSUPPORTED), and device=auto trains on the CPU with a warning saying why. */
accel_status_t accel_trainer_gpu_wanted(const accel_runtime_t *rt, const accel_config_t *cfg,
                                        bool *use_gpu);

/* The engine for this rank, sized for `micro` samples per micro-batch, loaded with the host state
 * (parameters of the dist's arena, the optimizer's moments). */
accel_status_t accel_trainer_gpu_create(const accel_runtime_t *rt, const accel_config_t *cfg,
                                        const accel_layout_t *layout, accel_dist_t *dist,
                                        const accel_optim_t *opt, int micro, accel_gpt_cuda_t **out);

/* The optimizer update with the CPU optimizer's schedule and step counting (opt->step advances). */
accel_status_t accel_trainer_gpu_step(accel_gpt_cuda_t *g, accel_optim_t *opt, float grad_mul,
                                      double *lr);

/* accel_model_generate's text generation (same windowing and token choice) with the logits
 * computed on the device. */
accel_status_t accel_trainer_gpu_generate(accel_gpt_cuda_t *g, int vocab, int context,
                                          const int32_t *prompt, int nprompt, int nnew,
                                          float temperature, int top_k, uint64_t seed, int32_t *out);

/* Device state -> the host dist arenas and optimizer moments (for checkpoints, sampling). */
accel_status_t accel_trainer_gpu_to_host(accel_gpt_cuda_t *g, accel_dist_t *dist, accel_optim_t *opt);

#endif
