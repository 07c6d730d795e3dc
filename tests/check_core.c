/* Unit tests of the core layer (single process): status codes, logging, configuration, launcher
 * detection, topology, dtype conversions, keyed RNG, sampler, arena, optimizer, gradient
 * reductions, MLP gradients. */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"

/* ---------------------------------------------------------------- status */
START_TEST(test_status_strings)
{
    for (int s = 0; s >= ACCEL_ERR_STOPPED; s--) {
        const char *text = accel_status_str((accel_status_t)s);
        ck_assert_ptr_nonnull(text);
        ck_assert_str_ne(text, "unknown status");
        for (int t = s - 1; t >= ACCEL_ERR_STOPPED; t--)
            ck_assert_str_ne(text, accel_status_str((accel_status_t)t));
    }
    ck_assert_int_eq(accel_status_exit_code(ACCEL_OK), 0);
    ck_assert_int_eq(accel_status_exit_code(ACCEL_ERR_CONFIG), 2);
    ck_assert_int_eq(accel_status_exit_code(ACCEL_ERR_MPI), 1);
}
END_TEST

/* ---------------------------------------------------------------- logging */
static char *capture_log(void (*emit)(void))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    accel_log_set_stream(f);
    emit();
    accel_log_set_stream(NULL);
    fclose(f);
    return buf;
}

static void emit_as_rank3(void)
{
    accel_log_set_identity(3, 8, "node7");
    accel_log_set_level(ACCEL_LOG_INFO);
    accel_log_set_all_ranks(false);
    ACCEL_INFO("main only %d", 1);       /* suppressed: not rank 0 */
    ACCEL_WARN("warn from %s", "all");
    ACCEL_DEBUG("hidden at info level");
    accel_log_set_all_ranks(true);
    ACCEL_INFO("per-rank %d", 2);
    accel_log_set_all_ranks(false);
}

START_TEST(test_log_format_and_filters)
{
    char *out = capture_log(emit_as_rank3);
    ck_assert_ptr_null(strstr(out, "main only"));
    ck_assert_ptr_nonnull(strstr(out, "[rank 3/8 node7] WARNING: warn from all\n"));
    ck_assert_ptr_null(strstr(out, "hidden"));
    ck_assert_ptr_nonnull(strstr(out, "[rank 3/8 node7] per-rank 2\n"));
    free(out);
    ck_assert_int_eq(accel_log_parse_level("debug"), ACCEL_LOG_DEBUG);
    ck_assert_int_eq(accel_log_parse_level("WARN"), ACCEL_LOG_WARN);
    ck_assert_int_eq(accel_log_parse_level("2"), ACCEL_LOG_INFO);
    ck_assert_int_eq(accel_log_parse_level("loud"), -1);
    accel_log_set_identity(0, 1, "test");
}
END_TEST

/* ---------------------------------------------------------------- configuration */
static char g_tmpdir[256];

static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static char *const g_no_env[] = { NULL };

START_TEST(test_config_defaults)
{
    accel_config_t c;
    accel_config_defaults(&c);
    ck_assert_str_eq(c.model.name, "gpt");
    ck_assert_int_eq(c.train.grad_accum, 1);
    ck_assert_str_eq(c.optim.name, "adamw");
    ck_assert(c.data.drop_last);
    ck_assert_double_eq_tol(c.dist.timeout, 600.0, 1e-9);
}
END_TEST

START_TEST(test_config_yaml_overrides_env)
{
    const char *path = write_file("job.yaml",
        "# a job\nseed: 7\nmodel:\n  name: mlp\n  hidden: 64\ntrain:\n  steps: 12\n  global_batch: 32\n"
        "  sync_each_batch: yes\noptim:\n  lr: 1e-3\n  schedule: linear\n");
    char *overrides[] = { "train.steps=20", "optim.warmup=3" };
    char *env[] = { "ACCEL_TRAIN_STEPS=30", "ACCEL_OPTIM_BETA2=0.95", "UNRELATED=1", NULL };
    accel_config_t c;
    char err[512];
    ck_assert_int_eq(accel_config_load(&c, path, 2, overrides, env, err, sizeof err), ACCEL_OK);
    ck_assert_uint_eq(c.seed, 7);
    ck_assert_int_eq(c.model.hidden, 64);
    ck_assert_int_eq(c.train.global_batch, 32);
    ck_assert(c.train.sync_each_batch);
    ck_assert_double_eq_tol(c.optim.lr, 1e-3, 1e-15);
    ck_assert_str_eq(c.optim.schedule, "linear");
    ck_assert_int_eq(c.optim.warmup, 3);                       /* override beats the file */
    ck_assert_int_eq(c.train.steps, 30);                       /* environment beats the override */
    ck_assert_double_eq_tol(c.optim.beta2, 0.95, 1e-15);
}
END_TEST

START_TEST(test_config_print_round_trip)
{
    accel_config_t a, b;
    char err[512];
    char *ov[] = { "model.plugin=/tmp/x.so", "train.metrics=m.jsonl", "dist.hybrid=true", "optim.eps=2.5e-7" };
    ck_assert_int_eq(accel_config_load(&a, NULL, 4, ov, g_no_env, err, sizeof err), ACCEL_OK);
    char *yaml = accel_config_to_yaml(&a);
    const char *path = write_file("round.yaml", yaml);
    free(yaml);
    ck_assert_int_eq(accel_config_load(&b, path, 0, NULL, g_no_env, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

static void expect_config_error(const char *yaml, int nov, char **ov, accel_status_t want_st,
                                const char *want1, const char *want2)
{
    const char *path = yaml ? write_file("bad.yaml", yaml) : NULL;
    accel_config_t c;
    char err[1024] = "";
    accel_status_t st = accel_config_load(&c, path, nov, ov, g_no_env, err, sizeof err);
    ck_assert_int_eq(st, want_st);
    ck_assert_msg(strstr(err, want1), "message '%s' lacks '%s'", err, want1);
    if (want2) ck_assert_msg(strstr(err, want2), "message '%s' lacks '%s'", err, want2);
}

START_TEST(test_config_errors)
{
    expect_config_error("train:\n  stpes: 10\n", 0, NULL, ACCEL_ERR_CONFIG, "unknown configuration key 'train.stpes'", "did you mean 'train.steps'");
    expect_config_error("train:\n  steps: ten\n", 0, NULL, ACCEL_ERR_CONFIG, "'train.steps' expects an integer, got 'ten'", "bad.yaml:2");
    expect_config_error("train:\n  steps: [1, 2]\n", 0, NULL, ACCEL_ERR_CONFIG, "list value", NULL);
    expect_config_error("train: 5\n", 0, NULL, ACCEL_ERR_CONFIG, "'train' is a section", NULL);
    expect_config_error("model:\n  name:\n    x: 1\n", 0, NULL, ACCEL_ERR_CONFIG, "takes a single value", NULL);
    expect_config_error("model: {name: mlp\n", 0, NULL, ACCEL_ERR_CONFIG, "malformed YAML", "bad.yaml:");
    expect_config_error("precision: fp8\n", 0, NULL, ACCEL_ERR_CONFIG, "expected one of fp32|bf16|fp16", NULL);
    expect_config_error("optim:\n  lr: -1\n", 0, NULL, ACCEL_ERR_CONFIG, "must not be negative", NULL);
    expect_config_error("train:\n  sync_each_batch: maybe\n", 0, NULL, ACCEL_ERR_CONFIG, "true or false", NULL);
    char *ov[] = { "nosuchkey=1" };
    expect_config_error(NULL, 1, ov, ACCEL_ERR_CONFIG, "command line: unknown configuration key 'nosuchkey'", NULL);
    char *ov2[] = { "train.steps=9999999999999" };
    expect_config_error(NULL, 1, ov2, ACCEL_ERR_CONFIG, "expects an integer", NULL);
    accel_config_t c;
    char err[512];
    ck_assert_int_eq(accel_config_load(&c, "/nonexistent/job.yaml", 0, NULL, g_no_env, err, sizeof err),
                     ACCEL_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "cannot open configuration file '/nonexistent/job.yaml'"));
    char *env[] = { "ACCEL_TRAIN_STEPS=abc", NULL };
    ck_assert_int_eq(accel_config_load(&c, NULL, 0, NULL, env, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "environment variable ACCEL_TRAIN_STEPS"));
    ck_assert(accel_config_is_override("train.steps=3"));
    ck_assert(!accel_config_is_override("job.yaml"));
    ck_assert(!accel_config_is_override("dir/a=b.yaml"));
}
END_TEST

START_TEST(test_config_empty_file)
{
    const char *path = write_file("empty.yaml", "");
    accel_config_t c, d;
    char err[256];
    ck_assert_int_eq(accel_config_load(&c, path, 0, NULL, g_no_env, err, sizeof err), ACCEL_OK);
    accel_config_defaults(&d);
    ck_assert_int_eq(memcmp(&c, &d, sizeof c), 0);
}
END_TEST

/* ---------------------------------------------------------------- launcher detection */
START_TEST(test_launch_singleton)
{
    char *env[] = { "HOME=/root", NULL };
    accel_launch_t l;
    ck_assert_int_eq(accel_launch_detect(env, &l), ACCEL_OK);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SINGLETON);
    ck_assert_int_eq(l.expected_size, -1);
    ck_assert(!l.in_slurm_allocation);
}
END_TEST

START_TEST(test_launch_mpirun)
{
    char *env[] = { "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK=2", "PMIX_RANK=2", NULL };
    accel_launch_t l;
    accel_launch_detect(env, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_MPIRUN);
    ck_assert_int_eq(l.expected_size, 4);
    ck_assert_int_eq(l.expected_rank, 2);
    ck_assert(l.pmix);
    ck_assert_str_eq(accel_launcher_name(l.launcher), "mpirun");
}
END_TEST

START_TEST(test_launch_srun)
{
    char *env[] = { "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4",
                    "SLURM_STEP_NUM_TASKS=4", "SLURM_CPUS_PER_TASK=2", "SLURM_JOB_NUM_NODES=2",
                    "PMIX_RANK=1", NULL };
    accel_launch_t l;
    accel_launch_detect(env, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SRUN);
    ck_assert_int_eq(l.expected_size, 4);
    ck_assert_int_eq(l.expected_rank, 1);
    ck_assert_int_eq(l.slurm_cpus_per_task, 2);
    ck_assert_int_eq(l.slurm_nnodes, 2);
    ck_assert_int_eq(l.slurm_job_id, 4242);
    ck_assert(l.in_slurm_allocation);
}
END_TEST

START_TEST(test_launch_batch_script_and_mpirun_in_allocation)
{
    /* The batch script itself (no step): a singleton inside an allocation. */
    char *batch[] = { "SLURM_JOB_ID=7", "SLURM_NTASKS=8", NULL };
    accel_launch_t l;
    accel_launch_detect(batch, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SINGLETON);
    ck_assert(l.in_slurm_allocation);
    ck_assert_int_eq(l.slurm_ntasks, 8);
    /* mpirun inside an allocation: mpirun's own size wins. */
    char *mixed[] = { "SLURM_JOB_ID=7", "SLURM_NTASKS=8", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
                      "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1", NULL };
    accel_launch_detect(mixed, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_MPIRUN);
    ck_assert_int_eq(l.expected_size, 2);
}
END_TEST

/* ---------------------------------------------------------------- topology (singleton) */
START_TEST(test_topology_singleton)
{
    accel_runtime_t *rt = NULL;
    int argc = 0;
    char **argv = NULL;
    ck_assert_int_eq(accel_init(&argc, &argv, &rt), ACCEL_OK);
#if defined(M_MMAP_THRESHOLD)
    /* accel_init keeps freed memory in the heap: a 16 MiB block (an MPI scratch buffer's size) is
     * not a fresh mapping of its own, so freeing and taking it again every step costs no faults. */
    if (!getenv("GLIBC_TUNABLES") && !getenv("MALLOC_MMAP_THRESHOLD_")) {
        size_t mapped = mallinfo2().hblkhd;
        void *big = malloc(16u << 20);
        ck_assert_ptr_nonnull(big);
        ck_assert_uint_eq(mallinfo2().hblkhd, mapped);
        free(big);
    }
#endif
    ck_assert_int_eq(rt->size, 1);
    ck_assert_int_eq(rt->local_rank, 0);
    ck_assert_int_eq(rt->local_size, 1);
    ck_assert_int_eq(rt->node, 0);
    ck_assert_int_eq(rt->nnodes, 1);
    ck_assert_int_eq(accel_runtime_build_topology(rt, 1), ACCEL_OK);
    ck_assert_int_eq(rt->nnodes, 1);
    ck_assert_int_eq(accel_runtime_build_topology(rt, 3), ACCEL_ERR_CONFIG); /* 3 does not divide 1 */
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.device, sizeof cfg.device, "cpu");
    ck_assert_int_eq(accel_runtime_configure(rt, &cfg), ACCEL_OK);
    ck_assert_int_eq(accel_device_setup(rt, &cfg), ACCEL_OK);
    ck_assert_int_eq(rt->device.kind, ACCEL_DEVICE_CPU);
    ck_assert_int_ge(rt->threads, 1);
    accel_finalize(rt);      /* does not finalize MPI: the test main owns it */
}
END_TEST

START_TEST(test_device_selection)
{
    accel_device_t d;
    ck_assert_int_eq(accel_device_select("cpu", 0, &d), ACCEL_OK);
    ck_assert_int_eq(d.kind, ACCEL_DEVICE_CPU);
    const char *why = NULL;
    if (accel_device_cuda_count(&why) == 0) {
        ck_assert_ptr_nonnull(why);
        ck_assert_int_eq(accel_device_select("cuda", 0, &d), ACCEL_ERR_UNSUPPORTED);
        ck_assert_int_eq(accel_device_select("auto", 0, &d), ACCEL_OK);
        ck_assert_int_eq(d.kind, ACCEL_DEVICE_CPU);
    } else {
        ck_assert_int_eq(accel_device_select("auto", 0, &d), ACCEL_OK);
        ck_assert_int_eq(d.kind, ACCEL_DEVICE_CUDA);
    }
}
END_TEST

/* ---------------------------------------------------------------- dtypes */
START_TEST(test_half_conversions)
{
    const float exact[] = { 0.0f, 1.0f, -2.0f, 0.5f, 1024.0f, 65504.0f, -0.125f, 3.0f };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        ck_assert_float_eq(accel_f16_to_f32(accel_f32_to_f16(exact[i])), exact[i]);
        if (exact[i] != 65504.0f) /* not representable in bf16's 8-bit mantissa */
            ck_assert_float_eq(accel_bf16_to_f32(accel_f32_to_bf16(exact[i])), exact[i]);
    }
    ck_assert_uint_eq(accel_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(accel_f32_to_f16(65520.0f), 0x7c00);           /* rounds to +inf */
    ck_assert(isinf(accel_f16_to_f32(accel_f32_to_f16(1e6f))));
    ck_assert(isnan(accel_f16_to_f32(accel_f32_to_f16(NAN))));
    ck_assert(isnan(accel_bf16_to_f32(accel_f32_to_bf16(NAN))));
    ck_assert_float_eq(accel_f16_to_f32(0x0001), ldexpf(1.0f, -24));  /* smallest subnormal */
    ck_assert_uint_eq(accel_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    /* ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 and rounds to 1. */
    ck_assert_uint_eq(accel_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    ck_assert_uint_eq(accel_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
    ck_assert_uint_eq(accel_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    ck_assert_int_eq(accel_dtype_parse("bfloat16"), ACCEL_BF16);
    ck_assert_int_eq(accel_dtype_parse("float64"), -1);
    ck_assert_uint_eq(accel_dtype_size(ACCEL_I64), 8);
}
END_TEST

/* ---------------------------------------------------------------- keyed RNG */
START_TEST(test_rng_keyed)
{
    ck_assert_float_eq(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 2, 3, 4));
    ck_assert_float_ne(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 2, 3, 5));
    ck_assert_float_ne(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 3, 3, 4));
    double sum = 0, sq = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        float u = accel_rng_uniform(9, ACCEL_RNG_DATA, 0, (uint64_t)i);
        ck_assert(u >= 0.0f && u < 1.0f);
        float z = accel_rng_normal(9, ACCEL_RNG_DATA, 1, (uint64_t)i);
        sum += z;
        sq += (double)z * z;
    }
    ck_assert_double_lt(fabs(sum / n), 0.03);
    ck_assert_double_lt(fabs(sq / n - 1.0), 0.05);
    /* Filling a range equals element-wise draws: sharded initialisation matches full initialisation. */
    float full[64], part[16];
    accel_rng_fill_normal(full, 64, 0.5f, 3, ACCEL_RNG_INIT, 11, 0);
    accel_rng_fill_normal(part, 16, 0.5f, 3, ACCEL_RNG_INIT, 11, 40);
    ck_assert_int_eq(memcmp(full + 40, part, sizeof part), 0);
}
END_TEST

START_TEST(test_rng_permutation)
{
    enum { N = 1000 };
    uint64_t a[N], b[N], c[N];
    accel_rng_permutation(a, N, 5, 0);
    accel_rng_permutation(b, N, 5, 0);
    accel_rng_permutation(c, N, 5, 1);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_int_ne(memcmp(a, c, sizeof a), 0);
    char seen[N] = { 0 };
    for (int i = 0; i < N; i++) {
        ck_assert_uint_lt(a[i], N);
        ck_assert(!seen[a[i]]);
        seen[a[i]] = 1;
    }
}
END_TEST

/* ---------------------------------------------------------------- sampler */
/* The set of samples in each optimizer step is the same for every (world, grad_accum). */
START_TEST(test_sampler_world_independent)
{
    enum { N = 103, G = 24, STEPS = 12 };
    static int64_t reference[STEPS][G];
    const int worlds[] = { 1, 2, 4, 3 }, accums[] = { 1, 2, 2, 4 };
    for (int w = 0; w < 4; w++) {
        int world = worlds[w], accum = accums[w];
        accel_sampler_t s[4];
        char err[256];
        for (int r = 0; r < world; r++)
            ck_assert_int_eq(accel_sampler_init(&s[r], 77, N, G, accum, world, r, true, err, sizeof err), ACCEL_OK);
        int m = accel_sampler_micro_batch(&s[0]);
        ck_assert_int_eq(m * world * accum, G);
        for (int step = 0; step < STEPS; step++) {
            int64_t got[G];
            int k = 0;
            for (int r = 0; r < world; r++)
                for (int micro = 0; micro < accum; micro++) {
                    accel_sampler_indices(&s[r], micro, got + k);
                    k += m;
                }
            /* Sort, then compare with the single-rank reference. */
            for (int i = 1; i < G; i++)
                for (int j = i; j > 0 && got[j - 1] > got[j]; j--) { int64_t t = got[j]; got[j] = got[j - 1]; got[j - 1] = t; }
            for (int i = 1; i < G; i++) ck_assert_int_ne(got[i], got[i - 1]);   /* no repeats */
            if (w == 0) memcpy(reference[step], got, sizeof got);
            else ck_assert_int_eq(memcmp(reference[step], got, sizeof got), 0);
            for (int r = 0; r < world; r++) accel_sampler_advance(&s[r]);
        }
        ck_assert_int_eq(s[0].epoch, (STEPS * G) / ((N / G) * G));
        for (int r = 0; r < world; r++) accel_sampler_free(&s[r]);
    }
}
END_TEST

START_TEST(test_sampler_errors_and_seek)
{
    accel_sampler_t s;
    char err[256];
    ck_assert_int_eq(accel_sampler_init(&s, 1, 100, 30, 1, 4, 0, true, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "not divisible"));
    ck_assert_int_eq(accel_sampler_init(&s, 1, 10, 16, 1, 1, 0, true, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "fewer than one global batch"));
    ck_assert_int_eq(accel_sampler_init(&s, 1, 100, 10, 1, 1, 0, true, err, sizeof err), ACCEL_OK);
    int64_t a[10], b[10];
    for (int i = 0; i < 13; i++) accel_sampler_advance(&s);
    accel_sampler_indices(&s, 0, a);
    int64_t epoch = s.epoch, offset = s.offset;
    ck_assert_int_eq(epoch, 1);
    ck_assert_int_eq(offset, 30);
    accel_sampler_seek(&s, 0, 0);
    accel_sampler_seek(&s, epoch, offset);
    accel_sampler_indices(&s, 0, b);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    accel_sampler_free(&s);
}
END_TEST

/* ---------------------------------------------------------------- arena */
START_TEST(test_arena_layout)
{
    accel_layout_t l;
    accel_layout_init(&l);
    int64_t s1[2] = { 3, 5 }, s2[1] = { 7 };
    int idx;
    ck_assert_int_eq(accel_layout_add(&l, "a", 2, s1, 0, 0, 0.1f, &idx), ACCEL_OK);
    ck_assert_int_eq(idx, 0);
    ck_assert_int_eq(accel_layout_add(&l, "b", 1, s2, 1, ACCEL_TENSOR_NO_DECAY, -1.0f, &idx), ACCEL_OK);
    ck_assert_int_eq(accel_layout_add(&l, "a", 1, s2, 0, 0, 0, NULL), ACCEL_ERR_INVALID);
    int64_t bad[1] = { 0 };
    ck_assert_int_eq(accel_layout_add(&l, "z", 1, bad, 0, 0, 0, NULL), ACCEL_ERR_INVALID);
    const accel_tensor_t *b = accel_layout_find(&l, "b");
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(b->offset % ACCEL_ARENA_ALIGN, 0);
    ck_assert_uint_eq(b->offset, 16);
    ck_assert_uint_eq(accel_layout_params(&l), 22);
    ck_assert_int_eq(l.nlayers, 2);
    float *p;
    ck_assert_int_eq(accel_arena_alloc(&l, &p), ACCEL_OK);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    accel_arena_init_params(&l, p, 42);
    for (int i = 0; i < 7; i++) ck_assert_float_eq(p[b->offset + i], 1.0f);
    ck_assert_float_eq(p[0], accel_rng_normal(42, ACCEL_RNG_INIT, accel_rng_hash("a"), 0) * 0.1f);
    accel_arena_free(p);
    accel_layout_free(&l);
}
END_TEST

/* ---------------------------------------------------------------- optimizer */
START_TEST(test_lr_schedules)
{
    accel_optim_config_t c = { .lr = 1.0, .warmup = 4, .min_lr_ratio = 0.1 };
    snprintf(c.schedule, sizeof c.schedule, "cosine");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 0), 0.25, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 3), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 4), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "linear");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 21, 12), 0.55, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "constant");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 1.0, 1e-12);
}
END_TEST

START_TEST(test_adamw_step)
{
    accel_layout_t l;
    accel_layout_init(&l);
    int64_t s[1] = { 2 };
    accel_layout_add(&l, "w", 1, s, 0, 0, 0, NULL);
    accel_layout_add(&l, "b", 1, s, 0, ACCEL_TENSOR_NO_DECAY, 0, NULL);
    accel_optim_config_t c = { .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                               .weight_decay = 0.5, .warmup = 0, .min_lr_ratio = 1.0 };
    snprintf(c.name, sizeof c.name, "adamw");
    snprintf(c.schedule, sizeof c.schedule, "constant");
    accel_optim_t opt;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &opt), ACCEL_OK);
    accel_optim_mark_decay(&opt, &l, 0, l.numel, 0);
    float p[32] = { 0 }, g[32] = { 0 };
    p[0] = 1.0f; g[0] = 0.3f;      /* w[0]: decayed */
    p[16] = 1.0f; g[16] = 0.3f;    /* b[0]: not decayed */
    accel_optim_step(&opt, p, g, 1.0f);
    /* First Adam step moves by lr * sign(g) (bias-corrected m/sqrt(v) = 1), decay by lr*wd*p. */
    ck_assert_float_eq_tol(p[0], 1.0f - 0.1f - 0.1f * 0.5f * 1.0f, 1e-6f);
    ck_assert_float_eq_tol(p[16], 1.0f - 0.1f, 1e-6f);
    ck_assert_float_eq(p[1], 0.0f);
    /* The gradient multiplier applies inside the update: a second step on g/4 with grad_mul 4
     * equals one on g (exactly: powers of two), and differs from one on g/4. */
    accel_optim_t twin, quarter;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &twin), ACCEL_OK);
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &quarter), ACCEL_OK);
    accel_optim_mark_decay(&twin, &l, 0, l.numel, 0);
    accel_optim_mark_decay(&quarter, &l, 0, l.numel, 0);
    float pt[32], pq[32], g4[32];
    memcpy(pt, p, sizeof p);
    memcpy(pq, p, sizeof p);
    for (int i = 0; i < 32; i++) g4[i] = g[i] / 4;
    const size_t bytes = sizeof(float) * l.numel;
    memcpy(twin.m, opt.m, bytes), memcpy(twin.v, opt.v, bytes);
    memcpy(quarter.m, opt.m, bytes), memcpy(quarter.v, opt.v, bytes);
    twin.step = quarter.step = opt.step;
    accel_optim_step(&opt, p, g, 1.0f);
    accel_optim_step(&twin, pt, g4, 4.0f);
    accel_optim_step(&quarter, pq, g4, 1.0f);
    ck_assert_float_eq(pt[0], p[0]);
    ck_assert_float_eq(pt[16], p[16]);
    ck_assert_float_ne(pq[0], p[0]);
    accel_optim_destroy(&twin);
    accel_optim_destroy(&quarter);
    accel_optim_destroy(&opt);
    accel_layout_free(&l);
}
END_TEST

/* The vectorised reductions behind clipping and the fp16 overflow check: every length (tails
 * shorter than the 16 partial sums included), and a non-finite value anywhere. */
START_TEST(test_grad_reductions)
{
    enum { N = 1000 };
    float *x = malloc(sizeof(float) * N);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    ck_assert(accel_sum_squares(x, 0) == 0.0);
    ck_assert(accel_all_finite(x, 0));
    for (int n = 1; n <= N; n += (n < 40 ? 1 : 97)) {
        double ref = 0;
        for (int i = 0; i < n; i++) ref += (double)x[i] * x[i];
        ck_assert_double_eq_tol(accel_sum_squares(x, (size_t)n), ref, 1e-12 * (ref + 1));
        ck_assert(accel_all_finite(x, (size_t)n));
        const float bad[3] = { NAN, INFINITY, -INFINITY };
        for (int b = 0; b < 3; b++)
            for (int at = 0; at < n; at += (n > 20 ? n / 7 + 1 : 1)) {
                float keep = x[at];
                x[at] = bad[b];
                ck_assert_msg(!accel_all_finite(x, (size_t)n), "n=%d, %g at %d not seen", n, bad[b], at);
                x[at] = keep;
            }
    }
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- MLP gradients */
START_TEST(test_mlp_finite_differences)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "mlp");
    cfg.model.inputs = 5; cfg.model.hidden = 7; cfg.model.classes = 4; cfg.model.depth = 2;
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    float *p, *g;
    accel_arena_alloc(&m.layout, &p);
    accel_arena_alloc(&m.layout, &g);
    accel_arena_init_params(&m.layout, p, 3);
    enum { N = 6 };
    float x[N * 5];
    int32_t y[N];
    for (int i = 0; i < N; i++) accel_synthetic_sample(1, 5, 4, 0.0, i, x + i * 5, &y[i]);
    /* Shift biases off zero so no ReLU input sits exactly at its kink. */
    for (int t = 0; t < m.layout.ntensors; t++)
        if (m.layout.tensors[t].flags & ACCEL_TENSOR_NO_DECAY)
            for (size_t k = 0; k < m.layout.tensors[t].numel; k++) p[m.layout.tensors[t].offset + k] = 0.05f;
    accel_batch_t b = { .n = N, .inputs = x, .targets = y };
    double loss;
    ck_assert_int_eq(m.ops->forward_backward(m.state, &m.layout, p, g, &b, 1.0f, &loss), ACCEL_OK);
    for (int t = 0; t < m.layout.ntensors; t++) {
        const accel_tensor_t *T = &m.layout.tensors[t];
        for (size_t k = 0; k < T->numel; k += 3) {
            float *w = p + T->offset + k, saved = *w;
            const float h = 1e-2f;
            double lp, lm;
            float *scratch;
            accel_arena_alloc(&m.layout, &scratch);
            *w = saved + h;
            m.ops->forward_backward(m.state, &m.layout, p, scratch, &b, 1.0f, &lp);
            *w = saved - h;
            m.ops->forward_backward(m.state, &m.layout, p, scratch, &b, 1.0f, &lm);
            *w = saved;
            accel_arena_free(scratch);
            double fd = (lp - lm) / (2.0 * h), an = g[T->offset + k];
            ck_assert_msg(fabs(fd - an) <= 2e-3 + 2e-2 * fabs(fd), "%s[%zu]: analytic %g vs finite difference %g",
                          T->name, k, an, fd);
        }
    }
    /* Gradients accumulate (+=) and scale linearly. */
    float *g2;
    accel_arena_alloc(&m.layout, &g2);
    m.ops->forward_backward(m.state, &m.layout, p, g2, &b, 0.5f, &loss);
    m.ops->forward_backward(m.state, &m.layout, p, g2, &b, 0.5f, &loss);
    for (size_t i = 0; i < m.layout.numel; i++) ck_assert_float_eq_tol(g2[i], g[i], 1e-5f);
    int32_t bad[N] = { 0, 1, 2, 3, 9, 0 };
    accel_batch_t bb = { .n = N, .inputs = x, .targets = bad };
    ck_assert_int_eq(m.ops->forward_backward(m.state, &m.layout, p, g2, &bb, 1.0f, &loss), ACCEL_ERR_INVALID);
    accel_arena_free(g2);
    accel_arena_free(p);
    accel_arena_free(g);
    accel_model_destroy(&m);
}
END_TEST

static void make_tmpdir(void)
{
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/accel-check-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmpdir);
    if (system(cmd)) { /* best effort */ }
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_log_format_and_filters);
    tcase_add_test(tc, test_config_defaults);
    tcase_add_test(tc, test_config_yaml_overrides_env);
    tcase_add_test(tc, test_config_print_round_trip);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_config_empty_file);
    tcase_add_test(tc, test_launch_singleton);
    tcase_add_test(tc, test_launch_mpirun);
    tcase_add_test(tc, test_launch_srun);
    tcase_add_test(tc, test_launch_batch_script_and_mpirun_in_allocation);
    tcase_add_test(tc, test_topology_singleton);
    tcase_add_test(tc, test_device_selection);
    tcase_add_test(tc, test_half_conversions);
    tcase_add_test(tc, test_rng_keyed);
    tcase_add_test(tc, test_rng_permutation);
    tcase_add_test(tc, test_sampler_world_independent);
    tcase_add_test(tc, test_sampler_errors_and_seek);
    tcase_add_test(tc, test_arena_layout);
    tcase_add_test(tc, test_lr_schedules);
    tcase_add_test(tc, test_adamw_step);
    tcase_add_test(tc, test_grad_reductions);
    tcase_add_test(tc, test_mlp_finite_differences);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
