/* The trainer's GPU path (see trainer_gpu.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "trainer_gpu.h"

accel_status_t accel_trainer_gpu_wanted(const accel_runtime_t *rt, const accel_config_t *cfg,
                                        bool *use_gpu)
{
    *use_gpu = false;
    if (rt->device.kind != ACCEL_DEVICE_CUDA) return ACCEL_OK;
    char why[512], note[512];
    accel_status_t st = accel_gpt_cuda_check_config(cfg, why, sizeof why, note, sizeof note);
    if (st != ACCEL_OK) {
        if (!strcmp(cfg->device, "cuda")) {
            ACCEL_ERROR0("%s", why);
            return st;
        }
        /* device=auto: the CPU, said out loud (the first line of the reason, without "device=cuda: ") */
        const char *reason = strncmp(why, "device=cuda: ", 13) ? why : why + 13;
        int len = (int)strcspn(reason, "\n");
        ACCEL_WARN0("device=auto: %.*s, so this job trains on the CPU although a GPU is present\n"
                    "--> hint: set device=cpu to silence this", len, reason);
        return ACCEL_OK;
    }
    if (note[0]) ACCEL_WARN0("%s", note);
    *use_gpu = true;
    return ACCEL_OK;
}

accel_status_t accel_trainer_gpu_create(const accel_runtime_t *rt, const accel_config_t *cfg,
                                        const accel_layout_t *layout, accel_dist_t *dist,
                                        const accel_optim_t *opt, int micro, accel_gpt_cuda_t **out)
{
    *out = NULL;
    const accel_range_t *owned;
    int nowned = accel_dist_owned_ranges(dist, &owned);
    accel_gpt_cuda_range_t *ranges = malloc(sizeof *ranges * (size_t)(nowned > 0 ? nowned : 1));
    if (!ranges) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < nowned; i++)
        ranges[i] = (accel_gpt_cuda_range_t){ owned[i].begin, owned[i].end, owned[i].owned };
    accel_gpt_cuda_config_t gc = {
        .cfg = cfg,
        .layout = layout,
        .micro = micro,
        .grad_accum = cfg->train.grad_accum,
        .sharded = accel_dist_strategy(dist) != ACCEL_DDP,
        .ranges = ranges,
        .nranges = nowned,
        .owned_n = accel_dist_owned_numel(dist),
        .decay_mask = opt->decay_mask,
        .adam = opt->v != NULL,
        .comm = rt->world,
    };
    accel_gpt_cuda_t *g = NULL;
    accel_status_t st = accel_gpt_cuda_create(&gc, &g);
    free(ranges);
    /* Every rank learns whether every engine came up, so no rank waits in a collective alone. */
    int ok = st == ACCEL_OK, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, rt->world);
    if (!all) {
        accel_gpt_cuda_destroy(g);
        if (st == ACCEL_OK) ACCEL_ERROR("the GPU engine failed on another rank");
        return st != ACCEL_OK ? st : ACCEL_ERR_CUDA;
    }
    st = accel_gpt_cuda_upload(g, accel_dist_params(dist), opt->m, opt->v);
    if (st != ACCEL_OK) {
        accel_gpt_cuda_destroy(g);
        return st;
    }
    ACCEL_INFO("gpu: training on %s (cuda:%d), strategy %s", rt->device.name, rt->device.index,
               accel_strategy_name(accel_dist_strategy(dist)));
    *out = g;
    return ACCEL_OK;
}

accel_status_t accel_trainer_gpu_step(accel_gpt_cuda_t *g, accel_optim_t *opt, float grad_mul,
                                      double *lr)
{
    const accel_optim_config_t *c = opt->cfg;
    double rate = accel_optim_lr(c, opt->total_steps, opt->step);
    opt->step++;
    /* The same single-precision constants as accel_optim_step. */
    accel_gpt_cuda_update_t u = {
        .lr = (float)rate,
        .beta1 = (float)c->beta1,
        .beta2 = (float)c->beta2,
        .eps = (float)c->eps,
        .weight_decay = (float)c->weight_decay,
        .momentum = (float)c->momentum,
        .bias_corr1 = (float)(1.0 - pow(c->beta1, (double)opt->step)),
        .bias_corr2 = (float)(1.0 - pow(c->beta2, (double)opt->step)),
        .grad_mul = grad_mul,
    };
    *lr = rate;
    return accel_gpt_cuda_step(g, &u);
}

accel_status_t accel_trainer_gpu_to_host(accel_gpt_cuda_t *g, accel_dist_t *dist, accel_optim_t *opt)
{
    bool sharded = accel_dist_strategy(dist) != ACCEL_DDP;
    return accel_gpt_cuda_download(g, accel_dist_params(dist),
                                   sharded ? accel_dist_owned_params(dist) : NULL, opt->m, opt->v);
}

accel_status_t accel_trainer_gpu_generate(accel_gpt_cuda_t *g, int vocab, int context,
                                          const int32_t *prompt, int nprompt, int nnew,
                                          float temperature, int top_k, uint64_t seed, int32_t *out)
{
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(nprompt + nnew + 1));
    float *logits = malloc(sizeof(float) * (size_t)vocab);
    accel_status_t st = seq && logits ? ACCEL_OK : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) memcpy(seq, prompt, sizeof(int32_t) * (size_t)nprompt);
    for (int i = 0; st == ACCEL_OK && i < nnew; i++) {
        int len = nprompt + i, window = len < context ? len : context;
        st = accel_gpt_cuda_logits(g, seq + len - window, window, logits);
        int32_t next = 0;
        if (st == ACCEL_OK) st = accel_model_pick_token(logits, vocab, temperature, top_k, seed, i, &next);
        seq[len] = next;
        out[i] = next;
    }
    free(seq);
    free(logits);
    return st;
}
