/* libFuzzer-style harness for the checkpoint readers: the input bytes become a file, which is
 * verified (accel_ckpt_verify_layout against a small fixed layout), opened and listed with the
 * file reader (accel_ckpt_file_*: the path of ls, export, accel_generate), read tensor by tensor
 * when readable, and its metadata read. Nothing may crash, hang or read without bound; refusals
 * are the expected outcome. `make check` runs it over tests/fuzz/corpus/ckpt/ with
 * tests/fuzz/driver.c; with clang's libFuzzer (see docs/checkpoint-format.md, "Fuzzing"):
 *   clang-14 -fsanitize=fuzzer,address,undefined -Iinclude -I. tests/fuzz/fuzz_ckpt.c \
 *       .libs/libaccel.a $(pkg-config --libs hdf5-openmpi) -lxxhash -lmpi -o fuzz_ckpt
 *   ./fuzz_ckpt -max_total_time=600 tests/fuzz/corpus/ckpt */
#include "build_config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"

#define READ_CAP ((uint64_t)1 << 22)   /* elements read per tensor at most (16 MiB) */

static char g_path[64];
static accel_layout_t g_layout;

static void init_once(void)
{
    if (g_path[0]) return;
    snprintf(g_path, sizeof g_path, "/tmp/fuzz_ckpt.%ld.h5", (long)getpid());
    accel_log_set_level(ACCEL_LOG_ERROR);
    /* the model of the seed checkpoints in tests/fuzz/corpus/ckpt (mutate_ckpt --corpus makes them) */
    static const char yaml[] = "model:\n  name: gpt\n  layers: 1\n  heads: 2\n  width: 8\n  context: 4\n  vocab: 16\n";
    accel_config_t cfg;
    static accel_model_t model;         /* kept (reachable) for the process's life */
    char err[512];
    if (accel_config_from_yaml(&cfg, yaml, "fuzz_ckpt", err, sizeof err) == ACCEL_OK &&
        accel_model_create(&cfg, &model) == ACCEL_OK)
        g_layout = model.layout;
    else
        accel_layout_init(&g_layout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    FILE *f = fopen(g_path, "wb");
    if (!f) return 0;
    size_t w = fwrite(data, 1, size, f);
    fclose(f);
    if (w != size) return 0;
    FILE *devnull = fopen("/dev/null", "w");
    (void)accel_ckpt_verify_layout(g_path, &g_layout, devnull, true, NULL);
    (void)accel_ckpt_verify(g_path, devnull, false, NULL);
    if (devnull) fclose(devnull);
    accel_ckpt_meta_t m;
    if (accel_ckpt_read_meta(g_path, &m) == ACCEL_OK) accel_ckpt_meta_free(&m);
    accel_ckpt_file_t *cf = NULL;
    char err[512];
    if (accel_ckpt_file_open(g_path, &cf, err, sizeof err) == ACCEL_OK) {
        const char *const *states;
        int ns = accel_ckpt_file_states(cf, &states);
        for (int s = 0; s < ns; s++) {
            accel_ckpt_tensor_info_t *ts = NULL;
            int n = 0;
            if (accel_ckpt_file_list(cf, states[s], &ts, &n) != ACCEL_OK) continue;
            for (int i = 0; i < n; i++) {
                if (!ts[i].readable) continue;
                uint64_t e = ts[i].numel < READ_CAP ? ts[i].numel : READ_CAP;
                float *buf = malloc(sizeof(float) * (e ? e : 1));
                if (buf) (void)accel_ckpt_file_read(cf, states[s], ts[i].name, 0, e, buf);
                free(buf);
            }
            free(ts);
        }
        char *yaml = NULL;
        if (accel_ckpt_file_config(cf, &yaml) == ACCEL_OK) free(yaml);
        accel_ckpt_file_close(cf);
    }
    unlink(g_path);
    return 0;
}
