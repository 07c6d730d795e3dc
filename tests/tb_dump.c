/* Reads a TensorBoard log directory the way TensorBoard does (its event files in name order, every
 * record's CRCs checked by accel_tb_read) and prints one line per event, for the shell tests:
 *   tb_dump DIR            "file NAME", "version STEP TEXT", "start STEP", "scalar TAG STEP VALUE"
 *   tb_dump --purged DIR   "TAG STEP VALUE" of the scalars TensorBoard keeps: a SessionLog START at
 *                          step s drops every event read before it whose step is >= s
 *                          (event_accumulator.py, _CheckForRestartAndMaybePurge).
 * VALUE is the float32 printed with 9 significant digits. Exit 1 on a bad file. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/tensorboard.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    int purged = argc == 3 && !strcmp(argv[1], "--purged");
    if (argc != 2 + purged) {
        fprintf(stderr, "usage: tb_dump [--purged] DIR\n");
        return 2;
    }
    const char *dir = argv[1 + purged];
    DIR *d = opendir(dir);
    if (!d) { perror(dir); return 1; }
    char **names = NULL;
    size_t nnames = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "events.out.tfevents.", 20)) continue;
        names = realloc(names, (nnames + 1) * sizeof *names);
        names[nnames++] = strdup(e->d_name);
    }
    closedir(d);
    if (!nnames) { fprintf(stderr, "%s: no event files\n", dir); return 1; }
    qsort(names, nnames, sizeof *names, by_name);
    accel_tb_event_t *kept = NULL;          /* --purged: the scalars so far */
    size_t nkept = 0;
    int rc = 0;
    for (size_t i = 0; i < nnames && !rc; i++) {
        char path[8192], err[8400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        accel_tb_event_t *ev;
        size_t n;
        if (accel_tb_read(path, &ev, &n, err, sizeof err) != ACCEL_OK) {
            fprintf(stderr, "%s\n", err);
            rc = 1;
            break;
        }
        if (!purged) printf("file %s\n", names[i]);
        for (size_t j = 0; j < n; j++) {
            const accel_tb_event_t *x = &ev[j];
            if (!purged) {
                if (x->kind == ACCEL_TB_EVENT_FILE_VERSION) printf("version %lld %s\n", (long long)x->step, x->tag);
                else if (x->kind == ACCEL_TB_EVENT_SESSION_LOG && x->status == 1) printf("start %lld\n", (long long)x->step);
                else if (x->kind == ACCEL_TB_EVENT_SCALAR)
                    printf("scalar %s %lld %.9g\n", x->tag, (long long)x->step, x->value);
                continue;
            }
            if (x->kind == ACCEL_TB_EVENT_SESSION_LOG && x->status == 1) {
                size_t m = 0;
                for (size_t k = 0; k < nkept; k++)
                    if (kept[k].step < x->step) kept[m++] = kept[k];
                nkept = m;
            } else if (x->kind == ACCEL_TB_EVENT_SCALAR) {
                kept = realloc(kept, (nkept + 1) * sizeof *kept);
                kept[nkept++] = *x;
            }
        }
        free(ev);
    }
    for (size_t k = 0; k < nkept && !rc; k++)
        printf("%s %lld %.9g\n", kept[k].tag, (long long)kept[k].step, kept[k].value);
    for (size_t i = 0; i < nnames; i++) free(names[i]);
    free(names);
    free(kept);
    return rc;
}
