/* check_dataset: verify the parallel loader and distributed evaluation against independent truth,
 * under any number of ranks (tests/data_loader.sh runs it on 1, 2 and 4).
 *   check_dataset tokens FILE SOURCE [--context T] [--micro M]
 *       FILE was made by 'accel_data prepare' from SOURCE (one file): token k of the stream must
 *       be byte k of SOURCE, /train holding the first ntrain bytes and /val the rest.
 *   check_dataset classification FILE --seed S --features F --classes K --noise X [--micro M]
 *       FILE was made by 'accel_data synth --kind classification': train sample i must equal
 *       accel_synthetic_sample(S, F, K, X, i) and val sample j sample ntrain + j.
 * For each split every rank reads (a) its share of all samples, round-robin in chunks of varying
 * size (so ranks make different numbers of reads of different sizes; together they cover every
 * sample exactly once), (b) its micro-batches of a shuffled sampler order, (c) an unsorted request
 * with repeats; odd ranks also make an empty read. Every value is compared. Then the val split is
 * evaluated with the padded evaluation order and accel_eval_gather, and every rank checks that it
 * received each sample's result exactly once, in order. Exit 0 when everything matched. */
#include "build_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

static int g_rank, g_size;
static long long g_mismatch, g_errors, g_reads, g_checked;

typedef struct {
    int tokens;                     /* 1: token file, 0: classification */
    const unsigned char *src;       /* tokens: the source bytes */
    long long srclen;
    int64_t base;                   /* index of the split's first token / synthetic sample */
    uint64_t seed;
    int features, classes;
    double noise;
} truth_t;

/* Compare sample `index` as read against the truth; returns mismatches. */
static long long verify(const truth_t *tr, const accel_dataset_info_t *in, int64_t index,
                        const int32_t *tok, const float *x, int32_t y)
{
    long long bad = 0;
    if (tr->tokens) {
        int T = in->context;
        for (int t = 0; t <= T; t++) {
            int64_t k = tr->base + index * T + t;
            if (k >= tr->srclen || tok[t] != tr->src[k]) {
                if (!bad && g_mismatch + bad < 5)
                    fprintf(stderr, "rank %d: %s sample %lld token %d = %d, source byte %lld = %d\n",
                            g_rank, in->split, (long long)index, t, tok[t], (long long)k,
                            k < tr->srclen ? tr->src[k] : -1);
                bad++;
            }
        }
    } else {
        float want[4096];
        int32_t label;
        accel_synthetic_sample(tr->seed, tr->features, tr->classes, tr->noise, tr->base + index, want, &label);
        if (label != y) bad++;
        for (int f = 0; f < tr->features; f++) bad += want[f] != x[f];
        if (bad && g_mismatch < 5)
            fprintf(stderr, "rank %d: %s sample %lld differs from synthetic sample %lld\n", g_rank,
                    in->split, (long long)index, (long long)(tr->base + index));
    }
    return bad;
}

/* Read n samples and verify each. */
static void read_check(accel_dataset_t *ds, const truth_t *tr, const int64_t *idx, int n)
{
    const accel_dataset_info_t *in = accel_dataset_info(ds);
    size_t row = in->kind == ACCEL_DATASET_TOKENS ? (size_t)in->context + 1 : (size_t)in->features;
    int32_t *tok = malloc(sizeof *tok * row * (size_t)(n + 1));
    float *x = malloc(sizeof *x * row * (size_t)(n + 1));
    int32_t *y = malloc(sizeof *y * (size_t)(n + 1));
    int64_t before = in->elements_read;
    accel_status_t st = accel_dataset_read(ds, idx, n, tok, x, y);
    g_reads++;
    if (st != ACCEL_OK) {
        fprintf(stderr, "rank %d: accel_dataset_read of %d samples failed: %s\n", g_rank, n, accel_status_str(st));
        g_errors++;
    } else {
        /* A rank reads what it asked for and no more: never the whole dataset. */
        int64_t limit = (int64_t)n * (int64_t)(row + (in->kind == ACCEL_DATASET_TOKENS ? 0 : 1));
        if (in->elements_read - before > limit) {
            fprintf(stderr, "rank %d: a read of %d samples touched %lld elements (limit %lld)\n", g_rank,
                    n, (long long)(in->elements_read - before), (long long)limit);
            g_errors++;
        }
        for (int j = 0; j < n; j++)
            g_mismatch += verify(tr, in, idx[j], tok + (size_t)j * row, x + (size_t)j * row, y[j]);
    }
    free(tok);
    free(x);
    free(y);
}

static void check_split(accel_dataset_t *ds, const truth_t *tr, int micro)
{
    const accel_dataset_info_t *in = accel_dataset_info(ds);
    const int64_t N = in->nsamples;
    int64_t *idx = malloc(sizeof *idx * 64);

    /* (a) round-robin cover in chunks of 1..7 samples, sizes differing between ranks */
    long long mine = 0;
    int chunk_no = 0, n = 0;
    for (int64_t i = g_rank; i < N; i += g_size) {
        idx[n++] = i;
        if (n == 1 + (chunk_no + g_rank) % 7) {
            read_check(ds, tr, idx, n);
            mine += n;
            n = 0;
            chunk_no++;
        }
    }
    if (n) { read_check(ds, tr, idx, n); mine += n; }
    g_checked += mine;
    long long covered = 0;
    MPI_Allreduce(&mine, &covered, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (covered != N) {
        if (g_rank == 0) fprintf(stderr, "%s: ranks covered %lld of %lld samples\n", in->split, covered, (long long)N);
        g_errors++;
    }

    /* (b) a shuffled sampler order, as training reads it */
    int m = (int)(N / g_size < micro ? N / g_size : micro);
    if (m >= 1) {
        accel_sampler_t s;
        char err[256];
        if (accel_sampler_init(&s, 7, N, g_size * m, 1, g_size, g_rank, true, err, sizeof err) != ACCEL_OK) {
            fprintf(stderr, "rank %d: sampler: %s\n", g_rank, err);
            g_errors++;
        } else {
            for (int step = 0; step < 5; step++) {
                accel_sampler_indices(&s, 0, idx);
                read_check(ds, tr, idx, m);
                accel_sampler_advance(&s);
            }
            accel_sampler_free(&s);
        }
    }

    /* (c) unsorted, with repeats, including both ends; (d) an empty read on odd ranks */
    int64_t mid = (N / 2 + g_rank) % N;
    int64_t odd[6] = { N - 1, mid, mid, 0, mid > 0 ? mid - 1 : 0, N - 1 };
    read_check(ds, tr, odd, 6);
    if (g_rank % 2) read_check(ds, tr, idx, 0);
    free(idx);
}

/* Evaluate the split with the padded order; each sample's "metrics" are a function of its data
 * (token sum / label, and first value), so the gathered rows can be checked against the truth. */
static void check_eval(accel_dataset_t *ds, const truth_t *tr, int micro)
{
    const accel_dataset_info_t *in = accel_dataset_info(ds);
    const int64_t N = in->nsamples;
    int64_t nb = accel_eval_nbatches(N, g_size, micro), nl = nb * micro;
    size_t row = in->kind == ACCEL_DATASET_TOKENS ? (size_t)in->context + 1 : (size_t)in->features;
    int64_t *idx = malloc(sizeof *idx * (size_t)nl);
    unsigned char *valid = malloc((size_t)nl);
    float *vals = malloc(sizeof *vals * 2 * (size_t)nl), *out = malloc(sizeof *out * 2 * (size_t)N);
    int32_t *tok = malloc(sizeof *tok * row * (size_t)micro);
    float *x = malloc(sizeof *x * row * (size_t)micro);
    int32_t *y = malloc(sizeof *y * (size_t)micro);
    for (int64_t b = 0; b < nb; b++) {
        int64_t *bi = idx + b * micro;
        accel_eval_indices(N, g_size, g_rank, micro, b, bi, valid + b * micro);
        if (accel_dataset_read(ds, bi, micro, tok, x, y) != ACCEL_OK) g_errors++;
        for (int i = 0; i < micro; i++) {
            float *v = vals + 2 * (b * micro + i);
            if (in->kind == ACCEL_DATASET_TOKENS) {
                float sum = 0;
                for (size_t t = 0; t < row; t++) sum += (float)tok[(size_t)i * row + t];
                v[0] = sum;
                v[1] = (float)tok[(size_t)i * row];
            } else {
                v[0] = (float)y[i];
                v[1] = x[(size_t)i * row];
            }
        }
    }
    accel_status_t st = accel_eval_gather(MPI_COMM_WORLD, vals, idx, valid, (int)nl, N, 2, out);
    if (st != ACCEL_OK) {
        fprintf(stderr, "rank %d: accel_eval_gather failed: %s\n", g_rank, accel_status_str(st));
        g_errors++;
    } else {
        /* every rank received every sample, in index order: compare with the truth */
        double serial = 0;
        long long bad = 0;
        for (int64_t i = 0; i < N; i++) {
            float want0, want1;
            if (tr->tokens) {
                float sum = 0;
                for (int t = 0; t <= in->context; t++) sum += (float)tr->src[tr->base + i * in->context + t];
                want0 = sum;
                want1 = (float)tr->src[tr->base + i * in->context];
            } else {
                float xs[4096];
                int32_t label;
                accel_synthetic_sample(tr->seed, tr->features, tr->classes, tr->noise, tr->base + i, xs, &label);
                want0 = (float)label;
                want1 = xs[0];
            }
            bad += out[2 * i] != want0 || out[2 * i + 1] != want1;
            serial += want0;
        }
        double mean = 0, acc = 0;
        accel_eval_mean(out, N, 2, &mean, &acc);
        if (bad || mean != serial / (double)N) {
            fprintf(stderr, "rank %d: eval of %s: %lld wrong rows, mean %.10g vs serial %.10g\n", g_rank,
                    in->split, bad, mean, serial / (double)N);
            g_mismatch += bad ? bad : 1;
        } else if (g_rank == 0) {
            printf("eval %s: %lld samples in %lld padded batches of %d x %d, gathered exactly on %d "
                   "rank(s); mean %.6f\n", in->split, (long long)N, (long long)nb, g_size, micro, g_size, mean);
        }
    }
    free(idx); free(valid); free(vals); free(out); free(tok); free(x); free(y);
}

static int usage(void)
{
    if (g_rank == 0)
        fprintf(stderr, "usage: check_dataset tokens FILE SOURCE [--context T] [--micro M]\n"
                        "       check_dataset classification FILE --seed S --features F --classes K "
                        "--noise X [--micro M]\n");
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    accel_log_set_identity(g_rank, g_size, "check");
    int rc = 2, context = 16, micro = 3;
    truth_t tr = { 0 };
    const char *file = NULL, *source = NULL;
    if (argc < 3) { rc = usage(); goto done; }
    tr.tokens = !strcmp(argv[1], "tokens");
    if (!tr.tokens && strcmp(argv[1], "classification")) { rc = usage(); goto done; }
    file = argv[2];
    int i = 3;
    if (tr.tokens) {
        if (argc < 4) { rc = usage(); goto done; }
        source = argv[i++];
    }
    for (; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "--context")) context = atoi(v);
        else if (!strcmp(o, "--micro")) micro = atoi(v);
        else if (!strcmp(o, "--seed")) tr.seed = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--features")) tr.features = atoi(v);
        else if (!strcmp(o, "--classes")) tr.classes = atoi(v);
        else if (!strcmp(o, "--noise")) tr.noise = atof(v);
        else { rc = usage(); goto done; }
    }
    if (i != argc || micro < 1 || micro > 64 || (!tr.tokens && (tr.features < 1 || tr.features > 4096))) { rc = usage(); goto done; }
    unsigned char *src = NULL;
    if (tr.tokens) {
        FILE *f = fopen(source, "rb");
        if (!f) { fprintf(stderr, "check_dataset: cannot read %s\n", source); rc = 1; goto done; }
        fseek(f, 0, SEEK_END);
        tr.srclen = ftell(f);
        rewind(f);
        src = malloc((size_t)tr.srclen + 1);
        if (fread(src, 1, (size_t)tr.srclen, f) != (size_t)tr.srclen) tr.srclen = 0;
        fclose(f);
        tr.src = src;
    }
    static const char *const splits[2] = { "train", "val" };
    int64_t ntokens[2] = { 0, 0 }, nsamples[2] = { 0, 0 };
    for (int s = 0; s < 2; s++) {
        accel_dataset_t *ds = NULL;
        accel_status_t st = accel_dataset_open(file, splits[s], context, MPI_COMM_WORLD, &ds);
        if (st != ACCEL_OK) { g_errors++; break; }
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        ntokens[s] = in->ntokens;
        nsamples[s] = in->nsamples;
        tr.base = s == 0 ? 0 : tr.tokens ? ntokens[0] : nsamples[0];
        if ((in->kind == ACCEL_DATASET_TOKENS) != tr.tokens) {
            if (g_rank == 0) fprintf(stderr, "check_dataset: %s is not a %s dataset\n", file, argv[1]);
            g_errors++;
        } else if (!tr.tokens && (in->features != tr.features || in->classes != tr.classes)) {
            if (g_rank == 0) fprintf(stderr, "check_dataset: %s has %d features and %d classes\n", file,
                                     in->features, in->classes);
            g_errors++;
        } else {
            check_split(ds, &tr, micro);
            if (s == 1) check_eval(ds, &tr, micro);
        }
        accel_dataset_close(ds);
    }
    if (tr.tokens && g_errors == 0 && ntokens[0] + ntokens[1] != tr.srclen) {
        if (g_rank == 0) fprintf(stderr, "check_dataset: train %lld + val %lld tokens != %lld source bytes\n",
                                 (long long)ntokens[0], (long long)ntokens[1], tr.srclen);
        g_errors++;
    }
    long long mine[4] = { g_mismatch, g_errors, g_reads, g_checked }, all[4];
    MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("check_dataset %s %s on %d rank(s): train %lld + val %lld samples, %lld reads, %lld "
               "samples covered, %lld mismatches, %lld errors\n", argv[1], file, g_size,
               (long long)nsamples[0], (long long)nsamples[1], all[2], all[3], all[0], all[1]);
    rc = all[0] || all[1] ? 1 : 0;
    free(src);
done:
    MPI_Finalize();
    return rc;
}
