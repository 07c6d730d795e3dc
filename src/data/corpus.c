/* Text corpora: byte-level tokenisation of text files into an accel token dataset (the work of
 * `accel_data prepare`, and of accel_train when its default corpus is missing). */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel/dataset.h"
#include "accel/log.h"

/* The first error of a collect_* call, reported by accel_corpus_prepare. */
static char g_err[1024];

typedef struct {
    char **paths;
    long long *sizes;
    int n, cap;
    dev_t *dev;
    ino_t *ino;
} filelist_t;

static int list_add(filelist_t *l, const char *path, const struct stat *sb)
{
    for (int i = 0; i < l->n; i++)
        if (l->dev[i] == sb->st_dev && l->ino[i] == sb->st_ino) return 0;   /* a link to a file we have */
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        char **p = realloc(l->paths, sizeof *p * (size_t)cap);
        if (p) l->paths = p;
        long long *s = realloc(l->sizes, sizeof *s * (size_t)cap);
        if (s) l->sizes = s;
        dev_t *d = realloc(l->dev, sizeof *d * (size_t)cap);
        if (d) l->dev = d;
        ino_t *in = realloc(l->ino, sizeof *in * (size_t)cap);
        if (in) l->ino = in;
        if (!p || !s || !d || !in) return -1;
        l->cap = cap;
    }
    l->paths[l->n] = strdup(path);
    if (!l->paths[l->n]) return -1;
    l->sizes[l->n] = (long long)sb->st_size;
    l->dev[l->n] = sb->st_dev;
    l->ino[l->n] = sb->st_ino;
    l->n++;
    return 0;
}

static void list_free(filelist_t *l)
{
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->sizes);
    free(l->dev);
    free(l->ino);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular files under dir, in name order, recursively; hidden entries and empty files skipped. */
static int collect_dir(filelist_t *l, const char *dir, int depth)
{
    if (depth > 16) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(g_err, sizeof g_err, "cannot read directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(names, sizeof *p * (size_t)cap);
            if (!p) { rc = -1; break; }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc == 0) qsort(names, (size_t)n, sizeof *names, cmp_name);
    /* Entries themselves first, then symbolic links: a link to a file read already (GFDL ->
     * GFDL-1.3 in the default corpus) is skipped, so its text is read once, under its own name. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n && rc == 0; i++) {
            char path[PATH_MAX];
            struct stat sb, lsb;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) continue;
            if (lstat(path, &lsb) != 0 || S_ISLNK(lsb.st_mode) != (pass == 1)) continue;
            if (stat(path, &sb) != 0) continue;               /* dangling link */
            if (S_ISDIR(sb.st_mode)) rc = collect_dir(l, path, depth + 1);
            else if (S_ISREG(sb.st_mode) && sb.st_size > 0) rc = list_add(l, path, &sb);
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static int collect_input(filelist_t *l, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(g_err, sizeof g_err, "cannot read input '%s': %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) {
        int before = l->n;
        if (collect_dir(l, path, 0) != 0) return -1;
        if (l->n == before) {
            snprintf(g_err, sizeof g_err, "directory '%s' holds no non-empty files", path);
            return -1;
        }
        return 0;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(g_err, sizeof g_err, "input '%s' is not a regular file or directory", path);
        return -1;
    }
    if (sb.st_size == 0) {
        snprintf(g_err, sizeof g_err, "input '%s' is empty\n--> hint: give files with text in them", path);
        return -1;
    }
    return list_add(l, path, &sb);
}

accel_status_t accel_corpus_prepare(const char *const *inputs, int ninputs, const char *output,
                                    double val_fraction, int context, FILE *progress, char *err,
                                    size_t errlen)
{
    static const char *const default_inputs[] = { ACCEL_CORPUS_DEFAULT_INPUT };
    if (ninputs == 0) {
        inputs = default_inputs;
        ninputs = 1;
    }
    filelist_t files = { 0 };
    unsigned char *text = NULL;
    accel_status_t st = ACCEL_ERR_INVALID;
    g_err[0] = '\0';
    for (int i = 0; i < ninputs; i++)
        if (collect_input(&files, inputs[i])) {
            snprintf(err, errlen, "%s", g_err[0] ? g_err : "out of memory listing the inputs");
            st = g_err[0] ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_NOMEM;
            goto out;
        }
    long long total = 0;
    for (int i = 0; i < files.n; i++) total += files.sizes[i];
    text = malloc((size_t)(total ? total : 1));
    if (!text) {
        snprintf(err, errlen, "cannot hold %lld bytes of text in memory", total);
        st = ACCEL_ERR_NOMEM;
        goto out;
    }
    long long got = 0;
    for (int i = 0; i < files.n; i++) {
        FILE *f = fopen(files.paths[i], "rb");
        size_t n = f ? fread(text + got, 1, (size_t)files.sizes[i], f) : 0;
        if (!f || n != (size_t)files.sizes[i]) {
            snprintf(err, errlen, "cannot read '%s': %s", files.paths[i],
                     f ? "it changed size while being read" : strerror(errno));
            if (f) fclose(f);
            st = ACCEL_ERR_IO;
            goto out;
        }
        fclose(f);
        if (progress) fprintf(progress, "  read %-50s %10lld bytes\n", files.paths[i], files.sizes[i]);
        got += (long long)n;
    }
    long long nval = llround((double)total * val_fraction);
    long long ntrain = total - nval;
    if (progress)
        fprintf(progress, "read %d file(s), %lld bytes -> %lld tokens: train %lld, val %lld (val fraction %g)\n",
                files.n, total, total, ntrain, nval, val_fraction);
    if (ntrain < context + 1 || nval < context + 1) {
        snprintf(err, errlen, "too little data: %lld bytes give %lld training and %lld validation "
                 "tokens, but one sample at context %d needs %d tokens in each split\n--> hint: add "
                 "text, or lower the context", total, ntrain, nval, context, context + 1);
        st = ACCEL_ERR_SHAPE;
        goto out;
    }
    char desc[512];
    snprintf(desc, sizeof desc, "accel_data prepare: %d file(s), %lld bytes, byte-level tokens, last "
             "%g of the stream is /val", files.n, total, val_fraction);
    st = accel_dataset_write_tokens(output, "bytes", 256, text, 1, ntrain, nval, desc);
    if (st != ACCEL_OK) {
        snprintf(err, errlen, "writing '%s' failed: %s", output, accel_status_str(st));
        goto out;
    }
    if (progress)
        fprintf(progress, "wrote %s: %s v%d, tokenizer bytes, vocab 256 (uint8); at context %d: %lld "
                "train and %lld val samples\n", output, ACCEL_DATASET_FORMAT_TOKENS,
                ACCEL_DATASET_VERSION, context, (ntrain - 1) / context, (nval - 1) / context);
out:
    free(text);
    list_free(&files);
    return st;
}
