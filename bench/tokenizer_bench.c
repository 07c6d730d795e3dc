/* Tokenizer encoding speed (bench/tokenizer_bench.sh): encodes a text file with a tokenizer.json
 * REPS times, each time with a freshly loaded tokenizer (a cold word cache, as the Python peer
 * bench/tokenizer_hf.py does; loading is not timed), and prints the best MB/s and the id count.
 * DOC > 0 cuts the text into documents first (each ends at the first newline at or after DOC bytes
 * from its start, the same cut as the peer's) and encodes them one by one; 0: one call.
 *   bench/tokenizer_bench TOKENIZER_JSON_OR_DIR TEXT_FILE [REPS [DOC]]   (make bench/tokenizer_bench) */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accel/tokenizer.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER_JSON_OR_DIR TEXT_FILE [REPS [DOC]]\n", argv[0]);
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    long doc = argc > 4 ? atol(argv[4]) : 0;
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "%s: read error\n", argv[2]);
        return 1;
    }
    fclose(f);
    double best = 1e30;
    size_t n = 0;
    for (int r = 0; r < reps; r++) {
        char err[1024];
        accel_tokenizer_t *t = NULL;
        if (accel_tokenizer_load(argv[1], &t, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        int32_t *ids = NULL;
        size_t cap = 0;
        n = 0;
        double t0 = now();
        accel_status_t st = ACCEL_OK;
        for (long a = 0; a < len && !st;) {
            long b = len;
            if (doc > 0 && a + doc < len) {
                const char *nl = memchr(text + a + doc, '\n', (size_t)(len - a - doc));
                b = nl ? nl - text + 1 : len;
            }
            st = accel_tokenizer_encode(t, text + a, (size_t)(b - a), &ids, &n, &cap);
            a = b;
        }
        double dt = now() - t0;
        if (st) {
            fprintf(stderr, "encode: %s\n", accel_tokenizer_last_error(t));
            return 1;
        }
        if (dt < best) best = dt;
        free(ids);
        accel_tokenizer_free(t);
    }
    printf("accel %.2f MB/s %zu ids %.4f s\n", (double)len / best / 1e6, n, best);
    free(text);
    return 0;
}
