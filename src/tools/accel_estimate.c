/* accel estimate-memory: configuration in, table out. Bytes per rank for parameters, gradients,
 * master weights, optimizer state, activations and communication buffers, for every strategy and a
 * range of world sizes, with the ZeRO paper's model-state accounting alongside. */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/memory.h"
#include "accel/trainer.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: accel estimate-memory [config.yaml] [key=value ...] [--world N,N,...] [--per-node K]\n"
                 "  Bytes per rank for each strategy (ddp, zero1, zero2, zero3; hybrid with --per-node)\n"
                 "  and world size, from the job configuration (model sizes, batch, micro-batch,\n"
                 "  train.recompute, optimizer; with train.init_from, the model of those weights, as\n"
                 "  accel_train takes it). With train.micro_batch=auto each row shows the\n"
                 "  micro-batch accel_train would choose (limit: train.memory_limit, else this\n"
                 "  node's memory divided by its ranks).\n"
                 "  --world LIST   world sizes (default: 1,2,4,8,16)\n"
                 "  --per-node K   ranks per node for the hybrid rows (default: none)\n");
}

static double mib(size_t b) { return (double)b / 1048576.0; }

int accel_cmd_estimate(int argc, char **argv)
{
    const char *path = NULL, *worlds = "1,2,4,8,16";
    int per_node = 0;
    char **overrides = calloc((size_t)argc + 1, sizeof *overrides);
    int noverrides = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); free(overrides); return 0; }
        if (!strcmp(argv[i], "--world") && i + 1 < argc) { worlds = argv[++i]; continue; }
        if (!strcmp(argv[i], "--per-node") && i + 1 < argc) { per_node = atoi(argv[++i]); continue; }
        if (accel_config_is_override(argv[i])) { overrides[noverrides++] = argv[i]; continue; }
        if (argv[i][0] != '-' && !path) { path = argv[i]; continue; }
        fprintf(stderr, "accel estimate-memory: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        free(overrides);
        return 2;
    }
    accel_config_t cfg;
    char err[1024];
    accel_status_t st = accel_config_load(&cfg, path, noverrides, overrides, NULL, err, sizeof err);
    free(overrides);
    if (st == ACCEL_OK) st = accel_trainer_init_config(&cfg, err, sizeof err);  /* train.init_from's model */
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel estimate-memory: %s\n", err);
        return accel_status_exit_code(st);
    }
    accel_model_t model;
    if ((st = accel_model_create(&cfg, &model)) != ACCEL_OK) return accel_status_exit_code(st);
    size_t nparams = accel_layout_params(&model.layout);
    const bool autob = cfg.train.micro_batch == ACCEL_AUTO;
    char mb[32];
    if (autob) snprintf(mb, sizeof mb, "auto");
    else if (cfg.train.micro_batch > 0) snprintf(mb, sizeof mb, "%d", cfg.train.micro_batch);
    else snprintf(mb, sizeof mb, "global/(ranks x %d)", cfg.train.grad_accum);
    printf("model %s: %zu parameters; %s, global batch %d, micro-batch %s, recompute %s; MiB per rank\n",
           model.ops->name, nparams, cfg.optim.name, cfg.train.global_batch, mb, cfg.train.recompute);
    if (cfg.lora.rank > 0)
        printf("LoRA (lora.rank=%d): the model's weights and gradients whole on every rank beside the adapted "
               "layers' base rows; the strategy shards the adapters' state (no zero3)\n", cfg.lora.rank);
    if (autob)
        printf("micro-batch auto: the largest that fits %s per rank\n",
               cfg.train.memory_limit > 0 ? "train.memory_limit" : "this node's memory divided by its ranks (--per-node, else all)");
    printf("%-13s %5s %5s %5s %10s %10s %10s %10s %11s %9s %10s   %s\n", "strategy", "ranks", "micro", "accum",
           "params", "grads", "master", "optimizer", "activations", "comm", "total",
           "model state vs ZeRO paper (bytes/param)");
    int rc = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", worlds);
    bool snapshot_said = false;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int world = atoi(tok);
        if (world < 1) { fprintf(stderr, "accel estimate-memory: bad world size '%s'\n", tok); rc = 2; break; }
        for (int hybrid = 0; hybrid < (per_node > 0 ? 2 : 1); hybrid++)
            for (int s = hybrid ? ACCEL_ZERO1 : ACCEL_DDP; s <= ACCEL_ZERO3; s++) {
                if ((hybrid && world % per_node) || (cfg.lora.rank > 0 && s == ACCEL_ZERO3)) continue;
                const int node_ranks = hybrid || (per_node > 0 && per_node < world) ? per_node : world;
                char name[24];
                snprintf(name, sizeof name, "%s%s", accel_strategy_name((accel_strategy_t)s), hybrid ? "+hybrid" : "");
                accel_config_t c = cfg;
                c.dist.strategy_id = (accel_strategy_t)s;
                c.dist.hybrid = hybrid;
                accel_memory_estimate_t e;
                if (autob) {   /* what accel_train would plan for these ranks */
                    size_t limit = cfg.train.memory_limit > 0 ? (size_t)cfg.train.memory_limit
                                   : accel_memory_node_total() / (size_t)node_ranks;
                    int m = 0, next_m = 0;
                    accel_memory_estimate_t next;
                    accel_status_t pst = accel_memory_plan_micro_batch(&c, model.ops, &model.layout, world,
                                                                       node_ranks, limit, &m, &e, &next_m, &next);
                    if (pst == ACCEL_ERR_NOMEM)
                        printf("%-13s %5d  a micro-batch of 1 needs %.1f MiB, over the limit of %.1f MiB\n",
                               name, world, mib(e.total), mib(limit));
                    if (pst != ACCEL_OK) continue;
                    c.train.micro_batch = m;
                }
                const int accum = accel_memory_grad_accum(&c, world);
                if (c.train.global_batch % (world * accum)) continue;   /* not a valid split */
                if (accel_memory_estimate(&c, model.ops, &model.layout, (accel_strategy_t)s, hybrid,
                                          world, hybrid ? per_node : world, &e) != ACCEL_OK)
                    continue;
                if (e.snapshot && !snapshot_said) {
                    printf("(ckpt.async: each total includes the checkpoint snapshot, a copy of the state "
                           "the rank saves: %.1f MiB in the first row)\n", mib(e.snapshot));
                    snapshot_said = true;
                }
                /* bytes per parameter of the model (LoRA: of the model, not of its adapters) */
                double state = (double)(e.params + e.grads + e.master + e.optim) / (cfg.lora.rank > 0 ? (double)nparams : e.psi);
                char paper[16] = "    -";     /* LoRA: the paper has no row for it */
                if (e.paper_bytes_per_param > 0) snprintf(paper, sizeof paper, "%5.2f", e.paper_bytes_per_param);
                printf("%-13s %5d %5d %5d %10.1f %10.1f %10.1f %10.1f %11.1f %9.1f %10.1f   %5.2f vs %s\n", name,
                       world, c.train.global_batch / (world * accum), accum, mib(e.params), mib(e.grads),
                       mib(e.master), mib(e.optim), mib(e.activations), mib(e.comm), mib(e.total), state, paper);
            }
    }
    /* The built-in GPT or Llama on GPUs (device=cuda): what the engine allocates in device memory. */
    char why[512];
    const bool builtin = (!strcmp(model.ops->name, "gpt") || !strcmp(model.ops->name, "llama")) && !cfg.model.plugin[0];
    if (rc == 0 && builtin && cfg.lora.rank > 0) {
        printf("GPU engine: no rows (LoRA training runs on the CPU so far)\n");
    } else if (rc == 0 && builtin && !accel_model_runs_on(&cfg, ACCEL_DEVICE_CUDA, why, sizeof why)) {
        char *nl = strchr(why, '\n');          /* its first line names the key */
        if (nl) *nl = '\0';
        printf("GPU engine: no rows (%s)\n", why);
    } else if (rc == 0 && builtin) {
        printf("GPU engine (device=cuda), device MiB per rank (ZeRO-1, 2 and 3 alike: the device keeps "
               "parameters and gradients whole)%s:\n",
               autob ? "; micro_batch=auto plans against the GPU's memory at run time, rows for grad_accum 1" : "");
        snprintf(list, sizeof list, "%s", worlds);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            int world = atoi(tok), per_rank = world * accel_memory_grad_accum(&cfg, world);
            if (world < 1 || per_rank < 1 || cfg.train.global_batch % per_rank) continue;
            int micro = cfg.train.global_batch / per_rank;
            size_t ddp = 0, zero = 0;
            if (accel_memory_gpu_estimate(&cfg, &model.layout, ACCEL_DDP, world, micro, &ddp) != ACCEL_OK ||
                accel_memory_gpu_estimate(&cfg, &model.layout, ACCEL_ZERO1, world, micro, &zero) != ACCEL_OK) {
                printf("  %5d ranks: a micro-batch of %d is out of range for the GPU engine\n", world, micro);
                continue;
            }
            printf("  %5d ranks, micro-batch %d: ddp %.1f, zero1-3 %.1f\n", world, micro, mib(ddp), mib(zero));
        }
    }
    accel_model_destroy(&model);
    return rc;
}
