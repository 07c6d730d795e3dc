/* Test and benchmark helper: write a GPT's initial weights as an accel checkpoint or as exported
 * weights (tests/infer_weights.h), for accel_generate tests and bench/infer_bench.sh.
 *   infer_mkweights OUT.h5 [--exported] [--dtype fp32|bf16|bf16-bits] [--drop TENSOR]
 *                   [--reshape TENSOR] [--incomplete] [--seed N] [key=value ...] */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer_weights.h"

int main(int argc, char **argv)
{
    tw_opts_t o = { .seed = 1234 };
    const char *out = NULL;
    char **ov = calloc((size_t)argc + 1, sizeof *ov);
    int nov = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--exported")) o.exported = 1;
        else if (!strcmp(argv[i], "--incomplete")) o.incomplete = 1;
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            o.dtype = !strcmp(d, "bf16") ? TW_BF16_FLOAT : !strcmp(d, "bf16-bits") ? TW_BF16_BITS : TW_FP32;
        } else if (!strcmp(argv[i], "--drop") && i + 1 < argc) o.drop = argv[++i];
        else if (!strcmp(argv[i], "--reshape") && i + 1 < argc) o.reshape = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) o.seed = strtoull(argv[++i], NULL, 10);
        else if (accel_config_is_override(argv[i])) ov[nov++] = argv[i];
        else if (!out && argv[i][0] != '-') out = argv[i];
        else {
            fprintf(stderr, "usage: infer_mkweights OUT.h5 [--exported] [--dtype fp32|bf16|bf16-bits] "
                            "[--drop T] [--reshape T] [--incomplete] [--seed N] [key=value ...]\n");
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "infer_mkweights: no output file\n");
        return 2;
    }
    accel_config_t cfg;
    char err[1024];
    if (accel_config_load(&cfg, NULL, nov, ov, NULL, err, sizeof err) != ACCEL_OK) {
        fprintf(stderr, "infer_mkweights: %s\n", err);
        return 2;
    }
    int rc = tw_write(out, &cfg, &o);
    if (rc) fprintf(stderr, "infer_mkweights: writing %s failed\n", out);
    free(ov);
    return rc ? 1 : 0;
}
