/* token_dump: read a token dataset back through the loader, for the import tests.
 *   token_dump FILE OUT        write /train then /val as uint32 little-endian to OUT, read with
 *                              accel_dataset_open + accel_dataset_read at context 1 (sample i is
 *                              tokens i and i+1), so every token passes the loader's checks; print
 *                              "train N val M width W vocab V tokenizer NAME hash H json J"
 *   token_dump --json FILE OUT the tokenizer.json bytes the dataset keeps, to OUT
 *                              (exit 3 when it keeps none)
 *   token_dump --chat-template FILE OUT  the chat template the dataset keeps, to OUT (exit 3
 *                              when it keeps none)
 *   token_dump --tokenizer PATH  exit 0 when accel_tokenizer_load reads PATH, 1 (printing why)
 *                              otherwise */
#include "build_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/dataset.h"
#include "accel/tokenizer.h"

static int dump(const char *path, const char *out)
{
    FILE *f = fopen(out, "wb");
    if (!f) { perror(out); return 1; }
    static const char *const splits[2] = { "train", "val" };
    long long n[2] = { 0, 0 };
    const accel_dataset_info_t *in = NULL;
    accel_dataset_t *ds[2] = { NULL, NULL };
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        if (accel_dataset_open(path, splits[s], 1, MPI_COMM_SELF, &ds[s]) != ACCEL_OK) { rc = 1; break; }
        in = accel_dataset_info(ds[s]);
        int64_t ns = in->nsamples;
        int64_t *idx = malloc(sizeof *idx * (size_t)ns);
        int32_t *tok = malloc(sizeof *tok * (size_t)ns * 2);
        if (!idx || !tok) { free(idx); free(tok); rc = 1; break; }
        for (int64_t i = 0; i < ns; i++) idx[i] = ns - 1 - i;     /* any order: the loader sorts */
        if (accel_dataset_read(ds[s], idx, (int)ns, tok, NULL, NULL) != ACCEL_OK) rc = 1;
        for (int64_t j = ns - 1; j >= 0 && rc == 0; j--) {        /* sample ns-1-j is token j, j+1 */
            uint32_t v = (uint32_t)tok[2 * j];
            unsigned char b[4] = { v, v >> 8, v >> 16, v >> 24 };
            fwrite(b, 1, 4, f);
            if (j == 0) {
                v = (uint32_t)tok[1];
                unsigned char e[4] = { v, v >> 8, v >> 16, v >> 24 };
                fwrite(e, 1, 4, f);
            }
        }
        n[s] = in->ntokens;
        free(idx);
        free(tok);
    }
    if (fclose(f) != 0) rc = 1;
    if (rc == 0)
        printf("train %lld val %lld width %d vocab %d tokenizer %s hash %s json %d\n", n[0], n[1],
               in->token_bytes, in->vocab, in->tokenizer, in->tokenizer_hash[0] ? in->tokenizer_hash : "-",
               in->has_tokenizer_json ? 1 : 0);
    accel_dataset_close(ds[0]);
    accel_dataset_close(ds[1]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--tokenizer")) {
        accel_tokenizer_t *t = NULL;
        char err[512] = "";
        accel_status_t st = accel_tokenizer_load(argv[2], &t, err, sizeof err);
        if (st == ACCEL_OK) { accel_tokenizer_free(t); return 0; }
        printf("%s (%s)\n", err, accel_status_str(st));
        return 1;
    }
    bool chat = argc == 4 && !strcmp(argv[1], "--chat-template");
    if (argc != 3 && !(argc == 4 && (!strcmp(argv[1], "--json") || chat))) {
        fprintf(stderr, "usage: token_dump FILE OUT | --json FILE OUT | --chat-template FILE OUT | "
                "--tokenizer PATH\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rc;
    if (argc == 4) {
        char *json = NULL;
        size_t len = 0;
        accel_status_t st = chat ? accel_dataset_chat_template(argv[2], &json, &len)
                                 : accel_dataset_tokenizer_json(argv[2], &json, &len);
        FILE *f = st == ACCEL_OK ? fopen(argv[3], "wb") : NULL;
        rc = st == ACCEL_ERR_NOT_FOUND ? 3 : !f || fwrite(json, 1, len, f) != len ? 1 : 0;
        if (f && fclose(f) != 0) rc = 1;
        free(json);
    } else {
        rc = dump(argv[1], argv[2]);
    }
    MPI_Finalize();
    return rc;
}
